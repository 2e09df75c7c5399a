"""kube-scheduler v1.37.2's `podgroup/queueing/queueing_test.go`, restated as Phalanx inputs.

Three test functions: TestPodGroupQueueing, TestPodGroupSequentialQueueing and
TestPodGroupRequeueRemainingOnSchedulingSuccess. Each case starts with the node upstream creates first ("node").
A later step is a later `phalanx.dev/arrival`, one second after the step before it settled; a wait upstream
makes between steps is asserted through the times pods bound: a pod upstream waits for as unschedulable binds
no earlier than the step that unblocks it, a pod it waits for as scheduled binds before the next step.

A pod gated with schedulingGates is ungated by an `updates` entry (the pod's new state, its gates gone); a PodGroup a
step deletes is a `group_deletions` entry. Upstream's waits for pods "in unschedulable entities" (gated, or
unschedulable) are asserted as those pods not binding before the step that follows the wait, and its waits for
pods "in incompletePodGroupPods" (a queue list of pods whose PodGroup does not exist) as what that list means
for the pods: they stay unscheduled, waiting for their PodGroup to be created; the list itself is not read.

The other cases cannot be said with Phalanx inputs: they plug in out-of-tree plugins (one that creates a pod
inside another pod's PreFilter, one that fails a PreBind once), or run single scheduling cycles by hand and read
the scheduling queue's internals. Those are `UNEXPRESSED`, each with its reason.
"""

from __future__ import annotations

import pytest

from tests.builders import MakeNode, MakePod, MakePodGroup
from tests.upstream.kubernetes.restated import Case, Outcome, Unexpressed, names, params, run

FILE = "podgroup/queueing/queueing_test.go"
QUEUEING = "TestPodGroupQueueing"
SEQUENTIAL = "TestPodGroupSequentialQueueing"
REQUEUE = "TestPodGroupRequeueRemainingOnSchedulingSuccess"


def node(name: str, cpu: str, arrival: int = 0) -> MakeNode:
    """A node with `cpu` and room for 32 pods (st.MakeNode().Capacity sets capacity and allocatable)."""
    built = MakeNode(name).capacity(cpu=cpu, pods="32").alloc(cpu=cpu, pods="32")
    return built.arrival(arrival) if arrival else built


def pod(name: str, cpu: str = "2", group: str | None = "pg", priority: int | None = None,
        arrival: int = 0) -> MakePod:
    """A pod requesting `cpu`, with upstream's second container that requests nothing."""
    built = MakePod(name).req(cpu=cpu).container()
    if group is not None:
        built = built.group(group)
    if priority is not None:
        built = built.priority(priority)
    return built.arrival(arrival) if arrival else built


def gated(built: MakePod) -> MakePod:
    """The pod with upstream's one scheduling gate, "foo-gate"."""
    built.spec["schedulingGates"] = [{"name": "foo-gate"}]
    return built


def waiting_for_group(o: Outcome, *pods: str) -> None:
    """Every pod stays unscheduled, held back because its PodGroup no longer exists (the message as the report
    gives a pending pod's: the scheduler's current one; the pod's record keeps its last cycle's)."""
    for name in pods:
        assert o.pending(name), f"{name} was scheduled on {o.node(name)}"
        message = o.sim.scheduler.pod_message(f"default/{name}") or o.message(name)
        assert message == "waiting for PodGroup default/pg to be created", message


def scheduled(o: Outcome, *pods: str, not_before: float = 0.0, before: float | None = None) -> None:
    """Every pod is scheduled, none before `not_before`, each before `before` when given."""
    for name in pods:
        assert o.bound(name), f"{name} was never scheduled: {o.message(name)}"
        bound_at = o.bound_at(name)
        assert bound_at is not None and bound_at >= not_before, f"{name} bound at {bound_at}, before {not_before}"
        assert before is None or bound_at < before, f"{name} bound at {bound_at}, not before {before}"


