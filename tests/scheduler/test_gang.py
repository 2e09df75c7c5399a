"""The Scheduler with and without GenericWorkload: PreEnqueue gating, the all-or-nothing PodGroup cycle,
minCount changes, running members, extra members, and queue order."""

from dataclasses import replace

from phalanx.api.objects import Node, Pod
from phalanx.scheduler.decisions import Bind, Decision, Evict, GroupCondition, Nominate, Unschedulable
from phalanx.scheduler.profiles import builtin
from phalanx.scheduler.queue import Where
from phalanx.scheduler.scheduler import Scheduler
from tests.builders import MakeNode, MakePod, MakePodGroup


def nodes(*free_cpus: int) -> list[Node]:
    return [MakeNode(f"node-{i}").alloc(cpu=str(c), memory="64Gi").obj() for i, c in enumerate(free_cpus)]


def member(i: int, group: str = "g", cpu: str = "4", **kw: int) -> Pod:
    pod = MakePod(f"w-{i}").req(cpu=cpu).group(group)
    if "priority" in kw:
        pod.priority(kw["priority"])
    return pod.obj()


def binds(decisions: list[Decision]) -> dict[str, str]:
    return {d.pod.name: d.node for d in decisions if isinstance(d, Bind)}


def unschedulable(decisions: list[Decision]) -> dict[str, str]:
    return {d.pod.name: d.message for d in decisions if isinstance(d, Unschedulable)}


def conditions(decisions: list[Decision]) -> list[tuple[str, bool, str]]:
    return [(d.type, d.status, d.reason) for d in decisions if isinstance(d, GroupCondition)]


def gang_scheduler(*free_cpus: int, group_retry: str = "backoff") -> Scheduler:
    return Scheduler(replace(builtin("gang"), group_retry=group_retry), nodes(*free_cpus))


# --- GenericWorkload off ---

def test_without_generic_workload_members_are_scheduled_one_at_a_time() -> None:
    scheduler = Scheduler(builtin("default"), nodes(8, 4))
    scheduler.add_pod_group(MakePodGroup("g").gang(4).obj(), 0.0)
    for i in range(4):
        scheduler.add_pod(member(i), 0.0)
    decisions = scheduler.schedule(0.0)
    assert len(binds(decisions)) == 3               # half a gang (and more) binds: nothing holds it back
    assert set(unschedulable(decisions)) == {"w-3"}
    assert unschedulable(decisions)["w-3"] == "0/2 nodes are available: 2 Insufficient cpu."


# --- PreEnqueue ---

def test_members_wait_for_their_pod_group() -> None:
    scheduler = gang_scheduler(16)
    for i in range(2):
        scheduler.add_pod(member(i), 0.0)
    assert scheduler.schedule(0.0) == []
    assert scheduler.pod_message("default/w-0") == "waiting for PodGroup default/g to be created"
    scheduler.add_pod_group(MakePodGroup("g").gang(2).obj(), 5.0)
    assert set(binds(scheduler.schedule(5.0))) == {"w-0", "w-1"}


def test_members_wait_for_min_count_pods_to_exist() -> None:
    scheduler = gang_scheduler(16)
    scheduler.add_pod_group(MakePodGroup("g").gang(3).obj(), 0.0)
    scheduler.add_pod(member(0), 0.0)
    scheduler.add_pod(member(1), 0.0)
    assert scheduler.schedule(0.0) == []
    assert scheduler.pod_message("default/w-1") == "waiting for pod group default/g: 2 of the 3 pods (minCount) exist"
    scheduler.add_pod(member(2), 1.0)
    decisions = scheduler.schedule(1.0)
    assert set(binds(decisions)) == {"w-0", "w-1", "w-2"}
    assert conditions(decisions) == [("PodGroupInitiallyScheduled", True, "Scheduled")]
    assert scheduler.pod_message("default/w-0") is None


# --- all or nothing ---

