"""Kueue fair sharing (Configuration `fairSharing`): expectations restated, in Phalanx's terms, from Kueue v0.17.0's
own unit tests. Each test or parametrize id names the upstream file, test function and case:

- pkg/scheduler/preemption/preemption_fair_test.go, TestFairPreemptions: the victims (and their reasons) that
  fair-sharing preemption picks for an incoming workload, asked of `KueueAdmission._targets` as upstream asks
  `Preemptor.GetTargets` (every case is also driven through `submit`/`cycle`, one scheduling pass, and must evict
  the same workloads with the same reasons).
- pkg/cache/scheduler/fair_sharing_test.go, TestDominantResourceShare and TestIsBorrowingOn: `share()` (the
  dominant resource share), `_rounded_share` (status.fairSharing.weightedShare), the dominant resource and
  whether the node borrows (on the requested flavor-resources).
- pkg/scheduler/scheduler_test.go, TestSchedule, the cases run with fair sharing on: one scheduling pass
  (`passes_per_cycle=1`), what it admits (and on which flavor), evicts (and why) and leaves waiting.

Upstream reserves quota for its "already admitted" workloads directly in the cache; here they are submitted and
admitted one by one before the case's own step (each fits when it comes), in an order that makes Phalanx's
candidate order (priority, then most recently admitted first) the same as upstream's (priority, then quota
reservation time, all equal, then UID = name ascending): the workloads are admitted in descending name order.
Upstream's upper-case cohort names (ROOT, LEFT, Cohort-A, A, ...) are lower-cased, as Kubernetes object names
must be; a cohort whose lower-cased name is also a ClusterQueue's gets `-cohort` appended (A -> a-cohort).
Where a workload must sit on a flavor that flavor assignment would not give it when it comes, a filler workload
takes the preferred flavor meanwhile and finishes before the case's step.

Not restated:
- TestFairPreemptions: none left out. Two cases ("borrowing cq in non-borrowing cohort is protected", "forced to
  preempt within clusterqueue because borrowing workload too important") reserve cpu in a ClusterQueue `b` that
  has no resource groups, which no admission can do; here `b` covers cpu with nominal quota 0. Its usage then
  reaches cohort RIGHT exactly as upstream's (b keeps nothing for itself either way), and RIGHT, not borrowing,
  is what protects b in both cases.
- TestSchedule "with fair sharing: preempt workload from CQ with the highest share": its admitted state has
  eng-gamma using 70 CPUs of on-demand with nominal 50 and borrowingLimit 0, beyond what any admission can
  reach (upstream writes the reservation directly).
- TestSchedule "prefer flavor with most local capacity (FS=false)" and the other TestSchedule cases: fair sharing
  is off in them (classical admission, covered by tests/admission/test_kueue.py).
- TestSchedule's checks of Workload conditions, events, messages and the admission_cycle_preemption_skips metric:
  Phalanx has no Workload objects, events or metrics; what the pass admits, evicts and leaves waiting is
  checked instead.
- TestIsBorrowingOn / TestDominantResourceShare compare the cache and the snapshot; Phalanx has one tree, so each
  case is checked once.

Restated with an adaptation (each explained in its test's docstring): TestSchedule 'with fair sharing: nominal-first
ordering ...' (cpu in two resource groups, refused by the webhook: one group), 'not enough resources with fair
sharing enabled' (a borrowingLimit without a cohort, refused by the webhook: left out), 'multiple preemptions within
cq when fair sharing' (reclaimWithinCohort left as Go's empty string, which no stored ClusterQueue holds:
LowerPriority) and 'multiple preemptions skip overlapping preemption targets' (c1 holds only the cpu its admission
lists).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from phalanx.admission.base import Admit, EvictWorkload, PodSet, QueuedWorkload
from phalanx.admission.kueue import KueueAdmission, _rounded_share, load_kueue
from phalanx.admission.kueue_config import KueueConfig
from phalanx.admission.kueue_fair import share
from phalanx.admission.quota import FlavorResource
from phalanx.api.objects import Source
from phalanx.api.quantity import resource_value
from tests.admission.kueue_helpers import V2, cluster_queue, flavor, local_queue, quotas

PREEMPTION_FAIR = "pkg/scheduler/preemption/preemption_fair_test.go"
FAIR_SHARING = "pkg/cache/scheduler/fair_sharing_test.go"
SCHEDULER = "pkg/scheduler/scheduler_test.go"

LE_FINAL = "LessThanOrEqualToFinalShare"
LT_INITIAL = "LessThanInitialShare"
BOTH = (LE_FINAL, LT_INITIAL)  # upstream's default when fairSharing names no strategy

IN_CQ = "InClusterQueue"
RECLAIM = "InCohortReclamation"
FAIR = "InCohortFairSharing"

Doc = dict[str, Any]
Quota = tuple[Any, Any, Any]


# --- builders -----------------------------------------------------------------------------------------------

def cq(name: str, cohort: str = "", flavors: list[tuple[str, list[Quota]]] | None = None,
       covered: tuple[str, ...] = ("cpu",), weight: str | None = None, **spec: Any) -> Doc:
    """A ClusterQueue with one resource group over `covered`; `flavors` as kueue_helpers.quotas takes them."""
    groups = [quotas(list(covered), flavors)] if flavors else []
    if weight is not None:
        spec["fairSharing"] = {"weight": weight}
    return cluster_queue(name, groups, cohort, **spec)


def cpu(name: str, nominal: Any, cohort: str = "", weight: str | None = None, **spec: Any) -> Doc:
    """A ClusterQueue covering cpu with flavor `default`."""
    return cq(name, cohort, [("default", [(nominal, None, None)])], weight=weight, **spec)


def cohort(name: str, parent: str = "", flavors: list[tuple[str, list[Quota]]] | None = None,
           covered: tuple[str, ...] = ("cpu",), weight: str | None = None) -> Doc:
    spec: Doc = {}
    if parent:
        spec["parentName"] = parent
    if flavors:
        spec["resourceGroups"] = [quotas(list(covered), flavors)]
    if weight is not None:
        spec["fairSharing"] = {"weight": weight}
    return {"apiVersion": V2, "kind": "Cohort", "metadata": {"name": name}, "spec": spec}


def fair_policy(*docs: Doc, strategies: tuple[str, ...] = BOTH, flavors: tuple[str, ...] = ("default",),
                namespaces: tuple[str, ...] = ("default",)) -> KueueAdmission:
    """Fair sharing on, with the given strategies; a LocalQueue named after each ClusterQueue in each namespace."""
    all_docs = list(docs) + [flavor(f) for f in flavors]
    all_docs += [local_queue(d["metadata"]["name"], d["metadata"]["name"], ns)
                 for d in docs if d["kind"] == "ClusterQueue" for ns in namespaces]
    return load_kueue([(d, Source("kueue.yaml", i)) for i, d in enumerate(all_docs)], None,
                      KueueConfig(fair_sharing=strategies))


def req(**amounts: Any) -> dict[str, int]:
    """Requests written as Kueue quantities (`cpu="0.5"`, `gpu=5`), in Phalanx units (cpu in millicores)."""
    return {name: resource_value(name, value) for name, value in amounts.items()}


def wl(name: str, queue: str, requests: dict[str, int], *, count: int = 1, priority: int = 0,
       created: float = 0.0, namespace: str = "default") -> QueuedWorkload:
    return QueuedWorkload(key=f"{namespace}/{name}", namespace=namespace, queue=queue, priority=priority,
                          created=created, pod_sets=(PodSet("main", count, requests),))


class Clock:
    """Submission times, one per step, so every setup step comes before the case's own."""

    def __init__(self) -> None:
        self.now = -1000.0

    def tick(self) -> float:
        self.now += 1.0
        return self.now


