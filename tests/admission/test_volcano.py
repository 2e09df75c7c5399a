"""Volcano-style admission: the proportion plugin's deserved shares, enqueue, the allocate gate, reclaim and
preempt, restated from volcano-sh/volcano's own tests and the volcano-sh/website docs (named per test)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.admission.base import Admit, EvictWorkload, PodSet, QueuedWorkload
from phalanx.admission.volcano import (
    QueueDemand,
    VolcanoAdmission,
    load_volcano,
    minimum_resources,
    proportion_deserved,
    share,
)
from phalanx.admission.volcano_conf import VolcanoConf, parse_volcano_conf
from phalanx.admission.volcano_objects import VolcanoQueue
from phalanx.errors import InputError

G = 10**9


def conf(actions: str, *plugins: str) -> VolcanoConf:
    return parse_volcano_conf({"actions": actions, "tiers": [{"plugins": [{"name": p} for p in plugins]}]})


PROPORTION = conf("enqueue, allocate, backfill", "priority", "proportion")
RECLAIM = conf("enqueue, allocate, reclaim", "priority", "conformance", "proportion")


def wl(key: str, queue: str, cpu: int, memory: int = 0, *, priority: int = 0, created: float = 0.0,
       count: int = 1, min_count: int | None = None, namespace: str = "ns1",
       priority_class: str | None = None) -> QueuedWorkload:
    requests = {"cpu": cpu, "memory": memory} if memory else {"cpu": cpu}
    return QueuedWorkload(key, namespace, queue, priority, created,
                          (PodSet("main", count, requests, min_count),), priority_class)


def admitted(decisions: list[Admit | EvictWorkload]) -> list[str]:
    return [d.key for d in decisions if isinstance(d, Admit)]


def evicted(decisions: list[Admit | EvictWorkload]) -> list[tuple[str, str, str | None]]:
    return [(d.key, d.reason, d.by) for d in decisions if isinstance(d, EvictWorkload)]


def row(policy: VolcanoAdmission, queue: str) -> dict[str, Any]:
    return next(r for r in policy.queue_rows() if r["queue"] == queue)


# --- the proportion plugin's deserved shares ---

def test_deserved_weights_one_to_one_and_one_to_three() -> None:
    """volcano-sh/website `content/en/docs/queue.md` (weight: a queue deserves weight/Σweight of the cluster,
    a soft share): 8 cpus over weights 1:1 give 4 and 4, over 1:3 give 2 and 6."""
    total = {"cpu": 8000.0}
    even = proportion_deserved(total, [QueueDemand("a", 1, {"cpu": 10000}), QueueDemand("b", 1, {"cpu": 10000})])
    assert even == {"a": {"cpu": 4000}, "b": {"cpu": 4000}}
    uneven = proportion_deserved(total, [QueueDemand("a", 1, {"cpu": 10000}), QueueDemand("b", 3, {"cpu": 10000})])
    assert uneven == {"a": {"cpu": 2000}, "b": {"cpu": 6000}}


def test_deserved_capped_by_capability_rest_redistributed() -> None:
    """proportion.go OnSessionOpen: deserved is clipped to realCapability, and what a capped queue cannot take
    goes back to the pool for the others in the next round (the queue leaves once its deserved stops growing)."""
    d = proportion_deserved({"cpu": 8000.0}, [QueueDemand("a", 1, {"cpu": 10000}, capability={"cpu": 2000}),
                                               QueueDemand("b", 1, {"cpu": 10000})])
    assert d == {"a": {"cpu": 2000}, "b": {"cpu": 6000}}


def test_deserved_capped_by_request() -> None:
    """proportion.go: deserved never exceeds what the queue's jobs request; the queue is then met."""
    d = proportion_deserved({"cpu": 8000.0}, [QueueDemand("a", 1, {"cpu": 1000}), QueueDemand("b", 1, {"cpu": 10000})])
    assert d == {"a": {"cpu": 1000}, "b": {"cpu": 7000}}


