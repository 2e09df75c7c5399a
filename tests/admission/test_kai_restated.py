"""Cases restated from NVIDIA/KAI-Scheduler's own tests (commit 72de64fc), each naming its upstream file and case.

Upstream's action tests build queues with `test_utils.BuildQueueInfoMap`: GPU quota/weight as given, no GPU limit,
cpu and memory quota and limit -1, and (without departments) one parent `default` with unlimited GPU quota; jobs
ask GPUs only; Train priority is 50 (preemptible), Build 100 and Inference 125 (non-preemptible). An upstream
`Releasing` victim is an EvictWorkload here, `Pipelined`/`Binding` an Admit.

Skipped upstream cases (what they need is not modelled):
- resource_division_test.go "gives ... fraction" and kValue/usage cases: time-based fair share (historical usage).
- allocate_test.go MIG, fractional GPU, GPU memory, topology, nodepack/nodespread, elastic, subgroup cases: devices
  and node placement are the engine's, not the admission policy's.
- reclaim/preempt "... with consolidation", "Reclaim based on releasing ...", elastic and subgroup cases: node-level
  consolidation, pods already releasing, and per-pod victims (here workloads are evicted whole).
- reclaimDepartments_test.go cases needing minimum runtimes (preemptMinRuntime/reclaimMinRuntime).
"""

from __future__ import annotations

import pytest

from phalanx.admission.base import Admit, EvictWorkload, PodSet, QueuedWorkload
from phalanx.admission.kai import KaiAdmission, Share, divide_over_quota, set_resource_share
from phalanx.admission.kai_objects import KaiQueue, KaiResource

UNL = -1.0
GPU = "nvidia.com/gpu"
TRAIN, BUILD, INFERENCE = 50, 100, 125
RD = "pkg/scheduler/plugins/proportion/resource_division/resource_division_test.go"


# --- resource_division_test.go --------------------------------------------------------------------------------

def gpu_share(name: str, deserved: float, request: float, *, weight: float = 0, max_allowed: float = UNL,
              fair: float = 0, priority: int = 100, order: int = 0) -> Share:
    return Share(name, deserved, max_allowed, weight, request, priority, order, fair)


@pytest.mark.parametrize(("total", "max_allowed", "asked", "deserved", "remaining", "fair"), [
    pytest.param(2, UNL, 2, 3, 0, 2, id=f"{RD}: single queue within quota / gives requested GPUs - no remaining"),
    pytest.param(3, UNL, 2, 3, 1, 2, id=f"{RD}: single queue within quota / gives requested GPUs with remaining"),
    pytest.param(3, 2, 2, 3, 1, 2, id=f"{RD}: single queue within quota / doesn't give more GPUs than allowed"),
    pytest.param(1, UNL, 2, 3, 0, 2, id=f"{RD}: single queue within quota / gives up to deserved when over "
                                       "subscribed"),
    pytest.param(7, UNL, 5, 3, 4, 3, id=f"{RD}: single queue within quota / gives up to full quota"),
    pytest.param(2, UNL, 2, 0, 2, 0, id=f"{RD}: single queue within quota / doesn't give if deserved is zero"),
    pytest.param(2, UNL, 1.5, 3, 0.5, 1.5, id=f"{RD}: single queue within quota / gives with fraction, if stated "
                                              "in request"),
])
def test_single_queue_within_quota(total: float, max_allowed: float, asked: float, deserved: float,
                                   remaining: float, fair: float) -> None:
    q = gpu_share("1", deserved, asked, max_allowed=max_allowed)
    assert set_resource_share(total, [q], 0) == remaining
    assert q.fair == fair


