"""KueueAdmission: expectations restated from Kueue's scheduler tests (pkg/scheduler/scheduler_test.go,
TestSchedule), preemption tests (pkg/scheduler/preemption/preemption_test.go) and documentation
(site/content/en/docs/concepts/cluster_queue.md), each named in its test's docstring."""

from __future__ import annotations

import pytest

from phalanx.admission.base import Admit, EvictWorkload, PodSet, QueuedWorkload
from phalanx.admission.kueue import KueueAdmission
from phalanx.api.objects import Toleration
from phalanx.errors import InputError
from tests.admission.kueue_helpers import (
    cluster_queue,
    cohort,
    cpu_cq,
    flavor,
    load,
    local_queue,
    quotas,
    workload,
)


def admitted(results: list[Admit | EvictWorkload]) -> dict[str, Admit]:
    return {r.key: r for r in results if isinstance(r, Admit)}


def evicted(results: list[Admit | EvictWorkload]) -> dict[str, EvictWorkload]:
    return {r.key: r for r in results if isinstance(r, EvictWorkload)}


def row(policy: KueueAdmission, name: str, kind: str = "ClusterQueue") -> dict[str, object]:
    return next(r for r in policy.queue_rows() if r["kind"] == kind and r["name"] == name)


def eng_cohort(passes: int | None = None) -> KueueAdmission:
    """TestSchedule's eng-alpha and eng-beta: both StrictFIFO in cohort eng; cpu flavors on-demand then spot
    (Resource(name, nominal, borrowingLimit))."""
    alpha = cluster_queue("eng-alpha", [quotas(["cpu"], [("on-demand", [(50, 50, None)]),
                                                         ("spot", [(100, 0, None)])])],
                          "eng", queueingStrategy="StrictFIFO")
    beta = cluster_queue("eng-beta", [quotas(["cpu"], [("on-demand", [(50, 10, None)]),
                                                       ("spot", [(0, 100, None)])])],
                         "eng", queueingStrategy="StrictFIFO",
                         preemption={"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"})
    return load(flavor("on-demand"), flavor("spot"), alpha, beta,
                local_queue("main", "eng-alpha", "eng-alpha"), local_queue("main", "eng-beta", "eng-beta"),
                passes=passes)


def test_admit_in_same_cohort_no_borrowing() -> None:
    """Restates TestSchedule 'admit in same cohort with no borrowing': one workload per ClusterQueue, each
    within its own on-demand quota, both admitted in one cycle."""
    policy = eng_cohort(passes=1)
    policy.submit(workload("new", "main", 40, namespace="eng-alpha"), 0)
    policy.submit(workload("new", "main", 40, namespace="eng-beta"), 0)
    got = admitted(policy.cycle(0))
    assert got["eng-alpha/new"].flavors == {"cpu": "on-demand"}
    assert got["eng-beta/new"].flavors == {"cpu": "on-demand"}
    assert not got["eng-alpha/new"].borrowed


def test_cannot_borrow_if_cohort_was_assigned_and_would_overadmit() -> None:
    """Restates TestSchedule 'cannot borrow if cohort was assigned and would result in overadmission':
    alpha's 45 CPUs (no borrowing) go first; beta's 56 on-demand (borrowing 6) no longer fits in that
    pass and is left pending, not set aside."""
    policy = eng_cohort(passes=1)
    policy.submit(workload("new", "main", 45, namespace="eng-alpha"), 0)
    policy.submit(workload("new", "main", 56, namespace="eng-beta"), 0)
    got = admitted(policy.cycle(0))
    assert set(got) == {"eng-alpha/new"}
    assert got["eng-alpha/new"].flavors == {"cpu": "on-demand"}
    assert row(policy, "eng-beta")["pending"] == 1
    assert row(policy, "eng-beta")["inadmissible"] == 0
    # Kueue's next pass nominates again: on-demand no longer fits, spot (borrowing) does.
    second = admitted(policy.cycle(1))
    assert second["eng-beta/new"].flavors == {"cpu": "spot"}
    assert second["eng-beta/new"].borrowed