def test_deserved_raised_to_guarantee_and_others_capped() -> None:
    """proportion.go: realCapability = total − Σguarantee + own guarantee, and deserved = max(deserved,
    guarantee). A guarantee of 3 of 8 cpus keeps 3 for its queue even at weight 1:3."""
    d = proportion_deserved({"cpu": 8000.0}, [QueueDemand("a", 1, {"cpu": 10000}, guarantee={"cpu": 3000}),
                                               QueueDemand("b", 3, {"cpu": 10000})])
    assert d == {"a": {"cpu": 3000}, "b": {"cpu": 5000}}


def test_deserved_per_resource_proportion_test() -> None:
    """proportion_test.go TestEnqueueAndAllocable: two 2-cpu/2G nodes; q1 (cap 2/2G) asks 2 cpu 3G, q2 (cap 3/3G)
    asks 2 cpu 1G: q1 deserves 2 cpu 2G (capped), q2 2 cpu 1G (its request)."""
    d = proportion_deserved({"cpu": 4000.0, "memory": 4.0 * G}, [
        QueueDemand("q1", 1, {"cpu": 2000, "memory": 3 * G}, capability={"cpu": 2000, "memory": 2 * G}),
        QueueDemand("q2", 1, {"cpu": 2000, "memory": 1 * G}, capability={"cpu": 3000, "memory": 3 * G})])
    assert d == {"q1": {"cpu": 2000, "memory": 2 * G}, "q2": {"cpu": 2000, "memory": 1 * G}}


def test_share() -> None:
    """proportion.go updateQueueAttrShare with helpers.Share: max over resources of allocated/deserved; 0/0 is 0
    and x/0 is 1."""
    assert share({"cpu": 1000, "memory": 3}, {"cpu": 4000, "memory": 4}) == 0.75
    assert share({}, {"cpu": 0}) == 0.0
    assert share({"cpu": 1}, {"cpu": 0}) == 1.0


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 100_000), st.integers(1, 100_000), st.lists(st.tuples(
    st.integers(1, 20), st.integers(0, 200_000), st.integers(0, 200_000),
    st.none() | st.integers(1, 100_000), st.none() | st.integers(1, 100_000)), min_size=1, max_size=6))
def test_deserved_property(cpu: int, gpu: int, queues: list[tuple[int, int, int, int | None, int | None]]) -> None:
    """Property (no guarantees): deserved never exceeds a queue's capability or request, and the deserved shares
    together never exceed the cluster's total."""
    total = {"cpu": float(cpu), "gpu": float(gpu)}
    demands = [QueueDemand(f"q{i}", w, {"cpu": rc, "gpu": rg},
                           {k: v for k, v in (("cpu", cc), ("gpu", cg)) if v is not None})
               for i, (w, rc, rg, cc, cg) in enumerate(queues)]
    deserved = proportion_deserved(total, demands)
    for d in demands:
        for resource in ("cpu", "gpu"):
            got = deserved[d.name].get(resource, 0.0)
            assert got <= d.request[resource] + 1e-6
            if resource in d.capability:
                assert got <= d.capability[resource] + 1e-6
    for resource in ("cpu", "gpu"):
        assert sum(deserved[d.name].get(resource, 0.0) for d in demands) <= total[resource] * (1 + 1e-9) + 1e-6


# --- enqueue and the allocate gate (proportion_test.go TestEnqueueAndAllocable) ---

def running_pair() -> VolcanoAdmission:
    """The test's cluster: two nodes of 2 cpu 2G; q1 (weight 1, capability 2 cpu 2G) runs pg1 (1 cpu 2G), q2
    (weight 1, capability 3 cpu 3G) runs pg2 (2 cpu 1G); q3 is Closed."""
    queues = [VolcanoQueue("q1", 1, {"cpu": 2000, "memory": 2 * G}),
              VolcanoQueue("q2", 1, {"cpu": 3000, "memory": 3 * G}),
              VolcanoQueue("q3", 1, {"cpu": 3000, "memory": 3 * G}, state="Closed")]
    policy = VolcanoAdmission(queues, {"cpu": 4000, "memory": 4 * G}, PROPORTION)
    policy.submit(wl("ns1/pg1", "q1", 1000, 2 * G), 0)
    policy.submit(wl("ns1/pg2", "q2", 2000, 1 * G), 0)
    assert admitted(policy.cycle(0)) == ["ns1/pg1", "ns1/pg2"]
    return policy