@pytest.mark.parametrize(("total", "change", "remaining", "fair"), [
    pytest.param(2, {}, 0, 5, id=f"{RD}: single queue over quota / gives requested GPUs no remaining"),
    pytest.param(3, {}, 1, 5, id=f"{RD}: single queue over quota / gives requested GPUs with remaining"),
    pytest.param(2, {"max_allowed": 4}, 1, 4, id=f"{RD}: single queue over quota / doesn't give more GPUs than "
                                                 "allowed"),
    pytest.param(2, {"weight": 0}, 2, 3, id=f"{RD}: single queue over quota / doesn't give when over quota weight "
                                            "is zero"),
    pytest.param(2, {"request": 4.5}, 0.5, 4.5, id=f"{RD}: single queue over quota / gives with fraction if "
                                                   "requested"),
    pytest.param(0.5, {}, 0, 3.5, id=f"{RD}: single queue over quota / gives remainder fraction"),
    pytest.param(6, {"deserved": 0, "fair": 0}, 1, 5, id=f"{RD}: single queue over quota / gives when deserved is "
                                                         "zero"),
    pytest.param(0, {}, 0, 3, id=f"{RD}: single queue over quota / doesn't break when there are zero resources"),
])
def test_single_queue_over_quota(total: float, change: dict[str, float], remaining: float, fair: float) -> None:
    """divideOverQuotaResource on a queue that already holds its quota of 3 and asks 5."""
    q = gpu_share("1", 3, 5, weight=1, fair=3)
    for key, value in change.items():
        setattr(q, key, value)
    assert divide_over_quota(total, [q], 0) == remaining
    assert q.fair == fair


@pytest.mark.parametrize(("total", "weights", "requests", "max_allowed", "priorities", "remaining", "fair"), [
    pytest.param(15, (2, 2), (6, 6), {}, (100, 100), 3, (6, 6), id=f"{RD}: two queues / allocates many available "
                                                                    "gpus"),
    pytest.param(12, (2, 2), (6, 6), {}, (100, 100), 0, (6, 6), id=f"{RD}: two queues / allocates exact requested "
                                                                    "amount gpus"),
    pytest.param(8, (1, 3), (6, 6), {}, (100, 100), 0, (3, 5), id=f"{RD}: two queues / allocates GPUs "
                                                                   "proportionally"),
    pytest.param(12, (2, 2), (6, 6), {0: 5}, (100, 100), 1, (5, 6), id=f"{RD}: two queues / doesn't allocate more "
                                                                        "than allowed"),
    pytest.param(11, (1, 4), (10, 10), {}, (100, 100), 0, (3, 8), id=f"{RD}: two queues / distributes remainder "
                                                                      "between queues based on largest remaining"),
    pytest.param(11, (2, 2), (6, 6), {}, (100, 100), 0, (6, 5), id=f"{RD}: two queues / distributes remainder "
                                                                    "between queues based on creation time"),
    pytest.param(4, (2, 2), (6, 6), {}, (1, 2), 0, (2, 2), id=f"{RD}: two queues / priority doesn't affect "
                                                               "deserved"),
    pytest.param(6, (2, 2), (6, 6), {}, (1, 2), 0, (2, 4), id=f"{RD}: two queues / priority does affect "
                                                               "over-quota"),
    pytest.param(6, (100, 1), (6, 6), {}, (1, 2), 0, (2, 4), id=f"{RD}: two queues / priority does affect "
                                                                 "over-quota, even when overQuotaWeight is set"),
])
def test_two_queues(total: float, weights: tuple[float, float], requests: tuple[float, float],
                    max_allowed: dict[int, float], priorities: tuple[int, int], remaining: float,
                    fair: tuple[float, float]) -> None:
    """Both queues deserve 2 GPUs; queue 1 is the older."""
    qs = [gpu_share(str(i + 1), 2, requests[i], weight=weights[i], max_allowed=max_allowed.get(i, UNL),
                    priority=priorities[i], order=i) for i in range(2)]
    assert set_resource_share(total, qs, 0) == remaining
    assert (qs[0].fair, qs[1].fair) == fair