def test_workload_exceeds_lending_limit_when_borrowing_in_cohort() -> None:
    """Restates TestSchedule 'workload exceeds lending limit when borrow in cohort': lend-a (3 CPUs, lends
    at most 2) and lend-b (2 CPUs, lendingLimit 2); lend-b already uses 2; 3 more do not fit (only 2 are
    lent to it), and the workload is set aside as inadmissible."""
    policy = load(cpu_cq("lend-a", 3, "lend", lend=2), cpu_cq("lend-b", 2, "lend", lend=2))
    policy.submit(workload("a", "lend-b", 2), 0)
    assert "default/a" in admitted(policy.cycle(0))
    policy.submit(workload("b", "lend-b", 3), 1)
    assert admitted(policy.cycle(1)) == {}
    assert row(policy, "lend-b")["inadmissible"] == 1


def _hierarchy(lender_lend: int) -> KueueAdmission:
    return load(cohort("root"), cohort("child", "root"),
                cpu_cq("lender", 10, "child", lend=lender_lend), cpu_cq("borrower", 5, "child", borrow=10))


def test_hierarchical_cohort_respects_lending_limit() -> None:
    """Restates TestSchedule 'hierarchical cohort respects lending limit when borrowing': ROOT ← CHILD ←
    {lender(10, lendingLimit 3), borrower(5, borrowingLimit 10, using 5)}: 4 more CPUs do not fit."""
    policy = _hierarchy(3)
    policy.submit(workload("used", "borrower", 5), 0)
    policy.cycle(0)
    policy.submit(workload("pending", "borrower", 4), 1)
    assert admitted(policy.cycle(1)) == {}


def test_hierarchical_cohort_allows_borrowing_up_to_lending_limit() -> None:
    """Restates TestSchedule 'hierarchical cohort allows borrowing up to lending limit': same tree, 3 CPUs
    fit and are admitted borrowing."""
    policy = _hierarchy(3)
    policy.submit(workload("used", "borrower", 5), 0)
    policy.cycle(0)
    policy.submit(workload("pending", "borrower", 3), 1)
    got = admitted(policy.cycle(1))
    assert got["default/pending"].borrowed


def test_cohort_borrowing_from_implicit_cohort_resources() -> None:
    """Restates the docs (concepts/cluster_queue.md, 'Borrowing example'): team-a-cq (9 CPUs) and
    team-b-cq (12 CPUs) in cohort team-ab; with team-b idle, team-a admits up to 12+9=21 CPUs."""
    policy = load(cpu_cq("team-a-cq", 9, "team-ab"), cpu_cq("team-b-cq", 12, "team-ab"))
    policy.submit(workload("big", "team-a-cq", 21), 0)
    assert admitted(policy.cycle(0))["default/big"].borrowed
    policy.submit(workload("more", "team-a-cq", 1), 1)
    assert admitted(policy.cycle(1)) == {}


def test_borrowing_limit_caps_borrowing() -> None:
    """Restates the docs (concepts/cluster_queue.md, 'BorrowingLimit'): team-a-cq has 9 CPUs and
    borrowingLimit 1: with team-b idle it admits up to 9+1=10 CPUs, not 21."""
    policy = load(cpu_cq("team-a-cq", 9, "team-ab", borrow=1), cpu_cq("team-b-cq", 12, "team-ab"))
    policy.submit(workload("eleven", "team-a-cq", 11), 0)
    assert admitted(policy.cycle(0)) == {}
    policy.submit(workload("ten", "team-a-cq", 10), 1)
    assert "default/ten" in admitted(policy.cycle(1))


def test_lending_limit_caps_lending() -> None:
    """Restates the docs (concepts/cluster_queue.md, 'LendingLimit'): team-b-cq (12 CPUs) lends at most 1:
    team-a-cq (9 CPUs) admits up to 9+1=10 CPUs."""
    policy = load(cpu_cq("team-a-cq", 9, "team-ab"), cpu_cq("team-b-cq", 12, "team-ab", lend=1))
    policy.submit(workload("eleven", "team-a-cq", 11), 0)
    assert admitted(policy.cycle(0)) == {}
    policy.submit(workload("ten", "team-a-cq", 10), 1)
    assert "default/ten" in admitted(policy.cycle(1))