def test_case0_memory_exceeds_deserved_cpu_only_job_runs() -> None:
    """TestEnqueueAndAllocable case0: q1's memory is at its deserved share, but a job asking cpu only (1 cpu, 0G)
    is enqueued and allocated: only the resources a job requests are compared."""
    policy = running_pair()
    policy.submit(wl("ns1/pg3", "q1", 1000), 1)
    assert admitted(policy.cycle(1)) == ["ns1/pg3"]


def test_case1_cpu_exceeds_deserved_memory_only_job_runs() -> None:
    """TestEnqueueAndAllocable case1: q2's cpu is at its deserved share; a memory-only job (0 cpu, 1G) runs."""
    policy = running_pair()
    policy.submit(QueuedWorkload("ns1/pg4", "ns1", "q2", 0, 1, (PodSet("main", 1, {"memory": G}),)), 1)
    assert admitted(policy.cycle(1)) == ["ns1/pg4"]


def test_case2_exceeding_capability_cannot_enqueue() -> None:
    """TestEnqueueAndAllocable case2 (enqueue only): pg5 (1 cpu 1G) would take q1 to 2 cpu 3G over its 2G
    capability: JobEnqueueable rejects it and it stays Pending."""
    policy = running_pair()
    policy.conf = conf("enqueue", "proportion")
    policy.submit(wl("ns1/pg5", "q1", 1000, 1 * G), 1)
    assert policy.cycle(1) == []
    assert (row(policy, "q1")["pending"], row(policy, "q1")["inqueue"]) == (1, 0)


def test_case3_exceeding_deserved_cannot_allocate() -> None:
    """TestEnqueueAndAllocable case3 (allocate only, so the job goes straight to Inqueue, allocate.go): q1
    deserves 2 cpu 2G and holds 1 cpu 2G, so pg5 (1 cpu 1G) is not allocated."""
    policy = running_pair()
    policy.conf = conf("allocate", "proportion")
    policy.submit(wl("ns1/pg5", "q1", 1000, 1 * G), 1)
    assert policy.cycle(1) == []
    assert row(policy, "q1")["inqueue"] == 1


def test_case4_closed_queue_cannot_enqueue() -> None:
    """TestEnqueueAndAllocable case4: a job in a queue whose state is Closed is never enqueued."""
    policy = running_pair()
    policy.submit(wl("ns1/pg6", "q3", 1000, 1 * G), 1)
    assert policy.cycle(1) == []
    assert (row(policy, "q3")["pending"], row(policy, "q3")["inqueue"]) == (1, 0)


def test_weights_one_to_three_admission() -> None:
    """volcano-sh/website `content/en/docs/queue.md` weights: two queues at 1:3 on 8 cpus, each with ten 1-cpu
    jobs: the allocate gate (proportion Allocatable) runs 2 from the first and 6 from the second."""
    policy = VolcanoAdmission([VolcanoQueue("a", 1), VolcanoQueue("b", 3)], {"cpu": 8000}, PROPORTION)
    for i in range(10):
        policy.submit(wl(f"a{i}", "a", 1000, created=i), 0)
        policy.submit(wl(f"b{i}", "b", 1000, created=i), 0)
    decisions = policy.cycle(0)
    assert sorted(admitted(decisions)) == ["a0", "a1", "b0", "b1", "b2", "b3", "b4", "b5"]
    assert (row(policy, "a")["deserved"], row(policy, "b")["deserved"]) == ({"cpu": 2000}, {"cpu": 6000})
    assert (row(policy, "a")["share"], row(policy, "b")["share"]) == (1.0, 1.0)