def test_divides_the_remainder_even_when_using_priorities() -> None:
    """resource_division_test.go: "divides the remainder even when using priorities"."""
    qs = [gpu_share("1", 2, 5, weight=2, priority=2, order=0), gpu_share("2", 2, 5, weight=2, priority=2, order=1),
          gpu_share("3", 1, 0, weight=2, priority=1, order=2)]
    assert set_resource_share(5, qs, 0) == 0
    assert [q.fair for q in qs] == [3, 2, 0]


def cpu_queues(requests: tuple[float, ...], deserved: tuple[float, ...] = (5000, 5000, 5000),
               max_allowed: tuple[float, ...] = (UNL, UNL, UNL)) -> list[Share]:
    return [Share(str(i + 1), deserved[i], max_allowed[i], deserved[i], requests[i], 100, i)
            for i in range(len(requests))]


@pytest.mark.parametrize(("total", "requests", "deserved", "max_allowed", "fair"), [
    pytest.param(10000, (10000, 5000), (5000, 0), (UNL, UNL), (10000, 0),
                 id=f"{RD}: setResourceShare - CPU / two queues / reclaims all resources of queue 2"),
    pytest.param(10000, (5000, 5000, 5000), (5000,) * 3, (UNL,) * 3, (5000, 5000, 5000),
                 id=f"{RD}: CPU three queues / all queues get their deserved fairShare - over subscription"),
    pytest.param(18000, (6000, 6000, 6000), (5000,) * 3, (UNL,) * 3, (6000, 6000, 6000),
                 id=f"{RD}: CPU three queues / all queues get their deserved fairShare - over quota"),
    pytest.param(10000, (7000, 2000, 2000), (5000,) * 3, (UNL,) * 3, (6000, 2000, 2000),
                 id=f"{RD}: CPU three queues / reclaims unneeded resources from an allocated queue to fulfill the "
                    "unallocated queue"),
    pytest.param(10000, (7000, 5000, 2000), (5000,) * 3, (UNL,) * 3, (5000, 5000, 2000),
                 id=f"{RD}: CPU three queues / reclaims from both allocated queues to fulfill the last unallocated "
                    "queue"),
    pytest.param(10000, (7000, 2000, 2000), (5000,) * 3, (7000, UNL, UNL), (6000, 2000, 2000),
                 id=f"{RD}: CPU three queues / one queue request more than it deserves and allowed"),
    pytest.param(10000, (5000, 5000, 5000), (5000, 0, 5000), (UNL,) * 3, (5000, 0, 5000),
                 id=f"{RD}: CPU three queues / q2 has no deserved CPU but is allowed OQ / reclaims all resources of "
                    "queue 2 and allocates allowed resource in queue 3"),
])
def test_cpu(total: float, requests: tuple[float, ...], deserved: tuple[float, ...],
             max_allowed: tuple[float, ...], fair: tuple[float, ...]) -> None:
    """The CPU cases: overQuotaWeight equals the quota in upstream's fixtures."""
    qs = cpu_queues(requests, deserved, max_allowed)
    assert set_resource_share(total, qs, 0) == 0
    assert tuple(q.fair for q in qs) == fair


# --- the actions: allocate, reclaim, preempt --------------------------------------------------------------------

def upstream_queues(*queues: tuple[str, float, float], parent: str = "default") -> list[KaiQueue]:
    """BuildQueueInfoMap: (name, deserved GPUs, GPU over-quota weight); cpu/memory unlimited."""
    free = KaiResource(UNL, UNL, 1)
    top = KaiQueue(parent, resources={"gpu": KaiResource(UNL, UNL, UNL), "cpu": free, "memory": free})
    return [top] + [KaiQueue(name, parent=parent, resources={"gpu": KaiResource(q, UNL, w), "cpu": free,
                                                             "memory": free}) for name, q, w in queues]


def job(name: str, queue: str, gpus: int, priority: int = TRAIN, tasks: int = 1, created: float = 0) -> QueuedWorkload:
    return QueuedWorkload(name, "ns", queue, priority, created, (PodSet("t", tasks, {GPU: gpus}),))