def test_workloads_not_borrowing_go_first() -> None:
    """Restates the docs (concepts/cluster_queue.md, 'Borrowing example', second case) and the scheduler's
    ordering (makeClassicalIterator: requests under nominal quota before borrowing): with team-a full,
    team-b's workload within its nominal quota is admitted before team-a's borrowing one, even though
    team-a's is older and of higher priority."""
    policy = load(cpu_cq("team-a-cq", 9, "team-ab"), cpu_cq("team-b-cq", 12, "team-ab"), passes=1)
    policy.submit(workload("a-full", "team-a-cq", 9), 0)
    policy.cycle(0)
    policy.submit(workload("a-borrow", "team-a-cq", 12, priority=100, created=1), 1)
    policy.submit(workload("b-own", "team-b-cq", 12, created=2), 2)
    got = admitted(policy.cycle(3))
    assert set(got) == {"default/b-own"}


def test_preemption_within_cluster_queue_lower_priority() -> None:
    """Restates preemption_test.go 'preempt lowest priority' (withinClusterQueue: LowerPriority): the
    lower-priority workload is evicted InClusterQueue and the preemptor admitted in a later pass."""
    policy = load(cpu_cq("cq", 4, preemption={"withinClusterQueue": "LowerPriority"}))
    policy.submit(workload("low", "cq", 3, priority=-1), 0)
    policy.submit(workload("mid", "cq", 1, priority=0), 0)
    policy.cycle(0)
    policy.submit(workload("high", "cq", 3, priority=10), 1)
    results = policy.cycle(1)
    assert evicted(results) == {"default/low": EvictWorkload("default/low", "InClusterQueue", evicted(results)[
        "default/low"].message, by="default/high")}
    assert "default/high" in admitted(results)
    assert row(policy, "cq")["preempted"] == 1
    assert row(policy, "cq")["pending"] == 1  # the victim waits again
    assert admitted(policy.cycle(2)) == {}  # and does not fit until quota frees


def test_no_preemption_when_policy_never() -> None:
    """Restates preemption_test.go "can't preempt workloads in ClusterQueue for withinClusterQueue=Never":
    withinClusterQueue Never (the default) never evicts; the preemptor waits."""
    policy = load(cpu_cq("cq", 4))
    policy.submit(workload("low", "cq", 4, priority=-1), 0)
    policy.cycle(0)
    policy.submit(workload("high", "cq", 4, priority=10), 1)
    assert policy.cycle(1) == []


def test_equal_priority_not_preempted_by_lower_priority_policy() -> None:
    """Restates preemption_test.go 'preempt newer workloads with the same priority': LowerPriority spares
    an equal-priority workload; LowerOrNewerEqualPriority preempts one created after the preemptor."""
    policy = load(cpu_cq("cq", 4, preemption={"withinClusterQueue": "LowerPriority"}))
    policy.submit(workload("newer", "cq", 4, created=5), 5)
    policy.cycle(5)
    policy.submit(workload("older", "cq", 4, created=1), 6)
    assert policy.cycle(6) == []
    policy2 = load(cpu_cq("cq", 4, preemption={"withinClusterQueue": "LowerOrNewerEqualPriority"}))
    policy2.submit(workload("newer", "cq", 4, created=5), 5)
    policy2.cycle(5)
    policy2.submit(workload("older", "cq", 4, created=1), 6)
    assert set(evicted(policy2.cycle(6))) == {"default/newer"}


def test_minimal_victims_with_fill_back() -> None:
    """Restates preemption_test.go 'minimal set excludes low priority' (classicalPreemptions +
    fillBackWorkloads): candidates are tried lowest priority first, most recently
    admitted first; once the preemptor fits, those not needed after all are put back."""
    policy = load(cpu_cq("cq", 10, preemption={"withinClusterQueue": "LowerPriority"}))
    policy.submit(workload("b", "cq", 4, priority=0), 0)
    policy.cycle(0)
    policy.submit(workload("a", "cq", 1, priority=0), 1)
    policy.cycle(1)
    policy.submit(workload("c", "cq", 5, priority=3), 2)
    policy.cycle(2)
    policy.submit(workload("p", "cq", 4, priority=5), 3)
    results = policy.cycle(3)
    # a (admitted last) is removed first but is not enough; b is; a is then put back.
    assert set(evicted(results)) == {"default/b"}
    assert "default/p" in admitted(results)


