"""volcano-sh/volcano `pkg/scheduler/actions/preempt/preempt_test.go` (TestPreempt, TestTopologyAwarePreempt,
TestNormalPreemptRechecksPredicateAfterEviction), restated (see restated.py).

Both table tests run the preempt action alone, with PriorityClasses high-priority (100000) and low-priority (10)
in every case, on pods that are running (staged at 0 s) and pending (1 s). TestPreempt registers conformance,
gang, priority and proportion, with `enableTopologyAwarePreemption: false`; TestTopologyAwarePreempt also
registers capacity (queue order) and predicates, with `enableTopologyAwarePreemption: true`. Their first ten
cases build the same objects. Upstream checks the evictions (ExpectEvicted, none when it names none); its preempt
action pipelines the preemptor and never binds, while Phalanx's conf needs `allocate` ahead of `preempt` to run
the pods of 0 s, so binds are not compared.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.upstream.volcano.restated import (
    GROUP_PRIORITY,
    PARTIAL_GANG,
    PREEMPTABLE,
    Case,
    Doc,
    Unexpressed,
    check_names,
    conf,
    expect,
    node,
    params,
    plugin,
    pod,
    pod_group,
    priority_class,
    queue,
    resources,
    run,
)

FILE = "pkg/scheduler/actions/preempt/preempt_test.go"
PREEMPT = "TestPreempt"
TOPOLOGY = "TestTopologyAwarePreempt"
RECHECK = "TestNormalPreemptRechecksPredicateAfterEviction"
HIGH, LOW = "high-priority", "low-priority"
CLASSES = (priority_class(HIGH, 100000), priority_class(LOW, 10))

_PRIORITY = plugin("priority", "enableTaskOrder", "enableJobOrder", "enablePreemptable", "enableJobPipelined",
                   "enableJobStarving")
_GANG = plugin("gang", "enablePreemptable", "enableJobPipelined", "enableJobStarving")
PREEMPT_CONF = conf("allocate, preempt",
                    plugin("conformance", "enablePreemptable"), _GANG, _PRIORITY,
                    plugin("proportion", "enabledOverused", "enabledAllocatable", "enableQueueOrder"),
                    configurations=[{"name": "preempt", "arguments": {"enableTopologyAwarePreemption": False}}])
TOPOLOGY_CONF = conf("allocate, preempt",
                     plugin("conformance", "enablePreemptable"), _GANG, _PRIORITY,
                     plugin("proportion", "enabledOverused", "enabledAllocatable", "enableQueueOrder",
                            "enablePredicate"),
                     plugin("predicates", "enablePreemptable", "enablePredicate"),
                     plugin("capacity", "enableQueueOrder"),
                     configurations=[{"name": "preempt", "arguments": {"enableTopologyAwarePreemption": True}}])


def one(cpu: str = "1", memory: str = "1G") -> dict[str, str]:
    return resources(cpu, memory)


def running(name: str, group: str, preemptable: bool | None = None, req: dict[str, str] | None = None,
            on: str = "n1", priority: int | None = None) -> Doc:
    """A pod upstream builds Running on `on`, labelled volcano.sh/preemptable when upstream labels it."""
    labels = {} if preemptable is None else {PREEMPTABLE: "true" if preemptable else "false"}
    return pod("c1", name, one() if req is None else req, group, on=on, labels=labels, priority=priority)


def pending(name: str, group: str, req: dict[str, str] | None = None, *, labels: dict[str, str] | None = None,
            affinity: Doc | None = None, preemption_policy: str | None = None) -> Doc:
    return pod("c1", name, one() if req is None else req, group, labels=labels, affinity=affinity,
               preemption_policy=preemption_policy)


def n1(cpu: str, memory: str, pods: str = "10") -> Doc:
    return node("n1", resources(cpu, memory, pods=pods))


def group(name: str, queue_name: str, min_member: int, tasks: dict[str, int] | None, phase: str = "Inqueue",
          priority: str | None = None) -> Doc:
    return pod_group(name, "c1", queue_name, min_member, phase, priority_class=priority, min_task_member=tasks)


def anti_affinity(labels: dict[str, str]) -> Doc:
    """buildPodWithPodAntiAffinity: required anti-affinity to pods with the pod's own labels, per hostname."""
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": dict(labels)}, "topologyKey": "kubernetes.io/hostname"}]}}


