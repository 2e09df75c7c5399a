"""KEP-5710 workload-aware preemption (the `gang` profile, GenericWorkload on), through the Scheduler.

A PodGroup's priority overrides its pods'; a gang that cannot place minCount members looks for victims in
the whole cluster; victims are units (a pod, or a `disruptionMode: all` group's running members) ordered by
priority, group before pod, larger group, earlier start; an `all` group is reprieved or evicted whole (with
rollback), also when the preemptor is a single pod (the v1.36 gap closed in v1.37); PodGroup
`preemptionPolicy: Never` counts only behind its gate; preempted groups get `DisruptionTarget`; with
GenericWorkload off, disruptionMode means nothing.
"""

from __future__ import annotations

import numpy as np

from phalanx.api.objects import Pod, PodGroup
from phalanx.scheduler.decisions import Bind, Evict, GroupCondition, Preemption, Unschedulable
from phalanx.scheduler.profiles import Profile, builtin
from phalanx.sim.simulation import Simulation
from tests.builders import MakeNode, MakePod, MakePodGroup, MakePriorityClass, MakeWorkload, inputs_of
from tests.scheduler.test_preemption import Cluster, evicted, node, nominated, pod


def group(name: str, min_count: int | None = None, *, priority: int | None = None, mode: str = "single",
          policy: str | None = None) -> PodGroup:
    """A v1beta1 PodGroup: gang with minCount (basic without), a priority, a disruptionMode, a preemptionPolicy."""
    builder = MakePodGroup(name).policy(min_count, priority)
    builder.doc["spec"]["disruptionMode"] = {mode: {}}
    if policy is not None:
        builder.doc["spec"]["preemptionPolicy"] = policy
    return builder.obj()


def gang_cluster(*nodes: MakeNode, gates: dict[str, bool] | None = None, seed: int = 0) -> Cluster:
    profile = Profile("gang", feature_gates={"GenericWorkload": True, **(gates or {})})
    return Cluster(*nodes, profile=profile, seed=seed)


def members(name: str, count: int, cpu: str = "4", priority: int = 0) -> list[Pod]:
    return [pod(f"{name}-{i}", cpu, priority, group=name) for i in range(count)]


# --- priority --------------------------------------------------------------------------------------------

def test_a_pod_group_preempts_with_its_priority_which_its_pods_must_share() -> None:
    # validatePodGroup: pending members must have the group's priority (spec.priority, 0 when unset);
    # a group whose pods do not is a SchedulerError and preempts nothing.
    for group_priority, pod_priority, expected in ((100, 100, ["low"]), (None, 0, []), (100, 0, [])):
        cluster = gang_cluster(node("node-a"))
        cluster.running("node-a", pod("low", "4", 50))
        cluster.group(group("train", 1, priority=group_priority))
        decisions = cluster.schedule(*members("train", 1, priority=pod_priority))
        assert evicted(decisions) == expected


def test_a_pod_groups_priority_overrides_its_pods_as_victims() -> None:
    # The running members say priority 100, their group says 5: a priority-10 pod may preempt them.
    cluster = gang_cluster(node("node-a"))
    cluster.group(group("batch", 1, priority=5))
    cluster.running("node-a", *members("batch", 1, priority=100))
    assert evicted(cluster.schedule(pod("p", "4", 10))) == ["batch-0"]


def test_a_pod_groups_priority_from_its_own_priority_class() -> None:
    workload = MakeWorkload("job").template("workers", gang=2, priority_class="urgent")
    inputs = inputs_of(MakePriorityClass("urgent", 1000), workload,
                       MakePodGroup("job-workers").workload("job", "workers").gang(2).priority_class("urgent"),
                       *(MakePod(f"w-{i}").req(cpu="4", memory="1Gi").group("job-workers").priority_class("urgent")
                         for i in range(2)))
    assert inputs.pod_groups[0].priority == 1000 and inputs.pods[0].priority == 1000
    cluster = gang_cluster(node("node-a"), node("node-b"))
    cluster.running("node-a", pod("a", "4", 500)).running("node-b", pod("b", "4", 500))
    cluster.group(inputs.pod_groups[0])
    assert sorted(evicted(cluster.schedule(*inputs.pods))) == ["a", "b"]


