"""kube-scheduler v1.37.2's `podgroup/podgroup_test.go` (TestPodGroupScheduling, TestWorkloadAwarePreemptionInvocation,
TestPostFilterNotCalled, TestPodGroupPostFilterIteration), restated as Phalanx inputs.

TestPodGroupScheduling runs each table entry once per value of the TopologyAwareWorkloadScheduling gate (true, then
false, unless the entry names one), so a case here is one of its subtests, named as its `t.Run` names it:
`<entry name> (TopologyAwareWorkloadScheduling enabled: <true|false>)`. The functions without subtests are one case
each, named after the function.

Every TestPodGroupScheduling case starts with upstream's common steps, the 4-cpu node in zone1 and the two Workloads,
at 0 s; each later step that creates something comes at the next whole second (objects of one step at one instant,
in upstream's order), and a step that deletes a pod, or updates a PodGroup (the PodGroup's whole new state, as
upstream writes it), at the second after. A wait step between two such steps is read on the same case cut half a
second before the next step (a "stage"); the wait steps that read the scheduler's queue (gated at PreEnqueue,
waiting in incompletePodGroupPods) are read as "still pending". Upstream disables backoff
(`WithPodMaxBackoffSeconds(0)`); Phalanx keeps its own, which moves bind times by a few seconds and changes no
assertion here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from tests.builders import Buildable, MakeNode, MakePod, MakePodGroup, MakeWorkload
from tests.upstream.kubernetes.restated import Case, Outcome, Unexpressed, names, params, run

FILE = "podgroup/podgroup_test.go"
SCHEDULING = "TestPodGroupScheduling"
INVOCATION = "TestWorkloadAwarePreemptionInvocation"
POST_FILTER = "TestPostFilterNotCalled"
ITERATION = "TestPodGroupPostFilterIteration"
TAS = "TopologyAwareWorkloadScheduling"
ZONE = "topology.kubernetes.io/zone"
DELETED_MID_RUN = "a step deletes a pod mid-run"
UPDATED_MID_RUN = "a step updates the PodGroup's minCount mid-run"
BOTH = (True, False)  # upstream's gate values when an entry names none, in its order

Check = Callable[[Outcome], None]
Stages = tuple[tuple[float, Check], ...]


def subtest(name: str, tas: bool) -> str:
    """The name TestPodGroupScheduling gives the subtest of table entry `name` with the gate at `tas`."""
    return f"{name} (TopologyAwareWorkloadScheduling enabled: {'true' if tas else 'false'})"


# --- objects (fresh builders each time: a builder is mutable, and `.arrival` writes into it) ---------------------

def node(name: str = "node", cpu: str = "4", labels: dict[str, str] | None = None) -> MakeNode:
    """As st.MakeNode().Capacity(...): the same capacity and allocatable, with room for 32 pods."""
    builder = MakeNode(name).alloc(cpu=cpu, pods="32").capacity(cpu=cpu, pods="32")
    for key, value in (labels or {}).items():
        builder.label(key, value)
    return builder


def pod(name: str, priority: int, group: str | None = None, cpu: str = "1", grace_zero: bool = False) -> MakePod:
    """As st.MakePod().Req(cpu).Container("image"): a container with the request, and one without any."""
    builder = MakePod(name).req(cpu=cpu).container().priority(priority)
    if grace_zero:
        builder.grace(0)
    return builder if group is None else builder.group(group)


def workloads() -> tuple[MakeWorkload, MakeWorkload]:
    return (MakeWorkload("workload").template("t1", gang=3).template("t2", basic=True)
            .template("t-mid", gang=2).template("t-mutable", gang=5),
            MakeWorkload("other-workload").template("t", gang=3))


def common() -> tuple[Buildable, ...]:
    """Upstream's common steps: Create Nodes, Create workloads."""
    return (node(labels={ZONE: "zone1"}), *workloads())


def gang_pg() -> MakePodGroup:
    return MakePodGroup("pg1").workload("workload", "t1").priority(100).gang(3)


def other_gang_pg() -> MakePodGroup:
    return MakePodGroup("pg2").workload("other-workload", "t").priority(100).gang(3)


def basic_pg() -> MakePodGroup:
    return MakePodGroup("pg1").workload("workload", "t2").priority(100).basic()


def mid_pg(constraint: bool = False) -> MakePodGroup:
    builder = MakePodGroup("mid-pg").workload("workload", "t-mid").priority(50).gang(2)
    return builder.topology(ZONE) if constraint else builder


