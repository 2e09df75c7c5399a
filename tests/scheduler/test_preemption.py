"""kube-scheduler's DefaultPreemption, driven through the Scheduler on small hand-made clusters.

Node choice (pickOneNodeForPreemption, one test per rule), victims per node (SelectVictimsOnNode: remove
every lower-priority pod, reprieve the most important first while the preemptor fits, PDB-violating ones
first), eligibility (`preemptionPolicy: Never`, a nominated node whose victims still terminate), priority,
unresolvable nodes, and graceful termination through the simulator. The last tests check that victims
selected on many nodes at once are exactly those selected one node at a time.

Helpers here (`pod`, `Cluster`, …) are shared with test_workload_preemption.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phalanx.api.objects import LabelSelector, Pod, PodDisruptionBudget, PodGroup
from phalanx.scheduler.decisions import Bind, Decision, Evict, Nominate, Preemption, Unschedulable
from phalanx.scheduler.preemption import NO_VICTIM_PRIORITY, Preemptor, num_candidates
from phalanx.scheduler.profiles import Profile, builtin
from phalanx.scheduler.scheduler import Scheduler
from phalanx.sim.simulation import Simulation
from tests.builders import MakeNode, MakePod, MakePriorityClass, inputs_of

MIN_PRIORITY = -(2**31)


# --- helpers ----------------------------------------------------------------------------------------------

def node(name: str, cpu: str = "4", *, taint: str | None = None, **labels: str) -> MakeNode:
    builder = MakeNode(name).alloc(cpu=cpu, memory="64Gi", pods="110")
    for key, value in labels.items():
        builder.label(key, value)
    if taint is not None:
        builder.taint(taint, "true")
    return builder


def pod(name: str, cpu: str = "1", priority: int = 0, *, namespace: str = "default", start: float | None = None,
        labels: dict[str, str] | None = None, policy: str | None = None, group: str | None = None,
        selector: dict[str, str] | None = None, tolerate: str | None = None) -> Pod:
    """A pod of `cpu` (and 1Gi); `start` is its status.startTime when it runs in the input (seconds)."""
    builder = MakePod(name, namespace).req(cpu=cpu, memory="1Gi").priority(priority)
    for key, value in (labels or {}).items():
        builder.label(key, value)
    if policy is not None:
        builder.spec["preemptionPolicy"] = policy
    if group is not None:
        builder.group(group)
    if selector is not None:
        builder.node_selector(selector)
    if tolerate is not None:
        builder.toleration(tolerate, "true", "NoSchedule")
    obj = builder.obj()
    obj.start_time = start
    return obj


def pdb(name: str, *, min_available: int | str | None = None, max_unavailable: int | str | None = None,
        namespace: str = "default", **match: str) -> PodDisruptionBudget:
    return PodDisruptionBudget(namespace, name, LabelSelector(match_labels=tuple(sorted(match.items()))),
                               min_available=min_available, max_unavailable=max_unavailable)


class Cluster:
    """A Scheduler over hand-made nodes, with pods already running on named nodes."""

    def __init__(self, *nodes: MakeNode, profile: str | Profile = "default", seed: int = 0) -> None:
        chosen = builtin(profile) if isinstance(profile, str) else profile
        self.scheduler = Scheduler(chosen, [n.obj() for n in nodes], seed=seed)
        self.decisions: list[Decision] = []

    def running(self, on: str, *pods: Pod, now: float = 0.0) -> Cluster:
        for p in pods:
            self.scheduler.add_pod(p, now, node=on)
        return self

    def group(self, group: PodGroup, now: float = 0.0) -> Cluster:
        self.scheduler.add_pod_group(group, now)
        return self

    def budget(self, budget: PodDisruptionBudget) -> Cluster:
        self.scheduler.add_pdb(budget)
        return self

    def schedule(self, *pending: Pod, now: float = 0.0) -> list[Decision]:
        for p in pending:
            self.scheduler.add_pod(p, now)
        self.decisions = self.scheduler.schedule(now)
        return self.decisions

    def retry(self, now: float) -> list[Decision]:
        """Let every waiting entry try again (as a cluster event would)."""
        self.scheduler.queue.move_all(now)
        self.decisions = self.scheduler.schedule(now)
        return self.decisions

    def gone(self, *names: str, now: float, namespace: str = "default") -> None:
        """Evicted pods finish terminating."""
        for name in names:
            self.scheduler.delete_pod(f"{namespace}/{name}", now)


def evicted(decisions: Iterable[Decision]) -> list[str]:
    return [d.pod.name for d in decisions if isinstance(d, Evict)]


def nominated(decisions: Iterable[Decision]) -> dict[str, str]:
    return {d.pod.name: d.node for d in decisions if isinstance(d, Nominate)}


def victim_node(decisions: Sequence[Decision]) -> str:
    nodes = {d.node for d in decisions if isinstance(d, Evict)}
    assert len(nodes) == 1, nodes
    return nodes.pop()


SEEDS = pytest.mark.parametrize("seed", range(5))  # different random offsets: the rule, not the order, decides


# --- SelectVictimsOnNode runs the rules between pods with the victims gone ----------------------------------

def spread_pod(name: str, cpu: str, priority: int, app: str) -> Pod:
    """A pod of `app` that must stay within skew 1 of its app's pods per node."""
    return MakePod(name).req(cpu=cpu, memory="1Gi").priority(priority).label("app", app) \
        .spread(1, "kubernetes.io/hostname", match={"app": app}).obj()