# --- a gang's victims: cluster-wide ------------------------------------------------------------------------

def test_a_gang_that_cannot_place_min_count_finds_victims_across_the_cluster() -> None:
    cluster = gang_cluster(node("node-a"), node("node-b"), node("node-c"), node("node-d"))
    for name in ("a", "b", "c"):
        cluster.running(f"node-{name}", pod(name, "4", 1))
    cluster.running("node-d", pod("d", "4", 50))
    cluster.group(group("train", 3, priority=10))
    decisions = cluster.schedule(*members("train", 3, priority=10))
    assert sorted(evicted(decisions)) == ["a", "b", "c"]
    assert sorted(nominated(decisions).values()) == ["node-a", "node-b", "node-c"]
    assert [(d.preemptor, d.group, len(d.victims)) for d in decisions if isinstance(d, Preemption)] == [
        ("default/train", True, 3)]


def test_a_gang_preempts_nothing_when_removing_every_lower_priority_pod_is_not_enough() -> None:
    cluster = gang_cluster(node("node-a"), node("node-b"))
    cluster.running("node-a", pod("a", "4", 1)).running("node-b", pod("b", "4", 50))
    cluster.group(group("train", 2, priority=10))
    decisions = cluster.schedule(*members("train", 2, priority=10))
    assert evicted(decisions) == [] and nominated(decisions) == {}


def test_a_gang_reprieves_victims_that_still_fit_beside_it() -> None:
    # Each full 4-cpu node: x1 (1 cpu, oldest), x2 (1 cpu), x3 (2 cpu). With a 2-cpu worker placed, x1 and
    # x2 fit back (most important first); x3 does not.
    cluster = gang_cluster(node("node-a"), node("node-b"))
    for x in ("a", "b"):
        cluster.running(f"node-{x}", pod(f"{x}1", "1", 1, start=-100), pod(f"{x}2", "1", 1, start=-10),
                        pod(f"{x}3", "2", 1, start=0.0))
    cluster.group(group("train", 2, priority=10))
    decisions = cluster.schedule(*members("train", 2, cpu="2", priority=10))
    assert sorted(evicted(decisions)) == ["a3", "b3"]


def test_a_gang_does_not_take_room_promised_to_a_nominated_preemptor() -> None:
    # p (priority 20) evicted one pod; the victim is gone but p, still in backoff, has not bound yet. A gang of
    # lower priority must leave that node to p and evict on the two others.
    cluster = gang_cluster(node("node-a"), node("node-b"), node("node-c"))
    for name in ("a", "b", "c"):
        cluster.running(f"node-{name}", pod(name, "4", 1))
    first = cluster.schedule(pod("p", "4", 20))
    taken = nominated(first)["p"]
    cluster.gone(*evicted(first), now=0.5)
    cluster.group(group("train", 2, priority=10), now=0.5)
    decisions = cluster.schedule(*members("train", 2, priority=10), now=0.5)
    assert sorted(nominated(decisions).values()) == sorted({"node-a", "node-b", "node-c"} - {taken})
    assert len(evicted(decisions)) == 2


# --- victim order ---------------------------------------------------------------------------------------

def test_victim_units_are_ordered_priority_then_group_then_size_then_start() -> None:
    cluster = gang_cluster(*(node(f"node-{i}", "32") for i in range(3)))
    for name in ("small-old", "small-new", "big-new", "big-old"):
        cluster.group(group(name, 1, priority=5, mode="all"))
    layout = {"small-old": (2, -300.0), "small-new": (2, -50.0), "big-new": (3, -10.0), "big-old": (3, -200.0)}
    for name, (size, start) in layout.items():
        for i in range(size):
            cluster.running(f"node-{i}", pod(f"{name}-{i}", "1", 0, group=name, start=start))
    cluster.running("node-0", pod("solo-old", "1", 5, start=-900), pod("high", "1", 7, start=0.0))
    cluster.running("node-1", pod("solo-new", "1", 5, start=-1))
    running = cluster.scheduler.running
    units = cluster.scheduler.preemptor.units(running.node_of, 10)
    assert [u.group.split("/")[1] if u.group else u.pods[0].split("/")[1] for u in units] == [
        "high", "big-old", "big-new", "small-old", "small-new", "solo-old", "solo-new"]
    assert [u.size for u in units] == [1, 3, 3, 2, 2, 1, 1]