def test_capability_caps_admission_and_unused_share_goes_elsewhere() -> None:
    """volcano-sh/website `content/en/docs/queue.md` capability (a hard cap): a queue capped at 2 cpus runs two
    1-cpu jobs even at weight 3:1; the other queue takes the rest of the cluster."""
    policy = VolcanoAdmission([VolcanoQueue("capped", 3, {"cpu": 2000}), VolcanoQueue("open", 1)], {"cpu": 8000},
                              PROPORTION)
    for i in range(8):
        policy.submit(wl(f"c{i}", "capped", 1000, created=i), 0)
        policy.submit(wl(f"o{i}", "open", 1000, created=i), 0)
    policy.cycle(0)
    assert (row(policy, "capped")["running"], row(policy, "open")["running"]) == (2, 6)
    assert row(policy, "capped")["inqueue"] == 0  # JobEnqueueable: minimum + held must fit the capability


def test_overcommit_factor_limits_inqueue() -> None:
    """overcommit.go: Inqueue minimums must fit 1.2 × the cluster less what is in use: on 4 cpus, four 1-cpu jobs
    go Inqueue (4 ≤ 4.8) and the fifth waits."""
    policy = VolcanoAdmission([], {"cpu": 4000}, conf("enqueue", "overcommit"))
    for i in range(6):
        policy.submit(wl(f"j{i}", "", 1000, created=i), 0)
    policy.cycle(0)
    assert (row(policy, "default")["inqueue"], row(policy, "default")["pending"]) == (4, 6)


def test_enqueue_takes_turns_between_equal_queues() -> None:
    """enqueue.go pops the first queue, enqueues one job and pushes the queue back: queues that order alike
    (same priority, same share) take turns, so overcommit's room is split between them."""
    overcommit = parse_volcano_conf({"actions": "enqueue", "tiers": [{"plugins": [
        {"name": "proportion"}, {"name": "overcommit", "arguments": {"overcommit-factor": 1.0}}]}]})
    policy = VolcanoAdmission([VolcanoQueue("a"), VolcanoQueue("b")], {"cpu": 4000}, overcommit)
    for i in range(4):
        policy.submit(wl(f"a{i}", "a", 1000, created=i), 0)
        policy.submit(wl(f"b{i}", "b", 1000, created=i), 0)
    policy.cycle(0)
    assert (row(policy, "a")["inqueue"], row(policy, "b")["inqueue"]) == (2, 2)


def test_fifo_dequeue_strategy_blocks_behind_the_head() -> None:
    """types.go DequeueStrategy: `fifo` stops at a head job that cannot be enqueued; `traverse` (default) skips it."""
    for strategy, expected in (("fifo", []), ("traverse", ["small"])):
        policy = VolcanoAdmission([VolcanoQueue("q", capability={"cpu": 2000}, dequeue_strategy=strategy)],
                                  {"cpu": 8000}, PROPORTION)
        policy.submit(wl("big", "q", 3000, created=0), 0)
        policy.submit(wl("small", "q", 1000, created=1), 0)
        assert admitted(policy.cycle(0)) == expected


def test_job_order_priority_then_creation() -> None:
    """priority.go JobOrderFn (higher priority first) and session_plugins.go (then earlier creation)."""
    policy = VolcanoAdmission([], {"cpu": 1000}, PROPORTION)
    policy.submit(wl("old", "", 1000, created=0), 0)
    policy.submit(wl("mid", "", 1000, created=1), 0)
    policy.submit(wl("new-high", "", 1000, priority=5, created=5), 5)
    assert admitted(policy.cycle(5)) == ["new-high"]
    policy.finished("new-high", 9)
    assert admitted(policy.cycle(9)) == ["old"]
    assert row(policy, "default")["mean_wait"] == pytest.approx((0 + 9) / 2)