def test_no_preemption_on_a_node_whose_spread_still_fails_with_every_lower_pod_gone() -> None:
    # node-a holds two `api` pods of priority 100, node-b one; both are full. Evicting the low pods on
    # node-a would make room, but the new `api` pod would put node-a at skew 2: upstream's dry run runs
    # PodTopologySpread with the victims removed and finds no candidate (no preemption anywhere, since
    # node-b has nothing of lower priority to evict).
    cluster = Cluster(node("node-a", "4", **{"kubernetes.io/hostname": "node-a"}),
                      node("node-b", "2", **{"kubernetes.io/hostname": "node-b"}))
    cluster.running("node-a", pod("api-1", "1", 100, labels={"app": "api"}),
                    pod("api-2", "1", 100, labels={"app": "api"}), pod("low", "2", 0))
    cluster.running("node-b", pod("api-3", "2", 100, labels={"app": "api"}))
    decisions = cluster.schedule(spread_pod("p", "1", 50, "api"))
    assert evicted(decisions) == []
    assert [d for d in decisions if isinstance(d, Unschedulable)]


def test_a_victim_that_breaks_the_preemptors_spread_is_not_reprieved() -> None:
    # node-a (3 cpu, full): `api-low` (app api, priority 0, the older), `other` (priority 0) and `filler`.
    # node-b (1 cpu, full) runs no api pod, only a high-priority one. The preemptor (app api, skew 1) needs
    # 1 cpu. With both low pods gone node-a has room and the skew holds; `api-low` is reprieved first (the
    # older) and fits back by resources, but with it node-a would hold 2 api pods against node-b's 0: skew 2.
    # So `api-low` stays a victim, and `other`, which no rule needs gone, is reprieved.
    cluster = Cluster(node("node-a", "3", **{"kubernetes.io/hostname": "node-a"}),
                      node("node-b", "1", **{"kubernetes.io/hostname": "node-b"}))
    cluster.running("node-a", pod("api-low", "1", 0, labels={"app": "api"}, start=-100),
                    pod("other", "1", 0, start=-50), pod("filler", "1", 100))
    cluster.running("node-b", pod("filler-b", "1", 100))
    decisions = cluster.schedule(spread_pod("p", "1", 50, "api"))
    assert evicted(decisions) == ["api-low"]


def test_an_existing_pods_anti_affinity_makes_it_a_victim_even_when_room_allows_it_to_stay() -> None:
    # `loner` (priority 0) refuses `web` pods on its node; there is room for the preemptor beside it, so
    # only the rules between pods make it a victim (InterPodAffinity with the victims removed).
    loner = MakePod("loner").req(cpu="1", memory="1Gi").priority(0) \
        .pod_anti_affinity("kubernetes.io/hostname", {"app": "web"}).obj()
    cluster = Cluster(node("node-a", "4", **{"kubernetes.io/hostname": "node-a"}))
    cluster.running("node-a", loner, pod("busy", "2", 100))
    decisions = cluster.schedule(pod("web", "1", 50, labels={"app": "web"}))
    assert evicted(decisions) == ["loner"]
    assert nominated(decisions) == {"web": "node-a"}