def test_a_gang_that_does_not_fit_binds_nothing() -> None:
    scheduler = gang_scheduler(7, 7, 2, 2)  # the seed's fragments
    scheduler.add_pod_group(MakePodGroup("g").gang(4).obj(), 0.0)
    for i in range(4):
        scheduler.add_pod(member(i), 0.0)
    decisions = scheduler.schedule(0.0)
    assert binds(decisions) == {}
    assert scheduler.cluster.bound == {}
    # kube-scheduler's words (submitPodGroupAlgorithmResult): w-0 and w-1 fitted, w-2 failed on its own, and
    # GangScheduling.PlacementFeasible stopped the cycle there, so w-3 was never tried.
    status = "minCount (4) cannot be satisfied: 2 scheduled, 1 remaining"
    group = f"{status}, pod group preemption: No preemption victims found for incoming preemptor"
    assert unschedulable(decisions) == {"w-0": f"pod group is unschedulable, {group}",
                                        "w-1": f"pod group is unschedulable, {group}",
                                        "w-2": "0/4 nodes are available: 4 Insufficient cpu.", "w-3": status}
    assert conditions(decisions) == [("PodGroupInitiallyScheduled", False, "Unschedulable")]
    entry = scheduler.queue.entries["group:default/g"]
    # Retried when its backoff ends, whatever the events; while nothing changes each retry would fail as this one
    # did, so the entry sleeps until the next event.
    assert entry.where is Where.UNSCHEDULABLE and entry.timed
    assert not scheduler.cluster.overcommitted().any()


def test_the_group_retries_as_one_unit_on_its_backoff_once_room_frees() -> None:
    # v1.37.2 requeues a failed group cycle with no rejecting plugin (requeuePodGroup): it backs off and is tried
    # again when the backoff ends, not when an event comes. Retries at 2, 5, 10, 19, 36, 57, 78 s: the backoff
    # doubles from 1 s up to 10 s × √4, on whole-second windows.
    scheduler = gang_scheduler(16, 8)
    blocker = MakePod("blocker").req(cpu="12").obj()
    scheduler.add_pod(blocker, 0.0, node="node-0")
    scheduler.add_pod_group(MakePodGroup("g").gang(4).obj(), 0.0)
    for i in range(4):
        scheduler.add_pod(member(i), 0.0)
    assert binds(scheduler.schedule(0.0)) == {}
    assert scheduler.queue.next_backoff() is None    # nothing changes: the retries would fail as the first did
    assert scheduler.schedule(30.0) == []
    scheduler.delete_pod("default/blocker", 60.0)
    assert scheduler.schedule(60.0) == []            # the event does not move the group
    assert scheduler.queue.next_backoff() == 78.0
    decisions = scheduler.schedule(78.0)
    assert set(binds(decisions)) == {"w-0", "w-1", "w-2", "w-3"}
    assert conditions(decisions) == [("PodGroupInitiallyScheduled", True, "Scheduled")]
    assert "group:default/g" not in scheduler.queue


def test_with_event_retries_the_group_binds_as_soon_as_room_frees() -> None:
    # The `phalanx` and `volcano` profiles: a failed group waits for an event that may help, as a pod does.
    assert (builtin("phalanx").group_retry, builtin("volcano").group_retry) == ("event", "event")
    scheduler = gang_scheduler(16, 8, group_retry="event")
    scheduler.add_pod(MakePod("blocker").req(cpu="12").obj(), 0.0, node="node-0")
    scheduler.add_pod_group(MakePodGroup("g").gang(4).obj(), 0.0)
    for i in range(4):
        scheduler.add_pod(member(i), 0.0)
    assert binds(scheduler.schedule(0.0)) == {}
    assert scheduler.queue.entries["group:default/g"].where is Where.UNSCHEDULABLE
    scheduler.delete_pod("default/blocker", 60.0)
    assert set(binds(scheduler.schedule(60.0))) == {"w-0", "w-1", "w-2", "w-3"}


def test_lowering_min_count_takes_effect_at_the_next_cycle() -> None:
    scheduler = gang_scheduler(8)
    scheduler.add_pod_group(MakePodGroup("g").gang(4).obj(), 0.0)
    for i in range(4):
        scheduler.add_pod(member(i), 0.0)
    assert binds(scheduler.schedule(0.0)) == {}
    scheduler.add_pod_group(MakePodGroup("g").gang(2).obj(), 10.0)   # kubectl edit: minCount 4 → 2
    decisions = scheduler.schedule(10.0)
    assert set(binds(decisions)) == {"w-0", "w-1"}
    assert set(unschedulable(decisions)) == {"w-2", "w-3"}
    assert unschedulable(decisions)["w-2"] == "0/1 nodes are available: 1 Insufficient cpu."
    assert conditions(decisions) == [("PodGroupInitiallyScheduled", True, "Scheduled")]
    # The group went straight back to activeQ with w-2 and w-3 (AddAttemptedPodGroupIfNeeded) and was tried again.
    # minCount met by the running pods, nothing more placed: a success without a pod (errPodGroupUnschedulable).
    assert scheduler.messages["group:default/g"].startswith("pod group is unschedulable, pod group preemption: ")