def gang_new_members(o: Outcome) -> None:
    # p1, p2 (t=0) and p3 (t=1) stay unschedulable until node2 arrives (t=2); all three are scheduled before p4
    # arrives (t=3), and then p4 too.
    scheduled(o, "p1", "p2", "p3", not_before=2, before=3)
    scheduled(o, "p4", not_before=3)


def basic_new_members(o: Outcome) -> None:
    # p1 is scheduled before p2 arrives (t=1); p2 and p3 (t=2) stay unschedulable until node2 arrives (t=3).
    scheduled(o, "p1", before=1)
    scheduled(o, "p2", "p3", not_before=3)


def higher_priority_first(o: Outcome) -> None:
    # The first cycle schedules pg-p1 and pg-p2 and leaves pg-p3; the high-priority pod and node2 appear together
    # (t=1) and the next cycle schedules the high-priority pod (at once: no preemption, which would have to wait
    # for victims), while pg-p3 is still not scheduled.
    scheduled(o, "pg-p1", "pg-p2", before=1)
    assert o.pending("pg-p3"), f"pg-p3 was scheduled on {o.node('pg-p3')}"
    scheduled(o, "high-priority-pod", not_before=1, before=2)


def ungated_at_2(o: Outcome) -> None:
    # p1 (gated, t=0) and p2, p3 (t=1) are all held until p1's gate is lifted (t=2), then all three are scheduled.
    scheduled(o, "p1", "p2", "p3", not_before=2)


def gang_gated_by_new_member(o: Outcome) -> None:
    # p1 and p2 (t=0) are unschedulable, and with the gated p3 (t=1) all three are held until node2 arrives and p3's
    # gate is lifted (t=2, no wait between the two steps upstream); then all three are scheduled.
    scheduled(o, "p1", "p2", "p3", not_before=2)


def basic_gated_by_new_member(o: Outcome) -> None:
    # p1 is scheduled before p2 arrives (t=1); p2 is unschedulable and, with the gated p3 (t=2), held until node2
    # arrives and p3's gate is lifted (t=3, no wait between the two steps upstream); then both are scheduled.
    scheduled(o, "p1", before=1)
    scheduled(o, "p2", "p3", not_before=3)


# The deleted-PodGroup cases: upstream waits for the pods in the queue's incompletePodGroupPods, which is not read
# here (no outcome shows it); what is checked is what that list means for them: they stay unscheduled, waiting for
# the PodGroup to be created, while the members already bound stay bound.

def scheduled_then_deleted(o: Outcome) -> None:
    # p1 and p2 are scheduled before the PodGroup is deleted (t=1) and stay bound; p3 (t=2) waits for the PodGroup.
    scheduled(o, "p1", "p2", before=1)
    waiting_for_group(o, "p3")


def partially_scheduled_then_deleted(o: Outcome) -> None:
    # p1 and p2 are scheduled and p3 is unschedulable before the PodGroup is deleted (t=1); p1 and p2 stay bound,
    # p3 now waits for the PodGroup.
    scheduled(o, "p1", "p2", before=1)
    waiting_for_group(o, "p3")


def unschedulable_then_deleted(o: Outcome) -> None:
    # No pod of the three-pod gang fits (4 cpu on a 2-cpu node); once the PodGroup is deleted (t=1) all three wait
    # for it.
    waiting_for_group(o, "p1", "p2", "p3")


UPDATED = "a step lifts a pod's schedulingGates mid-run, which `phalanx verify` does not replay"
GROUP_DELETED = "a step deletes the PodGroup mid-run, which `phalanx verify` does not replay"