def test_reclaim_within_cohort() -> None:
    """Restates preemption_test.go 'reclaim quota from borrower' (reclaimWithinCohort: Any): cq-b borrows
    all of cq-a's quota; cq-a's workload reclaims it, evicting InCohortReclamation."""
    policy = load(cpu_cq("cq-a", 4, "all", preemption={"reclaimWithinCohort": "Any"}),
                  cpu_cq("cq-b", 4, "all"))
    policy.submit(workload("borrower", "cq-b", 8, priority=100), 0)
    assert admitted(policy.cycle(0))["default/borrower"].borrowed
    policy.submit(workload("owner", "cq-a", 4), 1)
    results = policy.cycle(1)
    assert evicted(results)["default/borrower"].reason == "InCohortReclamation"
    assert "default/owner" in admitted(results)
    assert row(policy, "cq-b")["reclaimed"] == 1
    assert row(policy, "cq-a")["preemptions"] == 1


def test_reclaim_lower_priority_only() -> None:
    """Restates preemption_test.go 'do not reclaim borrowed quota from same priority for
    withinCohort=ReclaimFromLowerPriority' (reclaimWithinCohort LowerPriority): a borrower of higher
    priority is not reclaimed."""
    policy = load(cpu_cq("cq-a", 4, "all", preemption={"reclaimWithinCohort": "LowerPriority"}),
                  cpu_cq("cq-b", 4, "all"))
    policy.submit(workload("borrower", "cq-b", 8, priority=100), 0)
    policy.cycle(0)
    policy.submit(workload("owner", "cq-a", 4), 1)
    assert policy.cycle(1) == []


def test_no_reclaim_from_queue_within_nominal() -> None:
    """Restates preemption_test.go 'no workloads borrowing': a cohort peer using only its own quota is
    never a candidate."""
    policy = load(cpu_cq("cq-a", 4, "all", preemption={"reclaimWithinCohort": "Any"}), cpu_cq("cq-b", 4, "all"))
    policy.submit(workload("a-own", "cq-a", 3), 0)
    policy.submit(workload("b-own", "cq-b", 4), 0)
    policy.cycle(0)
    policy.submit(workload("a-more", "cq-a", 2), 1)
    assert policy.cycle(1) == []


def test_reclaim_while_borrowing() -> None:
    """Restates preemption_test.go 'use BorrowWithinCohort; allow preempting a lower-priority workload from
    another ClusterQueue while borrowing' and "...; don't allow preempting a lower-priority workload with
    priority above MaxPriorityThreshold, if borrowing is required even after the preemption": cq-a must
    itself borrow to fit; it reclaims (InCohortReclaimWhileBorrowing) unless the victim is above the
    threshold."""
    def setup(threshold: int | None) -> KueueAdmission:
        bwc: dict[str, object] = {"policy": "LowerPriority"}
        if threshold is not None:
            bwc["maxPriorityThreshold"] = threshold
        policy = load(cpu_cq("cq-a", 4, "all", preemption={"reclaimWithinCohort": "LowerPriority",
                                                            "borrowWithinCohort": bwc}),
                      cpu_cq("cq-b", 4, "all"))
        policy.submit(workload("b-borrower", "cq-b", 6, priority=1), 0)
        policy.cycle(0)
        policy.submit(workload("a-big", "cq-a", 6, priority=10), 1)
        return policy

    results = setup(None).cycle(1)
    assert evicted(results)["default/b-borrower"].reason == "InCohortReclaimWhileBorrowing"
    assert admitted(results)["default/a-big"].borrowed
    assert setup(0).cycle(1) == []


def test_hierarchical_reclaim() -> None:
    """Restates preemption_test.go 'long range preemption' in spirit (hierarchical_preemption.go): b, in
    another branch of the cohort tree, borrows a's quota through ROOT; a reclaims it (InCohortReclamation)."""
    policy = load(cohort("root"), cohort("left", "root"), cohort("right", "root"),
                  cpu_cq("a", 4, "left", preemption={"reclaimWithinCohort": "Any"}), cpu_cq("b", 0, "right"))
    policy.submit(workload("borrower", "b", 4), 0)
    assert admitted(policy.cycle(0))["default/borrower"].borrowed
    policy.submit(workload("owner", "a", 4), 1)
    results = policy.cycle(1)
    assert evicted(results)["default/borrower"].reason == "InCohortReclamation"
    assert "default/owner" in admitted(results)