def admit(policy: KueueAdmission, clock: Clock, *workloads: QueuedWorkload) -> None:
    """Submit and admit each workload in turn (each must fit when it comes)."""
    for w in workloads:
        t = clock.tick()
        policy.submit(w, t)
        got = {r.key for r in policy.cycle(t) if isinstance(r, Admit)}
        assert got == {w.key}, f"setup: {w.key} was not admitted ({policy.pending_reason(w.key)})"


def admitted(results: list[Admit | EvictWorkload]) -> dict[str, Admit]:
    return {r.key: r for r in results if isinstance(r, Admit)}


def evicted(results: list[Admit | EvictWorkload]) -> dict[str, str]:
    return {r.key: r.reason for r in results if isinstance(r, EvictWorkload)}


def usage_snapshot(policy: KueueAdmission) -> dict[str, dict[FlavorResource, int]]:
    nodes = {**policy.tree.cqs, **policy.tree.cohorts}
    return {name: {fr: v for fr, v in node.usage.items() if v} for name, node in nodes.items()}


def row(policy: KueueAdmission, name: str) -> dict[str, object]:
    return next(r for r in policy.queue_rows() if r["kind"] == "ClusterQueue" and r["name"] == name)


def waiting(policy: KueueAdmission, cq_name: str, count: int = 1) -> None:
    """Upstream's wantLeft: still in the ClusterQueue's active queue (not set aside as inadmissible)."""
    assert row(policy, cq_name)["pending"] == count
    assert row(policy, cq_name)["inadmissible"] == 0


# --- TestFairPreemptions -------------------------------------------------------------------------------------

BASE_PREEMPTION = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any",
                   "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": -3}}
SIMPLE_PREEMPTION = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}


def base_cqs() -> tuple[Doc, ...]:
    """TestFairPreemptions' baseCQs: a, b, c with 3 CPUs each and preemptible with none, all in cohort `all`."""
    return (cpu("a", 3, "all", preemption=BASE_PREEMPTION), cpu("b", 3, "all", preemption=BASE_PREEMPTION),
            cpu("c", 3, "all", preemption=BASE_PREEMPTION), cpu("preemptible", 0, "all"))


Admitted = tuple[str, str, str, int]  # name, ClusterQueue, cpu (a Kueue quantity), priority


def units(cq_name: str, n: int, prefix: str | None = None, priority: int = 0) -> list[Admitted]:
    """n one-CPU workloads <prefix>1..<prefix>n in the ClusterQueue."""
    return [(f"{prefix or cq_name}{i}", cq_name, "1", priority) for i in range(1, n + 1)]


@dataclass(frozen=True)
class FairCase:
    docs: tuple[Doc, ...]
    admitted: list[Admitted]
    incoming: Admitted
    want: dict[str, str] = field(default_factory=dict)  # victim name -> reason
    strategies: tuple[str, ...] = BOTH


def _hierarchy_docs() -> tuple[Doc, ...]:
    return (
        cpu("a", 1, "left", weight="2", preemption={"reclaimWithinCohort": "Any"}),
        cpu("b", 1, "left"), cpu("c", 1, "root"), cpu("d", 1, "right"), cpu("e", 1, "right", weight="0.99"),
        cohort("root", flavors=[("default", [(5, None, None)])]),
        cohort("left", "root", [("default", [(5, None, None)])], weight="2"),
        cohort("right", "root", [("default", [(5, None, None)])]),
    )


def _protected_docs(right_quota: int, reclaim: str) -> tuple[Doc, ...]:
    # upstream's b has no resource groups; see the module docstring
    return (
        cpu("a", 5, "root", weight="10", preemption={"reclaimWithinCohort": reclaim,
                                                      "withinClusterQueue": "LowerPriority"}),
        cpu("b", 0, "right", weight="0.1"),
        cohort("root"), cohort("right", "root", [("default", [(right_quota, None, None)])], weight="0.1"),
    )


def _deep_docs() -> tuple[Doc, ...]:
    return (
        cpu("a", 0, "aaa", preemption={"reclaimWithinCohort": "Any"}), cpu("b", 0, "bbb"),
        cohort("root"), cohort("a-cohort", "root", weight="1.01"), cohort("aa", "a-cohort"), cohort("aaa", "aa"),
        cohort("b-cohort", "root", weight="0.99"), cohort("bb", "b-cohort"), cohort("bbb", "bb"),
        cohort("c", "root"), cohort("cc", "c"), cohort("ccc", "cc"),
        cohort("cccc", "ccc", [("default", [(1, None, None)])]),
    )


