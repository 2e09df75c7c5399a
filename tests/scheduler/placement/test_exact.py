"""Exact gang placement (the `phalanx` profile): gangs the v1.37 group cycle fails are placed when they fit,
proven infeasible when they do not, undecided when the budget runs out; filters, Reserve and capacity hold."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from phalanx import build_report
from phalanx.api.objects import Node, Pod
from phalanx.errors import InputError
from phalanx.scheduler import gang
from phalanx.scheduler.decisions import Bind, Decision, GroupCondition
from phalanx.scheduler.placement import exact
from phalanx.scheduler.placement.exact import Packing, pack
from phalanx.scheduler.profiles import ExactPlacement, Profile, builtin, load_profile
from phalanx.scheduler.scheduler import Scheduler
from phalanx.sim.simulation import Simulation
from tests.builders import Buildable, MakeNode, MakePod, MakePodGroup, inputs_of
from tests.sim.test_invariants import SETTINGS as INVARIANT_SETTINGS
from tests.sim.test_invariants import _report, run_checked, workloads

GIB = 2**30


def scheduler(profile: Profile | str, *nodes: Node) -> Scheduler:
    return Scheduler(builtin(profile) if isinstance(profile, str) else profile, list(nodes))


def node(name: str, cpu: int, memory_gib: int = 64) -> MakeNode:
    return MakeNode(name).alloc(cpu=str(cpu), memory=f"{memory_gib}Gi", pods="110")


def member(name: str, cpu: int, memory_gib: int = 1, group: str = "g") -> MakePod:
    return MakePod(name).req(cpu=str(cpu), memory=f"{memory_gib}Gi").group(group)


def submit(s: Scheduler, min_count: int, *members: Pod, group: str = "g") -> list[Decision]:
    s.add_pod_group(MakePodGroup(group).gang(min_count).obj(), 0.0)
    for pod in members:
        s.add_pod(pod, 0.0)
    return s.schedule(0.0)


def binds(decisions: list[Decision]) -> dict[str, str]:
    return {d.pod.name: d.node for d in decisions if isinstance(d, Bind)}


def condition(decisions: list[Decision]) -> GroupCondition:
    return next(d for d in decisions if isinstance(d, GroupCondition))


def assert_within_capacity(s: Scheduler) -> None:
    cluster = s.cluster
    assert not cluster.overcommitted().any()
    assert (cluster.requested <= cluster.allocatable).all()
    assert (cluster.free_by_resource == (cluster.allocatable - cluster.requested).T).all()


# Two small members first (by name), then one that needs a whole node: v1.37's cycle puts the small ones on
# the empty node (it scores emptiest first), and the large one then fits nowhere.
def small_first() -> tuple[list[Node], list[Pod]]:
    nodes = [node("n0", 8).obj(), node("n1", 4).obj(), node("n2", 4).obj()]
    return nodes, [member("a-small-0", 4).obj(), member("a-small-1", 4).obj(), member("b-large", 8).obj()]


# A gang that largest-first, tightest-node greedy fails too: the big member fits both nodes and takes the
# tighter n1, after which three small members no longer fit. Placement: big + small on n0, two small on n1.
def greedy_trap() -> tuple[list[Node], list[Pod]]:
    nodes = [node("n0", 8, 9).obj(), node("n1", 6, 6).obj()]
    members = [member("a-small-0", 3, 3).obj(), member("a-small-1", 3, 3).obj(), member("a-small-2", 3, 3).obj(),
               member("b-big", 5, 6).obj()]
    return nodes, members


def test_a_gang_the_v137_cycle_fails_is_placed_by_our_greedy() -> None:
    nodes, members = small_first()
    assert binds(submit(scheduler("gang", *nodes), 3, *members)) == {}
    s = scheduler("phalanx", *nodes)
    decisions = submit(s, 3, *members)
    assert binds(decisions) == {"b-large": "n0", "a-small-0": "n1", "a-small-1": "n2"}
    assert condition(decisions).status
    assert_within_capacity(s)


def test_a_gang_every_greedy_fails_is_placed_by_the_search() -> None:
    nodes, members = greedy_trap()
    assert binds(submit(scheduler("gang", *nodes), 4, *members)) == {}
    s = scheduler("phalanx", *nodes)
    outcome = gang.schedule_group(s.cycle, MakePodGroup("g").gang(4).obj(), members, 0)
    assert outcome.success and outcome.exact == "placed" and outcome.exact_method == "cp-sat"
    placed = {pod.name: s.cluster.names[n] for pod, n in outcome.placed}
    assert placed["b-big"] == "n0"
    assert sorted(placed.values()) == ["n0", "n0", "n1", "n1"]
    assert_within_capacity(s)
    assert s.cluster.requested[0].tolist()[:2] == [8000, 9 * GIB]  # n0: cpu and memory exactly full


def test_a_gang_with_no_placement_is_proven_infeasible() -> None:
    # 10 cpu free for 10 cpu of members that no two nodes of 5 can hold (4 + 3 + 3): only a search shows it.
    s = scheduler("phalanx", node("n0", 5).obj(), node("n1", 5).obj())
    members = [member("m-0", 4).obj(), member("m-1", 3).obj(), member("m-2", 3).obj()]
    decisions = submit(s, 3, *members)
    assert binds(decisions) == {}
    message = condition(decisions).message
    assert message.endswith(". Exact placement: no placement of 3 more pod(s) exists on the nodes their filters allow.")
    assert s.pod_message("default/m-0") == f"pod group is unschedulable, {message}"  # it fitted; m-2 did not
    assert exact.decisions(s.cluster).summary()["infeasible"] == 1
    assert s.cluster.requested.sum() == 0  # nothing left reserved


def test_bounds_prove_infeasible_without_a_search() -> None:
    s = scheduler("phalanx", node("n0", 6).obj(), node("n1", 6).obj())
    outcome = gang.schedule_group(s.cycle, MakePodGroup("g").gang(3).obj(),
                                  [member(f"m-{i}", 4).obj() for i in range(3)], 0)
    assert not outcome.success and outcome.exact == "infeasible" and outcome.exact_method == "bounds"


def test_a_budget_of_zero_leaves_the_search_undecided() -> None:
    nodes, members = greedy_trap()
    profile = replace(builtin("phalanx"), exact_placement=ExactPlacement(budget=0.0))
    s = scheduler(profile, *nodes)
    decisions = submit(s, 4, *members)
    assert binds(decisions) == {}
    assert condition(decisions).message.endswith(" Exact placement: no placement found within its budget of 0s.")
    summary = exact.decisions(s.cluster).summary()
    assert (summary["placed"], summary["infeasible"], summary["undecided"]) == (0, 0, 1)
    assert s.cluster.requested.sum() == 0


def test_filters_are_respected() -> None:
    # The roomy node is tainted and another one is outside the members' nodeSelector: the gang must fit on
    # the rest, which it does only as large + small on n-ok-0 and small on n-ok-1.
    nodes = [MakeNode("n-tainted").alloc(cpu="16", memory="64Gi", pods="110").taint("dedicated", "infra").obj(),
             MakeNode("n-other").alloc(cpu="16", memory="64Gi", pods="110").label("pool", "other").obj(),
             MakeNode("n-ok-0").alloc(cpu="6", memory="64Gi", pods="110").label("pool", "train").obj(),
             MakeNode("n-ok-1").alloc(cpu="2", memory="64Gi", pods="110").label("pool", "train").obj()]
    members = [member(f"a-small-{i}", 2).node_selector(pool="train").obj() for i in range(2)]
    members.append(member("b-large", 4).node_selector(pool="train").obj())
    s = scheduler("phalanx", *nodes)
    decisions = submit(s, 3, *members)
    placed = binds(decisions)
    assert placed["b-large"] == "n-ok-0"
    assert sorted(placed.values()) == ["n-ok-0", "n-ok-0", "n-ok-1"]
    assert_within_capacity(s)
    # Without the roomy nodes' filters the gang would fit; with them and one more member it cannot.
    s = scheduler("phalanx", *nodes)
    decisions = submit(s, 4, *members, member("c-small", 2).node_selector(pool="train").obj())
    assert binds(decisions) == {}
    assert "no placement of 4 more pod(s) exists" in condition(decisions).message


def test_extra_members_are_placed_as_far_as_they_fit() -> None:
    # minCount 3 of 4 members: the three that fit together are placed, the fourth waits.
    nodes, members = small_first()
    s = scheduler("phalanx", *nodes)
    decisions = submit(s, 3, *members, member("c-large", 8).obj())
    assert binds(decisions) == {"b-large": "n0", "a-small-0": "n1", "a-small-1": "n2"}
    assert condition(decisions).status
    # The group's entry goes straight back to activeQ (AddAttemptedPodGroupIfNeeded), and its next cycle, for
    # c-large alone, gives it its own fit error beside the three now bound.
    assert s.pod_message("default/c-large") == "0/3 nodes are available: 3 Insufficient cpu."
    assert_within_capacity(s)


def test_members_failing_the_filters_on_the_solution_are_not_seated(monkeypatch: pytest.MonkeyPatch) -> None:
    nodes, members = small_first()
    s = scheduler("phalanx", *nodes)

    def wrong(cycle: object, pending: list[Pod], need: int, settings: ExactPlacement) -> exact.Plan:
        return exact.Plan("placed", [(pending[0], 0), (pending[1], 0), (pending[2], 0)], "cp-sat", 0.0)

    monkeypatch.setattr(exact, "plan", wrong)
    outcome = gang.schedule_group(s.cycle, MakePodGroup("g").gang(3).obj(), members, 0)
    assert not outcome.success and outcome.exact == "undecided"
    assert (outcome.message or "").endswith("Exact placement: its placement failed the filters (pod default/b-large "
                                            "no longer passes the filters on node n0).")
    assert s.cluster.requested.sum() == 0 and not s.cluster.bound


def test_other_profiles_and_rules_between_pods_keep_the_v137_cycle() -> None:
    nodes, members = small_first()
    for profile in ("default", "gang", "kueue", "volcano"):
        assert builtin(profile).exact_placement is None
    assert exact.applicable(members)
    spread = [member(m.name, m.requests["cpu"] // 1000).label("app", "x")
              .spread(1, "kubernetes.io/hostname", match={"app": "x"}).obj() for m in members]
    assert not exact.applicable(spread)
    outcome = gang.schedule_group(scheduler("phalanx", *nodes).cycle, MakePodGroup("g").gang(3).obj(), spread, 0)
    assert not outcome.success and outcome.exact is None


def test_decisions_are_deterministic() -> None:
    def run() -> tuple[str | None, dict[str, str]]:
        # Five copies of the greedy trap among small fragments: only the search places the 20 members.
        nodes = [node(f"trap-{k}-{i}", c, m).obj() for k in range(5) for i, (c, m) in enumerate(((8, 9), (6, 6)))]
        nodes += [node(f"fragment-{i}", 1 + i % 2, 2 + i % 3).obj() for i in range(20)]
        s = scheduler("phalanx", *nodes)
        members = [member(f"m-{k}-{i}", *((5, 6) if i == 3 else (3, 3))).obj() for k in range(5) for i in range(4)]
        outcome = gang.schedule_group(s.cycle, MakePodGroup("g").gang(20).obj(), members, 0)
        assert outcome.success
        assert_within_capacity(s)
        return outcome.exact_method, {pod.name: s.cluster.names[n] for pod, n in outcome.placed}

    method, placed = run()
    assert method == "cp-sat" and len(placed) == 20
    assert run() == (method, placed)


def test_dry_runs_are_not_counted() -> None:
    nodes, members = small_first()
    s = scheduler("phalanx", *nodes)
    with s.cluster.trial():
        assert gang.schedule_group(s.cycle, MakePodGroup("g").gang(3).obj(), members, 0).success
    assert exact.decisions(s.cluster).summary()["cycles"]["placed"] == 0
    assert not s.cluster.bound


def test_the_report_counts_exact_placements() -> None:
    def items() -> list[MakeNode | MakePodGroup | MakePod]:
        return [node("n0", 8), node("n1", 4), node("n2", 4), MakePodGroup("g").gang(3),
                member("a-small-0", 4), member("a-small-1", 4), member("b-large", 8)]

    ours = build_report(Simulation(inputs_of(*items()), builtin("phalanx")).run())
    assert ours["exactPlacement"]["placed"] == 1
    assert ours["exactPlacement"]["cycles"] == {"placed": 1, "infeasible": 0, "undecided": 0}
    assert ours["summary"]["podGroups"]["scheduled"] == 1
    theirs = build_report(Simulation(inputs_of(*items()), builtin("gang")).run())
    assert "exactPlacement" not in theirs and theirs["summary"]["podGroups"]["scheduled"] == 0


# --- pack: the arrays ------------------------------------------------------------------------------------

def test_one_domain_holds_the_whole_gang() -> None:
    free = np.array([[6, 6, 4, 4], [1, 1, 1, 1]], dtype=np.int64)
    allowed = np.ones((1, 4), dtype=bool)
    two_of_five = np.array([[5, 1]], dtype=np.int64)
    found = pack(two_of_five, [2], 2, free, allowed, domains=np.array([0, 0, 1, 1]))
    assert found.verdict == "placed" and sorted(found.nodes[0]) == [0, 1]
    # Each domain has one node of 6 and one of 4: the members would fit across domains, not within one.
    assert pack(two_of_five, [2], 2, free, allowed).verdict == "placed"
    assert pack(two_of_five, [2], 2, free, allowed, domains=np.array([0, 1, 0, 1])).verdict == "infeasible"
    # Nodes outside every domain (-1) are not used; the roomiest domain is tried first.
    two_of_four = np.array([[4, 1]], dtype=np.int64)
    found = pack(two_of_four, [2], 2, free, allowed, domains=np.array([-1, 1, 0, 0]))
    assert found.verdict == "placed" and sorted(found.nodes[0]) == [2, 3]
    found = pack(two_of_four, [2], 2, free, allowed, domains=np.array([1, 1, 0, 0]))
    assert found.verdict == "placed" and sorted(found.nodes[0]) == [0, 1]


def test_identical_nodes_are_still_separate_bins() -> None:
    # Three nodes of 5 are 15 cpu, enough for 4 + 4 + 4 + 3 as one bin, but as nodes they hold three 4s only.
    free = np.array([[5, 5, 5]], dtype=np.int64)
    found = pack(np.array([[4], [3]]), [3, 1], 4, free, np.ones((2, 3), dtype=bool))
    assert found.verdict == "infeasible"


def test_many_identical_nodes_are_pruned_without_losing_the_placement() -> None:
    free = np.zeros((2, 300), dtype=np.int64)
    free[0], free[1] = 5, 5
    free[:, 123] = [8, 9]
    free[:, 250] = [6, 6]
    demands = np.array([[5, 6], [3, 3]])
    found = pack(demands, [1, 3], 4, free, np.ones((2, 300), dtype=bool))
    assert found.verdict == "placed"
    check_packing(found, demands, [1, 3], free, np.ones((2, 300), dtype=bool))


def check_packing(found: Packing, demands: np.ndarray, counts: list[int], free: np.ndarray,
                  allowed: np.ndarray, need: int | None = None) -> None:
    load = np.zeros_like(free)
    placed = 0
    for s, nodes in enumerate(found.nodes):
        assert len(nodes) <= counts[s]
        placed += len(nodes)
        for n in nodes:
            assert allowed[s, n]
            load[:, n] += demands[s]
    assert (load <= free).all()
    assert placed >= (sum(counts) if need is None else need)


@st.composite
def known_placement(draw: st.DrawFn) -> tuple[np.ndarray, list[int], np.ndarray, np.ndarray]:
    """Shapes, counts, free room and allowed masks built around a placement made first."""
    shapes = draw(st.integers(2, 5))
    resources = draw(st.integers(1, 3))
    nodes = draw(st.integers(1, 12))
    demands = np.array([[draw(st.integers(0 if r else 1, 9)) for r in range(resources)] for _ in range(shapes)])
    counts = [draw(st.integers(1, 4)) for _ in range(shapes)]
    free = np.zeros((resources, nodes), dtype=np.int64)
    allowed = np.array([[draw(st.booleans()) for _ in range(nodes)] for _ in range(shapes)])
    for s in range(shapes):
        for _ in range(counts[s]):
            n = draw(st.integers(0, nodes - 1))
            free[:, n] += demands[s]
            allowed[s, n] = True
    for n in range(nodes):
        free[:, n] += [draw(st.integers(0, 3)) for _ in range(resources)]
    return demands, counts, free, allowed


@settings(max_examples=150, deadline=None)
@given(known_placement())
def test_a_known_placement_is_always_found(case: tuple[np.ndarray, list[int], np.ndarray, np.ndarray]) -> None:
    demands, counts, free, allowed = case
    found = pack(demands, counts, sum(counts), free, allowed, settings=ExactPlacement(budget=5.0))
    assert found.verdict == "placed", found
    check_packing(found, demands, counts, free, allowed)


def placeable(demands: np.ndarray, counts: list[int], free: np.ndarray, allowed: np.ndarray) -> bool:
    """Brute force: every member on every node it may take."""
    members = [s for s, c in enumerate(counts) for _ in range(c)]
    for nodes in itertools.product(range(free.shape[1]), repeat=len(members)):
        load = np.zeros_like(free)
        for s, n in zip(members, nodes, strict=True):
            if not allowed[s, n]:
                break
            load[:, n] += demands[s]
        else:
            if (load <= free).all():
                return True
    return False


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 3), st.integers(1, 4), st.data())
def test_any_verdict_is_right(shapes: int, nodes: int, data: st.DataObject) -> None:
    resources = 2
    demands = np.array([[data.draw(st.integers(1, 6)) for _ in range(resources)] for _ in range(shapes)])
    counts = [data.draw(st.integers(1, 2)) for _ in range(shapes)]
    free = np.array([[data.draw(st.integers(0, 10)) for _ in range(nodes)] for _ in range(resources)])
    allowed = np.array([[data.draw(st.booleans()) for _ in range(nodes)] for _ in range(shapes)])
    need = data.draw(st.integers(1, sum(counts)))
    found = pack(demands, counts, need, free, allowed, settings=ExactPlacement(budget=5.0))
    assert found.verdict != "undecided"
    if found.verdict == "placed":
        check_packing(found, demands, counts, free, allowed, need)
    if need == sum(counts):
        assert (found.verdict == "placed") == placeable(demands, counts, free, allowed)


def test_pack_is_deterministic() -> None:
    rng = np.random.default_rng(11)
    free = rng.integers(0, 12, size=(2, 200))
    demands = np.array([[7, 3], [3, 7], [2, 2]])
    allowed = rng.random((3, 200)) < 0.7
    first = pack(demands, [6, 6, 10], 22, free, allowed)
    assert first.verdict == "placed"
    for _ in range(3):
        again = pack(demands, [6, 6, 10], 22, free, allowed)
        assert (again.verdict, again.nodes, again.method) == (first.verdict, first.nodes, first.method)


# --- the profile ------------------------------------------------------------------------------------------

def test_the_phalanx_profile_is_gang_plus_exact_placement() -> None:
    ours, theirs = builtin("phalanx"), builtin("gang")
    assert ours.exact_placement == ExactPlacement(budget=0.1, seed=0)
    assert replace(ours, name="gang", exact_placement=None, gpu_sharing=None, group_retry="backoff",
                   feature_gates=theirs.feature_gates) == theirs
    assert ours.group_retry == "event"  # a failed gang is tried again when an event may help, not on backoff
    assert ours.feature_gates == {**theirs.feature_gates, "DRAWorkloadResourceClaims": True}
    assert ours.gpu_sharing == "fgd-stranding"  # on inputs with GPU-share requests only (for_gpu_sharing)
    assert ours.describe()["exactPlacement"] == {"budgetSeconds": 0.1, "seed": 0}


def test_a_profile_file_sets_the_budget(tmp_path: Path) -> None:
    path = tmp_path / "exact.yaml"
    path.write_text("featureGates: {GenericWorkload: true}\nexactPlacement: {budgetSeconds: 0.25, seed: 3}\n")
    assert load_profile(str(path)).exact_placement == ExactPlacement(budget=0.25, seed=3)
    path.write_text("exactPlacement: true\n")
    assert load_profile(str(path)).exact_placement == ExactPlacement()
    path.write_text("exactPlacement: false\n")
    assert load_profile(str(path)).exact_placement is None
    for bad in ("{budgetSeconds: -1}", "{budgetSeconds: soon}", "{seed: 1.5}", "{budget: 1}", "fast"):
        path.write_text(f"exactPlacement: {bad}\n")
        with pytest.raises(InputError) as err:
            load_profile(str(path))
        assert (err.value.field or "").startswith("exactPlacement")


# --- DESIGN.md's invariants under the `phalanx` profile --------------------------------------------------

@INVARIANT_SETTINGS
@given(items=workloads(), seed=st.integers(0, 3))
def test_no_over_commit_gang_atomicity_and_determinism(items: list[Buildable], seed: int) -> None:
    sim, watched = run_checked(inputs_of(*items), "phalanx", seed)  # checks around every scheduling step
    assert watched.steps > 0 or not sim.pods
    event(f"exact placement ran: {sum(exact.decisions(sim.scheduler.cluster).cycles.values()) > 0}")
    assert _report(items, "phalanx", seed) == _report(items, "phalanx", seed)