def test_strict_fifo_head_blocks() -> None:
    """Restates the docs (concepts/cluster_queue.md, 'Queueing strategy'): StrictFIFO — an older workload
    that cannot be admitted blocks newer ones that could fit."""
    policy = load(cpu_cq("cq", 4, queueingStrategy="StrictFIFO"))
    policy.submit(workload("running", "cq", 3), 0)
    policy.cycle(0)
    policy.submit(workload("head", "cq", 3, created=1), 1)
    policy.submit(workload("small", "cq", 1, created=2), 2)
    assert policy.cycle(2) == []
    policy.finished("default/running", 3)
    assert set(admitted(policy.cycle(3))) == {"default/head", "default/small"}


def test_a_victim_requeued_blocks_its_strict_fifo_queue_in_the_cycle_it_was_evicted() -> None:
    """The real Kueue v0.17.0 (Kueue differential suite, seed 194): a higher-priority workload preempts an older
    one; Kueue requeues the victim as its quota is released, before the preemptor is admitted, so under
    StrictFIFO the victim (older, not fitting the quota left) blocks a newer workload that would fit. The newer
    one is admitted only when quota frees for the victim first; BestEffortFIFO lets it in at once."""
    for strategy, small_at_once in (("StrictFIFO", False), ("BestEffortFIFO", True)):
        policy = load(cpu_cq("cq", 3, queueingStrategy=strategy, preemption={"withinClusterQueue": "LowerPriority"}))
        policy.submit(workload("old", "cq", 1), 0)
        policy.submit(workload("victim", "cq", 2, created=1), 1)
        policy.cycle(1)
        policy.submit(workload("small", "cq", 1, created=2), 2)
        assert policy.cycle(2) == []
        policy.submit(workload("high", "cq", 1, priority=10, created=3), 3)
        results = policy.cycle(3)
        assert set(evicted(results)) == {"default/victim"}
        assert set(admitted(results)) == ({"default/high", "default/small"} if small_at_once else {"default/high"})
        if not small_at_once:
            assert admitted(policy.cycle(4)) == {}  # the victim heads the queue and does not fit: it blocks
            policy.finished("default/old", 5)
            assert set(admitted(policy.cycle(5))) == {"default/victim"}  # the older first, then nothing is left
            policy.finished("default/high", 6)
            assert set(admitted(policy.cycle(6))) == {"default/small"}


def test_workloads_set_aside_are_requeued_after_the_queued_heads_took_the_freed_quota() -> None:
    """The real Kueue v0.17.0 (Kueue differential suite, seed 122): when quota frees, Kueue requeues the
    workloads it set aside a batch period later (requeueBatchPeriod, pkg/cache/queue), while a StrictFIFO head
    is retried at once. So the StrictFIFO head of team-b, borrowing, is admitted first; team-a's workload set
    aside is requeued after and reclaims its lent quota from it (team-b's head evicted)."""
    policy = load(
        cpu_cq("team-a", 4, "org", lend=1, preemption={"reclaimWithinCohort": "Any"}),
        cpu_cq("team-b", 2, "org", queueingStrategy="StrictFIFO",
               preemption={"reclaimWithinCohort": "LowerPriority"}))
    policy.submit(workload("keep", "team-a", 2), 0)
    policy.submit(workload("big", "team-a", 3), 0)
    assert set(admitted(policy.cycle(0))) == {"default/keep", "default/big"}  # team-a borrows 1
    policy.submit(workload("late", "team-a", 2, created=1), 1)
    assert policy.cycle(1) == [] and row(policy, "team-a")["inadmissible"] == 1
    policy.submit(workload("head", "team-b", 3, created=2), 2)
    assert policy.cycle(2) == []  # no lower-priority workload to reclaim from: it waits at its queue's head
    policy.finished("default/big", 3)
    results = policy.cycle(3)
    assert [(type(r).__name__, r.key) for r in results] == [
        ("Admit", "default/head"), ("EvictWorkload", "default/head"), ("Admit", "default/late")]
    assert evicted(results)["default/head"].reason == "InCohortReclamation"