def p(i: int) -> MakePod:
    return pod(f"p{i}", 100, "pg1")


def other(i: int) -> MakePod:
    return pod(f"other-p{i}", 100, "pg2")


def blocker() -> MakePod:
    return pod("blocker", 100, cpu="2", grace_zero=True)


def low(i: int) -> MakePod:
    return pod(f"low-p{i}", 10, grace_zero=True)


def very_low(i: int) -> MakePod:
    return pod(f"very-low-p{i}", 5, grace_zero=True)


def mid(i: int) -> MakePod:
    return pod(f"mid-p{i}", 50, "mid-pg")


def mutable_pg(min_count: int = 5) -> MakePodGroup:
    """podGroupWithMinCount5, or (with another `min_count`) the state UpdatePodGroup gives it."""
    return MakePodGroup("pg-mutable").workload("workload", "t-mutable").priority(100).gang(min_count)


def mut(i: int) -> MakePod:
    return pod(f"mut-p{i}", 100, "pg-mutable")


def at(when: int, *builders: MakePod | MakePodGroup | MakeWorkload) -> tuple[Buildable, ...]:
    return tuple(b.arrival(when) for b in builders)


# --- what the steps read --------------------------------------------------------------------------------------

def is_scheduled(o: Outcome, name: str) -> bool:
    """PodScheduled: bound, and still there (not evicted, not deleted)."""
    record = o.record(name)
    return record.node is not None and record.phase == "Running" and not record.terminating


def is_unschedulable(o: Outcome, name: str) -> bool:
    """PodUnschedulable: not bound, and a scheduling attempt said why."""
    return o.pending(name) and o.message(name) is not None


def scheduled(*pods: str) -> Check:
    def check(o: Outcome) -> None:
        assert all(is_scheduled(o, n) for n in pods), {n: (o.node(n), o.record(n).phase) for n in pods}
    return check


def unschedulable(*pods: str) -> Check:
    def check(o: Outcome) -> None:
        assert all(is_unschedulable(o, n) for n in pods), {n: (o.node(n), o.message(n)) for n in pods}
    return check


def pending(*pods: str) -> Check:
    """Held before any binding (upstream reads its queue: gated at PreEnqueue, or waiting for the PodGroup)."""
    def check(o: Outcome) -> None:
        assert all(o.pending(n) for n in pods), {n: (o.node(n), o.message(n)) for n in pods}
    return check


def removed(*pods: str) -> Check:
    """The victims were evicted by preemption and are gone."""
    def check(o: Outcome) -> None:
        assert all(o.preempted(n) and o.record(n).phase == "Failed" for n in pods), \
            {n: (o.record(n).phase, o.record(n).preempted_by) for n in pods}
    return check


def split(pods: tuple[str, ...], bound: int, waiting: int) -> Check:
    """WaitForAnyPodsScheduled: `bound` of the pods scheduled and `waiting` unschedulable, whichever they are."""
    def check(o: Outcome) -> None:
        counts = (sum(is_scheduled(o, n) for n in pods), sum(is_unschedulable(o, n) for n in pods))
        assert counts == (bound, waiting), {n: (o.node(n), o.message(n)) for n in pods}
    return check


def condition(group: str, status: str, reason: str) -> Check:
    """WaitForPodGroupCondition on PodGroupInitiallyScheduled."""
    def check(o: Outcome) -> None:
        found = o.sim.groups[f"default/{group}"].conditions.get("PodGroupInitiallyScheduled") or {}
        assert (found.get("status"), found.get("reason")) == (status, reason), found
    return check


def every(*checks: Check) -> Check:
    def check(o: Outcome) -> None:
        for one in checks:
            one(o)
    return check


# --- TestPodGroupScheduling -----------------------------------------------------------------------------------

def subtest_case(name: str, tas: bool, objects: tuple[Buildable, ...], check: Check, stages: Stages = (),
                 deletions: tuple[tuple[float, str], ...] = (), differs: str = "",
                 updates: tuple[tuple[float, Buildable], ...] = ()) -> Case:
    """One subtest; each stage `(t, check)` is checked on the same case cut at `t`, then `check` on its end."""
    made: list[Case] = []

    def staged(o: Outcome) -> None:
        for until, early in stages:
            early(run(replace(made[0], until=until)))
        check(o)

    replay = UPDATED_MID_RUN if updates else DELETED_MID_RUN if deletions else ""
    made.append(Case(FILE, SCHEDULING, subtest(name, tas), (*common(), *objects), staged, deletions=deletions,
                     updates=updates, gates={TAS: tas}, differs=differs, replay=replay))
    return made[0]