# The objects of the ten cases both table tests share, by case name.
SHARED: dict[str, Callable[[], tuple[Doc, ...]]] = {
    "do not preempt if there are enough idle resources": lambda: (
        group("pg1", "q1", 3, {"": 3}),
        running("preemptee1", "pg1"), running("preemptee2", "pg1"), pending("preemptor1", "pg1"),
        n1("10", "10G"), queue("q1")),
    "do not preempt if job is pipelined": lambda: (
        group("pg1", "q1", 1, {"": 2}), group("pg2", "q1", 1, {"": 2}),
        running("preemptee1", "pg1"), running("preemptee2", "pg1"), running("preemptee3", "pg2"),
        pending("preemptor2", "pg2"), n1("3", "3G"), queue("q1")),
    "preempt one task of different job to fit both jobs on one node": lambda: (
        group("pg1", "q1", 1, {"": 2}, priority=LOW), group("pg2", "q1", 1, {"": 2}, priority=HIGH),
        running("preemptee1", "pg1", True), running("preemptee2", "pg1", False),
        pending("preemptor1", "pg2"), pending("preemptor2", "pg2"), n1("2", "2G"), queue("q1")),
    "preempt enough tasks to fit large task of different job": lambda: (
        group("pg1", "q1", 1, {"": 3}, priority=LOW), group("pg2", "q1", 1, {"": 1}, priority=HIGH),
        running("preemptee1", "pg1", True), running("preemptee2", "pg1", True), running("preemptee3", "pg1", False),
        pending("preemptor1", "pg2", one("5", "5G")), n1("6", "6G"), queue("q1")),
    "preempt low priority job in same queue": lambda: (
        group("pg1", "q1", 0, None, priority=LOW), group("pg2", "q1", 1, {"": 1}, priority=HIGH),
        running("preemptee1", "pg1", True, one("3", "3G")), pending("preemptor1", "pg2", one("3", "3G")),
        n1("12", "12G"), queue("q1", 1, one("4", "4G"))),
    "preempt low priority job in same queue: allocatable and has enough resource, don't preempt": lambda: (
        group("pg1", "q1", 1, None, priority=LOW), group("pg2", "q1", 1, {"": 1}, priority=HIGH),
        running("preemptee1", "pg1", True, one("3", "3G")), pending("preemptor1", "pg2", one("3", "3G")),
        n1("12", "12G"), queue("q1", 1, one("6", "6G"))),
    "preempt low priority job in same queue but not pod with preemptable=false or higher priority": lambda: (
        group("pg1", "q1", 1, None, priority=LOW), group("pg2", "q1", 1, {"": 1}, priority=HIGH),
        running("preemptee1", "pg1", False), running("preemptee2", "pg1", True),
        running("preemptee3", "pg1", True, priority=100000),
        pending("preemptor1", "pg2"), n1("12", "12G"), queue("q1", 1, one("3", "3G"))),
    "unBestEffort high-priority pod preempt BestEffort low-priority pod in same queue": lambda: (
        group("pg1", "q1", 0, None, priority=LOW), group("pg2", "q1", 1, {"": 1}, priority=HIGH),
        running("preemptee1", "pg1", True, {}), pending("preemptor1", "pg2", one("3", "3G")),
        n1("12", "12G", pods="1"), queue("q1", 1, one("6", "6G"))),
    "BestEffort high-priority pod preempt BestEffort low-priority pod in same queue": lambda: (
        group("pg1", "q1", 0, None, priority=LOW), group("pg2", "q1", 1, {"": 1}, priority=HIGH),
        running("preemptee1", "pg1", True, {}), pending("preemptor1", "pg2", {}),
        n1("12", "12G", pods="1"), queue("q1", 1, one("6", "6G"))),
    "can not preempt resources when task preemption policy is never": lambda: (
        group("pg1", "q1", 0, None, priority=LOW), group("pg2", "q1", 1, None, priority=HIGH),
        running("preemptee1", "pg1", True), pending("preemptor1", "pg2", preemption_policy="Never"),
        n1("1", "1Gi", pods="1"), queue("q1")),
}