def scenario(queues: list[KaiQueue], gpus: int, running: list[QueuedWorkload],
             pending: list[QueuedWorkload]) -> tuple[KaiAdmission, list[Admit | EvictWorkload]]:
    """Running jobs are admitted first (a cycle with only them), then the pending ones arrive."""
    policy = KaiAdmission(queues, {GPU: gpus})
    for i, w in enumerate(running):
        policy.submit(QueuedWorkload(w.key, w.namespace, w.queue, w.priority, -100.0 + i, w.pod_sets), 0)
    first = policy.cycle(0)
    assert sorted(d.key for d in first if isinstance(d, Admit)) == sorted(w.key for w in running)
    for i, w in enumerate(pending):
        policy.submit(QueuedWorkload(w.key, w.namespace, w.queue, w.priority, float(i), w.pod_sets), 1)
    return policy, policy.cycle(1)


def outcome(decisions: list[Admit | EvictWorkload]) -> tuple[list[str], list[tuple[str, str]]]:
    return (sorted(d.key for d in decisions if isinstance(d, Admit)),
            sorted((d.key, d.reason) for d in decisions if isinstance(d, EvictWorkload)))


def test_allocate_according_to_queue_shares() -> None:
    """allocate_test.go: "1 job running on node0 from queue0, 3 pending jobs from queue1 and 1 pending job from queue0 -
    allocate them according to their the queue shares" (4 GPUs)."""
    _, out = scenario(upstream_queues(("queue0", 1, 0), ("queue1", 1, 0)), 4, [job("running_job0", "queue0", 1)],
                      [job("pending_job0", "queue0", 1), job("pending_job1", "queue1", 1),
                       job("pending_job2", "queue1", 1), job("pending_job3", "queue1", 1)])
    assert outcome(out) == (["pending_job0", "pending_job1", "pending_job2"], [])


def test_allocate_according_to_order() -> None:
    """allocate_test.go: "1 job running on node0, 3 pending jobs - allocate them according to their order"."""
    _, out = scenario(upstream_queues(("queue1", 2, 0)), 8, [job("running_job0", "queue1", 2)],
                      [job("pending_job0", "queue1", 4), job("pending_job1", "queue1", 2),
                       job("pending_job2", "queue1", 2)])
    assert outcome(out) == (["pending_job0", "pending_job1"], [])


def test_allocate_only_build_job() -> None:
    """allocate_test.go: "1 job running on node0, 3 pending jobs - only build job should be allocated"."""
    _, out = scenario(upstream_queues(("queue1", 2, 0)), 4, [job("running_job0", "queue1", 2)],
                      [job("pending_job0", "queue1", 4), job("pending_job1", "queue1", 2),
                       job("pending_job2", "queue1", 2, BUILD)])
    assert outcome(out) == (["pending_job2"], [])


def test_allocate_not_enough_deserved_for_build() -> None:
    """allocate_test.go: "1 job running on node0, 3 pending jobs, not enough deserved GPUs for build job - allocate
    train job"."""
    policy, out = scenario(upstream_queues(("queue1", 1, 0)), 4, [job("running_job0", "queue1", 2)],
                           [job("pending_job0", "queue1", 4), job("pending_job1", "queue1", 2),
                            job("pending_job2", "queue1", 2, BUILD)])
    assert outcome(out) == (["pending_job1"], [])
    assert policy.pending_reason("pending_job2").startswith("Non-preemptible workload is over quota.")