@pytest.mark.parametrize(("nominee", "placed"), [(50, {}), (5, {"shy": "node-a"})])
def test_a_nominated_pod_counts_for_the_preemptors_anti_affinity_in_the_dry_run(nominee: int,
                                                                                 placed: dict[str, str]) -> None:
    """SelectVictimsOnNode checks the node with RunFilterPluginsWithNominatedPods (framework/runtime
    framework.go): addGENominatedPods puts the pods nominated there at the preemptor's priority or higher on
    the node, labels included, through the PreFilter extensions' AddPod, so InterPodAffinity sees them. `web`
    evicts `old` and is nominated to node-a; `shy` refuses `web` pods on its node. A higher-priority `web`
    makes node-a no candidate (Phalanx counted only its room and evicted `other` for `shy`: seed 85 of the
    differential suite); a lower-priority one is not added at all, and `shy` takes the room `old` frees."""
    cluster = Cluster(node("node-a", "6", **{"kubernetes.io/hostname": "node-a"}))
    cluster.running("node-a", pod("old", "4", 0, start=-100), pod("other", "2", 0, start=-50))
    first = cluster.schedule(pod("web", "4", nominee, labels={"app": "web"}))
    assert evicted(first) == ["old"] and nominated(first) == {"web": "node-a"}
    shy = MakePod("shy").req(cpu="2", memory="1Gi").priority(10) \
        .pod_anti_affinity("kubernetes.io/hostname", {"app": "web"}).obj()
    decisions = cluster.schedule(shy, now=1.0)
    assert evicted(decisions) == [] and nominated(decisions) == placed
    assert [d.pod.name for d in decisions if isinstance(d, Unschedulable)] == ["shy"]


def test_a_nominated_pods_anti_affinity_rejects_the_preemptor_in_the_dry_run() -> None:
    """The same with the rule on the nominated pod: InterPodAffinity checks the existing pods' anti-affinity,
    nominated ones added (addGENominatedPods), though the preemptor itself has no rule between pods."""
    cluster = Cluster(node("node-a", "6", **{"kubernetes.io/hostname": "node-a"}))
    cluster.running("node-a", pod("old", "4", 0, start=-100), pod("other", "2", 0, start=-50))
    web = MakePod("web").req(cpu="4", memory="1Gi").priority(50) \
        .pod_anti_affinity("kubernetes.io/hostname", {"app": "shy"}).obj()
    assert nominated(cluster.schedule(web)) == {"web": "node-a"}
    decisions = cluster.schedule(pod("shy", "2", 10, labels={"app": "shy"}), now=1.0)
    assert evicted(decisions) == [] and nominated(decisions) == {}


@pytest.mark.parametrize(("nominee", "bound"), [(50, None), (5, "node-a")])
def test_a_nominated_pods_anti_affinity_keeps_others_off_its_node_in_the_filter(nominee: int,
                                                                                bound: str | None) -> None:
    """RunFilterPluginsWithNominatedPods in the ordinary Filter too: while `web` waits for the node it preempted
    on, its anti-affinity refuses `batch` pods there, though the room `old` freed is more than `web` needs; a
    lower-priority nomination is not added. Without this, a bare gang member recreated at once took the node
    back before its preemptor's retry, for ever (the differential generator's seed 277)."""
    cluster = Cluster(node("node-a", "8", **{"kubernetes.io/hostname": "node-a"}))
    cluster.running("node-a", pod("old", "4", 0, start=-100), pod("other", "2", 100, start=-50))
    web = MakePod("web").req(cpu="4", memory="1Gi").priority(nominee) \
        .pod_anti_affinity("kubernetes.io/hostname", {"app": "batch"}).obj()
    assert nominated(cluster.schedule(web)) == {"web": "node-a"}
    cluster.gone("old", now=1.0)
    decisions = cluster.schedule(pod("batch", "1", 10, labels={"app": "batch"}), now=1.0)
    binds = {d.pod.name: d.node for d in decisions if isinstance(d, Bind)}
    assert binds.get("batch") == bound
    if bound is None:
        [failed] = [d for d in decisions if isinstance(d, Unschedulable) and d.pod.name == "batch"]
        assert "didn't satisfy existing pods anti-affinity rules" in (failed.message or "")
        assert evicted(decisions) == []


# --- pickOneNodeForPreemption: one test per rule ----------------------------------------------------------

@SEEDS
def test_node_choice_fewest_pdb_violations_first(seed: int) -> None:
    # node-a's victim has the lowest priority, but a PDB allows no disruption of it.
    cluster = Cluster(node("node-a"), node("node-b"), seed=seed)
    cluster.running("node-a", pod("guarded", "4", 1, labels={"app": "db"}))
    cluster.running("node-b", pod("plain", "4", 5))
    cluster.budget(pdb("db", min_available=1, app="db"))
    decisions = cluster.schedule(pod("p", "4", 10))
    assert evicted(decisions) == ["plain"]
    assert nominated(decisions) == {"p": "node-b"}


@SEEDS
def test_node_choice_lowest_highest_victim_priority(seed: int) -> None:
    # node-b needs two victims (a higher sum, more pods) but its highest victim priority is lower.
    cluster = Cluster(node("node-a"), node("node-b"), seed=seed)
    cluster.running("node-a", pod("a", "4", 5))
    cluster.running("node-b", pod("b1", "2", 3), pod("b2", "2", 3))
    decisions = cluster.schedule(pod("p", "4", 10))
    assert sorted(evicted(decisions)) == ["b1", "b2"]
    assert victim_node(decisions) == "node-b"