def test_a_group_is_reprieved_before_a_pod_of_the_same_priority() -> None:
    cluster = gang_cluster(node("node-a", "8"))
    cluster.group(group("keep", 1, priority=1, mode="all"))
    cluster.running("node-a", pod("solo", "4", 1, start=-1000), *members("keep", 1, priority=1))
    cluster.group(group("train", 1, priority=10))
    assert evicted(cluster.schedule(*members("train", 1, priority=10))) == ["solo"]


# --- disruptionMode: all ------------------------------------------------------------------------------------

def test_an_all_group_is_reprieved_or_evicted_whole_with_rollback() -> None:
    # keep-0 (node-b) fits back, keep-1 (node-a, where the preemptor goes) does not: keep-0 must not stay
    # reprieved. y on node-b is then reprieved in the room keep-0 leaves.
    cluster = gang_cluster(node("node-a", zone="a"), node("node-b", zone="b"))
    cluster.group(group("keep", 2, priority=1, mode="all"))
    cluster.running("node-b", pod("keep-0", "2", group="keep"), pod("y", "2", 1))
    cluster.running("node-a", pod("keep-1", "2", group="keep"), pod("x", "2", 1))
    cluster.group(group("train", 1, priority=10))
    decisions = cluster.schedule(pod("train-0", "4", 10, group="train", selector={"zone": "a"}))
    assert sorted(evicted(decisions)) == ["keep-0", "keep-1", "x"]
    state = cluster.scheduler.cluster
    assert state.requested[:, state.column["cpu"]].tolist() == [4000, 4000]  # victims hold until gone
    assert not state.overcommitted().any()


def test_a_single_pod_preemptor_evicts_an_all_group_with_every_member() -> None:
    cluster = gang_cluster(node("node-a"), node("node-b"), node("node-c"))
    cluster.group(group("batch", 3, priority=1, mode="all"))
    for i, name in enumerate(("node-a", "node-b", "node-c")):
        cluster.running(name, pod(f"batch-{i}", "4", group="batch"))
    decisions = cluster.schedule(pod("web", "4", 10))
    assert sorted(evicted(decisions)) == ["batch-0", "batch-1", "batch-2"]
    assert len(nominated(decisions)) == 1


def test_a_single_pod_preemptor_evicts_one_member_of_a_single_group() -> None:
    cluster = gang_cluster(node("node-a"), node("node-b"), node("node-c"))
    cluster.group(group("batch", 3, priority=1, mode="single"))
    for i, name in enumerate(("node-a", "node-b", "node-c")):
        cluster.running(name, pod(f"batch-{i}", "4", group="batch"))
    assert len(evicted(cluster.schedule(pod("web", "4", 10)))) == 1


def test_a_single_pod_preemptor_prefers_a_node_whose_victims_are_not_a_whole_group() -> None:
    cluster = gang_cluster(node("node-a"), node("node-b"))
    cluster.group(group("batch", 2, priority=1, mode="all"))
    cluster.running("node-a", pod("batch-0", "2", group="batch"), pod("batch-1", "2", group="batch"))
    cluster.running("node-b", pod("solo", "4", 1))
    assert evicted(cluster.schedule(pod("web", "4", 10))) == ["solo"]


def test_without_generic_workload_disruption_mode_is_ignored() -> None:
    cluster = Cluster(node("node-a"), node("node-b"), node("node-c"), profile="default")
    cluster.group(group("batch", 3, priority=1, mode="all"))
    for i, name in enumerate(("node-a", "node-b", "node-c")):
        cluster.running(name, pod(f"batch-{i}", "4", 1, group="batch"))
    assert len(evicted(cluster.schedule(pod("web", "4", 10)))) == 1