def test_raising_min_count_above_the_members_gates_the_group_again() -> None:
    scheduler = gang_scheduler(4)
    scheduler.add_pod_group(MakePodGroup("g").gang(2).obj(), 0.0)
    for i in range(2):
        scheduler.add_pod(member(i), 0.0)
    assert binds(scheduler.schedule(0.0)) == {}          # only one fits
    scheduler.add_pod_group(MakePodGroup("g").gang(3).obj(), 5.0)
    assert scheduler.schedule(5.0) == []
    assert scheduler.pod_message("default/w-0") == "waiting for pod group default/g: 2 of the 3 pods (minCount) exist"
    assert "group:default/g" not in scheduler.queue


def test_running_members_count_toward_min_count() -> None:
    scheduler = gang_scheduler(16, 16)
    scheduler.add_pod_group(MakePodGroup("g").gang(3).obj(), 0.0)
    scheduler.add_pod(member(0), 0.0, node="node-0")
    scheduler.add_pod(member(1), 0.0, node="node-0")
    scheduler.add_pod(member(2), 0.0)
    assert set(binds(scheduler.schedule(0.0))) == {"w-2"}   # 2 running + 1 placed = minCount


def test_extra_members_beyond_min_count_join_when_they_fit() -> None:
    scheduler = gang_scheduler(12)
    scheduler.add_pod_group(MakePodGroup("g").gang(2).obj(), 0.0)
    for i in range(4):
        scheduler.add_pod(member(i), 0.0)
    decisions = scheduler.schedule(0.0)
    assert set(binds(decisions)) == {"w-0", "w-1", "w-2"}
    assert set(unschedulable(decisions)) == {"w-3"}
    bound_before = set(scheduler.cluster.bound)
    # w-0 finishes: the group's leftover member lands alone at the group's next retry (2, 5, 10, 19, 30 s, then
    # every 11 s: a backoff of at most 10 s for the one pod tried), and nobody else moves.
    scheduler.delete_pod("default/w-0", 100.0)
    assert scheduler.schedule(100.0) == []
    assert scheduler.queue.next_backoff() == 107.0
    decisions = scheduler.schedule(107.0)
    assert binds(decisions) == {"w-3": "node-0"}
    assert bound_before - {"default/w-0"} <= set(scheduler.cluster.bound)
    assert conditions(decisions) == []  # PodGroupInitiallyScheduled is set once


def test_a_group_placed_with_members_left_over_is_tried_again_at_once_and_preempts() -> None:
    # schedule_one_podgroup.go → AddAttemptedPodGroupIfNeeded: a successful cycle with members left goes
    # straight back to activeQ (no backoff, timestamp kept), so the next cycle, for w-2 alone, preempts the
    # low-priority pod in the same instant instead of waiting for an event.
    scheduler = gang_scheduler(12)
    scheduler.add_pod(MakePod("low").req(cpu="4").priority(10).obj(), 0.0, node="node-0")
    scheduler.add_pod_group(MakePodGroup("g").gang(2).priority(100).obj(), 0.0)
    for i in range(3):
        scheduler.add_pod(member(i, priority=100), 0.0)
    decisions = scheduler.schedule(0.0)
    assert set(binds(decisions)) == {"w-0", "w-1"}
    assert [d.pod.name for d in decisions if isinstance(d, Evict)] == ["low"]
    assert [d.pod.name for d in decisions if isinstance(d, Nominate)] == ["w-2"]
    assert unschedulable(decisions)["w-2"] == "0/1 nodes are available: 1 Insufficient cpu."