def test_best_effort_fifo_sets_head_aside() -> None:
    """Restates the docs (concepts/cluster_queue.md, 'Queueing strategy'): BestEffortFIFO — an older
    workload that cannot be admitted does not block newer ones that fit; it is requeued when quota frees."""
    policy = load(cpu_cq("cq", 4))
    policy.submit(workload("running", "cq", 3), 0)
    policy.cycle(0)
    policy.submit(workload("head", "cq", 3, created=1), 1)
    policy.submit(workload("small", "cq", 1, created=2), 2)
    assert set(admitted(policy.cycle(2))) == {"default/small"}
    assert row(policy, "cq")["inadmissible"] == 1
    policy.finished("default/running", 3)
    assert set(admitted(policy.cycle(3))) == {"default/head"}
    r = row(policy, "cq")
    assert r["admitted"] == 3 and r["wait_total"] == 2.0 and r["wait_mean"] == pytest.approx(2 / 3)


def test_priority_then_creation_order() -> None:
    """Restates Kueue's queue ordering (pkg/cache/queue: higher priority first, then older): with room for
    one, the high-priority newer workload is admitted before the older one."""
    policy = load(cpu_cq("cq", 2, queueingStrategy="StrictFIFO"))
    policy.submit(workload("old", "cq", 2, created=0), 0)
    policy.submit(workload("urgent", "cq", 2, priority=5, created=1), 1)
    assert set(admitted(policy.cycle(1))) == {"default/urgent"}


def test_flavor_fallback_first_flavor_full() -> None:
    """Restates the docs (concepts/cluster_queue.md, flavors are tried in order) and TestSchedule 'not
    enough resources to borrow, fallback to next flavor': on-demand is full, spot takes the workload."""
    cq = cluster_queue("cq", [quotas(["cpu"], [("on-demand", [(2, None, None)]), ("spot", [(4, None, None)])])])
    policy = load(flavor("on-demand", nodeLabels={"tier": "on-demand"}), flavor("spot", nodeLabels={"tier": "spot"}),
                  cq, local_queue("cq", "cq"))
    policy.submit(workload("first", "cq", 2), 0)
    policy.submit(workload("second", "cq", 3, created=1), 0)
    got = admitted(policy.cycle(0))
    assert got["default/first"].flavors == {"cpu": "on-demand"}
    assert got["default/second"].flavors == {"cpu": "spot"}
    assert got["default/second"].node_selector == {"tier": "spot"}
    assert got["default/second"].pod_set_node_selectors == {"main": {"tier": "spot"}}


def test_flavor_try_next_when_first_needs_preemption() -> None:
    """Restates TestSchedule 'admit to second flavor when first needs preemption; WhenCanPreempt:
    TryNextFlavor' (the default): rather than preempting on the first flavor, the second one is used."""
    cq = cluster_queue("cq", [quotas(["cpu"], [("one", [(2, None, None)]), ("two", [(2, None, None)])])],
                       preemption={"withinClusterQueue": "LowerPriority"})
    policy = load(flavor("one"), flavor("two"), cq, local_queue("cq", "cq"))
    policy.submit(workload("low", "cq", 2, priority=0), 0)
    policy.cycle(0)
    policy.submit(workload("high", "cq", 2, priority=10), 1)
    results = policy.cycle(1)
    assert evicted(results) == {}
    assert admitted(results)["default/high"].flavors == {"cpu": "two"}


def test_flavor_may_stop_search_preempts_on_first() -> None:
    """Restates TestSchedule 'use second flavor when the first has no preemption candidates; WhenCanPreempt:
    MayStopSearch', its other half: with candidates on the first flavor, MayStopSearch preempts there."""
    cq = cluster_queue("cq", [quotas(["cpu"], [("one", [(2, None, None)]), ("two", [(2, None, None)])])],
                       preemption={"withinClusterQueue": "LowerPriority"},
                       flavorFungibility={"whenCanPreempt": "MayStopSearch"})
    policy = load(flavor("one"), flavor("two"), cq, local_queue("cq", "cq"))
    policy.submit(workload("low", "cq", 2, priority=0), 0)
    policy.cycle(0)
    policy.submit(workload("high", "cq", 2, priority=10), 1)
    results = policy.cycle(1)
    assert set(evicted(results)) == {"default/low"}
    assert admitted(results)["default/high"].flavors == {"cpu": "one"}