# --- preemptionPolicy on a PodGroup -----------------------------------------------------------------------

def test_pod_group_preemption_policy_never_counts_only_behind_its_gate() -> None:
    for gate, expected in ((True, []), (False, ["a"])):
        cluster = gang_cluster(node("node-a"), gates={"PodGroupPreemptionPolicy": gate})
        cluster.running("node-a", pod("a", "4", 1))
        cluster.group(group("train", 1, priority=10, policy="Never"))
        # With the gate on, the pods must share the group's policy (validatePodGroup).
        decisions = cluster.schedule(pod("train-0", "4", 10, group="train", policy="Never" if gate else None))
        assert evicted(decisions) == expected
        assert [d.pod.name for d in decisions if isinstance(d, Unschedulable)] == ["train-0"]


def test_with_the_gate_off_a_group_never_preempts_when_a_pending_member_says_never() -> None:
    """preemption/manager.go getPreemptionPolicy, PodGroupPreemptionPolicy off: Never as soon as one pending
    member's preemptionPolicy is Never (pods take it from their PriorityClass)."""
    inputs = inputs_of(MakePriorityClass("quiet", 10).preemption_policy("Never"), MakePodGroup("train").gang(1)
                       .priority(10), MakePod("train-0").req(cpu="4", memory="1Gi").group("train")
                       .priority_class("quiet"))
    assert inputs.pods[0].preemption_policy == "Never"
    cluster = gang_cluster(node("node-a"))
    cluster.running("node-a", pod("a", "4", 1))
    cluster.group(inputs.pod_groups[0])
    assert evicted(cluster.schedule(*inputs.pods)) == []


def test_with_the_gate_on_a_groups_policy_comes_from_its_own_priority_class() -> None:
    """getPreemptionPolicy, PodGroupPreemptionPolicy on: the PodGroup's spec.preemptionPolicy, which must agree
    with its PriorityClass's (Priority admission)."""
    for policy, expected in (("Never", []), ("PreemptLowerPriority", ["a"])):
        train = MakePodGroup("train").gang(1).priority_class("batch")
        train.doc["spec"]["preemptionPolicy"] = policy
        inputs = inputs_of(MakePriorityClass("batch", 10).preemption_policy(policy), train,
                           MakePod("train-0").req(cpu="4", memory="1Gi").group("train").priority_class("batch"))
        assert inputs.pod_groups[0].preemption_policy == policy
        cluster = gang_cluster(node("node-a"), gates={"PodGroupPreemptionPolicy": True})
        cluster.running("node-a", pod("a", "4", 1))
        cluster.group(inputs.pod_groups[0])
        assert evicted(cluster.schedule(*inputs.pods)) == expected


# --- unschedulable outcomes that go to preemption ---------------------------------------------------------

def test_a_basic_group_that_places_nothing_preempts() -> None:
    """algorithm_podgroup.go RunRootSchedulingAlgorithm: success with nothing scheduled is Unschedulable
    ("no pods were schedulable"), so a basic group none of whose pods fit goes to workload-aware preemption."""
    cluster = gang_cluster(node("node-a"), node("node-b"))
    cluster.running("node-a", pod("a", "4", 1)).running("node-b", pod("b", "4", 50))
    cluster.group(group("web", None, priority=10))
    decisions = cluster.schedule(*members("web", 2, priority=10))
    assert evicted(decisions) == ["a"]
    assert list(nominated(decisions).values()) == ["node-a"]
    conditions = [(d.status, d.reason) for d in decisions if isinstance(d, GroupCondition)]
    assert conditions == [(False, "Unschedulable")]


def test_extra_members_of_a_gang_already_at_min_count_preempt() -> None:
    """RunRootSchedulingAlgorithm: a gang whose running members already make minCount but none of whose
    pending members fit is Unschedulable too, and preempts for them."""
    cluster = gang_cluster(node("node-a"), node("node-b"))
    cluster.group(group("train", 1, priority=10))
    cluster.running("node-a", pod("train-0", "4", 10, group="train"))
    cluster.running("node-b", pod("b", "4", 1))
    decisions = cluster.schedule(pod("train-1", "4", 10, group="train"))
    assert evicted(decisions) == ["b"]
    assert nominated(decisions) == {"train-1": "node-b"}