CASES: list[Case] = [
    Case(FILE, QUEUEING, "Gang scheduling pod group queueing when new member pods are added",
         objects=(node("node", "2"), MakePodGroup("pg").gang(2), pod("p1"), pod("p2"), pod("p3", arrival=1),
                  node("node2", "6", arrival=2), pod("p4", arrival=3)),
         check=gang_new_members),
    Case(FILE, QUEUEING, "Basic policy pod group queueing when new member pods are added",
         objects=(node("node", "2"), MakePodGroup("pg").basic(), pod("p1"), pod("p2", arrival=1),
                  pod("p3", arrival=2), node("node2", "6", arrival=3)),
         check=basic_new_members),
    Case(FILE, QUEUEING, "Single gated pod blocks gang group from being scheduled until pod is ungated",
         objects=(node("node", "2"), node("node2", "6"), MakePodGroup("pg").gang(2), gated(pod("p1")),
                  pod("p2", arrival=1), pod("p3", arrival=1)),
         updates=((2, pod("p1")),),
         check=ungated_at_2, replay=UPDATED),
    Case(FILE, QUEUEING, "Single gated pod blocks basic group from being scheduled until pod is ungated",
         objects=(node("node", "2"), node("node2", "6"), MakePodGroup("pg").basic(), gated(pod("p1")),
                  pod("p2", arrival=1), pod("p3", arrival=1)),
         updates=((2, pod("p1")),),
         check=ungated_at_2, replay=UPDATED),
    Case(FILE, QUEUEING, "Gang pod group in active queue becomes gated when a new gated member pod is added",
         objects=(node("node", "2"), MakePodGroup("pg").gang(2), pod("p1"), pod("p2"), gated(pod("p3", arrival=1)),
                  node("node2", "6", arrival=2)),
         updates=((2, pod("p3", arrival=1)),),
         check=gang_gated_by_new_member, replay=UPDATED),
    Case(FILE, QUEUEING, "Basic pod group in active queue becomes gated when a new gated member pod is added",
         objects=(node("node", "2"), MakePodGroup("pg").basic(), pod("p1"), pod("p2", arrival=1),
                  gated(pod("p3", arrival=2)), node("node2", "6", arrival=3)),
         updates=((3, pod("p3", arrival=2)),),
         check=basic_gated_by_new_member, replay=UPDATED),
    Case(FILE, QUEUEING, "gang is scheduled, then pod group is deleted, and new enqueued pods belong to it end up in "
         "incompletePodGroupPods",
         objects=(node("node", "2"), MakePodGroup("pg").gang(2), pod("p1", cpu="1"), pod("p2", cpu="1"),
                  pod("p3", arrival=2)),
         group_deletions=((1, "pg"),),
         check=scheduled_then_deleted, replay=GROUP_DELETED),
    Case(FILE, QUEUEING, "basic group is scheduled, then pod group is deleted, and new enqueued pods belong to it "
         "end up in incompletePodGroupPods",
         objects=(node("node", "2"), MakePodGroup("pg").basic(), pod("p1", cpu="1"), pod("p2", cpu="1"),
                  pod("p3", arrival=2)),
         group_deletions=((1, "pg"),),
         check=scheduled_then_deleted, replay=GROUP_DELETED),
    Case(FILE, QUEUEING, "gang is partially scheduled, then pod group is deleted, unschedulable pods end up in "
         "incompletePodGroupPods",
         objects=(node("node", "2"), MakePodGroup("pg").gang(2), pod("p1", cpu="1"), pod("p2", cpu="1"), pod("p3")),
         group_deletions=((1, "pg"),),
         check=partially_scheduled_then_deleted, replay=GROUP_DELETED),
    Case(FILE, QUEUEING, "basic group is partially scheduled, then pod group is deleted, unschedulable pods end up "
         "in incompletePodGroupPods",
         objects=(node("node", "2"), MakePodGroup("pg").basic(), pod("p1", cpu="1"), pod("p2", cpu="1"), pod("p3")),
         group_deletions=((1, "pg"),),
         check=partially_scheduled_then_deleted, replay=GROUP_DELETED),
    Case(FILE, QUEUEING, "gang is unschedulable, then pod group is deleted, unschedulable pods end up in "
         "incompletePodGroupPods",
         objects=(node("node", "2"), MakePodGroup("pg").gang(3), pod("p1", cpu="1"), pod("p2", cpu="1"), pod("p3")),
         group_deletions=((1, "pg"),),
         check=unschedulable_then_deleted, replay=GROUP_DELETED),
    Case(FILE, REQUEUE,
         "After successfully scheduling a podgroup and requeuing a remaining unscheduled pod, the next scheduling "
         "attempt prioritizes the higher priority pod",
         objects=(node("node", "4"), MakePodGroup("pg").basic(),
                  pod("pg-p1", priority=0), pod("pg-p2", priority=0), pod("pg-p3", priority=0),
                  pod("high-priority-pod", cpu="4", group=None, priority=1000, arrival=1),
                  node("node2", "4", arrival=1)),
         check=higher_priority_first,
         replay="upstream runs each cycle by hand, so the high-priority pod first meets a cycle once node2 exists; "
                "a live scheduler may try it before node2 arrives and preempt pg-p1 and pg-p2 for it"),
]