FAIR_CASES: dict[str, FairCase] = {
    "reclaim nominal from user using the most": FairCase(
        base_cqs(), units("a", 3) + units("b", 5) + units("c", 1), ("c_incoming", "c", "1", 0), {"b1": RECLAIM}),
    "can reclaim from queue using less, if taking the latest workload from user using the most isn't enough":
        FairCase(base_cqs(), [("a1", "a", "3", 0), ("a2", "a", "1", 0), ("b1", "b", "2", 0), ("b2", "b", "3", 0)],
                 ("c_incoming", "c", "3", 0), {"a1": RECLAIM}),
    "reclaim borrowable quota from user using the most": FairCase(
        base_cqs(), units("a", 3) + units("b", 5) + units("c", 1), ("a_incoming", "a", "1", 0), {"b1": FAIR}),
    "preempt one from each CQ borrowing": FairCase(
        base_cqs(), [("a1", "a", "0.5", 0), ("a2", "a", "0.5", 0), ("a3", "a", "3", 0),
                     ("b1", "b", "0.5", 0), ("b2", "b", "0.5", 0), ("b3", "b", "3", 0)],
        ("c_incoming", "c", "2", 0), {"a1": RECLAIM, "b1": RECLAIM}),
    "can't preempt when everyone under nominal": FairCase(
        base_cqs(), units("a", 3) + units("b", 3) + units("c", 3), ("c_incoming", "c", "1", 0)),
    "can't preempt when it would switch the imbalance": FairCase(
        base_cqs(), units("a", 3) + units("b", 5), ("a_incoming", "a", "2", 0)),
    "can preempt lower priority workloads from same CQ": FairCase(
        base_cqs(),
        [("a1_low", "a", "1", -1), ("a2_low", "a", "1", -1), ("a3", "a", "1", 0), ("a4", "a", "1", 0), *units("b", 5)],
        ("a_incoming", "a", "2", 0), {"a1_low": IN_CQ, "a2_low": IN_CQ}),
    "can preempt a combination of same CQ and highest user": FairCase(
        base_cqs(), [("a_low", "a", "1", -1), ("a2", "a", "1", 0), ("a3", "a", "1", 0), *units("b", 6)],
        ("a_incoming", "a", "2", 0), {"a_low": IN_CQ, "b1": FAIR}),
    "preempt huge workload if there is no other option, as long as the target CQ gets a lower share": FairCase(
        base_cqs(), [("b1", "b", "9", 0)], ("a_incoming", "a", "2", 0), {"b1": RECLAIM}),
    "can't preempt huge workload if the incoming is also huge": FairCase(
        base_cqs(), [("a1", "a", "2", 0), ("b1", "b", "7", 0)], ("a_incoming", "a", "5", 0)),
    "can't preempt 2 smaller workloads if the incoming is huge": FairCase(
        base_cqs(), [("b1", "b", "2", 0), ("b2", "b", "2", 0), ("b3", "b", "3", 0)], ("a_incoming", "a", "6", 0)),
    "preempt from target and others even if over nominal": FairCase(
        base_cqs(), [("a1_low", "a", "2", -1), ("a2_low", "a", "1", -1), ("b1", "b", "3", 0), ("b2", "b", "3", 0)],
        ("a_incoming", "a", "4", 0), {"a1_low": IN_CQ, "b1": FAIR}),
    "prefer to preempt workloads that don't make the target CQ have the biggest share": FairCase(
        base_cqs(), [("b1", "b", "2", 0), ("b2", "b", "1", 0), ("b3", "b", "2", 0), ("c1", "c", "1", 0)],
        ("a_incoming", "a", "3.5", 0), {"b2": FAIR}),
    "preempt from different cluster queues if the end result has a smaller max share": FairCase(
        base_cqs(), [("b1", "b", "2", 0), ("b2", "b", "2.5", 0), ("c1", "c", "2", 0), ("c2", "c", "2.5", 0)],
        ("a_incoming", "a", "3.5", 0), {"b1": FAIR, "c1": FAIR}),
    "scenario above does not flap": FairCase(
        base_cqs(), [("a1", "a", "3.5", 0), ("b2", "b", "2.5", 0), ("c2", "c", "2.5", 0)],
        ("b_incoming", "b", "2", 0)),
    "cannot preempt if it would make the candidate CQ go under nominal after preempting one element": FairCase(
        base_cqs(), [("b1", "b", "3", 0), ("b2", "b", "3", 0), ("c1", "c", "3", 0)], ("a_incoming", "a", "4", 0)),
    "workloads under priority threshold not capriciously preempted": FairCase(
        base_cqs(), units("a", 3) + units("b", 3) + units("preemptible", 3, priority=-3),
        ("a_incoming", "a", "2", 0)),
    "preempt lower priority first, even if big": FairCase(
        base_cqs(), [("a1", "a", "3", 0), ("b_low", "b", "5", 0), ("b_high", "b", "1", 1)],
        ("a_incoming", "a", "1", 0), {"b_low": FAIR}, strategies=(LT_INITIAL,)),
    "preempt workload that doesn't transfer the imbalance, even if high priority": FairCase(
        base_cqs(), [("a1", "a", "3", 0), ("b_low", "b", "5", 0), ("b_high", "b", "1", 1)],
        ("a_incoming", "a", "1", 0), {"b_high": FAIR}, strategies=(LE_FINAL,)),
    "CQ with higher weight can preempt more": FairCase(
        (cpu("a", 3, "all", weight="2", preemption=SIMPLE_PREEMPTION), cpu("b", 3, "all", preemption=SIMPLE_PREEMPTION),
         cpu("c", 3, "all", preemption=SIMPLE_PREEMPTION)),
        units("a", 3) + units("b", 6), ("a_incoming", "a", "2", 0), {"b1": FAIR, "b2": FAIR}),
    "can preempt anything borrowing from CQ with 0 weight": FairCase(
        (cpu("a", 3, "all", preemption=SIMPLE_PREEMPTION), cpu("b", 3, "all", weight="0", preemption=SIMPLE_PREEMPTION),
         cpu("c", 3, "all", preemption=SIMPLE_PREEMPTION)),
        units("a", 3) + units("b", 6), ("a_incoming", "a", "3", 0), {"b1": FAIR, "b2": FAIR, "b3": FAIR}),
    "can't preempt nominal from CQ with 0 weight": FairCase(
        (cpu("a", 3, "all", preemption=SIMPLE_PREEMPTION),
         cpu("b", 3, "all", weight="0", preemption=SIMPLE_PREEMPTION)),
        units("a", 3) + units("b", 3), ("a_incoming", "a", "1", 0)),
    "can't preempt nominal from Cohort with 0 weight": FairCase(
        (cpu("left-cq", 0, "root", preemption={"reclaimWithinCohort": "Any"}),
         cpu("right-cq", 0, "right-cohort", weight="0", preemption={"reclaimWithinCohort": "Any"}),
         cohort("right-cohort", "root", [("default", [(1, None, None)])], weight="0")),
        [("right-1", "right-cq", "1", 0)], ("left-1", "left-cq", "1", 0)),
    "can preempt within cluster queue when no cohort": FairCase(
        (cpu("a", 1, preemption={"withinClusterQueue": "LowerPriority"}),),
        [("a1", "a", "1", 0)], ("a_incoming", "a", "1", 1000), {"a1": IN_CQ}),
    "hierarchical preemption": FairCase(
        _hierarchy_docs(),
        [(f"{q}{i}", q, "1", i) for q in "bcde" for i in range(1, 6)], ("unit", "a", "5", 0),
        {"b1": FAIR, "b2": FAIR, "c1": FAIR, "c2": FAIR, "e1": FAIR}),
    "borrowing cq in non-borrowing cohort is protected": FairCase(
        _protected_docs(1, "Any"), [*units("a", 3, priority=-1), ("b1", "b", "1", -1)], ("unit", "a", "5", 0),
        {"a1": IN_CQ, "a2": IN_CQ, "a3": IN_CQ}),
    "forced to preempt within clusterqueue because borrowing workload too important": FairCase(
        _protected_docs(3, "LowerPriority"), [*units("a", 3, priority=-1), ("b1", "b", "4", 100)],
        ("unit", "a", "4", 0), {"a1": IN_CQ, "a2": IN_CQ, "a3": IN_CQ}),
    "deep preemption": FairCase(_deep_docs(), [("b1", "b", "1", 0)], ("a1", "a", "1", 0), {"b1": FAIR}),
    "cq with zero weight can reclaim nominal quota": FairCase(
        (cpu("a", 1, "root", weight="0.0", preemption={"reclaimWithinCohort": "Any"}),
         cpu("b", 0, "root", weight="1.0")),
        [("b1", "b", "1", 0)], ("a1", "a", "1", 0), {"b1": RECLAIM}),
    "cohort with zero weight can reclaim nominal quota": FairCase(
        (cpu("a", 0, "a-cohort", weight="0.0", preemption={"reclaimWithinCohort": "Any"}),
         cpu("b", 0, "root", weight="1.0"), cohort("a-cohort", "root", [("default", [(1, None, None)])], weight="0.0")),
        [("b1", "b", "1", 0)], ("a1", "a", "1", 0), {"b1": FAIR}),
}


def _setup_fair_case(case: FairCase) -> tuple[KueueAdmission, Clock, QueuedWorkload]:
    policy = fair_policy(*case.docs, strategies=case.strategies)
    clock = Clock()
    # descending names: the most recently admitted first = upstream's UID (name) order among equal times
    admit(policy, clock, *(wl(name, q, req(cpu=amount), priority=prio)
                           for name, q, amount, prio in sorted(case.admitted, reverse=True)))
    name, q, amount, prio = case.incoming
    return policy, clock, wl(name, q, req(cpu=amount), priority=prio)


@pytest.mark.parametrize("name", list(FAIR_CASES), ids=[f"{PREEMPTION_FAIR}::TestFairPreemptions::{n}"
                                                         for n in FAIR_CASES])
def test_fair_preemption_targets(name: str) -> None:
    """Restates pkg/scheduler/preemption/preemption_fair_test.go:
    TestFairPreemptions (GetTargets): the victims and their reasons for the incoming workload, whose
    whole request needs preemption on flavor `default`; the tree's usage is left as it was."""
    case = FAIR_CASES[name]
    policy, _, incoming = _setup_fair_case(case)
    fr = ("default", "cpu")
    before = usage_snapshot(policy)
    targets = policy._targets(incoming.queue, incoming, {fr: incoming.total()["cpu"]}, {fr})
    got = {t.adm.wl.key.partition("/")[2]: t.reason for t in targets}
    assert got == case.want
    assert len(targets) == len(got)
    assert usage_snapshot(policy) == before


@pytest.mark.parametrize("name", list(FAIR_CASES), ids=[f"{PREEMPTION_FAIR}::TestFairPreemptions::{n}::cycle"
                                                         for n in FAIR_CASES])