def test_a_failed_retry_never_unbinds_running_members() -> None:
    scheduler = gang_scheduler(8)
    scheduler.add_pod_group(MakePodGroup("g").gang(2).obj(), 0.0)
    for i in range(3):
        scheduler.add_pod(member(i), 0.0)
    assert set(binds(scheduler.schedule(0.0))) == {"w-0", "w-1"}
    scheduler.add_pod_group(MakePodGroup("g").gang(5).obj(), 1.0)   # now more than exist: gated
    scheduler.add_pod(member(3), 1.0)
    scheduler.add_pod(member(4), 1.0)
    decisions = scheduler.schedule(1.0)
    assert binds(decisions) == {}            # 2 running + 0 placed < 5
    assert {"default/w-0", "default/w-1"} <= set(scheduler.cluster.bound)


def test_basic_policy_places_whatever_fits() -> None:
    scheduler = gang_scheduler(8)
    scheduler.add_pod_group(MakePodGroup("g").basic().obj(), 0.0)
    for i in range(3):
        scheduler.add_pod(member(i), 0.0)
    decisions = scheduler.schedule(0.0)
    assert set(binds(decisions)) == {"w-0", "w-1"}
    assert set(unschedulable(decisions)) == {"w-2"}
    assert conditions(decisions) == [("PodGroupInitiallyScheduled", True, "Scheduled")]


def test_members_are_placed_in_age_order() -> None:
    # Members share the group's priority (validatePodGroup), so within a group age decides.
    scheduler = gang_scheduler(4)
    scheduler.add_pod_group(MakePodGroup("g").basic().obj(), 0.0)
    scheduler.add_pod(MakePod("late").req(cpu="4").group("g").arrival(5).obj(), 5.0)
    scheduler.add_pod(MakePod("early").req(cpu="4").group("g").arrival(1).obj(), 5.0)
    assert set(binds(scheduler.schedule(5.0))) == {"early"}


# --- queue order across entries ---

def test_higher_priority_pods_are_scheduled_first() -> None:
    scheduler = Scheduler(builtin("default"), nodes(4))
    scheduler.add_pod(MakePod("low").req(cpu="4").obj(), 0.0)
    scheduler.add_pod(MakePod("high").req(cpu="4").priority(1000).obj(), 0.0)
    decisions = scheduler.schedule(0.0)
    assert binds(decisions) == {"high": "node-0"}
    assert set(unschedulable(decisions)) == {"low"}


def test_older_pods_go_first_at_equal_priority() -> None:
    scheduler = Scheduler(builtin("default"), nodes(4))
    late = MakePod("late").req(cpu="4").arrival(10).obj()
    early = MakePod("early").req(cpu="4").arrival(5).obj()
    scheduler.add_pod(late, 10.0)
    scheduler.add_pod(early, 10.0)
    assert binds(scheduler.schedule(10.0)) == {"early": "node-0"}


def test_a_group_queues_with_its_priority() -> None:
    scheduler = gang_scheduler(8)
    scheduler.add_pod(MakePod("single").req(cpu="4").priority(10).obj(), 0.0)
    scheduler.add_pod_group(MakePodGroup("g").gang(2).priority(100).obj(), 0.0)
    for i in range(2):
        scheduler.add_pod(member(i, priority=100), 0.0)
    decisions = scheduler.schedule(0.0)
    assert set(binds(decisions)) == {"w-0", "w-1"}
    assert set(unschedulable(decisions)) == {"single"}


def test_a_deleted_pending_pod_leaves_the_queue() -> None:
    scheduler = Scheduler(builtin("default"), nodes(1))
    scheduler.add_pod(MakePod("big").req(cpu="4").obj(), 0.0)
    scheduler.schedule(0.0)
    scheduler.delete_pod("default/big", 1.0)
    assert "pod:default/big" not in scheduler.queue
    assert scheduler.pod_message("default/big") is None


# --- requeue: a late member (gangscheduling.go EventsToRegister) -----------------------------------------

def test_a_late_member_requeues_its_unschedulable_group() -> None:
    """GangScheduling's EventsToRegister: adding an unscheduled pod of a group requeues the group, so a gang
    that failed is retried when the member it lacked arrives (it used to wait for an unrelated event)."""
    scheduler = gang_scheduler(4, 4)
    scheduler.add_pod_group(MakePodGroup("g").gang(2).obj(), 0.0)
    scheduler.add_pod(member(0, cpu="8"), 0.0)   # fits nowhere
    scheduler.add_pod(member(1), 0.0)
    assert binds(scheduler.schedule(0.0)) == {}
    scheduler.add_pod(member(2), 5.0)            # what the gang lacked
    decisions = scheduler.schedule(5.0)
    assert set(binds(decisions)) == {"w-1", "w-2"}
    assert conditions(decisions) == [("PodGroupInitiallyScheduled", True, "Scheduled")]