INJECTED = ("p3 is created by an out-of-tree PreFilter plugin while {0} is inside its scheduling cycle, and "
            "Phalanx's inputs make objects appear only between cycles.")
PREBIND = "An out-of-tree PreBind plugin fails p1's first binding, which Phalanx's inputs cannot make happen."

UNEXPRESSED: list[Unexpressed] = [
    Unexpressed(FILE, QUEUEING, "Gang scheduling pod group member pod added mid-cycle is correctly buffered and "
                "retried after unschedulable attempt", INJECTED.format("p1")),
    Unexpressed(FILE, QUEUEING, "Gang scheduling pod group member pod added mid-cycle is correctly buffered and "
                "retried after schedulable attempt", INJECTED.format("p1")),
    Unexpressed(FILE, QUEUEING, "Basic policy pod group member pod added mid-cycle is correctly buffered and "
                "retried after unschedulable attempt", INJECTED.format("p2")),
    Unexpressed(FILE, QUEUEING, "Basic policy pod group member pod added mid-cycle is correctly buffered and "
                "retried after schedulable attempt", INJECTED.format("p2")),
    Unexpressed(FILE, QUEUEING, "Gang scheduling pod group member pod fails PreBind, is correctly retried and "
                "scheduled", PREBIND),
    Unexpressed(FILE, QUEUEING, "Basic policy pod group member pod fails PreBind, is correctly retried and "
                "scheduled", PREBIND),
    Unexpressed(FILE, QUEUEING, "Single member gang pod group fails PreBind, is correctly retried and scheduled",
                PREBIND),
    Unexpressed(FILE, QUEUEING, "Single member basic policy pod group fails PreBind, is correctly retried and "
                "scheduled", PREBIND),
    Unexpressed(FILE, QUEUEING, "Gang scheduling pod group member pod fails PreBind while other is unschedulable, "
                "is correctly retried and scheduled", PREBIND),
    Unexpressed(FILE, QUEUEING, "Basic policy pod group member pod fails PreBind while other is unschedulable, is "
                "correctly retried and scheduled", PREBIND),
    Unexpressed(FILE, SEQUENTIAL, "Gang scheduling pod group fails scheduling and retries without any cluster "
                "change",
                "The case runs one scheduling cycle by hand (RunScheduleOne, no scheduler loop) and checks that the "
                "failed gang is back in activeQ with nothing changed in the cluster, scheduling queue state that no "
                "Phalanx outcome shows."),
    Unexpressed(FILE, SEQUENTIAL, "Basic policy pod group partially fails scheduling and retries without any "
                "cluster change",
                "The case runs one scheduling cycle by hand (RunScheduleOne, no scheduler loop) and checks that p2, "
                "left unschedulable while p1 bound, is back in activeQ with nothing changed in the cluster, "
                "scheduling queue state that no Phalanx outcome shows."),
    Unexpressed(FILE, REQUEUE, "After successfully scheduling a podgroup and requeuing a remaining unscheduled pod, "
                "the next scheduling attempt prioritizes the old pod if priorities are equal",
                "The case runs cycles by hand (RunScheduleOne, 10 s initial backoff) and checks which of two equal "
                "entries the cycle after node3 pops, the requeued pg-p3 by its preserved timestamp; under a running "
                "scheduler loop pg-p3 is retried and backs off before node3 arrives, so backoff timing, not that "
                "queue order, decides (Phalanx gives node3 to either pod depending on node3's arrival second)."),
    Unexpressed(FILE, REQUEUE, "After successfully scheduling a podgroup with a new pending pod added mid-cycle, an "
                "older individual pod in queue is prioritized if priorities are equal",
                "pg-p3 is created by an out-of-tree PreFilter plugin while pg-p1 is inside its scheduling cycle, "
                "and the case runs cycles by hand (RunScheduleOne) to check which entry the next cycle pops."),
]