def test_queue_priority_orders_queues() -> None:
    """proportion.go AddQueueOrderFn: a higher `spec.priority` queue goes first (here without proportion's gate)."""
    policy = VolcanoAdmission([VolcanoQueue("low", priority=0), VolcanoQueue("high", priority=1)], {"cpu": 1000},
                              conf("enqueue, allocate", "priority"))
    policy.submit(wl("l", "low", 1000), 0)
    policy.submit(wl("h", "high", 1000), 0)
    assert admitted(policy.cycle(0)) == ["h"]


def test_missing_queue_and_default_queue() -> None:
    """types.go PodGroupSpec.Queue: no queue means `default` (Volcano creates it); a queue that does not exist
    keeps the job from ever being scheduled."""
    policy = VolcanoAdmission([], {"cpu": 4000}, PROPORTION)
    policy.submit(wl("anon", "", 1000), 0)
    policy.submit(wl("lost", "ghost", 1000), 0)
    assert admitted(policy.cycle(0)) == ["anon"]
    assert row(policy, "ghost")["state"] == "Missing" and row(policy, "ghost")["pending"] == 1
    assert any("ghost" in note for note in policy.not_modelled())


def test_finished_frees_quota_and_nodes_changed() -> None:
    policy = VolcanoAdmission([], {"cpu": 1000}, PROPORTION)
    policy.submit(wl("a", "", 1000), 0)
    policy.submit(wl("b", "", 2000, created=1), 0)
    assert admitted(policy.cycle(0)) == ["a"]
    policy.finished("a", 5)
    assert policy.cycle(5) == []  # b needs 2 cpus of a 1-cpu cluster
    policy.nodes_changed({"cpu": 2000})
    assert admitted(policy.cycle(6)) == ["b"]


def test_gang_minimum_resources() -> None:
    """A PodGroup's minResources as Volcano's job controller fills it: the requests of the first minMember pods."""
    workload = QueuedWorkload("j", "ns", "", 0, 0, (PodSet("ps", 4, {"cpu": 1000}, 2), PodSet("w", 2, {"cpu": 500})))
    assert minimum_resources(workload) == {"cpu": 3000}
    assert workload.total() == {"cpu": 5000}


# --- reclaim and preempt ---

def full_first_queue(queues: list[VolcanoQueue], policy_conf: VolcanoConf, **kw: Any) -> VolcanoAdmission:
    """q1 fills a 4-cpu cluster while q2 is idle (q1 deserves everything it asks)."""
    policy = VolcanoAdmission(queues, {"cpu": 4000}, policy_conf)
    for i, priority in enumerate((0, 0, 5, 0)):
        policy.submit(wl(f"a{i}", "q1", 1000, priority=priority, created=i, **kw), 0)
    assert len(admitted(policy.cycle(0))) == 4
    return policy


def test_reclaim_between_two_queues() -> None:
    """volcano-sh/website `content/en/docs/actions.md` reclaim and reclaim.go: q2 (weight 1:1) gets jobs while q1
    holds the whole cluster above its deserved half; q2's jobs fit its deserved share, so q1's lowest-priority,
    newest jobs are evicted (Reclaimed) and q2's run. Reclaim stops once q1 is back at its deserved share."""
    policy = full_first_queue([VolcanoQueue("q1"), VolcanoQueue("q2")], RECLAIM)
    for i in range(3):
        policy.submit(wl(f"b{i}", "q2", 1000, created=10 + i), 10)
    decisions = policy.cycle(10)
    assert evicted(decisions) == [("a3", "Reclaimed", "b0"), ("a1", "Reclaimed", "b1")]
    assert admitted(decisions) == ["b0", "b1"]
    assert row(policy, "q1")["reclaimed"] == 2 and row(policy, "q2")["running"] == 2
    policy.submit(wl("a3", "q1", 1000, created=3), 11)  # the driver re-submits an evicted workload
    assert policy.cycle(11) == []  # q1 is at its deserved share; b2 would take q2 beyond its own