# --- validatePodGroup (schedule_one_podgroup.go) ------------------------------------------------------------

def test_members_must_have_the_groups_priority() -> None:
    """validatePodGroup: every member's priority equals the group's (spec.priority, 0 when unset); otherwise
    nothing binds, nothing preempts, and PodGroupInitiallyScheduled is False with reason SchedulerError."""
    scheduler = gang_scheduler(16)
    scheduler.add_pod_group(MakePodGroup("g").gang(2).obj(), 0.0)
    scheduler.add_pod(member(0), 0.0)
    scheduler.add_pod(member(1, priority=100), 0.0)
    decisions = scheduler.schedule(0.0)
    assert binds(decisions) == {}
    assert conditions(decisions) == [("PodGroupInitiallyScheduled", False, "SchedulerError")]
    assert set(unschedulable(decisions)) == {"w-0", "w-1"}
    assert unschedulable(decisions)["w-0"] == ("all pods in a single pod group should have the same priority as the "
                                               "pod group's priority, got 100 and 0")


def test_members_must_share_scheduler_name_and_preemption_policy() -> None:
    for field, value in (("schedulerName", "other-scheduler"), ("preemptionPolicy", "Never")):
        scheduler = gang_scheduler(16)
        scheduler.add_pod_group(MakePodGroup("g").gang(2).obj(), 0.0)
        scheduler.add_pod(member(0), 0.0)
        odd = MakePod("w-1").req(cpu="4").group("g")
        odd.spec[field] = value
        scheduler.add_pod(odd.obj(), 0.0)
        decisions = scheduler.schedule(0.0)
        assert binds(decisions) == {}
        assert conditions(decisions) == [("PodGroupInitiallyScheduled", False, "SchedulerError")]


def test_a_bound_member_with_another_priority_fails_validation_too() -> None:
    scheduler = gang_scheduler(16)
    scheduler.add_pod_group(MakePodGroup("g").gang(1).priority(5).obj(), 0.0)
    scheduler.add_pod(member(0, priority=7), 0.0, node="node-0")
    scheduler.add_pod(member(1, priority=5), 0.0)
    assert conditions(scheduler.schedule(0.0)) == [("PodGroupInitiallyScheduled", False, "SchedulerError")]


# --- PodGroupInitiallyScheduled is final once True ----------------------------------------------------------

def test_initially_scheduled_is_never_rewritten_to_false() -> None:
    """updatePodGroupCondition: a True PodGroupInitiallyScheduled does not regress to False, neither for
    members that fail later nor for a later SchedulerError."""
    scheduler = gang_scheduler(8)
    scheduler.add_pod_group(MakePodGroup("g").gang(1).obj(), 0.0)
    scheduler.add_pod(member(0), 0.0)
    assert conditions(scheduler.schedule(0.0)) == [("PodGroupInitiallyScheduled", True, "Scheduled")]
    scheduler.add_pod(member(1, priority=9), 1.0)  # another priority: SchedulerError, but the group stays True
    decisions = scheduler.schedule(1.0)
    assert binds(decisions) == {} and conditions(decisions) == []


def test_a_snapshot_group_already_initially_scheduled_keeps_its_condition() -> None:
    """A PodGroup read with status.conditions PodGroupInitiallyScheduled=True is not re-evaluated as
    initially unscheduled when a member fails."""
    carried = MakePodGroup("g").gang(1)
    carried.doc["status"] = {"conditions": [{"type": "PodGroupInitiallyScheduled", "status": "True",
                                             "reason": "Scheduled", "message": "minCount pods were scheduled"}]}
    group = carried.obj()
    assert group.initially_scheduled
    scheduler = gang_scheduler(2)
    scheduler.add_pod_group(group, 0.0)
    scheduler.add_pod(member(0), 0.0)   # does not fit
    decisions = scheduler.schedule(0.0)
    assert set(unschedulable(decisions)) == {"w-0"} and conditions(decisions) == []