def entry(name: str, objects: Callable[[], tuple[Buildable, ...]], check: Check, stages: Stages = (),
          deletions: tuple[tuple[float, str], ...] = (), differs: str = "", tas: tuple[bool, ...] = BOTH,
          updates: Callable[[], tuple[tuple[float, Buildable], ...]] = tuple) -> list[Case]:
    """One table entry's subtests, in the order upstream runs them."""
    return [subtest_case(name, value, objects(), check, stages, deletions, differs, updates()) for value in tas]


# kube-scheduler gives a PodGroup's queue entry the queue timestamp of the member pod that made it
# (backend/queue/scheduling_queue.go: addPodGroupMember -> newQueuedPodGroupInfoFromRootLookup); when the PodGroup
# object was created does not count. Phalanx stamps the entry min(PodGroup arrival, pending members' arrivals)
# (phalanx/scheduler/group_cycle.py, GroupCycle._run_pre_enqueue), so a PodGroup created a step before its pods
# queues ahead of pods, and other groups' members, created before its own.
GANG = ("p1", "p2", "p3")
LOWS = ("low-p1", "low-p2", "low-p3", "low-p4")
OTHERS = ("other-p1", "other-p2", "other-p3")
MIXED = ("very-low-p1", "very-low-p2", "low-p1", "low-p2")

SCHEDULING_CASES: list[Case] = [
    *entry("gang schedules when pod group and resources are available",
           lambda: (*at(1, gang_pg()), *at(2, p(1), p(2), p(3))),
           every(scheduled(*GANG), condition("pg1", "True", "Scheduled"))),
    *entry("any available pod group members get scheduled",
           lambda: (*at(1, gang_pg()), *at(2, p(1), p(2), p(3)), *at(3, p(4))),
           scheduled(*GANG, "p4"),
           stages=((2.5, scheduled(*GANG)),)),
    *entry("gang waits for quorum to start, then schedules",
           lambda: (*at(1, gang_pg()), *at(2, p(1), p(2)), *at(3, p(3))),
           scheduled(*GANG),
           stages=((2.5, pending("p1", "p2")),)),
    *entry("gang waits for pod group, then for resources, then schedules",
           lambda: (*at(1, blocker()), *at(2, p(1), p(2), p(3)), *at(3, gang_pg())),
           every(scheduled(*GANG), condition("pg1", "True", "Scheduled")),
           stages=((1.5, scheduled("blocker")),
                   (2.5, pending(*GANG)),
                   (3.5, every(unschedulable(*GANG), condition("pg1", "False", "Unschedulable")))),
           deletions=((4, "blocker"),)),
    *entry("minCount is scheduled, but one pod from a gang remain unschedulable until the blocked resources are "
           "released",
           lambda: (*at(1, pod("small-blocker", 100, grace_zero=True)), *at(2, p(1), p(2), p(3), p(4)),
                    *at(3, gang_pg())),
           scheduled(*GANG, "p4"),
           stages=((1.5, scheduled("small-blocker")),
                   (3.5, split((*GANG, "p4"), 3, 1))),
           deletions=((4, "small-blocker"),)),
    *entry("two gangs competing for the same resources shouldn't deadlock, reversed order",
           lambda: (*at(1, gang_pg()), *at(2, other_gang_pg()),
                    *at(3, other(3), p(3), other(2), p(2), other(1), p(1))),
           every(scheduled(*OTHERS), unschedulable(*GANG))),
    *entry("two gangs competing for the same resources shouldn't deadlock",
           lambda: (*at(1, gang_pg()), *at(2, other_gang_pg()),
                    *at(3, p(1), other(1), p(2), other(2), p(3), other(3))),
           every(scheduled(*GANG), unschedulable(*OTHERS))),
    *entry("pod group interleaving with an individual pod shouldn't deadlock nor livelock, and the individual pod "
           "gets scheduled",
           lambda: (*at(1, gang_pg()), *at(2, blocker(), p(1), p(2), p(3))),
           every(scheduled("blocker"), unschedulable(*GANG))),
    *entry("basic group schedules when pod group and resources are available, without gang enforcement",
           lambda: (*at(1, basic_pg()), *at(2, p(1)), *at(3, p(2), p(3))),
           scheduled(*GANG),
           stages=((2.5, scheduled("p1")),)),
    *entry("basic group waits for pod group, part of it waits for resources, then schedules",
           lambda: (*at(1, blocker()), *at(2, p(1), p(2), p(3)), *at(3, basic_pg())),
           scheduled(*GANG),
           stages=((1.5, scheduled("blocker")),
                   (2.5, pending(*GANG)),
                   (3.5, split(GANG, 2, 1))),
           deletions=((4, "blocker"),)),
    *entry("basic group schedules with workload-aware preemption",
           lambda: (*at(1, pod("low-priority-blocker", 10, cpu="2", grace_zero=True)), *at(2, basic_pg()),
                    *at(3, p(1), p(2), p(3), p(4))),
           every(scheduled(*GANG, "p4"), removed("low-priority-blocker")),
           stages=((1.5, scheduled("low-priority-blocker")),),
           tas=(False,)),
    *entry("gang schedules with workload-aware preemption",
           lambda: (*at(1, low(1), low(2), low(3), low(4)), *at(2, gang_pg()), *at(3, p(1), p(2), p(3), p(4))),
           every(scheduled(*GANG, "p4"), condition("pg1", "True", "Scheduled"), removed(*LOWS)),
           stages=((1.5, scheduled(*LOWS)),)),
    *entry("gang schedules with partial workload-aware preemption",
           lambda: (*at(1, very_low(1), very_low(2), low(1), low(2)), *at(2, mid_pg()), *at(3, mid(1), mid(2))),
           every(scheduled("mid-p1", "mid-p2", "low-p1", "low-p2"), removed("very-low-p1", "very-low-p2")),
           stages=((1.5, scheduled(*MIXED)),)),
    *entry("tas gang with constraint uses workload preemption",
           lambda: (*at(1, very_low(1), very_low(2), low(1), low(2)), *at(2, mid_pg(constraint=True)),
                    *at(3, mid(1), mid(2))),
           every(scheduled("mid-p1", "mid-p2", "low-p1", "low-p2"), removed("very-low-p1", "very-low-p2")),
           stages=((1.5, scheduled(*MIXED)),),
           tas=(True,)),
]