def test_no_reclaim_from_unreclaimable_queue() -> None:
    """types.go `reclaimable: false`: other queues may not take back what the queue holds."""
    policy = full_first_queue([VolcanoQueue("q1", reclaimable=False), VolcanoQueue("q2")], RECLAIM)
    policy.submit(wl("b0", "q2", 1000), 10)
    assert policy.cycle(10) == []
    assert row(policy, "q2")["inqueue"] == 1


def test_gang_protects_minimum_in_task_level_reclaim() -> None:
    """gang.go preemptableFn (also its Reclaimable): the task-level actions take no pod that would drop a job
    below minAvailable, so a whole gang is no victim; the gangreclaim action evicts whole gangs."""
    gang_conf = conf("enqueue, allocate, reclaim", "priority", "gang", "proportion")
    policy = full_first_queue([VolcanoQueue("q1"), VolcanoQueue("q2")], gang_conf)
    policy.submit(wl("b0", "q2", 1000), 10)
    assert policy.cycle(10) == []
    policy.conf = conf("enqueue, allocate, gangreclaim", "priority", "gang", "proportion")
    assert evicted(policy.cycle(11)) == [("a3", "Reclaimed", "b0")]


def test_enqueue_blocks_preemption_when_the_queue_is_full() -> None:
    """volcano-sh/volcano issues #991 and #1772: with enqueue and proportion, a high-priority job in a full queue
    never leaves Pending (JobEnqueueable rejects it), so preempt, which only looks at non-Pending jobs, never
    runs for it."""
    policy = VolcanoAdmission([], {"cpu": 1000}, conf("enqueue, allocate, preempt", "priority", "proportion"))
    policy.submit(wl("low", "", 1000), 0)
    policy.cycle(0)
    policy.submit(wl("high", "", 1000, priority=10, created=1), 1)
    assert policy.cycle(1) == []
    assert row(policy, "default")["inqueue"] == 0


def test_task_level_reclaim_takes_elastic_workloads() -> None:
    """gang.go preemptableFn: a job with pods above its minAvailable may lose them to reclaim."""
    gang_conf = conf("enqueue, allocate, reclaim", "priority", "gang", "proportion")
    policy = full_first_queue([VolcanoQueue("q1"), VolcanoQueue("q2")], gang_conf)
    policy.finished("a3", 5)
    policy.submit(wl("e", "q1", 500, count=2, min_count=1, created=5), 5)
    assert admitted(policy.cycle(5)) == ["e"]
    policy.submit(wl("b0", "q2", 1000, created=10), 10)
    assert evicted(policy.cycle(10)) == [("e", "Reclaimed", "b0")]


def test_preempt_within_queue_by_priority() -> None:
    """priority.go preemptableFn and preempt.go: a starving job takes from lower-priority running jobs of its own
    queue (newest first); equal priority is never preempted. proportion's `enableJobEnqueued: false` is the
    workaround named in volcano-sh/volcano PR #2575 that lets the preemptor go Inqueue."""
    preempting = parse_volcano_conf({"actions": "enqueue, allocate, preempt", "tiers": [{"plugins": [
        {"name": "priority"}, {"name": "proportion", "enableJobEnqueued": False}]}]})
    policy = VolcanoAdmission([], {"cpu": 2000}, preempting)
    policy.submit(wl("low0", "", 1000, created=0), 0)
    policy.submit(wl("low1", "", 1000, created=1), 0)
    assert len(admitted(policy.cycle(0))) == 2
    policy.submit(wl("same", "", 1000, created=2), 2)
    assert policy.cycle(2) == []
    policy.submit(wl("high", "", 1000, priority=10, created=3), 3)
    decisions = policy.cycle(3)
    assert evicted(decisions) == [("low1", "Preempted", "high")]
    assert admitted(decisions) == ["high"]
    assert row(policy, "default")["preempted"] == 1