def test_reclaim_according_to_fair_share() -> None:
    """reclaim_test.go: "Reclaim jobs according to queue fair share" (department d1 of quota 1, weight 1)."""
    free = KaiResource(UNL, UNL, 1)
    d1 = KaiQueue("d1", resources={"gpu": KaiResource(1, UNL, 1), "cpu": free, "memory": free})
    queues = [d1, *upstream_queues(("queue0", 1, 1), ("queue1", 1, 1), ("reclaimer_queue", 2, 0), parent="d1")[1:]]
    running = [job("q0_running_job0", "queue0", 1), job("q0_running_job1", "queue0", 1),
               job("q0_running_job2", "queue0", 1, TRAIN - 1), job("q1_running_job0", "queue1", 1),
               job("q1_running_job1", "queue1", 1), job("q1_running_job2", "queue1", 1, TRAIN - 1)]
    _, out = scenario(queues, 6, running, [job("reclaimer", "reclaimer_queue", 1, tasks=2)])
    assert outcome(out) == (["reclaimer"], [("q0_running_job2", "Reclaimed"), ("q1_running_job2", "Reclaimed")])


def test_reclaim_two_jobs_queue0_two_pending_queue1() -> None:
    """reclaim_test.go: "2 jobs from queue0 running on node0 - 2 pending jobs from queue1 - reclaim"."""
    _, out = scenario(upstream_queues(("queue0", 1, 1), ("queue1", 1, 1)), 2,
                      [job("running_job0", "queue0", 1), job("running_job1", "queue0", 1)],
                      [job("pending_job0", "queue1", 1), job("pending_job1", "queue1", 1)])
    assert outcome(out) == (["pending_job0"], [("running_job1", "Reclaimed")])


@pytest.mark.parametrize("name", [
    "1 job from queue0 and 1 job from queue1 running on node0 - don't reclaim",
    "Don't reclaim when there's fairness between the queues",
])
def test_reclaim_not_when_fair(name: str) -> None:
    """reclaim_test.go: the two cases with one job of each queue running and one of each pending."""
    _, out = scenario(upstream_queues(("queue0", 1, 1), ("queue1", 1, 1)), 2,
                      [job("running_job0", "queue0", 1), job("running_job1", "queue1", 1)],
                      [job("pending_job0", "queue0", 1), job("pending_job1", "queue1", 1)])
    assert outcome(out) == ([], [])


def test_reclaim_train_not_build() -> None:
    """reclaim_test.go: "2 jobs from queue0 running on node0 (1 train, 1 build)- 2 pending jobs from queue1 -
    reclaim train"."""
    _, out = scenario(upstream_queues(("queue0", 1, 1), ("queue1", 1, 1)), 2,
                      [job("running_job0", "queue0", 1), job("running_job1", "queue0", 1, BUILD)],
                      [job("pending_job0", "queue1", 1), job("pending_job1", "queue1", 1)])
    assert outcome(out) == (["pending_job0"], [("running_job0", "Reclaimed")])


def test_reclaim_not_when_used_equals_deserved() -> None:
    """reclaim_test.go: "Queues are over provisioned, ratio between queues are equal, yet don't reclaim since number
    of used GPUs is equal to the deserved GPUs"."""
    _, out = scenario(upstream_queues(("queue0", 2, 2), ("queue1", 2, 2)), 2,
                      [job("running_job0", "queue0", 1), job("running_job1", "queue0", 1)],
                      [job("pending_job0", "queue1", 1), job("pending_job1", "queue1", 1)])
    assert outcome(out) == ([], [])


def test_reclaim_two_gpu_job() -> None:
    """reclaim_test.go: "1 train job of 2 GPUs from queue0 running on node0 with deserved of 1, 2 pending jobs from
    queue1 - reclaim"."""
    _, out = scenario(upstream_queues(("queue0", 1, 1), ("queue1", 1, 1)), 2, [job("running_job0", "queue0", 2)],
                      [job("pending_job0", "queue1", 1), job("pending_job1", "queue1", 1)])
    assert outcome(out) == (["pending_job0"], [("running_job0", "Reclaimed")])


def test_reclaim_for_build_first() -> None:
    """reclaim_test.go: "1 train job of 2 GPUs from queue0 running on node0 with deserved of 1, 2 pending jobs (1
    build) from queue1 - reclaim"."""
    _, out = scenario(upstream_queues(("queue0", 1, 1), ("queue1", 1, 1)), 2, [job("running_job0", "queue0", 2)],
                      [job("pending_job0", "queue1", 1), job("pending_job1", "queue1", 1, BUILD)])
    assert outcome(out) == (["pending_job1"], [("running_job0", "Reclaimed")])