UPSTREAM_NAMES = {
    QUEUEING: (
        "Gang scheduling pod group queueing when new member pods are added",
        "Basic policy pod group queueing when new member pods are added",
        "Gang scheduling pod group member pod added mid-cycle is correctly buffered and retried after "
        "unschedulable attempt",
        "Gang scheduling pod group member pod added mid-cycle is correctly buffered and retried after schedulable "
        "attempt",
        "Basic policy pod group member pod added mid-cycle is correctly buffered and retried after unschedulable "
        "attempt",
        "Basic policy pod group member pod added mid-cycle is correctly buffered and retried after schedulable "
        "attempt",
        "Single gated pod blocks gang group from being scheduled until pod is ungated",
        "Single gated pod blocks basic group from being scheduled until pod is ungated",
        "Gang pod group in active queue becomes gated when a new gated member pod is added",
        "Basic pod group in active queue becomes gated when a new gated member pod is added",
        "Gang scheduling pod group member pod fails PreBind, is correctly retried and scheduled",
        "Basic policy pod group member pod fails PreBind, is correctly retried and scheduled",
        "Single member gang pod group fails PreBind, is correctly retried and scheduled",
        "Single member basic policy pod group fails PreBind, is correctly retried and scheduled",
        "Gang scheduling pod group member pod fails PreBind while other is unschedulable, is correctly retried and "
        "scheduled",
        "Basic policy pod group member pod fails PreBind while other is unschedulable, is correctly retried and "
        "scheduled",
        "gang is scheduled, then pod group is deleted, and new enqueued pods belong to it end up in "
        "incompletePodGroupPods",
        "basic group is scheduled, then pod group is deleted, and new enqueued pods belong to it end up in "
        "incompletePodGroupPods",
        "gang is partially scheduled, then pod group is deleted, unschedulable pods end up in incompletePodGroupPods",
        "basic group is partially scheduled, then pod group is deleted, unschedulable pods end up in "
        "incompletePodGroupPods",
        "gang is unschedulable, then pod group is deleted, unschedulable pods end up in incompletePodGroupPods",
    ),
    SEQUENTIAL: (
        "Gang scheduling pod group fails scheduling and retries without any cluster change",
        "Basic policy pod group partially fails scheduling and retries without any cluster change",
    ),
    REQUEUE: (
        "After successfully scheduling a podgroup and requeuing a remaining unscheduled pod, the next scheduling "
        "attempt prioritizes the higher priority pod",
        "After successfully scheduling a podgroup and requeuing a remaining unscheduled pod, the next scheduling "
        "attempt prioritizes the old pod if priorities are equal",
        "After successfully scheduling a podgroup with a new pending pod added mid-cycle, an older individual pod in "
        "queue is prioritized if priorities are equal",
    ),
}


@pytest.mark.parametrize("case", params(CASES))
def test_upstream_case(case: Case) -> None:
    case.check(run(case))


def test_every_upstream_case_is_named_once() -> None:
    every: list[Case | Unexpressed] = [*CASES, *UNEXPRESSED]
    ours = names(every)
    assert len(set(ours)) == len(ours), "a case is named twice"
    assert sorted(ours) == sorted((test, name) for test, cases in UPSTREAM_NAMES.items() for name in cases)
    assert all(c.file == FILE for c in every)