# What upstream evicts in the shared cases (the same in both tests).
SHARED_EVICTED: dict[str, tuple[str, ...]] = {
    "do not preempt if there are enough idle resources": (),
    "do not preempt if job is pipelined": (),
    "preempt one task of different job to fit both jobs on one node": ("c1/preemptee1",),
    "preempt enough tasks to fit large task of different job": ("c1/preemptee2", "c1/preemptee1"),
    "preempt low priority job in same queue": ("c1/preemptee1",),
    "preempt low priority job in same queue: allocatable and has enough resource, don't preempt": (),
    "preempt low priority job in same queue but not pod with preemptable=false or higher priority": (
        "c1/preemptee2",),
    "unBestEffort high-priority pod preempt BestEffort low-priority pod in same queue": ("c1/preemptee1",),
    "BestEffort high-priority pod preempt BestEffort low-priority pod in same queue": ("c1/preemptee1",),
    "can not preempt resources when task preemption policy is never": (),
}
CLASSED = GROUP_PRIORITY.format(classes="low-priority (the victims') and high-priority (the preemptors')")
SHARED_DIFFERS: dict[str, str] = {
    "do not preempt if there are enough idle resources": PARTIAL_GANG.format(min=3, running=2),
    **{name: CLASSED for name in list(SHARED)[2:]},
}


def shared(test: str, conf_doc: Doc) -> list[Case]:
    return [Case(test, name, (*CLASSES, *build()), conf_doc, expect(None, SHARED_EVICTED[name]),
                 differs=SHARED_DIFFERS.get(name, "")) for name, build in SHARED.items()]


CASES = [
    *shared(PREEMPT, PREEMPT_CONF),
    Case(PREEMPT, "rollback evictions when preemptor exceeds queue capacity after evicting victims",
         (*CLASSES, group("pg1", "q1", 1, {"": 2}, priority=LOW), group("pg2", "q1", 1, {"": 1}, priority=HIGH),
          running("preemptee1", "pg1", True), running("preemptee2", "pg1", True),
          pending("preemptor1", "pg2", one("4", "4G")), n1("10", "10G"), queue("q1", 1, one("3", "3G"))),
         PREEMPT_CONF, expect(None), differs=CLASSED),
    Case(PREEMPT, "only commit evictions on the node where preemption succeeds",
         (*CLASSES, group("pg1", "q1", 0, {}, priority=LOW), group("pg2", "q1", 1, {"": 1}, priority=HIGH),
          group("pg3", "q1", 0, {}, priority=LOW),
          running("preemptee1", "pg1", True), running("preemptee2", "pg3", True, one("4", "4G"), on="n2"),
          pending("preemptor1", "pg2", one("3", "3G")),
          node("n1", resources("3", "3G", pods="10")), node("n2", resources("4", "4G", pods="10")),
          queue("q1", 1, one("6", "6G"))),
         PREEMPT_CONF, expect(None, ["c1/preemptee2"]), differs=CLASSED),
    Case(PREEMPT, "multi-queue: preemptorTasks must not be overwritten by intra-job preemption of another queue",
         (*CLASSES, group("pg1", "q1", 1, {"": 1}), group("pg2", "q2", 0, {}, priority=LOW),
          group("pg3", "q2", 1, {"": 1}, priority=HIGH),
          pod("c1", "q1-runner1", one(), "pg1", on="n1"),
          pod("c1", "q2-preemptee1", one(), "pg2", on="n1", labels={PREEMPTABLE: "true"}),
          pending("q2-preemptor1", "pg3"), n1("2", "2G"), queue("q1"), queue("q2", 1, one("4", "4G"))),
         PREEMPT_CONF, expect(None, ["c1/q2-preemptee1"]), differs=CLASSED),
    *shared(TOPOLOGY, TOPOLOGY_CONF),
    Case(TOPOLOGY, "preempt low-priority pod when high-priority pod has PodAntiAffinity conflict",
         (*CLASSES, group("pg1", "q1", 0, {}, priority=LOW), group("pg2", "q1", 0, {}, priority=LOW),
          group("pg3", "q1", 1, {"": 1}, priority=HIGH),
          running("preemptee1", "pg2", True),
          pod("c1", "preemptee2", one(), "pg1", on="n1", labels={PREEMPTABLE: "true", "test": "test"},
              affinity=anti_affinity({PREEMPTABLE: "true", "test": "test"})),
          pending("preemptor1", "pg3", labels={"test": "test"}, affinity=anti_affinity({"test": "test"})),
          node("n1", resources("2", "2Gi", pods="2")), queue("q1", 1, one("2", "2G"))),
         TOPOLOGY_CONF, expect(None, ["c1/preemptee2"]), differs=CLASSED),
    Case(TOPOLOGY, "preemption with priority queues",
         (*CLASSES, group("pg3", "q2", 1, None, "Running", HIGH), group("pg1", "q1", 0, None, "Running", LOW),
          group("pg2", "q1", 1, None, priority=HIGH),
          running("preemptee2", "pg3", True), running("preemptee1", "pg1", True),
          pending("preemptor1", "pg2", preemption_policy="PreemptLowerPriority"),
          node("n1", resources("2", "2Gi", pods="2")),
          queue("q1", capability=one(), priority=1, deserved=one()),
          queue("q2", capability=one(), priority=10, deserved=one())),
         TOPOLOGY_CONF, expect(None, ["c1/preemptee1"]), differs=CLASSED),
]