@SEEDS
def test_node_choice_lowest_priority_sum(seed: int) -> None:
    # Same highest victim (5) and count (2); node-a's sum is lower even though node-b's victims started
    # later (the next rule would prefer node-b).
    cluster = Cluster(node("node-a"), node("node-b"), seed=seed)
    cluster.running("node-a", pod("a-top", "2", 5, start=-500), pod("a-low", "2", 1, start=-500))
    cluster.running("node-b", pod("b-top", "2", 5, start=-10), pod("b-low", "2", 3, start=-10))
    decisions = cluster.schedule(pod("p", "4", 10))
    assert sorted(evicted(decisions)) == ["a-low", "a-top"]


@SEEDS
def test_node_choice_lowest_priority_sum_beats_fewer_victims(seed: int) -> None:
    # kube adds 2^31 to every priority before summing: near the bottom of the range three victims can sum
    # lower than two.
    low = MIN_PRIORITY
    cluster = Cluster(node("node-a", "6"), node("node-b", "6"), seed=seed)
    cluster.running("node-a", pod("a1", "2", low + 100), pod("a2", "2", low + 1), pod("a3", "2", low + 1))
    cluster.running("node-b", pod("b1", "3", low + 100), pod("b2", "3", low + 50))
    decisions = cluster.schedule(pod("p", "6", 10))
    assert sorted(evicted(decisions)) == ["a1", "a2", "a3"]


@SEEDS
def test_node_choice_fewest_victims(seed: int) -> None:
    # A victim of the lowest possible priority adds 0 to the (offset) sum: equal sums, node-b has fewer
    # victims, although node-a's victims started later (the next rule would prefer node-a).
    cluster = Cluster(node("node-a"), node("node-b"), seed=seed)
    cluster.running("node-a", pod("a-top", "2", 5, start=-10), pod("a-floor", "2", MIN_PRIORITY, start=-10))
    cluster.running("node-b", pod("b-top", "4", 5, start=-900))
    decisions = cluster.schedule(pod("p", "4", 10))
    assert evicted(decisions) == ["b-top"]


@SEEDS
def test_node_choice_latest_start_of_highest_priority_victims(seed: int) -> None:
    # Equal victims in priority and number; node-b's highest-priority victim started last. Only the
    # highest-priority victims count: node-a's low victim started even later.
    cluster = Cluster(node("node-a"), node("node-b"), seed=seed)
    cluster.running("node-a", pod("a-top", "2", 5, start=-600), pod("a-low", "2", 1, start=-1))
    cluster.running("node-b", pod("b-top", "2", 5, start=-60), pod("b-low", "2", 1, start=-3000))
    decisions = cluster.schedule(pod("p", "4", 10))
    assert sorted(evicted(decisions)) == ["b-low", "b-top"]


@SEEDS
def test_node_choice_start_is_the_simulated_bind_time_for_pods_the_scheduler_placed(seed: int) -> None:
    cluster = Cluster(node("node-a", host="a"), node("node-b", host="b"), seed=seed)
    first = cluster.schedule(pod("early", "4", 1, selector={"host": "a"}), now=100.0)
    second = cluster.schedule(pod("late", "4", 1, selector={"host": "b"}), now=200.0)
    assert [d.node for d in (*first, *second) if isinstance(d, Bind)] == ["node-a", "node-b"]
    decisions = cluster.schedule(pod("p", "4", 10), now=300.0)
    assert evicted(decisions) == ["late"]


@SEEDS
def test_node_choice_ties_go_to_the_first_candidate_from_the_random_offset(seed: int) -> None:
    names = [f"node-{i}" for i in range(6)]
    cluster = Cluster(*(node(n) for n in names), seed=seed)
    for n in names:
        cluster.running(n, pod(f"v-{n}", "4", 1, start=-60))
    decisions = cluster.schedule(pod("p", "4", 10))
    offset = int(np.random.default_rng(seed + 1).integers(len(names)))  # the Preemptor's generator
    assert victim_node(decisions) == names[offset]


def test_candidate_count_is_ten_percent_of_nodes_at_least_a_hundred() -> None:
    assert [num_candidates(n) for n in (5, 100, 999, 1000, 5000, 20_000)] == [5, 100, 100, 100, 500, 2000]


