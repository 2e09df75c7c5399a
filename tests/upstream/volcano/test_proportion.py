"""volcano-sh/volcano `pkg/scheduler/plugins/proportion/proportion_test.go` (TestProportion, TestEnqueueAndAllocable,
TestAllocate, TestNoDoubleCountingForInqueueJobWithBindingTasks, TestJobEnqueuedOnOtherPluginsReject), restated
(see restated.py).

TestEnqueueAndAllocable runs enqueue then allocate with the proportion plugin alone, in three tiers: all of
Allocatable, Overused and JobEnqueued on; JobEnqueued only; Allocatable only. TestAllocate runs allocate then
reclaim with proportion's queue order only. TestNoDoubleCountingForInqueueJobWithBindingTasks opens two sessions
(allocate with the enqueue action counted as configured, then enqueue and allocate) with a job added between them:
here the first job's pods come at 1 s and the second's at 2 s, with enqueue and allocate in the conf. Its objects'
names (pgA, pA1, ...) are not Kubernetes object names (the API server refuses a pod or a v1.37 PodGroup named with
upper case), so they are written in lower case (pga, pa1, ...).
"""

from __future__ import annotations

import pytest

from tests.upstream.volcano.restated import (
    Case,
    Doc,
    Outcome,
    Unexpressed,
    check_names,
    conf,
    expect,
    node,
    params,
    plugin,
    pod,
    pod_group,
    queue,
    resources,
    run,
)

FILE = "pkg/scheduler/plugins/proportion/proportion_test.go"
ENQUEUE_ALLOCABLE = "TestEnqueueAndAllocable"
ALLOCATE = "TestAllocate"
NO_DOUBLE = "TestNoDoubleCountingForInqueueJobWithBindingTasks"

ALL_ENABLE = conf("enqueue, allocate",
                  plugin("proportion", "enabledAllocatable", "enabledOverused", "enableJobEnqueued"))
ENQUEUEABLE = conf("enqueue, allocate", plugin("proportion", "enableJobEnqueued"))
ALLOCATABLE = conf("enqueue, allocate", plugin("proportion", "enabledAllocatable"))


def two_nodes() -> tuple[Doc, Doc]:
    return (node("n1", resources("2", "2G", pods="10")), node("n2", resources("2", "2G", pods="10")))


def job(i: int, queue_name: str, cpu: str, memory: str, phase: str, on: str | None = None) -> tuple[Doc, Doc]:
    """pg<i> with minMember 1 and minResources its one pod's request, and pod<i>."""
    req = resources(cpu, memory)
    return (pod_group(f"pg{i}", "ns1", queue_name, 1, phase, min_resources=req),
            pod("ns1", f"pod{i}", req, f"pg{i}", on=on))


def running_pair() -> tuple[Doc, ...]:
    """pod1 (1 cpu 2G) runs on n1 in q1 (capability 2 cpu 2G), pod2 (2 cpu 1G) on n2 in q2 (3 cpu 3G)."""
    return (*two_nodes(), *job(1, "q1", "1", "2G", "Running", on="n1"), *job(2, "q2", "2", "1G", "Running", on="n2"),
            queue("q1", 1, resources("2", "2G")), queue("q2", 1, resources("3", "3G")))


def no_double_check(o: Outcome) -> None:
    """Upstream: jobA's three pods bind in the first session, pB1 in the second."""
    assert o.binds() == {"ns1/pa1": "n1", "ns1/pa2": "n1", "ns1/pa3": "n1", "ns1/pb1": "n1"}, o.binds()
    first = [o.record(f"ns1/pa{i}").bound_at for i in (1, 2, 3)]
    second = o.record("ns1/pb1").bound_at
    assert all(t is not None and t < 2 for t in first) and second is not None and second >= 2, (first, second)
    assert o.evicted() == []


ALLOCATABLE_FLAG = ("upstream's tier turns on proportion's queue order only, so allocate.go places by queue priority "
                    "(q3 first) with no deserved-share gate; Phalanx's VolcanoAdmission._fits_queue applies "
                    "proportion's Allocatable whatever the conf's enabledAllocatable: q3 deserves a third of the "
                    "4 cpus and its 2-cpu pod waits")

