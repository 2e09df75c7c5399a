"""A failed PodGroup cycle in kube-scheduler v1.37.2's words (phalanx/scheduler/group_status.py): the group's
status as podGroupSchedulingDefaultAlgorithm and GangScheduling.PlacementFeasible build it, the
PodGroupPostFilter's reason appended, and each member's message as submitPodGroupAlgorithmResult hands it out.
The words were read from the real kube-scheduler's FailedScheduling messages (`phalanx verify` on the cases
of tests/verify/test_gang_messages.py)."""

from dataclasses import replace

from phalanx.scheduler.decisions import Decision, Evict, GroupCondition, Unschedulable
from phalanx.scheduler.group_status import (
    DRA_RELEASED,
    GroupStatus,
    Trace,
    member_messages,
    placement_feasible,
    placements_failed,
    post_filter_reason,
)
from phalanx.scheduler.profiles import builtin
from phalanx.scheduler.scheduler import Scheduler
from tests.builders import MakeNode, MakePod, MakePodGroup

NO_VICTIMS = "No preemption victims found for incoming preemptor"


def test_placement_feasible_in_gangschedulings_words() -> None:
    assert placement_feasible(4, 2, 1) == ("unschedulable",
                                           "minCount (4) cannot be satisfied: 2 scheduled, 1 remaining")
    assert placement_feasible(4, 2, 2) == ("wait", "minCount (4) is not yet satisfied: 2 scheduled, 2 remaining")
    assert placement_feasible(4, 4, 0) is None
    assert placement_feasible(1, 0, 0) == ("unschedulable",
                                           "minCount (1) cannot be satisfied: 0 scheduled, 0 remaining")


def test_the_cycle_stops_once_min_count_cannot_be_met() -> None:
    trace = Trace.start(4, 0, ["a", "b", "c", "d", "e"])
    for key, fitted in (("a", True), ("b", False), ("c", False), ("d", True), ("e", True)):
        trace.tried(key, fitted)
    # After c: 1 scheduled + 2 remaining < 4. d and e were never tried, whatever Phalanx's own walk found.
    assert trace.final() == GroupStatus(("minCount (4) cannot be satisfied: 1 scheduled, 2 remaining",))
    assert (trace.fitted, trace.untried) == (["a"], ["d", "e"])


def test_running_members_count_as_scheduled() -> None:
    trace = Trace.start(3, 2, ["a", "b"])
    trace.tried("a", False)
    trace.tried("b", False)
    assert trace.final().message == "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining"


def test_too_few_members_stop_the_cycle_before_any_is_tried() -> None:
    trace = Trace.start(4, 0, ["a", "b"])
    trace.tried("a", True)
    trace.tried("b", True)
    assert trace.final().message == ("pod group is unschedulable, minCount (4) cannot be satisfied: 0 scheduled, "
                                     "2 remaining")
    assert (trace.fitted, trace.untried) == ([], ["a", "b"])


def test_min_count_met_without_a_pod_placed_is_unschedulable() -> None:
    trace = Trace.start(2, 2, ["a"])
    trace.tried("a", False)
    assert trace.final() == GroupStatus(unschedulable=True)
    assert trace.final().message == "pod group is unschedulable"


def test_the_first_placements_status_is_reported_as_an_error() -> None:
    # AsError of a status with errPodGroupUnschedulable is that error alone: its reasons are dropped.
    assert placements_failed(2, GroupStatus(("minCount (3) cannot be satisfied: 2 scheduled, 0 remaining",))).message \
        == ("pod group is unschedulable, 0/2 placements are available, first placement status: minCount (3) cannot "
            "be satisfied: 2 scheduled, 0 remaining")
    assert placements_failed(3, GroupStatus(("x",), unschedulable=True)).message == \
        "pod group is unschedulable, 0/3 placements are available, first placement status: pod group is unschedulable"


def test_post_filter_reasons_join_unless_one_ends_the_run() -> None:
    assert post_filter_reason(enabled=True, dra=None, preemption=NO_VICTIMS, resolvable=False) == \
        f"pod group preemption: {NO_VICTIMS}"
    # UnschedulableAndUnresolvable and Success end RunPodGroupPostFilterPlugins with their own status.
    assert post_filter_reason(enabled=True, dra=DRA_RELEASED, preemption=NO_VICTIMS, resolvable=False) == \
        f"pod group preemption: {NO_VICTIMS}"
    assert post_filter_reason(enabled=True, dra=DRA_RELEASED, preemption="x", success=True) == \
        "pod group preemption: x"
    never = "not eligible due to preemptionPolicy=Never."
    assert post_filter_reason(enabled=True, dra=DRA_RELEASED, preemption=never) == \
        f"{DRA_RELEASED}, pod group preemption: {never}"
    assert post_filter_reason(enabled=False, dra=None, preemption=None) == ""