def test_only_the_first_candidates_in_visiting_order_are_compared() -> None:
    # 300 potential nodes: 100 candidates are dry-run from the offset; the one node with a cheaper victim
    # is chosen only when it is among them.
    names = [f"node-{i:03d}" for i in range(300)]
    chosen = []
    for seed in range(8):
        cluster = Cluster(*(node(n) for n in names), seed=seed)
        for n in names:
            cluster.running(n, pod(f"v-{n}", "4", 1 if n == "node-150" else 5))
        chosen.append(victim_node(cluster.schedule(pod("p", "4", 10))))
        offset = int(np.random.default_rng(seed + 1).integers(len(names)))
        visited = {names[(offset + i) % len(names)] for i in range(100)}
        assert chosen[-1] == ("node-150" if "node-150" in visited else names[offset])
    assert "node-150" in chosen and len(set(chosen)) > 1


# --- victims on a node --------------------------------------------------------------------------------------

def test_victims_every_lower_priority_pod_removed_then_reprieved_most_important_first() -> None:
    # 4 cpu full: a (prio 3, 1 cpu), b (prio 2, 2 cpu), c (prio 1, 1 cpu); the preemptor needs 2 cpu.
    # Reprieve a (3 free), b does not fit back (1 free), c does (2 free): the victim is b alone.
    cluster = Cluster(node("node-a"))
    cluster.running("node-a", pod("a", "1", 3), pod("b", "2", 2), pod("c", "1", 1))
    decisions = cluster.schedule(pod("p", "2", 10))
    assert evicted(decisions) == ["b"]
    assert [d.victims for d in decisions if isinstance(d, Preemption)] == [("default/b",)]


def test_victims_of_equal_priority_the_earlier_started_is_reprieved_first() -> None:
    cluster = Cluster(node("node-a"))
    cluster.running("node-a", pod("new", "2", 1, start=-10), pod("old", "2", 1, start=-1000))
    assert evicted(cluster.schedule(pod("p", "2", 10))) == ["new"]


def test_victims_higher_or_equal_priority_pods_stay() -> None:
    cluster = Cluster(node("node-a", "6"))
    cluster.running("node-a", pod("same", "2", 10), pod("higher", "2", 50), pod("low", "2", 1))
    decisions = cluster.schedule(pod("p", "2", 10))
    assert evicted(decisions) == ["low"]


def test_victims_pdb_violating_ones_are_reprieved_first() -> None:
    # By importance `high` would be reprieved first and `guarded` evicted; the PDB turns the order round.
    cluster = Cluster(node("node-a"))
    cluster.running("node-a", pod("guarded", "2", 1, labels={"app": "db"}), pod("high", "2", 5))
    cluster.budget(pdb("db", max_unavailable=0, app="db"))
    assert evicted(cluster.schedule(pod("p", "2", 10))) == ["high"]


def test_victims_pdb_is_best_effort() -> None:
    cluster = Cluster(node("node-a"))
    cluster.running("node-a", pod("guarded", "4", 1, labels={"app": "db"}))
    cluster.budget(pdb("db", min_available="100%", app="db"))
    assert evicted(cluster.schedule(pod("p", "4", 10))) == ["guarded"]


def test_victims_pdb_allowed_disruptions_counted_from_the_pods_it_selects() -> None:
    # Three db pods, minAvailable 2: one disruption allowed. A preemptor needing two of them on one node
    # violates the budget with the second; the node with one db pod and one plain pod is preferred.
    cluster = Cluster(node("node-a"), node("node-b"))
    cluster.running("node-a", pod("db-0", "2", 1, labels={"app": "db"}), pod("db-1", "2", 1, labels={"app": "db"}))
    cluster.running("node-b", pod("db-2", "2", 1, labels={"app": "db"}), pod("web", "2", 3))
    cluster.budget(pdb("db", min_available=2, app="db"))
    decisions = cluster.schedule(pod("p", "4", 10))
    assert sorted(evicted(decisions)) == ["db-2", "web"]


# --- eligibility --------------------------------------------------------------------------------------------

def test_preemption_policy_never_preempts_nothing() -> None:
    cluster = Cluster(node("node-a"))
    cluster.running("node-a", pod("low", "4", 1))
    decisions = cluster.schedule(pod("p", "4", 10, policy="Never"))
    assert evicted(decisions) == [] and nominated(decisions) == {}
    assert [d.pod.name for d in decisions if isinstance(d, Unschedulable)] == ["p"]


def test_preemption_policy_never_from_the_priority_class() -> None:
    inputs = inputs_of(MakePriorityClass("polite", 10).preemption_policy("Never"),
                       MakePod("p").req(cpu="4").priority_class("polite"))
    cluster = Cluster(node("node-a"))
    cluster.running("node-a", pod("low", "4", 1))
    assert inputs.pods[0].preemption_policy == "Never"
    assert evicted(cluster.schedule(inputs.pods[0])) == []