CASES = [
    Case(ENQUEUE_ALLOCABLE, "case0: memory exceed derserved, job only request cpu can be enqueued and allocated",
         (*running_pair(), *job(3, "q1", "1", "0G", "Pending")), ALL_ENABLE, expect({"ns1/pod3": "n1"})),
    Case(ENQUEUE_ALLOCABLE, "case1: cpu exceed derserved, job only request memory can be enqueued and allocated",
         (*running_pair(), *job(4, "q2", "0", "1G", "Pending")), ALL_ENABLE, expect({"ns1/pod4": "n2"})),
    Case(ENQUEUE_ALLOCABLE, "case2: exceed capacity, can not enqueue",
         (*running_pair(), *job(5, "q1", "1", "1G", "Pending")), ENQUEUEABLE, expect({})),
    Case(ENQUEUE_ALLOCABLE, "case3: exceed deserved, can not allocate",
         (*running_pair(), *job(5, "q1", "1", "1G", "Pending")), ALLOCATABLE, expect({})),
    Case(ENQUEUE_ALLOCABLE, "case4: queue with  non-open state, can not enqueue",
         (*two_nodes(), *job(6, "q3", "1", "1G", "Pending"), queue("q3", 1, resources("3", "3G"), state="Closed")),
         ENQUEUEABLE, expect({})),
    Case(ALLOCATE, "case0: Pods are assigned according to the order of Queue Priority in which PGs are placed",
         (node("n1", resources("2", "4Gi", pods="10")), node("n2", resources("2", "4Gi", pods="10")),
          pod("ns1", "p1", resources("2", "4Gi"), "pg1", on="n1"), pod("ns1", "p2", resources("2", "4Gi"), "pg2"),
          pod("ns1", "p3", resources("2", "4Gi"), "pg3"),
          pod_group("pg1", "ns1", "q1", 1, "Running"), pod_group("pg2", "ns1", "q2", 1, "Inqueue"),
          pod_group("pg3", "ns1", "q3", 1, "Inqueue"),
          queue("q1", capability=resources("2", "4Gi"), priority=5),
          queue("q2", capability=resources("2", "4Gi"), priority=1),
          queue("q3", capability=resources("2", "4Gi"), priority=10)),
         conf("allocate, reclaim", plugin("proportion", "enableQueueOrder")), expect({"ns1/p3": "n2"}),
         differs=ALLOCATABLE_FLAG),
    Case(NO_DOUBLE, NO_DOUBLE,
         (node("n1", resources("4", "8Gi", pods="10")),
          pod_group("pga", "ns1", "q1", 3, "Inqueue", min_resources=resources("3", "3Gi")),
          *(pod("ns1", f"pa{i}", resources("1", "1Gi"), "pga") for i in (1, 2, 3)),
          pod_group("pgb", "ns1", "q1", 1, "Pending", min_resources=resources("1", "1Gi")),
          pod("ns1", "pb1", resources("1", "1Gi"), "pgb", arrival=2),
          queue("q1", 1, resources("4", "8Gi"))),
         conf("enqueue, allocate", plugin("proportion", "enabledAllocatable", "enabledOverused", "enableJobEnqueued")),
         no_double_check),
]

UNEXPRESSED: list[Unexpressed] = [
    ("TestProportion", "pod-deallocate",
     "it reads the volcano_queue_allocated metrics over HTTP between sessions while deleting PodGroups from the "
     "scheduler cache, on pods Running with no node and queues of weight 0 (refused by Volcano's webhook and by "
     "Phalanx); its table's expected binds are never checked. Phalanx serves no such metric and no input deletes a "
     "PodGroup under running pods"),
    ("TestProportion", "realcapability-test",
     "the same metrics test as pod-deallocate with a third job of GPU and rdma/hca pods: nothing Phalanx's inputs "
     "or report can say"),
    ("TestJobEnqueuedOnOtherPluginsReject", "phantom inqueue reservation: rejecter blocks pgA, pgB must still be "
                                            "admitted",
     "pgA is rejected at enqueue by a test-only plugin (uthelper.RejecterPlugin) in proportion's tier: no Volcano "
     "plugin a conf can name, nor any input, rejects one job by name"),
]


@pytest.mark.parametrize("case", params(CASES))
def test_restated(case: Case) -> None:
    case.check(run(case))


UPSTREAM_NAMES: dict[str, tuple[str, ...]] = {
    # Its table entries are named by a `name` field; the function runs them without t.Run.
    "TestProportion": (
        "pod-deallocate",
        "realcapability-test",
    ),
    ENQUEUE_ALLOCABLE: (
        "case0: memory exceed derserved, job only request cpu can be enqueued and allocated",
        "case1: cpu exceed derserved, job only request memory can be enqueued and allocated",
        "case2: exceed capacity, can not enqueue",
        "case3: exceed deserved, can not allocate",
        "case4: queue with  non-open state, can not enqueue",
    ),
    ALLOCATE: (
        "case0: Pods are assigned according to the order of Queue Priority in which PGs are placed",
    ),
    NO_DOUBLE: (
        "TestNoDoubleCountingForInqueueJobWithBindingTasks",  # no named case: the function is one
    ),
    # Its one case is a TestCommonStruct run without t.Run.
    "TestJobEnqueuedOnOtherPluginsReject": (
        "phantom inqueue reservation: rejecter blocks pgA, pgB must still be admitted",
    ),
}


def test_every_upstream_case_is_restated_or_unexpressed() -> None:
    check_names(CASES, UNEXPRESSED, UPSTREAM_NAMES)