def test_fair_preemption_through_a_scheduling_pass(name: str) -> None:
    """pkg/scheduler/preemption/preemption_fair_test.go:
    TestFairPreemptions, driven as a scheduling pass: the incoming workload is submitted and one pass evicts
    exactly the upstream victims, with upstream's reasons, on its behalf (or nothing)."""
    case = FAIR_CASES[name]
    policy, clock, incoming = _setup_fair_case(case)
    policy.passes_per_cycle = 1
    t = clock.tick()
    policy.submit(incoming, t)
    results = policy.cycle(t)
    assert evicted(results) == {f"default/{n}": reason for n, reason in case.want.items()}
    assert all(r.by == incoming.key for r in results if isinstance(r, EvictWorkload))
    assert incoming.key not in admitted(results)


def _nominal_first_policy() -> tuple[KueueAdmission, Clock]:
    """pkg/scheduler/preemption/preemption_fair_test.go:
    TestFairPreemptions 'nominal first: ...': a has 3 premium and 0 cheap CPUs, b 0 premium and 6 cheap; a
    holds 2 premium (within nominal) and 5 cheap (borrowed), b 1 premium (borrowed from a)."""
    mss = {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"}
    policy = fair_policy(
        cq("a", "all", [("premium", [(3, None, None)]), ("cheap", [(0, None, None)])],
           preemption={"reclaimWithinCohort": "Any"}, flavorFungibility=mss),
        cq("b", "all", [("premium", [(0, None, None)]), ("cheap", [(6, None, None)])]),
        flavors=("premium", "cheap"))
    clock = Clock()
    # a filler holds a's premium quota while a's cheap workloads come, so that they land on cheap
    admit(policy, clock, wl("filler", "a", req(cpu=3)))
    admit(policy, clock, *(wl(f"a_cheap{i}", "a", req(cpu=1)) for i in range(5, 0, -1)))
    policy.finished("default/filler", clock.tick())
    admit(policy, clock, wl("b_prem1", "b", req(cpu=1)), wl("a_prem2", "a", req(cpu=1)),
          wl("a_prem1", "a", req(cpu=1)))
    assert usage_snapshot(policy)["a"] == {("premium", "cpu"): 2000, ("cheap", "cpu"): 5000}
    assert usage_snapshot(policy)["b"] == {("premium", "cpu"): 1000}
    return policy, clock


def test_fair_preemption_nominal_first() -> None:
    """Restates pkg/scheduler/preemption/preemption_fair_test.go:
    TestFairPreemptions 'nominal first: workload fitting within nominal can preempt despite high
    aggregate DRS': a's 1 premium CPU keeps it within its premium nominal quota, so b_prem1 is reclaimed although a's
    share (from its cheap borrowing) is above b's."""
    policy, clock = _nominal_first_policy()
    incoming = wl("a_incoming", "a", req(cpu=1))
    fr = ("premium", "cpu")
    targets = policy._targets("a", incoming, {fr: 1000}, {fr})
    assert {t.adm.wl.key: t.reason for t in targets} == {"default/b_prem1": RECLAIM}
    policy.passes_per_cycle = 1
    t = clock.tick()
    policy.submit(incoming, t)
    assert evicted(policy.cycle(t)) == {"default/b_prem1": RECLAIM}


# --- TestDominantResourceShare, TestIsBorrowingOn -------------------------------------------------------------

GPU = "example.com/gpu"
MAX = -1  # upstream's math.MaxInt: a weight-0 node that borrows (Phalanx's _rounded_share gives None)


@dataclass(frozen=True)
class DrsCase:
    docs: tuple[Doc, ...]
    usage: dict[FlavorResource, int]  # of ClusterQueue `cq`, Phalanx units
    want: dict[str, tuple[int, str, bool]]  # node -> (rounded weighted share, dominant resource, borrowing)
    request: dict[FlavorResource, int] = field(default_factory=dict)  # flvResQ: the workload's usage, added


def _gpu_cqs(cq_nominal: Any, lend_nominal: Any, cq_weight: str = "1", lend_weight: str = "1",
             lending_limit: Any = None) -> tuple[Doc, ...]:
    return (
        cq("cq", "test-cohort", [("default", [(cq_nominal, None, lending_limit)])], covered=(GPU,), weight=cq_weight),
        cq("lending-cq", "test-cohort", [("default", [(lend_nominal, None, lending_limit)])], covered=(GPU,),
           weight=lend_weight),
    )


def _cpu_gpu_cqs(gpu_lending_limit: Any = None, lend_gpu: Any = 5) -> tuple[Doc, ...]:
    return (
        cq("cq", "test-cohort", [("default", [("2", None, None), (5, None, gpu_lending_limit)])],
           covered=("cpu", GPU), weight="1"),
        cq("lending-cq", "test-cohort", [("default", [("8", None, None), (lend_gpu, None, gpu_lending_limit)])],
           covered=("cpu", GPU), weight="1"),
    )


NONE = (0, "", False)
CPU_D, GPU_D, OD, SPOT = ("default", "cpu"), ("default", GPU), ("on-demand", "cpu"), ("spot", "cpu")
QUIET = {"lending-cq": NONE, "test-cohort": NONE}

DRS_CASES: dict[str, DrsCase] = {
    "no cohort": DrsCase(
        (cq("cq", "", [("default", [("2000", None, None), (5, None, None)])], covered=("cpu", GPU)),),
        {CPU_D: 1000, GPU_D: 2}, {"cq": NONE}),
    "usage below nominal": DrsCase(_cpu_gpu_cqs(), {CPU_D: 1000, GPU_D: 2}, {"cq": NONE, **QUIET}),
    "usage above nominal": DrsCase(_cpu_gpu_cqs(), {CPU_D: 3000, GPU_D: 7}, {"cq": (200, GPU, True), **QUIET}),
    "usage slightly above nominal in a cohort with large quotas": DrsCase(
        _gpu_cqs(500, 1000, lend_weight="300"), {GPU_D: 501}, {"cq": (1, GPU, True), **QUIET}),
    "usage way above nominal in a cohort with large quotas and weights": DrsCase(
        _gpu_cqs(500, 1000, cq_weight="300", lend_weight="300"), {GPU_D: 800}, {"cq": (1, GPU, True), **QUIET}),
    "one resource above nominal": DrsCase(_cpu_gpu_cqs(), {CPU_D: 3000, GPU_D: 3}, {"cq": (100, "cpu", True), **QUIET}),
    "usage with workload above nominal": DrsCase(
        _cpu_gpu_cqs(), {CPU_D: 1000, GPU_D: 2}, {"cq": (300, "cpu", True), **QUIET}, {CPU_D: 4000, GPU_D: 4}),
    "A resource with zero lendable": DrsCase(
        _cpu_gpu_cqs(gpu_lending_limit=0, lend_gpu=64), {CPU_D: 1000, GPU_D: 1}, {"cq": (300, "cpu", True), **QUIET},
        {CPU_D: 4000, GPU_D: 4}),
    "multiple flavors": DrsCase(
        (cq("cq", "test-cohort", [("on-demand", [("20", None, None)]), ("spot", [("80", None, None)])], weight="1"),
         cq("lending-cq", "test-cohort", [("default", [("100", None, None)])], weight="1")),
        {OD: 15000, SPOT: 5000}, {"cq": (25, "cpu", True), **QUIET}, {OD: 10000}),
    "above nominal with integer weight": DrsCase(
        _gpu_cqs(5, 5, cq_weight="2"), {GPU_D: 7}, {"cq": (100, GPU, True), **QUIET}),
    "above nominal with decimal weight": DrsCase(
        _gpu_cqs(5, 5, cq_weight="0.5"), {GPU_D: 7}, {"cq": (400, GPU, True), **QUIET}),
    "above nominal with zero weight": DrsCase(
        _gpu_cqs(5, 10, cq_weight="0"), {GPU_D: 7}, {"cq": (MAX, GPU, True), **QUIET}),
    "cohort has resource share": DrsCase(
        (cq("cq", "child-cohort", [("default", [(5, None, None)])], covered=(GPU,), weight="1"),
         cohort("child-cohort", "root", weight="2"),
         cohort("root", flavors=[("default", [(45, None, None)])], covered=(GPU,))),
        {GPU_D: 10}, {"cq": (100, GPU, True), "child-cohort": (50, GPU, True), "root": NONE}),
    "resource share defined for resources only available at the root cohort": DrsCase(
        (cq("cq", "child-cohort", [("default", [(0, None, None)])], covered=(GPU,), weight="1"),
         cohort("child-cohort", "root", weight="2"),
         cohort("root", flavors=[("default", [(50, None, None)])], covered=(GPU,))),
        {GPU_D: 10}, {"cq": (200, GPU, True), "child-cohort": (100, GPU, True), "root": NONE}),
    "resource share affected by borrowing limit": DrsCase(
        (cq("cq", "child-cohort", [("default", [(0, None, None)])], covered=(GPU,)),
         cohort("child-cohort", "root", [("default", [(0, 10, None)])], covered=(GPU,)),
         cohort("root", flavors=[("default", [(50, None, None)])], covered=(GPU,))),
        {GPU_D: 10}, {"cq": (1000, GPU, True), "child-cohort": (200, GPU, True), "root": NONE}),
}


@pytest.mark.parametrize("name", list(DRS_CASES), ids=[f"{FAIR_SHARING}::TestDominantResourceShare::{n}"
                                                        for n in DRS_CASES])
def test_dominant_resource_share(name: str) -> None:
    """Restates pkg/cache/scheduler/fair_sharing_test.go:
    TestDominantResourceShare: each node's weighted share rounded up (status.fairSharing.weightedShare),
    its dominant resource and whether it borrows, with `cq`'s usage (and the workload's request, flvResQ) added."""
    case = DRS_CASES[name]
    policy = fair_policy(*case.docs, flavors=("default", "on-demand", "spot"))
    policy.tree.add("cq", {fr: case.usage.get(fr, 0) + case.request.get(fr, 0)
                           for fr in {*case.usage, *case.request}})
    nodes = {**policy.tree.cqs, **policy.tree.cohorts}
    got: dict[str, tuple[int, str, bool]] = {}
    for node_name, node in nodes.items():
        drs = share(node)
        rounded = _rounded_share(drs)
        got[node_name] = (MAX if rounded is None else rounded, drs.resource, drs.borrowing)
    assert got == case.want


def test_weighted_share_row_reports_the_rounded_share() -> None:
    """pkg/cache/scheduler/fair_sharing_test.go:
    TestDominantResourceShare 'usage above nominal', as the ClusterQueue's row reports it (weighted_share)."""
    policy = fair_policy(*_cpu_gpu_cqs(), flavors=("default",))
    clock = Clock()
    admit(policy, clock, wl("w", "cq", req(cpu=3) | {GPU: 7}))
    assert row(policy, "cq")["weighted_share"] == 200
    assert row(policy, "lending-cq")["weighted_share"] == 0


IS_BORROWING_ON: dict[str, tuple[dict[FlavorResource, int], dict[FlavorResource, int], bool, bool]] = {
    # usage, requested, borrowing on requested, borrowing
    "borrows on requested flavor": ({CPU_D: 3000}, {CPU_D: 1000}, True, True),
    "borrows on unrequested flavor only": ({CPU_D: 1000, GPU_D: 7}, {CPU_D: 1000}, False, True),
    "borrows on both, requests one": ({CPU_D: 3000, GPU_D: 7}, {GPU_D: 1}, True, True),
    "no borrowing": ({CPU_D: 1000, GPU_D: 2}, {CPU_D: 1000}, False, False),
    "nil requestedFRs": ({CPU_D: 3000}, {}, False, True),
}


@pytest.mark.parametrize("name", list(IS_BORROWING_ON), ids=[f"{FAIR_SHARING}::TestIsBorrowingOn::{n}"
                                                              for n in IS_BORROWING_ON])
def test_is_borrowing_on(name: str) -> None:
    """Restates pkg/cache/scheduler/fair_sharing_test.go:
    TestIsBorrowingOn: cq (2 CPUs, 5 GPUs) and lending-cq (8, 5) in one cohort; with cq's usage, does
    its share borrow at all, and on the requested flavor-resources?"""
    usage, requested, want_on, want_borrowing = IS_BORROWING_ON[name]
    policy = fair_policy(*_cpu_gpu_cqs())
    policy.tree.add("cq", usage)
    drs = share(policy.tree.cqs["cq"])
    assert drs.borrowing is want_borrowing
    assert drs.borrowing_on(requested) is want_on


# --- TestSchedule with fair sharing ---------------------------------------------------------------------------

def _one_pass(policy: KueueAdmission, clock: Clock, *pending: QueuedWorkload) -> list[Admit | EvictWorkload]:
    """Submit the case's pending workloads and run one scheduling pass (scheduler.schedule)."""
    policy.passes_per_cycle = 1
    t = clock.tick()
    for w in pending:
        policy.submit(w, t)
    return policy.cycle(t)


def _eng_docs() -> list[Doc]:
    """TestSchedule's eng-alpha and eng-beta (cohort eng); Resource(name, nominal, borrowingLimit)."""
    return [
        cq("eng-alpha", "eng", [("on-demand", [("50", "50", None)]), ("spot", [("100", "0", None)])],
           queueingStrategy="StrictFIFO"),
        cluster_queue("eng-beta", [quotas(["cpu"], [("on-demand", [("50", "10", None)]),
                                                    ("spot", [("0", "100", None)])]),
                                   quotas([GPU], [("model-a", [("20", "0", None)])])], "eng",
                      queueingStrategy="StrictFIFO",
                      preemption={"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}),
    ]


def test_schedule_workload_with_lowest_share_first() -> None:
    """Restates pkg/scheduler/scheduler_test.go:
    TestSchedule 'with fair sharing: schedule workload with lowest share first': with eng-shared (10
    on-demand, no borrowing) in cohort eng, alpha uses its 50 and beta 55 (borrowing 5); alpha's `new` (5,
    created now) would borrow less than beta's `older_new` (1, created a minute earlier) would leave beta with,
    so it goes first and older_new no longer fits."""
    policy = fair_policy(*_eng_docs(), cq("eng-shared", "eng", [("on-demand", [("10", "0", None)])]),
                         flavors=("on-demand", "spot", "model-a"))
    clock = Clock()
    admit(policy, clock, wl("all_nominal", "eng-alpha", req(cpu=1), count=50),
          wl("borrowing", "eng-beta", req(cpu=1), count=55))
    results = _one_pass(policy, clock, wl("older_new", "eng-beta", req(cpu=1), created=clock.now - 60),
                        wl("new", "eng-alpha", req(cpu=1), count=5, created=clock.now))
    got = admitted(results)
    assert set(got) == {"default/new"}
    assert got["default/new"].flavors == {"cpu": "on-demand"}
    assert evicted(results) == {}
    waiting(policy, "eng-beta")
    assert policy.pending_reason("default/older_new") == \
        "the workload no longer fits after processing another workload"


def test_nominal_first_ordering_despite_higher_share() -> None:
    """Restates pkg/scheduler/scheduler_test.go:
    TestSchedule 'with fair sharing: nominal-first ordering admits workload fitting within nominal
    despite higher CQ DRS': fs-nom-a borrows 30 spot CPUs (a high share) but nom-wl (45) stays within its on-demand
    nominal quota; fs-nom-b's borrow-wl (15) would borrow on-demand: nom-wl goes first, borrow-wl no longer fits.
    (Upstream lists on-demand and spot in two resource groups both covering cpu, which the webhook would refuse;
    restated as one group with on-demand then spot, which assigns the same flavors here.)"""
    policy = fair_policy(
        cq("fs-nom-a", "fs-nom", [("on-demand", [("50", "0", None)]), ("spot", [("50", "50", None)])]),
        cq("fs-nom-b", "fs-nom", [("on-demand", [("10", "50", None)]), ("spot", [("50", "0", None)])]),
        flavors=("on-demand", "spot"))
    clock = Clock()
    admit(policy, clock, wl("spot-heavy", "fs-nom-a", req(cpu=1), count=80),
          wl("light-usage", "fs-nom-b", req(cpu=1), count=5))
    assert usage_snapshot(policy)["fs-nom-a"] == {SPOT: 80000}
    results = _one_pass(policy, clock, wl("borrow-wl", "fs-nom-b", req(cpu=1), count=15, created=clock.now - 60),
                        wl("nom-wl", "fs-nom-a", req(cpu=1), count=45, created=clock.now))
    got = admitted(results)
    assert set(got) == {"default/nom-wl"}
    assert got["default/nom-wl"].flavors == {"cpu": "on-demand"}
    waiting(policy, "fs-nom-b")


def _od(name: str, cohort_name: str, nominal: Any) -> Doc:
    return cq(name, cohort_name, [("on-demand", [(nominal, None, None)])])


def _nominal_first_hierarchy(policy: KueueAdmission, setup: list[QueuedWorkload], pending: list[QueuedWorkload],
                             winner: str, loser_cq: str) -> None:
    clock = Clock()
    admit(policy, clock, *setup)
    got = admitted(_one_pass(policy, clock, *pending))
    assert set(got) == {f"default/{winner}"}
    assert got[f"default/{winner}"].flavors == {"cpu": "on-demand"}
    waiting(policy, loser_cq)


def test_hierarchical_nominal_first_prefers_non_borrowing_subtree() -> None:
    """Restates pkg/scheduler/scheduler_test.go:
    TestSchedule 'with fair sharing: hierarchical nominal-first prefers non-borrowing subtree':
    Cohort-A (10) would not borrow with wl-a, Cohort-B (5, using 10) would with wl-b: wl-a wins at the root."""
    policy = fair_policy(cohort("root"), cohort("cohort-a", "root", [("on-demand", [("10", None, None)])]),
                         cohort("cohort-b", "root"), _od("cq-a", "cohort-a", "0"), _od("cq-b", "cohort-b", "5"),
                         _od("cq-c", "cohort-b", "0"), flavors=("on-demand",))
    _nominal_first_hierarchy(policy, [wl("c0", "cq-c", req(cpu=10))],
                             [wl("wl-a", "cq-a", req(cpu=5)), wl("wl-b", "cq-b", req(cpu=5))], "wl-a", "cq-b")


def test_hierarchical_nominal_first_deeper_nesting() -> None:
    """Restates pkg/scheduler/scheduler_test.go:
    TestSchedule 'with fair sharing: hierarchical nominal-first with deeper nesting': as above with
    the 10 CPUs in SUB-A under Cohort-A."""
    policy = fair_policy(cohort("root"), cohort("cohort-a", "root"),
                         cohort("sub-a", "cohort-a", [("on-demand", [("10", None, None)])]), cohort("cohort-b", "root"),
                         _od("cq-a", "sub-a", "0"), _od("cq-b", "cohort-b", "5"), _od("cq-c", "cohort-b", "0"),
                         flavors=("on-demand",))
    _nominal_first_hierarchy(policy, [wl("c0", "cq-c", req(cpu=10))],
                             [wl("wl-a", "cq-a", req(cpu=5)), wl("wl-b", "cq-b", req(cpu=5))], "wl-a", "cq-b")


def test_hierarchical_nominal_first_mixed_quotas() -> None:
    """Restates pkg/scheduler/scheduler_test.go:
    TestSchedule 'with fair sharing: hierarchical nominal-first with mixed CQ and cohort quotas':
    Cohort-A (18, using 6) stays within its quota with wl-a1 (7), Cohort-B (18, using 20) borrows more with wl-b."""
    policy = fair_policy(cohort("root"), cohort("cohort-a", "root", [("on-demand", [("10", None, None)])]),
                         cohort("cohort-b", "root", [("on-demand", [("10", None, None)])]),
                         _od("cq-a1", "cohort-a", "5"), _od("cq-a2", "cohort-a", "3"), _od("cq-b", "cohort-b", "5"),
                         _od("cq-c", "cohort-b", "3"), flavors=("on-demand",))
    _nominal_first_hierarchy(policy, [wl("c-admitted", "cq-c", req(cpu=20)), wl("a2-admitted", "cq-a2", req(cpu=6))],
                             [wl("wl-a1", "cq-a1", req(cpu=7)), wl("wl-b", "cq-b", req(cpu=4))], "wl-a1", "cq-b")


def test_hierarchical_nominal_first_per_flavor() -> None:
    """Restates pkg/scheduler/scheduler_test.go:
    TestSchedule 'with fair sharing: hierarchical nominal-first per-flavor ignores cross-flavor
    borrowing': Cohort-A borrows spot but not on-demand, which both pending workloads ask for; Cohort-B borrows
    on-demand: wl-a goes first and wl-b no longer fits."""
    policy = fair_policy(
        cohort("root"), cohort("cohort-a", "root", [("on-demand", [("10", None, None)])]),
        cohort("cohort-b", "root", [("spot", [("10", None, None)])]),
        cq("cq-a", "cohort-a", [("on-demand", [("0", None, None)]), ("spot", [("0", None, None)])]),
        cq("cq-b", "cohort-b", [("on-demand", [("5", None, None)]), ("spot", [("0", None, None)])]),
        flavors=("on-demand", "spot"))
    clock = Clock()
    # a filler holds all on-demand while spot-admitted comes, so that it lands on spot
    admit(policy, clock, wl("filler", "cq-a", req(cpu=15)), wl("spot-admitted", "cq-a", req(cpu=5)))
    policy.finished("default/filler", clock.tick())
    admit(policy, clock, wl("od-admitted", "cq-b", req(cpu=8)))
    assert usage_snapshot(policy)["cq-a"] == {SPOT: 5000}
    assert usage_snapshot(policy)["cq-b"] == {OD: 8000}
    got = admitted(_one_pass(policy, clock, wl("wl-a", "cq-a", req(cpu=4)), wl("wl-b", "cq-b", req(cpu=4))))
    assert set(got) == {"default/wl-a"}
    assert got["default/wl-a"].flavors == {"cpu": "on-demand"}
    waiting(policy, "cq-b")


def test_hierarchical_tournament_winner() -> None:
    """Restates pkg/scheduler/scheduler_test.go:
    TestSchedule 'hierarchical fair sharing schedule workload which wins tournament': A (200) over B
    {d, e} and C {f, g}; d1 beats e1 inside B (d 80 < e 81), then B (100) beats C (101): d1 is admitted, the rest
    no longer fit."""
    policy = fair_policy(cohort("a", flavors=[("on-demand", [("200", None, None)])]), cohort("b", "a"),
                         cohort("c", "a"), _od("d", "b", "0"), _od("e", "b", "0"), _od("f", "c", "0"),
                         _od("g", "c", "0"), flavors=("on-demand",))
    clock = Clock()
    admit(policy, clock, wl("g0", "g", req(cpu=100)), wl("e0", "e", req(cpu=20)), wl("d0", "d", req(cpu=10)))
    got = admitted(_one_pass(policy, clock, wl("d1", "d", req(cpu=70)), wl("e1", "e", req(cpu=61)),
                             wl("f1", "f", req(cpu=1)), wl("g1", "g", req(cpu=1))))
    assert set(got) == {"default/d1"}
    for name in "efg":
        waiting(policy, name)


def _two_borrowers(weight: str | None) -> KueueAdmission:
    preemption = {"reclaimWithinCohort": "Any", "withinClusterQueue": "Never"}
    return fair_policy(cohort("a", flavors=[("on-demand", [("8", None, None)])]),
                       cq("b", "a", [("on-demand", [("0", None, None)])], weight=weight, preemption=preemption),
                       cq("c", "a", [("on-demand", [("0", None, None)])], weight=weight, preemption=preemption),
                       flavors=("on-demand",))


@pytest.mark.parametrize("weight", [
    pytest.param("0", id=f"{SCHEDULER}::TestSchedule::fair sharing two queues with weight 0 schedules workload "
                         "which borrows less"),
    pytest.param("123456789", id=f"{SCHEDULER}::TestSchedule::fair sharing two queues with high weight schedules "
                                 "workload which borrows less"),
])
def test_queue_borrowing_less_goes_first(weight: str) -> None:
    """Restates pkg/scheduler/scheduler_test.go:
    TestSchedule 'fair sharing two queues with weight 0 / with high weight schedules workload which
    borrows less': b already borrows 4 of A's 8; c1 (c would borrow 4) goes before b1 (b would borrow 8) despite
    b1's priority 9001; b1 then no longer fits."""
    policy = _two_borrowers(weight)
    clock = Clock()
    admit(policy, clock, wl("b0", "b", req(cpu=4)))
    results = _one_pass(policy, clock, wl("b1", "b", req(cpu=4), priority=9001), wl("c1", "c", req(cpu=4)))
    assert set(admitted(results)) == {"default/c1"}
    assert evicted(results) == {}
    waiting(policy, "b")


def test_singleton_cqs_and_cq_without_cohort() -> None:
    """Restates pkg/scheduler/scheduler_test.go:
    TestSchedule 'fair sharing schedule singleton cqs and cq without cohort': a (capacity from cohort
    A), b (its own capacity, alone in cohort B) and c (no cohort) each admit their workload in one pass."""
    policy = fair_policy(cohort("a-cohort", flavors=[("on-demand", [("10", None, None)])]), cohort("b-cohort"),
                         _od("a", "a-cohort", "0"), _od("b", "b-cohort", "10"), _od("c", "", "10"),
                         flavors=("on-demand",))
    clock = Clock()
    got = admitted(_one_pass(policy, clock, wl("a1", "a", req(cpu=10)), wl("b1", "b", req(cpu=10)),
                             wl("c1", "c", req(cpu=10))))
    assert set(got) == {"default/a1", "default/b1", "default/c1"}
    assert all(a.flavors == {"cpu": "on-demand"} for a in got.values())


@pytest.mark.parametrize(("b1", "c1"), [
    pytest.param((99, 0.0), (101, 0.0), id=f"{SCHEDULER}::TestSchedule::fair sharing schedule highest priority first"),
    pytest.param((101, 1.0), (101, 0.0),
                 id=f"{SCHEDULER}::TestSchedule::fair sharing schedule earliest timestamp first"),
])
def test_tie_on_share_broken_by_priority_then_creation(b1: tuple[int, float], c1: tuple[int, float]) -> None:
    """Restates pkg/scheduler/scheduler_test.go:
    TestSchedule 'fair sharing schedule highest priority first' (c1 101 over b1 99) and 'fair sharing
    schedule earliest timestamp first' (both 101, c1 a second older): equal shares, c1 is admitted, b1 waits."""
    policy = fair_policy(cohort("a", flavors=[("on-demand", [("10", None, None)])]), cohort("b-cohort"),
                         _od("b", "a", "0"), _od("c", "a", "0"), flavors=("on-demand",))
    clock = Clock()
    t = clock.now + 1
    results = _one_pass(policy, clock, wl("b1", "b", req(cpu=10), priority=b1[0], created=t + b1[1]),
                        wl("c1", "c", req(cpu=10), priority=c1[0], created=t + c1[1]))
    assert set(admitted(results)) == {"default/c1"}
    waiting(policy, "b")


def test_lowest_share_after_admission() -> None:
    """Restates pkg/scheduler/scheduler_test.go:
    TestSchedule 'fair sharing schedule workload with lowest drf after admission': A (100) with b
    using 10; b1 (50, b would use 60) goes before c1 (75); c1 no longer fits."""
    policy = fair_policy(cohort("a", flavors=[("on-demand", [("100", None, None)])]), _od("b", "a", "0"),
                         _od("c", "a", "0"), flavors=("on-demand",))
    clock = Clock()
    admit(policy, clock, wl("b0", "b", req(cpu=10)))
    got = admitted(_one_pass(policy, clock, wl("b1", "b", req(cpu=50)), wl("c1", "c", req(cpu=75))))
    assert set(got) == {"default/b1"}
    waiting(policy, "c")


def test_not_enough_resources() -> None:
    """Restates pkg/scheduler/scheduler_test.go:
    TestSchedule 'not enough resources with fair sharing enabled': sales (StrictFIFO, 50 CPUs, no
    cohort) cannot take 100 CPUs; the workload stays at the head of its queue. (Upstream also gives sales a
    borrowingLimit of 0, which the webhook refuses without a cohort and which Phalanx refuses too; left out, it
    changes nothing without a cohort.)"""
    policy = fair_policy(cq("sales", "", [("default", [("50", None, None)])], queueingStrategy="StrictFIFO"))
    clock = Clock()
    results = _one_pass(policy, clock, wl("new", "sales", req(cpu=100)))
    assert results == []
    waiting(policy, "sales")


def _other_cohort(extra: dict[str, int], bank: str, preemption: dict[str, str]) -> KueueAdmission:
    """other-alpha, other-beta, other-gamma (0 or 2 CPUs, plus their own resource) and resource-bank, in `other`."""
    docs: list[Doc] = []
    for name in ("alpha", "beta", "gamma"):
        covered = ("cpu", f"{name}-resource") if extra else ("cpu",)
        amounts: list[Quota] = [(extra.get("cpu", 2), None, None)]
        if extra:
            amounts.append((extra["own"], None, None))
        docs.append(cq(f"other-{name}", "other", [("default", amounts)], covered=covered, preemption=preemption))
    docs.append(cpu("resource-bank", bank, "other"))
    return fair_policy(*docs, namespaces=("eng-alpha", "eng-beta", "eng-gamma"))


def test_multiple_preemptions_within_cq() -> None:
    """Restates pkg/scheduler/scheduler_test.go:
    TestSchedule 'multiple preemptions within cq when fair sharing': each of three ClusterQueues (2
    CPUs each, 3 more in resource-bank) runs a 3-CPU workload; a priority-100 preemptor in each evicts its own
    queue's workload (InClusterQueue) in the same pass and waits.

    Upstream's ClusterQueues set only withinClusterQueue, leaving reclaimWithinCohort the empty string (the test
    builds them without the CRD's defaulting, which would make it Never): the flavor assigner then lets a
    borrowing preemptor look for victims (canPreemptWhileBorrowing: fair sharing and reclaimWithinCohort != Never)
    while findCandidates matches none in other queues (an empty policy satisfies nothing). Phalanx reads an absent
    reclaimWithinCohort as Never, as the API server stores it, and then, as Kueue would on a real cluster, finds
    no room for a preemptor that must borrow. Restated with reclaimWithinCohort LowerPriority, which lets the
    preemptor look for victims; the other queues' workloads are then candidates too, but each preemptor's own
    queue has the highest share, so its own workload goes first and suffices, as upstream expects."""
    policy = _other_cohort({}, "3", {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "LowerPriority"})
    clock = Clock()
    admit(policy, clock, *(wl(victim, f"other-{n}", req(cpu=3), namespace=f"eng-{n}")
                           for victim, n in (("c1", "gamma"), ("b1", "beta"), ("a1", "alpha"))))
    results = _one_pass(policy, clock, *(wl("preemptor", f"other-{n}", req(cpu=3), priority=100,
                                            namespace=f"eng-{n}") for n in ("alpha", "beta", "gamma")))
    assert evicted(results) == {"eng-alpha/a1": IN_CQ, "eng-beta/b1": IN_CQ, "eng-gamma/c1": IN_CQ}
    assert {r.key: r.by for r in results if isinstance(r, EvictWorkload)} == {
        "eng-alpha/a1": "eng-alpha/preemptor", "eng-beta/b1": "eng-beta/preemptor",
        "eng-gamma/c1": "eng-gamma/preemptor"}
    assert admitted(results) == {}
    for n in ("alpha", "beta", "gamma"):
        assert policy.pending_reason(f"eng-{n}/preemptor") == "waiting for preempted workloads to be evicted"


def test_multiple_preemptions_skip_overlapping_targets() -> None:
    """Restates pkg/scheduler/scheduler_test.go:
    TestSchedule 'multiple preemptions skip overlapping preemption targets': other-gamma's c1 holds
    all 9 CPUs of resource-bank; alpha's preemptor (priority 100) evicts a1 (InClusterQueue, for alpha-resource) and
    c1 (InCohortFairSharing, for cpu); beta's pretending-preemptor (99) would also need c1 and is skipped.
    (Upstream's c1 also requests a gamma-resource its admission does not hold; restated with its admitted cpu.)"""
    policy = _other_cohort({"cpu": 0, "own": 1}, "9",
                           {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"})
    clock = Clock()
    admit(policy, clock, wl("c1", "other-gamma", req(cpu=9), namespace="eng-gamma"),
          wl("b1", "other-beta", {"beta-resource": 1}, namespace="eng-beta"),
          wl("a1", "other-alpha", {"alpha-resource": 1}, namespace="eng-alpha"))
    results = _one_pass(
        policy, clock,
        wl("preemptor", "other-alpha", req(cpu=3) | {"alpha-resource": 1}, priority=100, namespace="eng-alpha"),
        wl("pretending-preemptor", "other-beta", req(cpu=3) | {"beta-resource": 1}, priority=99,
           namespace="eng-beta"))
    assert evicted(results) == {"eng-alpha/a1": IN_CQ, "eng-gamma/c1": FAIR}
    assert all(r.by == "eng-alpha/preemptor" for r in results if isinstance(r, EvictWorkload))
    assert admitted(results) == {}
    assert policy.pending_reason("eng-beta/pretending-preemptor") == \
        "overlapping preemption targets with another workload"


def test_prefer_reclamation_over_priority_preemption() -> None:
    """Restates pkg/scheduler/scheduler_test.go:
    TestSchedule 'with fair sharing: prefer reclamation over cq priority based preemption; with
    preemption while borrowing': the preemptor (8 GPUs) could preempt a1 in its own queue on on-demand, or
    reclaim from b1 borrowing spot; spot is the better assignment: b1 is evicted InCohortFairSharing."""
    policy = fair_policy(
        cq("other-alpha", "other", [("on-demand", [(7, None, None)]), ("spot", [(7, None, None)])], covered=("gpu",),
           preemption={"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "LowerPriority"}),
        cq("other-beta", "other", [("on-demand", [(3, None, None)]), ("spot", [(3, None, None)])], covered=("gpu",)),
        flavors=("on-demand", "spot"))
    clock = Clock()
    # a filler holds all on-demand while b1 comes, so that b1 lands on spot
    admit(policy, clock, wl("filler", "other-alpha", {"gpu": 10}), wl("b1", "other-beta", {"gpu": 5}, priority=50))
    policy.finished("default/filler", clock.tick())
    admit(policy, clock, wl("a1", "other-alpha", {"gpu": 5}, priority=50))
    assert usage_snapshot(policy)["other-alpha"] == {("on-demand", "gpu"): 5}
    assert usage_snapshot(policy)["other-beta"] == {("spot", "gpu"): 5}
    results = _one_pass(policy, clock, wl("preemptor", "other-alpha", {"gpu": 8}, priority=100))
    assert evicted(results) == {"default/b1": FAIR}
    assert admitted(results) == {}
    waiting(policy, "other-alpha")


def test_prefer_flavor_with_most_local_capacity() -> None:
    """Restates pkg/scheduler/scheduler_test.go:
    TestSchedule 'prefer flavor with most local capacity': queue1 (3 on-demand, 3 spot GPUs; TryNextFlavor)
    in child-cohort (5, 7) under root-cohort (2, 0); a1 uses 8 on-demand, a2 3 spot; a3 (1) borrows less on spot
    (from child-cohort) than on on-demand (from root-cohort), and is admitted on spot."""
    policy = fair_policy(
        cohort("root-cohort", flavors=[("on-demand", [(2, None, None)]), ("spot", [(0, None, None)])],
               covered=("gpu",)),
        cohort("child-cohort", "root-cohort", [("on-demand", [(5, None, None)]), ("spot", [(7, None, None)])],
               covered=("gpu",)),
        cq("queue1", "child-cohort", [("on-demand", [(3, None, None)]), ("spot", [(3, None, None)])], covered=("gpu",),
           preemption={"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
           flavorFungibility={"whenCanPreempt": "TryNextFlavor", "whenCanBorrow": "TryNextFlavor"}),
        flavors=("on-demand", "spot"))
    clock = Clock()
    admit(policy, clock, wl("a1", "queue1", {"gpu": 8}), wl("a2", "queue1", {"gpu": 3}))
    assert usage_snapshot(policy)["queue1"] == {("on-demand", "gpu"): 8, ("spot", "gpu"): 3}
    got = admitted(_one_pass(policy, clock, wl("a3", "queue1", {"gpu": 1})))
    assert set(got) == {"default/a3"}
    assert got["default/a3"].flavors == {"gpu": "spot"}


def test_preemption_over_borrowing() -> None:
    """Restates pkg/scheduler/scheduler_test.go:
    TestSchedule 'PreemptionOverBorrowing with fair sharing: preempt in first flavor instead of borrowing
    in second': fs-pob-cq prefers preempting fs-low-pob (priority -1) on on-demand to borrowing spot from the
    lender; the preemptor waits for the eviction."""
    policy = fair_policy(
        cq("fs-pob-cq", "fs-pob-cohort", [("on-demand", [("5", "0", None)]), ("spot", [("0", "5", None)])], weight="1",
           preemption={"withinClusterQueue": "LowerPriority"},
           flavorFungibility={"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor",
                              "preference": "PreemptionOverBorrowing"}),
        cq("fs-pob-lender", "fs-pob-cohort", [("on-demand", [("0", None, None)]), ("spot", [("5", None, None)])],
           weight="1"),
        flavors=("on-demand", "spot"))
    clock = Clock()
    admit(policy, clock, wl("fs-low-pob", "fs-pob-cq", req(cpu=5), priority=-1))
    assert usage_snapshot(policy)["fs-pob-cq"] == {OD: 5000}
    results = _one_pass(policy, clock, wl("fs-high-pob", "fs-pob-cq", req(cpu=5)))
    assert evicted(results) == {"default/fs-low-pob": IN_CQ}
    assert admitted(results) == {}
    assert policy.pending_reason("default/fs-high-pob") == "waiting for preempted workloads to be evicted"