def test_a_gang_whose_victims_are_still_terminating_does_not_preempt_again() -> None:
    cluster = gang_cluster(node("node-a"), node("node-b"), node("node-c"))
    for name in ("a", "b", "c"):
        cluster.running(f"node-{name}", pod(name, "4", 1))
    cluster.group(group("train", 2, priority=10))
    first = cluster.schedule(*members("train", 2, priority=10))
    assert len(evicted(first)) == 2
    assert evicted(cluster.retry(5.0)) == []
    cluster.gone(*evicted(first), now=30.0)
    # The group is tried again when its backoff ends (at 2, 5, 10, 19, 34 s), not when its victims go.
    assert cluster.retry(30.0) == []
    decisions = cluster.scheduler.schedule(34.0)
    assert sorted(d.node for d in decisions if isinstance(d, Bind)) == sorted(nominated(first).values())


# --- what the driver sees ---------------------------------------------------------------------------------

def test_preempted_groups_get_the_disruption_target_condition() -> None:
    batch = MakePodGroup("batch").gang(2).priority(1)
    batch.doc["spec"]["disruptionMode"] = {"all": {}}
    inputs = inputs_of(
        MakeNode("node-a").alloc(cpu="4", memory="16Gi"), MakeNode("node-b").alloc(cpu="4", memory="16Gi"),
        batch,
        *(MakePod(f"batch-{i}").req(cpu="4").group("batch").node(f"node-{'ab'[i]}").duration("10h")
          for i in range(2)),
        MakePod("web").req(cpu="4").priority(100).arrival("600").duration("1h"),
    )
    sim = Simulation(inputs, builtin("gang"), until=4 * 3600.0).run()
    record = sim.groups["default/batch"]
    condition = record.conditions["DisruptionTarget"]
    assert (condition["status"], condition["reason"], condition["lastTransitionTime"]) == (
        "True", "PreemptionByScheduler", 600.0)
    assert "default/web" in condition["message"]
    assert record.preempted_count == 1
    assert [sim.pods[f"default/batch-{i}"].preempted_count for i in range(2)] == [1, 1]


def test_no_node_is_over_committed_after_group_preemption() -> None:
    cluster = gang_cluster(*(node(f"node-{i}", "8") for i in range(6)))
    rng = np.random.default_rng(3)
    for i in range(6):
        for j in range(4):
            cluster.running(f"node-{i}", pod(f"v-{i}-{j}", "2", int(rng.integers(0, 3))))
    cluster.group(group("train", 5, priority=10))
    decisions = cluster.schedule(*members("train", 5, cpu="6", priority=10))
    assert len(nominated(decisions)) == 5
    assert not cluster.scheduler.cluster.overcommitted().any()
    victims = [d for d in decisions if isinstance(d, Evict)]
    assert victims and all(cluster.scheduler.running.priority[d.pod.key] < 10 for d in victims)


# --- MoreImportantVictim: a PodGroup member outranks a bare pod, in single mode too ------------------------

def test_a_single_mode_member_is_reprieved_before_an_older_bare_pod_of_equal_priority() -> None:
    """preemption's MoreImportantVictim (GenericWorkload on): priority, then a pod with spec.schedulingGroup
    before a bare pod (IsPodGroup reads the pod, so a `disruptionMode: single` member counts), then larger,
    then older. Both the vectorised and the one-by-one victim selection follow it."""
    for vectorised in (True, False):
        cluster = gang_cluster(node("node-a"))
        cluster.scheduler.preemptor.vectorised = vectorised
        cluster.group(group("batch", 1, priority=1, mode="single"))
        cluster.running("node-a", pod("solo", "2", 1, start=-1000), pod("batch-0", "2", 1, group="batch", start=0))
        assert evicted(cluster.schedule(pod("p", "2", 10))) == ["solo"]


