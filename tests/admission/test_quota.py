"""The cohort tree's quota arithmetic, restating Kueue's pkg/cache/scheduler tests (resource_node_test.go,
snapshot_test.go) and the ClusterQueue documentation's numbers; plus a property test of the admission
policy over random quotas and workloads."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.admission.base import Admit
from phalanx.admission.quota import (
    Limits,
    QuotaTree,
    available,
    borrowing_level,
    local_quota,
    node_height,
    potential_available,
    subtree_cluster_queues,
)
from tests.admission.kueue_helpers import cohort, cpu_cq, load, quotas, workload

CPU = ("default", "cpu")
GPU = ("default", "example.com/gpu")


def lend_tree() -> QuotaTree:
    """snapshot_test.go TestSnapshotAddRemoveWorkloadWithLendingLimit: lend-a (10 CPUs, lendingLimit 4) and
    lend-b (10 CPUs, lendingLimit 6) in cohort lend; lend-a uses 1+9+6, lend-b 4."""
    tree = QuotaTree()
    tree.add_cluster_queue("lend-a", {CPU: Limits(10_000, None, 4_000)}, "lend")
    tree.add_cluster_queue("lend-b", {CPU: Limits(10_000, None, 6_000)}, "lend")
    tree.build()
    for value in (1_000, 9_000, 6_000):
        tree.add("lend-a", {CPU: value})
    tree.add("lend-b", {CPU: 4_000})
    return tree


def test_cohort_subtree_quota_counts_only_what_is_lent() -> None:
    """Restates resource_node_test.go TestCohortLendable: lendingLimits equal to nominal lend everything:
    the cohort holds 8+2 CPUs and 3 GPUs."""
    tree = QuotaTree()
    tree.add_cluster_queue("cq1", {CPU: Limits(8_000, None, 8_000), GPU: Limits(3, None, 3)}, "test-cohort")
    tree.add_cluster_queue("cq2", {CPU: Limits(2_000, None, 2_000)}, "test-cohort")
    tree.build()
    assert tree.cohorts["test-cohort"].subtree == {CPU: 10_000, GPU: 3}


def test_usage_above_local_quota_counts_in_cohort() -> None:
    """Restates snapshot_test.go 'remove workload, but still using quota over GuaranteedQuota' and 'remove
    wokload, using same quota as GuaranteedQuota': lend-a keeps 10-4=6 CPUs for itself; only its usage
    above 6 counts in the cohort."""
    tree = lend_tree()
    assert tree.cohorts["lend"].subtree == {CPU: 10_000}
    assert tree.cohorts["lend"].usage == {CPU: 10_000}
    tree.remove("lend-a", {CPU: 9_000})
    assert tree.cqs["lend-a"].usage[CPU] == 7_000
    assert tree.cohorts["lend"].usage[CPU] == 1_000
    tree.remove("lend-a", {CPU: 1_000})
    assert tree.cohorts["lend"].usage[CPU] == 0


def test_remove_then_add_restores_usage() -> None:
    """Restates snapshot_test.go 'remove all then add all': removing and re-adding every workload gives the
    same usage everywhere."""
    tree = lend_tree()
    before = (dict(tree.cqs["lend-a"].usage), dict(tree.cqs["lend-b"].usage), dict(tree.cohorts["lend"].usage))
    for value in (1_000, 9_000, 6_000):
        tree.remove("lend-a", {CPU: value})
    tree.remove("lend-b", {CPU: 4_000})
    assert tree.cohorts["lend"].usage[CPU] == 0
    for value in (6_000, 1_000, 9_000):
        tree.add("lend-a", {CPU: value})
    tree.add("lend-b", {CPU: 4_000})
    assert (tree.cqs["lend-a"].usage, tree.cqs["lend-b"].usage, tree.cohorts["lend"].usage) == before


def _docs_pair(a: Limits, b: Limits) -> QuotaTree:
    tree = QuotaTree()
    tree.add_cluster_queue("team-a-cq", {CPU: a}, "team-ab")
    tree.add_cluster_queue("team-b-cq", {CPU: b}, "team-ab")
    tree.build()
    return tree


def test_docs_borrowing_example() -> None:
    """Restates docs concepts/cluster_queue.md 'Borrowing example': team-a-cq (9) with team-b-cq (12) idle
    can use 12+9=21 CPUs."""
    tree = _docs_pair(Limits(9_000), Limits(12_000))
    a = tree.cqs["team-a-cq"]
    assert available(a, CPU) == potential_available(a, CPU) == 21_000


def test_docs_borrowing_limit_example() -> None:
    """Restates docs concepts/cluster_queue.md 'BorrowingLimit': borrowingLimit 1 on team-a-cq caps it at
    9+1=10 CPUs; team-b-cq (no limit) can use 12+9."""
    tree = _docs_pair(Limits(9_000, 1_000), Limits(12_000))
    assert available(tree.cqs["team-a-cq"], CPU) == potential_available(tree.cqs["team-a-cq"], CPU) == 10_000
    assert available(tree.cqs["team-b-cq"], CPU) == 21_000


def test_docs_lending_limit_example() -> None:
    """Restates docs concepts/cluster_queue.md 'LendingLimit': team-b-cq lends at most 1 of its 12: team-a
    can use 9+1=10; team-b keeps 11 for itself (its local quota) and can still use all 21."""
    tree = _docs_pair(Limits(9_000), Limits(12_000, None, 1_000))
    b = tree.cqs["team-b-cq"]
    assert available(tree.cqs["team-a-cq"], CPU) == 10_000
    assert local_quota(b, CPU) == 11_000
    assert available(b, CPU) == 21_000
    tree.add("team-a-cq", {CPU: 10_000})
    assert available(b, CPU) == 11_000


def test_hierarchical_available_and_borrowing_level() -> None:
    """Restates the TestSchedule tree 'hierarchical cohort respects lending limit when borrowing' and
    FindHeightOfLowestSubtreeThatFits: ROOT ← CHILD ← {lender(10, lend 3), borrower(5, borrow 10)}."""
    tree = QuotaTree()
    tree.add_cohort("root", {})
    tree.add_cohort("child", {}, "root")
    tree.add_cluster_queue("lender", {CPU: Limits(10_000, None, 3_000)}, "child")
    tree.add_cluster_queue("borrower", {CPU: Limits(5_000, 10_000)}, "child")
    tree.build()
    borrower = tree.cqs["borrower"]
    assert tree.cohorts["child"].subtree[CPU] == 8_000
    assert available(borrower, CPU) == 8_000
    assert borrowing_level(borrower, CPU, 4_000) == (0, True)
    assert borrowing_level(borrower, CPU, 6_000)[0] == 1  # from CHILD, one level up
    tree.add("borrower", {CPU: 5_000})
    assert available(borrower, CPU) == 3_000


def test_cohort_own_quota_and_borrowing_limit() -> None:
    """Restates docs concepts/cohort.md (a Cohort's resourceGroups are a shared pool; its borrowingLimit
    caps what its subtree takes from its parent)."""
    tree = QuotaTree()
    tree.add_cohort("root", {CPU: Limits(100_000)})
    tree.add_cohort("team", {CPU: Limits(2_000, 3_000)}, "root")
    tree.add_cluster_queue("cq", {CPU: Limits(1_000)}, "team")
    tree.build()
    assert potential_available(tree.cqs["cq"], CPU) == 6_000  # 1 + 2 of team + 3 borrowed from root


def test_cohort_cycle_disables_its_queues() -> None:
    """Restates snapshot_test.go 'cohorts with cycles and their cqs excluded from snapshot'."""
    tree = QuotaTree()
    tree.add_cohort("a", {}, "b")
    tree.add_cohort("b", {}, "a")
    tree.add_cohort("c", {}, "a")
    tree.add_cluster_queue("in-cycle", {CPU: Limits(1)}, "c")
    tree.add_cluster_queue("fine", {CPU: Limits(1)}, "d")
    tree.build()
    assert not tree.active("in-cycle")
    assert tree.active("fine")


def _chain(depth: int, root_quota: int) -> QuotaTree:
    """Cohorts c0 ← c1 ← … ← c<depth-1> (c0 the root, holding the quota) and one ClusterQueue under the last."""
    tree = QuotaTree()
    tree.add_cohort("c0", {CPU: Limits(root_quota)})
    for i in range(1, depth):
        tree.add_cohort(f"c{i}", {}, f"c{i - 1}")
    tree.add_cluster_queue("leaf", {CPU: Limits(0)}, f"c{depth - 1}")
    tree.build()
    return tree


def test_a_parent_chain_of_thousands_of_cohorts_is_walked_without_recursion() -> None:
    """Issue 28: a Cohort parent chain of ~1,000 crashed the run (RecursionError). Kueue sets no depth bound on
    the hierarchy; every walk here is a loop: the leaf borrows the root's quota through 5,000 cohorts."""
    tree = _chain(5_000, 8_000)
    leaf = tree.cqs["leaf"]
    assert available(leaf, CPU) == potential_available(leaf, CPU) == 8_000
    assert borrowing_level(leaf, CPU, 8_000) == (5_000, False)
    tree.add("leaf", {CPU: 3_000})
    assert tree.cohorts["c0"].usage[CPU] == 3_000 and available(leaf, CPU) == 5_000
    tree.remove("leaf", {CPU: 3_000})
    assert tree.cohorts["c0"].usage[CPU] == 0
    assert [n.name for n in subtree_cluster_queues(tree.cohorts["c0"])] == ["leaf"]
    assert node_height(tree.cohorts["c0"]) == 5_000