def test_a_pod_whose_nominated_node_still_has_terminating_victims_does_not_preempt_again() -> None:
    cluster = Cluster(node("node-a"), node("node-b"))
    cluster.running("node-a", pod("a", "4", 1)).running("node-b", pod("b", "4", 1))
    first = cluster.schedule(pod("p", "4", 10))
    assert len(evicted(first)) == 1 and nominated(first) == {"p": victim_node(first)}
    again = cluster.retry(5.0)  # the victim is still terminating
    assert evicted(again) == [] and nominated(again) == {}
    assert [d.pod.name for d in again if isinstance(d, Unschedulable)] == ["p"]
    cluster.gone(*evicted(first), now=30.0)
    assert [(d.pod.name, d.node) for d in cluster.retry(30.0) if isinstance(d, Bind)] == [("p", victim_node(first))]


def test_a_second_preemptor_counts_the_first_ones_room_as_taken() -> None:
    cluster = Cluster(node("node-a"), node("node-b"))
    cluster.running("node-a", pod("a", "4", 1)).running("node-b", pod("b", "4", 1))
    decisions = cluster.schedule(pod("p1", "4", 10), pod("p2", "4", 10))
    assert sorted(evicted(decisions)) == ["a", "b"]
    assert sorted(nominated(decisions).values()) == ["node-a", "node-b"]


def test_room_already_freeing_on_a_node_is_used_without_new_victims() -> None:
    # p1 evicts a 4-cpu pod on the 6-cpu node-a and needs only 2: p2 (2 cpu) is nominated there too.
    cluster = Cluster(node("node-a", "6", host="a"), node("node-b"))
    cluster.running("node-a", pod("a", "4", 1), pod("a-keep", "2", 50))
    cluster.running("node-b", pod("b", "4", 1))
    decisions = cluster.schedule(pod("p1", "2", 10, selector={"host": "a"}))
    assert evicted(decisions) == ["a"]
    decisions = cluster.schedule(pod("p2", "2", 10))
    assert evicted(decisions) == [] and nominated(decisions) == {"p2": "node-a"}


def test_a_lower_priority_nomination_does_not_hold_room_against_a_higher_preemptor() -> None:
    cluster = Cluster(node("node-a"))
    cluster.running("node-a", pod("a", "4", 1))
    first = cluster.schedule(pod("mid", "4", 5))
    assert evicted(first) == ["a"] and nominated(first) == {"mid": "node-a"}
    cluster.gone("a", now=30.0)
    cluster.running("node-a", pod("squatter", "4", 2), now=30.0)  # something else took the room
    second = cluster.schedule(pod("top", "4", 10), now=31.0)
    assert evicted(second) == ["squatter"] and nominated(second)["top"] == "node-a"


def binds(decisions: Iterable[Decision]) -> dict[str, str]:
    return {d.pod.name: d.node for d in decisions if isinstance(d, Bind)}


def test_a_lower_priority_pod_does_not_take_the_room_held_for_a_nominated_preemptor() -> None:
    """schedule_one.go: the Filter adds the pods nominated at equal or higher priority to their nodes
    (addGENominatedPods, RunFilterPluginsWithNominatedPods). While p waits out its backoff after its victim
    left, a lower-priority pod must not land in p's room (and then be preempted by p in turn)."""
    cluster = Cluster(node("node-a"))
    cluster.running("node-a", pod("a", "4", 1))
    first = cluster.schedule(pod("p", "4", 20))
    assert evicted(first) == ["a"] and nominated(first) == {"p": "node-a"}
    cluster.retry(29.0)  # p fails again (its victim is still terminating): backoff until 31 s
    cluster.gone("a", now=30.0)
    # activeQ first: low fails against p's room; then, activeQ empty, p comes from backoffQ at once
    # (SchedulerPopFromBackoffQ) and binds.
    decisions = cluster.schedule(pod("low", "4", 5), now=30.0)
    assert binds(decisions) == {"p": "node-a"} and evicted(decisions) == []
    assert [d.pod.name for d in decisions if isinstance(d, Unschedulable)] == ["low"]


def test_an_equal_priority_nomination_holds_room_too_but_a_lower_one_does_not() -> None:
    for nominee, expected in ((5, {"p": "node-a"}), (4, {"q": "node-a"})):
        cluster = Cluster(node("node-a"))
        cluster.running("node-a", pod("a", "4", 1))
        cluster.schedule(pod("p", "4", nominee))
        cluster.retry(29.0)
        cluster.gone("a", now=30.0)
        assert binds(cluster.schedule(pod("q", "4", 5), now=30.0)) == expected