def test_reclaim_not_for_build_over_quota() -> None:
    """reclaim_test.go: "2 train job of 1 GPUs from queue0 running on node0 with deserved of 1, 1 pending build job
    of 2 GPUs from queue1 with deserved of 1 - don't reclaim"."""
    _, out = scenario(upstream_queues(("queue0", 1, 1), ("queue1", 1, 1)), 2, [job("running_job0", "queue0", 2)],
                      [job("pending_job0", "queue1", 2, BUILD)])
    assert outcome(out) == ([], [])


def test_preempt_train_for_build() -> None:
    """preempt_test.go: "1 train job running, 1 build job pending for the same queue - preempt"."""
    _, out = scenario(upstream_queues(("queue0", 1, 0)), 1, [job("running_job0", "queue0", 1)],
                      [job("pending_job0", "queue0", 1, BUILD)])
    assert outcome(out) == (["pending_job0"], [("running_job0", "Preempted")])


def test_preempt_not_same_priority() -> None:
    """preempt_test.go: "1 train job running, 1 train job pending for the same queue - don't preempt"."""
    _, out = scenario(upstream_queues(("queue0", 1, 0)), 1, [job("running_job0", "queue0", 1)],
                      [job("pending_job0", "queue0", 1)])
    assert outcome(out) == ([], [])


def test_preempt_not_other_queue() -> None:
    """preempt_test.go: "1 train job running, 1 build job pending for the different queue - don't preempt"."""
    _, out = scenario(upstream_queues(("queue0", 1, 0), ("queue1", 1, 0)), 1, [job("running_job0", "queue0", 1)],
                      [job("pending_job0", "queue1", 1, BUILD)])
    assert outcome(out) == ([], [])


def test_preempt_two_for_one() -> None:
    """preempt_test.go: "2 train jobs running, 1 build job with 2 GPUs pending for the same queue - preempt"."""
    _, out = scenario(upstream_queues(("queue0", 2, 0)), 2,
                      [job("running_job0", "queue0", 1), job("running_job1", "queue0", 1)],
                      [job("pending_job0", "queue0", 2, BUILD)])
    assert outcome(out) == (["pending_job0"], [("running_job0", "Preempted"), ("running_job1", "Preempted")])


def test_preempt_only_own_queue() -> None:
    """preempt_test.go: "2 train jobs running require 2 GPUs, 1 build job with 2 GPUs pending - preempt"."""
    _, out = scenario(upstream_queues(("queue0", 2, 0), ("queue1", 2, 0)), 4,
                      [job("running_job0", "queue0", 2), job("running_job1", "queue1", 2)],
                      [job("pending_job0", "queue0", 2, BUILD)])
    assert outcome(out) == (["pending_job0"], [("running_job0", "Preempted")])


@pytest.mark.parametrize(("name", "running", "pending", "preempts"), [
    ("Inference shouldn't preempt interactive", BUILD, INFERENCE, False),
    ("Interactive shouldn't preempt inference", INFERENCE, BUILD, False),
    ("Inference should preempt train", TRAIN, INFERENCE, True),
])
def test_preempt_by_preemptibility(name: str, running: int, pending: int, preempts: bool) -> None:
    """preempt_test.go: the named case; non-preemptible (priority ≥ 100) jobs are never victims."""
    _, out = scenario(upstream_queues(("queue0", 10, 0)), 1, [job("running_job0", "queue0", 1, running)],
                      [job("pending_job0", "queue0", 1, pending)])
    expected: tuple[list[str], list[tuple[str, str]]] = (
        (["pending_job0"], [("running_job0", "Preempted")]) if preempts else ([], []))
    assert outcome(out) == expected