MUTS = ("mut-p1", "mut-p2", "mut-p3", "mut-p4")


def bound_after(when: float, *pods: str) -> Check:
    """None of the pods bound before `when` (the step that let them through)."""
    def check(o: Outcome) -> None:
        early = {n: t for n in pods if (t := o.bound_at(n)) is not None and t < when}
        assert not early, early
    return check


# The three minCount entries: pg-mutable (minCount 5) at 1 s, its pods at 2 s (CreatePodsInOrder: one instant, in
# upstream's order), the UpdatePodGroup at 3 s with the whole PodGroup as upstream writes it, minCount changed.
MIN_COUNT_CASES: list[Case] = [
    *entry("gang pods are unschedulable due to lack of quorum, then scheduled when minCount is decreased",
           lambda: (*at(1, mutable_pg()), *at(2, *(mut(i) for i in range(1, 5)))),
           every(scheduled(*MUTS), bound_after(3, *MUTS)),
           stages=((2.5, pending(*MUTS)),),
           updates=lambda: ((3, mutable_pg(4)),)),
    *entry("gang pods are unschedulable due to lack of space, then scheduled when minCount is decreased",
           lambda: (*at(1, mutable_pg()), *at(2, *(mut(i) for i in range(1, 6)))),
           every(scheduled(*MUTS), bound_after(3, *MUTS), unschedulable("mut-p5")),
           stages=((2.5, unschedulable(*MUTS, "mut-p5")),),
           updates=lambda: ((3, mutable_pg(4)),)),
    # Upstream also reads each pod's attempt counter in the scheduling queue (0 before the update and still 0 after
    # it: raising minCount must not requeue the gang). The counter is the queue's internal state and is not
    # checked here; what is checked is what it implies for the pods: held before any binding, and still after.
    *entry("gang pods are unschedulable due to lack of quorum, and remain unschedulable without triggering "
           "reschedule when minCount is increased",
           lambda: (*at(1, mutable_pg()), *at(2, *(mut(i) for i in range(1, 5)))),
           pending(*MUTS),
           stages=((2.5, pending(*MUTS)),),
           updates=lambda: ((3, mutable_pg(6)),)),
]