def test_a_long_chain_admits_through_the_policy() -> None:
    docs = [cohort("c0", groups=[quotas(["cpu"], [("default", [(4, None, None)])])])]
    docs += [cohort(f"c{i}", f"c{i - 1}") for i in range(1, 1_200)]
    docs.append(cpu_cq("leaf", 0, "c1199"))
    policy = load(*docs)
    policy.submit(workload("a", "leaf", 4), 0)
    assert [d.key for d in policy.cycle(0) if isinstance(d, Admit)] == ["default/a"]


def test_reclaiming_down_a_deep_branch_walks_it_without_recursion() -> None:
    """Preemption looks for victims over the whole cohort tree (collectCandidatesInSubtree): two branches of
    1,000 cohorts under one root; b reclaims the quota a borrowed from it."""
    docs = [cohort("root")]
    for side in ("a", "b"):
        docs += [cohort(f"{side}1", "root")] + [cohort(f"{side}{i}", f"{side}{i - 1}") for i in range(2, 1_001)]
        docs.append(cpu_cq(side, 2, f"{side}1000", preemption={"reclaimWithinCohort": "Any"}))
    policy = load(*docs)
    policy.submit(workload("first", "a", 4), 0)
    assert [d.key for d in policy.cycle(0) if isinstance(d, Admit)] == ["default/first"]
    policy.submit(workload("second", "b", 2, created=1), 1)
    evicted = [d.key for d in policy.cycle(1) if not isinstance(d, Admit)]
    assert evicted == ["default/first"]