def test_a_pod_tries_its_nominated_node_first() -> None:
    """schedule_one.go evaluateNominatedNode: a pod with status.nominatedNodeName takes that node when it
    passes every filter, without scoring the others (a roomier node-b would score higher)."""
    cluster = Cluster(node("node-a"))
    cluster.running("node-a", pod("a", "4", 1))
    assert nominated(cluster.schedule(pod("p", "4", 20))) == {"p": "node-a"}
    cluster.gone("a", now=30.0)
    cluster.scheduler.add_nodes([node("node-b", "64").obj()], 30.0)
    assert binds(cluster.scheduler.schedule(30.0)) == {"p": "node-a"}


def test_a_preemption_without_candidates_clears_the_nomination() -> None:
    """preemption.go Preempt: no candidate clears the preemptor's nominatedNodeName (and the room it held)."""
    cluster = Cluster(node("node-a"))
    cluster.running("node-a", pod("a", "4", 1))
    assert nominated(cluster.schedule(pod("p", "4", 10))) == {"p": "node-a"}
    cluster.gone("a", now=30.0)
    cluster.running("node-a", pod("squatter", "4", 50), now=30.0)  # a higher-priority pod took the room
    decisions = cluster.retry(31.0)
    assert evicted(decisions) == [] and nominated(decisions) == {"p": ""}
    assert "default/p" not in cluster.scheduler.nominated


def test_nothing_is_preempted_for_a_preemptor_of_equal_or_lower_priority() -> None:
    for preemptor in (5, 4):
        cluster = Cluster(node("node-a"))
        cluster.running("node-a", pod("running", "4", 5))
        decisions = cluster.schedule(pod("p", "4", preemptor))
        assert evicted(decisions) == [] and nominated(decisions) == {}


def test_an_untolerated_taint_makes_a_node_no_candidate() -> None:
    cluster = Cluster(node("node-a", taint="gpu"), node("node-b"))
    cluster.running("node-a", pod("cheap", "4", 1, tolerate="gpu"))
    cluster.running("node-b", pod("dear", "4", 5))
    assert evicted(cluster.schedule(pod("p", "4", 10))) == ["dear"]


def test_node_affinity_makes_other_nodes_no_candidates() -> None:
    cluster = Cluster(node("node-a", zone="a"), node("node-b", zone="b"))
    cluster.running("node-a", pod("cheap", "4", 1)).running("node-b", pod("dear", "4", 5))
    assert evicted(cluster.schedule(pod("p", "4", 10, selector={"zone": "b"}))) == ["dear"]


def test_no_preemption_when_only_unresolvable_nodes_have_victims() -> None:
    cluster = Cluster(node("node-a", taint="gpu"), node("node-b"))
    cluster.running("node-a", pod("cheap", "4", 1, tolerate="gpu"))
    cluster.running("node-b", pod("higher", "4", 20))
    decisions = cluster.schedule(pod("p", "4", 10))
    assert evicted(decisions) == [] and nominated(decisions) == {}


def test_a_node_too_small_even_when_empty_is_no_candidate() -> None:
    cluster = Cluster(node("small", "2"), node("big", "8"))
    cluster.running("small", pod("cheap", "2", 1)).running("big", pod("dear", "8", 5))
    assert evicted(cluster.schedule(pod("p", "4", 10))) == ["dear"]


# --- graceful termination (through the simulator) -----------------------------------------------------------

def test_room_frees_only_after_the_victims_termination_grace_period() -> None:
    inputs = inputs_of(
        MakeNode("node-a").alloc(cpu="4", memory="16Gi"),
        MakePod("victim").req(cpu="4").priority(1).node("node-a").annotation("phalanx.dev/duration", "10h"),
        MakePod("p").req(cpu="4").priority(10).arrival("100"),
    )
    inputs.pods[0].termination_grace = 120.0
    sim = Simulation(inputs, builtin("default"), until=3600.0).run()
    victim, preemptor = sim.pods["default/victim"], sim.pods["default/p"]
    assert victim.preempted_by == [{"time": 100.0, "preemptor": "default/p", "node": "node-a",
                                   "message": "Preempted by pod default/p on node node-a"}]
    assert victim.phase == "Failed" and victim.finished_at == 220.0
    assert preemptor.bound_at == 220.0 and preemptor.node == "node-a"


# --- many nodes at once = one node at a time --------------------------------------------------------------

def _outcome(cluster: Cluster, preemptor: Pod, *, vectorised: bool) -> tuple[list[str], dict[str, str]]:
    scheduler = cluster.scheduler
    machine: Preemptor = scheduler.preemptor
    machine.vectorised = vectorised
    machine.rng = np.random.default_rng(7)
    scheduler.pods[preemptor.key] = preemptor
    result = scheduler.cycle.schedule(preemptor)
    if result.node is not None:
        return [], {}
    outcome = machine.for_pod(preemptor, scheduler.priority_of(preemptor), result.unresolvable)
    return ([], {}) if outcome is None else (outcome.victims, outcome.nominations)