# --- TestWorkloadAwarePreemptionInvocation ----------------------------------------------------------------------

def preempted_by_the_pod_group(o: Outcome) -> None:
    """Upstream waits for a `Preempted` event on one of the low pods whose message names a podgroup as the
    preemptor ("Preempted by podgroup <uid> on node …"); Phalanx records the preemptor, here the PodGroup's key."""
    preemptors = {n: [e["preemptor"] for e in o.record(n).preempted_by] for n in ("low-1", "low-2", "low-3", "low-4")}
    assert any("default/pg1" in by for by in preemptors.values()), preemptors


def invocation_objects() -> tuple[Buildable, ...]:
    """The node and the low pods first (default grace period), then, once they run, the Workload, the PodGroup
    (disruptionMode all) and the high pods."""
    pg = MakePodGroup("pg1").workload("workload", "t1").priority(100).gang(3)
    pg.doc["spec"]["disruptionMode"] = {"all": {}}
    return (node(), *(pod(f"low-{i}", 10) for i in range(1, 5)),
            *at(1, MakeWorkload("workload").template("t1", gang=3), pg,
                *(pod(f"high-{i}", 100, "pg1") for i in range(1, 4))))


OTHER_CASES: list[Case] = [
    Case(FILE, INVOCATION, INVOCATION, invocation_objects(), preempted_by_the_pod_group),
]

OTHER_UNEXPRESSED: list[Unexpressed] = [
    Unexpressed(FILE, POST_FILTER, POST_FILTER,
                "it asserts how often an out-of-tree PostFilter plugin of a custom profile was called (never)"),
    Unexpressed(FILE, ITERATION, ITERATION,
                "it asserts how often two out-of-tree PodGroupPostFilter plugins of a custom profile were called "
                "(once each)"),
]

CASES: list[Case] = [*SCHEDULING_CASES, *MIN_COUNT_CASES, *OTHER_CASES]
UNEXPRESSED: list[Unexpressed] = [*OTHER_UNEXPRESSED]


@pytest.mark.parametrize("case", params(CASES))
def test_upstream_case(case: Case) -> None:
    case.check(run(case))


# TestPodGroupScheduling's table entries as upstream names them, each with its enableTopologyAwareWorkloadScheduling
# (None where the entry leaves it unset: upstream then runs it true, then false).
UPSTREAM_TABLE: tuple[tuple[str, tuple[bool, ...] | None], ...] = (
    ("gang schedules when pod group and resources are available", None),
    ("any available pod group members get scheduled", None),
    ("gang waits for quorum to start, then schedules", None),
    ("gang waits for pod group, then for resources, then schedules", None),
    ("minCount is scheduled, but one pod from a gang remain unschedulable until the blocked resources are released",
     None),
    ("two gangs competing for the same resources shouldn't deadlock, reversed order", None),
    ("two gangs competing for the same resources shouldn't deadlock", None),
    ("pod group interleaving with an individual pod shouldn't deadlock nor livelock, and the individual pod gets "
     "scheduled", None),
    ("basic group schedules when pod group and resources are available, without gang enforcement", None),
    ("basic group waits for pod group, part of it waits for resources, then schedules", None),
    ("basic group schedules with workload-aware preemption", (False,)),
    ("gang schedules with workload-aware preemption", None),
    ("gang schedules with partial workload-aware preemption", None),
    ("tas gang with constraint uses workload preemption", (True,)),
    ("gang pods are unschedulable due to lack of quorum, then scheduled when minCount is decreased", None),
    ("gang pods are unschedulable due to lack of space, then scheduled when minCount is decreased", None),
    ("gang pods are unschedulable due to lack of quorum, and remain unschedulable without triggering reschedule "
     "when minCount is increased", None),
)
UPSTREAM_FUNCTIONS = (INVOCATION, POST_FILTER, ITERATION)  # no subtests: one case each


def test_every_upstream_case_is_named_once() -> None:
    upstream = [(SCHEDULING, subtest(name, tas)) for name, values in UPSTREAM_TABLE for tas in (values or BOTH)]
    upstream += [(function, function) for function in UPSTREAM_FUNCTIONS]
    ours = names([*CASES, *UNEXPRESSED])
    assert sorted(ours) == sorted(upstream)
    assert len(set(ours)) == len(ours)
    everything: list[Case | Unexpressed] = [*CASES, *UNEXPRESSED]
    assert all(c.file == FILE for c in everything)