def test_a_long_cohort_cycle_is_found_and_named() -> None:
    """A cycle of 3,000 cohorts, and a chain hanging under it: every ClusterQueue below is inactive (Kueue's
    snapshot leaves out a ClusterQueue whose cohort has a cycle), and the cycle is named in Kueue's words."""
    tree = QuotaTree()
    for i in range(3_000):
        tree.add_cohort(f"c{i}", {}, f"c{(i + 1) % 3_000}")
    tree.add_cohort("under", {}, "c17")
    tree.add_cluster_queue("cq", {CPU: Limits(1)}, "under")
    tree.add_cluster_queue("free", {CPU: Limits(1)}, "other")
    tree.build()
    assert not tree.active("cq") and tree.active("free")
    reason = tree.cycle_reason("cq")
    assert reason == "cohort has a cycle: c0 → c1 → c2 → c3 → c4 → … (3000 cohorts) → c0"


# --- property ----------------------------------------------------------------------------------------------

_queue = st.tuples(st.integers(0, 8), st.one_of(st.none(), st.integers(0, 8)), st.one_of(st.none(), st.integers(0, 8)),
                   st.sampled_from(["Never", "LowerPriority", "Any"]), st.booleans())
_load = st.tuples(st.integers(0, 3), st.integers(1, 9), st.integers(0, 3), st.booleans())


@settings(max_examples=150, deadline=None)
@given(queues=st.lists(_queue, min_size=1, max_size=4), pool=st.integers(0, 4),
       loads=st.lists(_load, min_size=1, max_size=25))
def test_admitted_usage_never_exceeds_quota(queues: list[tuple[int, int | None, int | None, str, bool]], pool: int,
                                            loads: list[tuple[int, int, int, bool]]) -> None:
    """Whatever arrives, finishes and is preempted: the cohort's usage never exceeds its total quota
    (its own plus every ClusterQueue's nominal) and each ClusterQueue's usage never exceeds its nominal quota
    plus its borrowingLimit."""
    docs = [cohort("pool", groups=[{"coveredResources": ["cpu"],
                                    "flavors": [{"name": "default",
                                                 "resources": [{"name": "cpu", "nominalQuota": pool}]}]}])]
    for i, (nominal, borrow, lend, reclaim, strict) in enumerate(queues):
        lend = None if lend is None else min(lend, nominal)
        docs.append(cpu_cq(f"cq{i}", nominal, "pool", borrow, lend, queueingStrategy="StrictFIFO" if strict
                           else "BestEffortFIFO", preemption={"withinClusterQueue": "LowerPriority",
                                                              "reclaimWithinCohort": reclaim}))
    policy = load(*docs)
    total = pool * 1000 + sum(q[0] * 1000 for q in queues)
    running: list[str] = []
    for t, (qi, cpu, prio, finish) in enumerate(loads):
        name = f"cq{qi % len(queues)}"
        policy.submit(workload(f"w{t}", name, cpu, priority=prio, created=t), t)
        if finish and running:
            policy.finished(running.pop(0), t)
        for r in policy.cycle(t):
            if isinstance(r, Admit):
                running.append(r.key)
            elif r.key in running:
                running.remove(r.key)
        assert sum(n.usage.get(CPU, 0) for n in policy.tree.cqs.values()) <= total
        for name, node in policy.tree.cqs.items():  # the tree holds exactly the admitted workloads' usage
            held = [a for a in policy._admitted.values() if a.cq == name]
            assert node.usage.get(CPU, 0) == sum(a.usage.get(CPU, 0) for a in held)
        assert len(running) == len(set(running))
        assert sorted(running) == sorted(policy._admitted)
        assert policy.tree.cohorts["pool"].usage.get(CPU, 0) <= policy.tree.cohorts["pool"].subtree.get(CPU, 0)
        for i, (nominal, borrow, _lend, _reclaim, _strict) in enumerate(queues):
            used = policy.tree.cqs[f"cq{i}"].usage.get(CPU, 0)
            assert used >= 0
            if borrow is not None:
                assert used <= (nominal + borrow) * 1000