@st.composite
def busy_clusters(draw: st.DrawFn) -> tuple[Cluster, Pod]:
    """Nearly full nodes of mixed-priority pods (some in `all` groups, some under a PDB, a few terminating)."""
    count = draw(st.integers(1, 10))
    cluster = Cluster(*(node(f"node-{i}", draw(st.sampled_from(["2", "4", "8"])),
                             taint="t" if draw(st.integers(0, 7)) == 0 else None) for i in range(count)),
                      profile=draw(st.sampled_from(["default", "gang"])))
    for i in range(2):
        cluster.group(PodGroup("default", f"g{i}", None, disruption_mode=draw(st.sampled_from(["single", "all"]))))
    for i in range(count):
        free = int(cluster.scheduler.cluster.allocatable[i, 0])
        spare = draw(st.sampled_from([0, 0, 0, 500, 1000]))  # mostly full
        for j in range(12):
            cpu = min(free - spare, draw(st.sampled_from([250, 500, 1000, 1000, 2000])))
            if cpu <= 0:
                break
            free -= cpu
            cluster.running(f"node-{i}", pod(
                f"r-{i}-{j}", f"{cpu}m", draw(st.sampled_from([0, 1, 1, 5, 10, 20])),
                start=draw(st.sampled_from([-100.0, -50.0, -50.0, 0.0])), tolerate="t",
                labels={"app": draw(st.sampled_from(["web", "web", "db"]))},
                group=draw(st.sampled_from([None, None, None, None, "g0", "g1"]))))
    if draw(st.integers(0, 2)) == 0:
        cluster.budget(pdb("db", min_available=draw(st.sampled_from([0, 1, 2, "50%"])), app="db"))
    running = cluster.scheduler.running
    for key in list(running.node_of)[: draw(st.integers(0, 2))]:
        running.mark_terminating(key, "someone")
    for key in draw(st.lists(st.sampled_from(sorted(running.node_of)), max_size=3, unique=True)
                    if running.node_of else st.just([])):
        cluster.scheduler.delete_pod(key, 0.0)  # leaves holes in the node's slots
    for j in range(draw(st.integers(0, 3))):  # late arrivals of any importance go in between
        i = draw(st.integers(0, count - 1))
        state = cluster.scheduler.cluster
        if state.allocatable[i, 0] - state.requested[i, 0] >= 500:
            cluster.running(f"node-{i}", pod(f"late-{j}", "500m", draw(st.sampled_from([0, 1, 5, 20])),
                                             start=draw(st.sampled_from([-200.0, -50.0, 0.0])), tolerate="t"))
    preemptor = pod("p", draw(st.sampled_from(["500m", "1", "2", "3", "4"])), draw(st.sampled_from([5, 10, 10, 30])),
                    tolerate="t" if draw(st.booleans()) else None)
    return cluster, preemptor


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(busy_clusters())
def test_victims_selected_on_many_nodes_at_once_equal_one_node_at_a_time(case: tuple[Cluster, Pod]) -> None:
    cluster, preemptor = case
    one_by_one = _outcome(cluster, preemptor, vectorised=False)
    at_once = _outcome(cluster, preemptor, vectorised=True)
    assert at_once == one_by_one


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 2), st.sampled_from([0, 1, 5]),
                          st.sampled_from([-10.0, 0.0, 10.0])), max_size=40))
def test_running_pods_keep_each_nodes_slots_in_importance_order(steps: list[tuple[bool, int, int, float]]) -> None:
    cluster = Cluster(node("node-0", "64"), node("node-1", "64"), node("node-2", "64"))
    running = cluster.scheduler.running
    for i, (add, where, priority, start) in enumerate(steps):
        if add or not running.node_of:
            cluster.running(f"node-{where}", pod(f"p{i}", "100m", priority, start=start))
        else:
            cluster.scheduler.delete_pod(sorted(running.node_of)[where % len(running.node_of)], 0.0)
    running.slots()  # the slot tables in the cluster's shape
    for n in range(3):
        count = int(running.slot_count[n])
        keys = [running._slot_keys[n][s] for s in range(count)]
        live = [k for k in keys if k is not None]
        assert set(live) == running.on_node[n]
        assert live == sorted(live, key=lambda k: (-running.priority[k], running.started[k], running.seq[k]))
        for s, key in enumerate(keys):
            if key is None:
                assert running.slot_priority[s, n] > 2**61
            else:
                assert running.slot_priority[s, n] == running.priority[key]
        assert count == 0 or keys[-1] is not None  # no trailing holes


def test_node_without_victims_sorts_before_every_node_with_victims() -> None:
    assert MIN_PRIORITY > NO_VICTIM_PRIORITY