UNEXPRESSED: list[Unexpressed] = [
    (RECHECK, "normal preemption evicts a victim when hidden device capacity remains unavailable",
     "its preemptor fits the node only once the victim is Releasing, which a test-only plugin "
     "(device-fit-after-eviction, a PredicateFn that looks at the victim's task status) decides: no Volcano "
     "plugin a conf can name, nor any input, says it"),
]


@pytest.mark.parametrize("case", params(CASES))
def test_restated(case: Case) -> None:
    case.check(run(case))


UPSTREAM_NAMES: dict[str, tuple[str, ...]] = {
    PREEMPT: (
        "do not preempt if there are enough idle resources",
        "do not preempt if job is pipelined",
        "preempt one task of different job to fit both jobs on one node",
        "preempt enough tasks to fit large task of different job",
        "preempt low priority job in same queue",
        "preempt low priority job in same queue: allocatable and has enough resource, don't preempt",
        "preempt low priority job in same queue but not pod with preemptable=false or higher priority",
        "unBestEffort high-priority pod preempt BestEffort low-priority pod in same queue",
        "BestEffort high-priority pod preempt BestEffort low-priority pod in same queue",
        "can not preempt resources when task preemption policy is never",
        "rollback evictions when preemptor exceeds queue capacity after evicting victims",
        "only commit evictions on the node where preemption succeeds",
        "multi-queue: preemptorTasks must not be overwritten by intra-job preemption of another queue",
    ),
    # Its one case is the fixture's TestCommonStruct (newNormalPreemptDeviceFitFixture), run without t.Run.
    RECHECK: (
        "normal preemption evicts a victim when hidden device capacity remains unavailable",
    ),
    TOPOLOGY: (
        "do not preempt if there are enough idle resources",
        "do not preempt if job is pipelined",
        "preempt one task of different job to fit both jobs on one node",
        "preempt enough tasks to fit large task of different job",
        "preempt low priority job in same queue",
        "preempt low priority job in same queue: allocatable and has enough resource, don't preempt",
        "preempt low priority job in same queue but not pod with preemptable=false or higher priority",
        "unBestEffort high-priority pod preempt BestEffort low-priority pod in same queue",
        "BestEffort high-priority pod preempt BestEffort low-priority pod in same queue",
        "can not preempt resources when task preemption policy is never",
        "preempt low-priority pod when high-priority pod has PodAntiAffinity conflict",
        "preemption with priority queues",
    ),
}


def test_every_upstream_case_is_restated_or_unexpressed() -> None:
    check_names(CASES, UNEXPRESSED, UPSTREAM_NAMES)