def test_when_can_borrow_try_next_flavor() -> None:
    """Restates flavorassigner_test.go 'borrow before try next flavor' and 'borrow try next flavor, found
    the second flavor': whenCanBorrow MayStopSearch (the default) borrows on the first flavor; TryNextFlavor
    prefers a later flavor that fits without borrowing."""
    def run(policy_name: str) -> str:
        cq = cluster_queue("cq", [quotas(["cpu"], [("one", [(1, None, None)]), ("two", [(4, None, None)])])],
                           "pool", flavorFungibility={"whenCanBorrow": policy_name})
        other = cluster_queue("other", [quotas(["cpu"], [("one", [(4, None, None)]), ("two", [(0, None, None)])])],
                              "pool")
        policy = load(flavor("one"), flavor("two"), cq, other, local_queue("cq", "cq"))
        policy.submit(workload("w", "cq", 2), 0)
        return admitted(policy.cycle(0))["default/w"].flavors["cpu"]

    assert run("MayStopSearch") == "one"
    assert run("TryNextFlavor") == "two"


def test_flavor_taints_and_node_selector() -> None:
    """Restates flavorassigner_test.go 'multiple flavors, fits while skipping tainted flavor', 'single flavor,
    fits tainted flavor with toleration' and 'multiple flavors with different label keys, selector only uses
    flavor's own keys': a tainted flavor is skipped unless the pods tolerate it; a pod nodeSelector on
    a key a flavor labels must match."""
    cq = cluster_queue("cq", [quotas(["cpu"], [("tainted", [(8, None, None)]), ("plain", [(8, None, None)])])])
    policy = load(flavor("tainted", nodeLabels={"pool": "a"}, nodeTaints=[{"key": "x", "effect": "NoSchedule"}]),
                  flavor("plain", nodeLabels={"pool": "b"}), cq, local_queue("cq", "cq"))
    base = workload("w", "cq", 1)
    tolerating = QueuedWorkload("default/t", "default", "cq", 0, 0.0, (
        PodSet("main", 1, {"cpu": 1000}, tolerations=(Toleration(key="x", operator="Exists"),)),))
    selecting = QueuedWorkload("default/s", "default", "cq", 0, 0.0, (
        PodSet("main", 1, {"cpu": 1000}, node_selector={"pool": "b", "other": "y"}),))
    for w in (base, tolerating, selecting):
        policy.submit(w, 0)
    got = admitted(policy.cycle(0))
    assert got["default/w"].flavors == {"cpu": "plain"}
    assert got["default/t"].flavors == {"cpu": "tainted"}
    assert got["default/s"].flavors == {"cpu": "plain"}


def test_multiple_pod_sets_admitted_whole() -> None:
    """Restates TestSchedule 'assign multiple resources and flavors' in spirit: every pod set gets flavors
    or none does; the second pod set's requests count on top of the first's."""
    policy = load(cpu_cq("cq", 10))
    two = QueuedWorkload("default/two", "default", "cq", 0, 0.0,
                         (PodSet("driver", 1, {"cpu": 2000}), PodSet("workers", 5, {"cpu": 2000})))
    policy.submit(two, 0)
    assert policy.cycle(0) == []
    policy2 = load(cpu_cq("cq", 10))
    fits = QueuedWorkload("default/fits", "default", "cq", 0, 0.0,
                          (PodSet("driver", 1, {"cpu": 2000}), PodSet("workers", 4, {"cpu": 2000, "memory": 0})))
    policy2.submit(fits, 0)
    got = admitted(policy2.cycle(0))
    assert got["default/fits"].pod_set_flavors == {"driver": {"cpu": "default"}, "workers": {"cpu": "default"}}


def test_resource_not_covered_is_inadmissible() -> None:
    """Restates TestSchedule 'cannot borrow resource not listed in clusterQueue': a request for a resource
    no resource group covers makes the workload inadmissible."""
    policy = load(cpu_cq("cq", 10))
    policy.submit(workload("gpu", "cq", 1, **{"example.com/gpu": 1}), 0)
    assert policy.cycle(0) == []
    assert row(policy, "cq")["inadmissible"] == 1


def test_missing_local_queue_and_cluster_queue() -> None:
    """Restates TestSchedule 'workload should not fit in nonexistent clusterQueue' and 'skip workload with
    missing or deleted ClusterQueue': the workload stays pending with a reason, nothing is admitted."""
    policy = load(cpu_cq("cq", 10), local_queue("cq", "cq"), local_queue("dangling", "nope"))
    policy.submit(workload("a", "missing", 1), 0)
    policy.submit(workload("b", "dangling", 1), 0)
    assert policy.cycle(0) == []
    rows = {r["name"]: r for r in policy.queue_rows() if r["kind"] == "LocalQueue"}
    assert rows["default/missing"]["pending"] == 1 and rows["default/missing"]["exists"] is False
    assert rows["default/dangling"]["pending"] == 1