def test_conformance_protects_system_workloads() -> None:
    """conformance plugin: kube-system and system-critical workloads are never evicted, even when the victim
    order (lowest priority, then newest) would pick them first."""
    policy = VolcanoAdmission([], {"cpu": 2000}, conf("allocate, preempt", "priority", "conformance"))
    policy.submit(wl("user", "", 1000, created=0), 0)
    policy.submit(wl("sys", "", 1000, created=1, namespace="kube-system"), 0)
    assert len(admitted(policy.cycle(0))) == 2
    policy.submit(wl("high", "", 1000, priority=10, created=2), 2)
    assert evicted(policy.cycle(2)) == [("user", "Preempted", "high")]
    policy.submit(wl("higher", "", 1000, priority=20, created=3, priority_class="x"), 3)
    policy.submit(wl("crit", "", 1000, created=4, priority_class="system-node-critical"), 3)
    assert evicted(policy.cycle(3)) == [("high", "Preempted", "higher")]


# --- the builder ---

def test_load_volcano_from_manifests() -> None:
    docs = [
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "research"},
         "spec": {"weight": 3, "parent": "root", "deserved": {"cpu": 2}}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ignored"}},
    ]
    policy = load_volcano(docs, 'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: proportion\n'
                                '  - name: tdm\n', capacity={"cpu": 4000})
    assert set(policy.queues) == {"research", "default"}
    assert policy.queues["research"].weight == 3
    notes = policy.not_modelled()
    assert "plugin tdm (Volcano's; not modelled)" in notes
    assert any("research: spec.parent" in n for n in notes) and any("research: spec.deserved" in n for n in notes)
    assert load_volcano([], None, capacity={"cpu": 1}).conf.actions == ("enqueue", "allocate", "backfill")


def test_load_volcano_errors() -> None:
    queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"}}
    with pytest.raises(InputError, match="defined twice"):
        load_volcano([queue, queue], None, capacity={"cpu": 1})
    with pytest.raises(InputError) as err:
        load_volcano([{**queue, "spec": {"parent": "nowhere"}}], None, capacity={"cpu": 1})
    assert err.value.field == "spec.parent"
    with pytest.raises(InputError) as err:
        load_volcano([{**queue, "spec": {"weight": -2}}], None, capacity={"cpu": 1})
    assert (err.value.obj, err.value.field) == ("Queue q", "spec.weight")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 3000), st.integers(0, 5),
                          st.booleans()), min_size=1, max_size=25))
def test_policy_never_overcommits(events: list[tuple[str, int, int, bool]]) -> None:
    """Property: whatever arrives and finishes, the running workloads never exceed the cluster, and with
    proportion each queue's allocation stays within its capability."""
    queues = [VolcanoQueue("a", 1, {"cpu": 3000}), VolcanoQueue("b", 2), VolcanoQueue("c", 1, reclaimable=False)]
    policy = VolcanoAdmission(queues, {"cpu": 6000},
                              conf("enqueue, allocate, preempt, reclaim", "priority", "conformance", "proportion"))
    running: set[str] = set()
    for t, (queue, cpu, priority, finish) in enumerate(events):
        if finish and running:
            key = sorted(running)[0]
            policy.finished(key, t)
            running.discard(key)
        policy.submit(wl(f"w{t}", queue, cpu, priority=priority, created=t), t)
        for decision in policy.cycle(t):
            if isinstance(decision, Admit):
                running.add(decision.key)
            else:
                running.discard(decision.key)
        rows = {str(r["queue"]): r for r in policy.queue_rows()}
        assert sum(cpu_of(r) for r in rows.values()) <= 6000
        assert cpu_of(rows["a"]) <= 3000
        assert sum(count_of(r, "running") for r in rows.values()) == len(running)


def cpu_of(queue_row: dict[str, object]) -> int:
    allocated = queue_row["allocated"]
    assert isinstance(allocated, dict)
    return int(allocated.get("cpu", 0))


def count_of(queue_row: dict[str, object], column: str) -> int:
    value = queue_row[column]
    assert isinstance(value, int)
    return value