def test_victim_units_rank_group_members_before_bare_pods_in_single_mode() -> None:
    cluster = gang_cluster(node("node-0", "32"))
    cluster.group(group("one", 1, priority=5, mode="single"))
    cluster.running("node-0", pod("bare-old", "1", 5, start=-900), pod("one-0", "1", 5, group="one", start=-1),
                    pod("bare-new", "1", 5, start=-10), pod("one-1", "1", 5, group="one", start=-50))
    units = cluster.scheduler.preemptor.units(cluster.scheduler.running.node_of, 10)
    assert [u.pods[0].split("/")[1] for u in units] == ["one-1", "one-0", "bare-old", "bare-new"]


def test_without_generic_workload_membership_does_not_rank() -> None:
    cluster = Cluster(node("node-a"), profile="default")
    cluster.group(group("batch", 1, priority=1, mode="single"))
    cluster.running("node-a", pod("solo", "2", 1, start=-1000), pod("batch-0", "2", 1, group="batch", start=0))
    assert evicted(cluster.schedule(pod("p", "2", 10))) == ["batch-0"]


def test_terminating_members_do_not_count_toward_min_count() -> None:
    # A gang of minCount 3 runs three members; a high-priority pod preempts two of them (single mode), which
    # stay terminating for their grace period. A fourth member that arrives meanwhile must not bind alone:
    # one live member plus itself is two, below minCount.
    cluster = gang_cluster(node("node-a", "4"), node("node-b", "9"))  # node-b keeps 1 cpu free
    cluster.group(group("g", 3))
    cluster.running("node-a", *members("g", 2, "2"))
    cluster.running("node-b", pod("g-2", "2", group="g"), pod("filler", "6", 100))
    decisions = cluster.schedule(pod("urgent", "4", 1000))
    assert sorted(evicted(decisions)) == ["g-0", "g-1"]
    late = pod("g-3", "1", group="g")
    decisions = cluster.schedule(late, now=1.0)
    assert not [d for d in decisions if isinstance(d, Bind) and d.pod.name == "g-3"]
    assert any(isinstance(d, Unschedulable) and d.pod.name == "g-3" for d in decisions)


# --- reprieve: the preemptor pods' rules between pods ------------------------------------------------------

def _reprieve_run(victim: MakePod) -> dict[str, str | None]:
    """Two 2-cpu nodes; a 0.25-cpu victim on node1; a gang of two 1.5-cpu `app=train` pods of priority 100.
    The victim's room is not needed (each node keeps 0.5 cpu): only a rule between pods can evict it."""
    nodes = [MakeNode(f"node{i}").label("kubernetes.io/hostname", f"node{i}").alloc(cpu="2", memory="4Gi")
             for i in (1, 2)]
    gang = [MakePod(f"train-{i}").label("app", "train").req(cpu="1500m").group("train").priority(100).grace(0)
            for i in range(2)]
    inputs = inputs_of(*nodes, MakePodGroup("train").gang(2).priority(100), victim, *gang)
    sim = Simulation(inputs, builtin("gang"))
    sim.recreate_bare_members = False
    sim.run()
    return {key.split("/")[1]: record.node for key, record in sim.pods.items()}


def test_a_victim_whose_anti_affinity_rejects_a_preemptor_pod_is_not_reprieved() -> None:
    """reprieveVictim re-runs the preemptor pods' Filter plugins with the victim back: InterPodAffinity also
    checks the existing pods' required anti-affinity against the incoming pod, so a victim that refuses `app=train`
    beside it stays a victim."""
    refusing = MakePod("victim").node("node1").req(cpu="250m").priority(10).grace(0) \
        .pod_anti_affinity("kubernetes.io/hostname", {"app": "train"})
    placed = _reprieve_run(refusing)
    assert placed["victim"] is None and {placed["train-0"], placed["train-1"]} == {"node1", "node2"}
    # A victim that refuses only other pods (`app=web`) is put back: the gang binds beside it.
    tolerant = MakePod("victim").node("node1").req(cpu="250m").priority(10).grace(0) \
        .pod_anti_affinity("kubernetes.io/hostname", {"app": "web"})
    placed = _reprieve_run(tolerant)
    assert placed["victim"] == "node1" and {placed["train-0"], placed["train-1"]} == {"node1", "node2"}