def test_namespace_selector() -> None:
    """Restates TestSchedule 'failed to match clusterQueue selector' and the API doc of namespaceSelector
    (nil selects no namespace, {} every one)."""
    cq = cpu_cq("cq", 10)
    cq["spec"]["namespaceSelector"] = {"matchLabels": {"dep": "eng"}}
    policy = load(cq, local_queue("q", "cq", "sales"), local_queue("q", "cq", "eng"))
    policy.namespace_labels = {"eng": {"dep": "eng"}}
    policy.submit(workload("s", "q", 1, namespace="sales"), 0)
    policy.submit(workload("e", "q", 1, namespace="eng"), 0)
    assert set(admitted(policy.cycle(0))) == {"eng/e"}
    nil = cpu_cq("cq", 10)
    del nil["spec"]["namespaceSelector"]
    policy2 = load(nil)
    policy2.submit(workload("w", "cq", 1), 0)
    assert policy2.cycle(0) == []


def test_nonexistent_flavor_makes_queue_inactive() -> None:
    """Restates TestSchedule 'workload should not fit in clusterQueue with nonexistent flavor'."""
    cq = cluster_queue("cq", [quotas(["cpu"], [("nonexistent-flavor", [(50, None, None)])])])
    policy = load(flavor("default"), cq, local_queue("cq", "cq"))
    policy.submit(workload("w", "cq", 1), 0)
    assert policy.cycle(0) == []


def test_stop_policy_hold() -> None:
    """Restates the docs (concepts/cluster_queue.md, 'StopPolicy'): a held ClusterQueue admits nothing."""
    policy = load(cpu_cq("cq", 10, stopPolicy="Hold"))
    policy.submit(workload("w", "cq", 1), 0)
    assert policy.cycle(0) == []


def test_hierarchical_cohort_own_quota() -> None:
    """Restates the docs (concepts/cohort.md, 'Cohort resource sharing'): a Cohort's own nominalQuota is a
    shared pool its ClusterQueues borrow from."""
    pool = cohort("pool", groups=[quotas(["cpu"], [("default", [(6, None, None)])])])
    policy = load(pool, cpu_cq("cq", 2, "pool"))
    policy.submit(workload("w", "cq", 8), 0)
    assert admitted(policy.cycle(0))["default/w"].borrowed


def test_finished_frees_quota_and_resubmit_is_idempotent() -> None:
    """finished() gives the quota back; submitting a pending workload again replaces it, not duplicates it."""
    policy = load(cpu_cq("cq", 2))
    policy.submit(workload("a", "cq", 2), 0)
    policy.cycle(0)
    policy.submit(workload("b", "cq", 2), 1)
    policy.submit(workload("b", "cq", 2), 1)
    assert policy.cycle(1) == []
    assert row(policy, "cq")["pending"] == 1
    policy.finished("default/a", 2)
    assert set(admitted(policy.cycle(2))) == {"default/b"}
    assert row(policy, "cq")["usage"] == {"default/cpu": 2000}


def test_resolve_priority() -> None:
    """WorkloadPriorityClass via the label kueue.x-k8s.io/priority-class (docs concepts/workload_priority_class.md);
    without it the pods' priority; an unknown class is an error."""
    wpc = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
           "metadata": {"name": "sample-priority"}, "value": 10000}
    policy = load(cpu_cq("cq", 1), wpc)
    assert policy.resolve_priority({"kueue.x-k8s.io/priority-class": "sample-priority"}, 5) == 10000
    assert policy.resolve_priority({}, 5) == 5
    with pytest.raises(InputError, match="priority-class"):
        policy.resolve_priority({"kueue.x-k8s.io/priority-class": "nope"}, 0)


def test_not_modelled_names_fields() -> None:
    cq = cpu_cq("cq", 1, admissionChecksStrategy={"admissionChecks": [{"name": "prov"}]},
                fairSharing={"weight": 2})
    policy = load(cq)
    notes = policy.not_modelled()
    assert any("admissionChecksStrategy" in n for n in notes)
    assert any("fairSharing.weight" in n for n in notes)