def test_each_member_gets_the_words_of_how_far_the_cycle_took_it() -> None:
    status = GroupStatus(("minCount (4) cannot be satisfied: 2 scheduled, 1 remaining",))
    own = {"c": "0/4 nodes are available: 4 Insufficient cpu."}
    group, messages = member_messages(status, f"pod group preemption: {NO_VICTIMS}", own, ["a", "b"], ["d"])
    assert group == f"minCount (4) cannot be satisfied: 2 scheduled, 1 remaining, pod group preemption: {NO_VICTIMS}"
    assert messages == {"a": f"pod group is unschedulable, {group}", "b": f"pod group is unschedulable, {group}",
                        "c": own["c"], "d": "minCount (4) cannot be satisfied: 2 scheduled, 1 remaining"}
    # Waiting on its preemption, a member that fitted gets the group's status as it is.
    _, waiting = member_messages(status, "pod group preemption: x", own, ["a"], [], waiting_on_preemption=True)
    assert waiting["a"] == "minCount (4) cannot be satisfied: 2 scheduled, 1 remaining, pod group preemption: x"
    # No PodGroupPostFilter reason (no preemption in the profile): an empty one is appended all the same.
    assert member_messages(status, "", {}, [], [])[0] == "minCount (4) cannot be satisfied: 2 scheduled, 1 remaining, "


# --- through the Scheduler ---------------------------------------------------------------------------------

def _scheduler(*cpus: int) -> Scheduler:
    nodes = [MakeNode(f"node-{i}").alloc(cpu=str(c), memory="64Gi").obj() for i, c in enumerate(cpus)]
    return Scheduler(replace(builtin("gang"), group_retry="backoff"), nodes)


def _messages(decisions: list[Decision]) -> dict[str, str]:
    return {d.pod.name: d.message for d in decisions if isinstance(d, Unschedulable)}


def _condition(decisions: list[Decision]) -> str:
    [found] = [d.message for d in decisions if isinstance(d, GroupCondition)]
    return found


def test_a_gang_that_preempts_tells_its_fitted_members_the_preemption() -> None:
    scheduler = _scheduler(4, 4)
    scheduler.add_pod(MakePod("low").req(cpu="4").priority(10).obj(), 0.0, node="node-1")
    scheduler.add_pod_group(MakePodGroup("g").gang(2).priority(100).obj(), 0.0)
    for i in range(2):
        scheduler.add_pod(MakePod(f"w-{i}").req(cpu="4").group("g").priority(100).obj(), 0.0)
    decisions = scheduler.schedule(0.0)
    assert [d.pod.name for d in decisions if isinstance(d, Evict)] == ["low"]
    group = ("minCount (2) cannot be satisfied: 1 scheduled, 0 remaining, pod group preemption: found a placement "
             "for podgroup, preempting 1 victims")
    assert _condition(decisions) == group
    # Waiting on preemption: the member that fitted gets the group's status without errPodGroupUnschedulable.
    assert _messages(decisions) == {"w-0": group, "w-1": "0/2 nodes are available: 2 Insufficient cpu."}


def test_a_gang_that_may_not_preempt_says_so() -> None:
    scheduler = _scheduler(4, 4)
    scheduler.add_pod(MakePod("low").req(cpu="4").priority(10).obj(), 0.0, node="node-1")
    scheduler.add_pod_group(MakePodGroup("g").gang(2).priority(100).obj(), 0.0)
    for i in range(2):
        never = MakePod(f"w-{i}").req(cpu="4").group("g").priority(100)
        never.spec["preemptionPolicy"] = "Never"  # as a PriorityClass with preemptionPolicy Never sets it
        scheduler.add_pod(never.obj(), 0.0)
    decisions = scheduler.schedule(0.0)
    assert not [d for d in decisions if isinstance(d, Evict)]
    assert _condition(decisions) == ("minCount (2) cannot be satisfied: 1 scheduled, 0 remaining, pod group "
                                     "preemption: not eligible due to preemptionPolicy=Never.")


def test_a_basic_group_none_of_whose_pods_fit() -> None:
    scheduler = _scheduler(2)
    scheduler.add_pod_group(MakePodGroup("g").basic().obj(), 0.0)
    for i in range(2):
        scheduler.add_pod(MakePod(f"w-{i}").req(cpu="3").group("g").obj(), 0.0)
    decisions = scheduler.schedule(0.0)
    # minCount is 1 for a basic group: both were tried, each keeps its fit error (checked on the real
    # kube-scheduler: tests/verify/test_gang_messages.py).
    assert _messages(decisions) == {f"w-{i}": "0/1 nodes are available: 1 Insufficient cpu." for i in range(2)}
    assert _condition(decisions) == (f"minCount (1) cannot be satisfied: 0 scheduled, 0 remaining, pod group "
                                     f"preemption: {NO_VICTIMS}")


def test_with_the_topology_gate_every_group_reports_its_one_placement() -> None:
    # podGroupSchedulingAlgorithm: with TopologyAwareWorkloadScheduling on, a group without a constraint goes
    # through the placement algorithm too, with one placement of every node (TestPodGroupPreemption's cases on
    # the real kube-scheduler: "Insufficient Resources (No Preemption)").
    profile = builtin("gang")
    profile = replace(profile, feature_gates={**profile.feature_gates, "TopologyAwareWorkloadScheduling": True})
    scheduler = Scheduler(profile, [MakeNode("node-0").alloc(cpu="2", memory="64Gi").obj()])
    scheduler.add_pod_group(MakePodGroup("g").gang(2).obj(), 0.0)
    for i in range(2):
        scheduler.add_pod(MakePod(f"w-{i}").req(cpu="2").group("g").obj(), 0.0)
    status = ("pod group is unschedulable, 0/1 placements are available, first placement status: minCount (2) "
              "cannot be satisfied: 1 scheduled, 0 remaining")
    assert _messages(scheduler.schedule(0.0)) == {
        "w-0": f"pod group is unschedulable, {status}, pod group preemption: {NO_VICTIMS}",
        "w-1": "0/1 nodes are available: 1 Insufficient cpu."}
