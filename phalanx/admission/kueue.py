"""Kueue-compatible admission: workloads submitted to LocalQueues wait in their ClusterQueue until flavor
assignment finds quota for every pod set, as Kueue's scheduler decides it (pkg/scheduler/scheduler.go,
flavorassigner/, preemption/). Restated, not ported:

- Routing: namespace + LocalQueue name → the LocalQueue's ClusterQueue; a missing LocalQueue or
  ClusterQueue, a namespace the ClusterQueue's namespaceSelector does not select (nil selects none), a
  stopped queue (stopPolicy Hold or HoldAndDrain), a ClusterQueue naming an undefined ResourceFlavor or in a
  cohort tree with a parent cycle: the workload stays pending with that reason.
- Queue order inside a ClusterQueue: higher priority first, then earlier creation. StrictFIFO: the head
  blocks the queue until it is admitted. BestEffortFIFO: a head that cannot be admitted is set aside
  (inadmissible) and the next one is tried; the set-aside ones are requeued when quota frees in the
  cohort tree (a workload finishes or is evicted).
- A cycle repeats Kueue's scheduling pass until nothing changes: each pass takes every ClusterQueue's head,
  assigns flavors, orders the entries (those not needing to borrow first — lower borrowing level first —
  then priority, then FIFO: makeClassicalIterator) and admits those that still fit.
- Flavor assignment (findFlavorForPodSets): per pod set and resource group, the group's flavors in order;
  a flavor must tolerate-match (the flavor's NoSchedule/NoExecute nodeTaints tolerated by the pods' or the
  flavor's tolerations) and its nodeLabels must satisfy the pods' nodeSelector on the keys the flavor
  names. Then per resource: Fit (within what is available now), Preempt (possible with preemption) or
  NoFit. flavorFungibility decides whether to stop at a flavor that needs borrowing (whenCanBorrow
  MayStopSearch, the default) or preemption (whenCanPreempt TryNextFlavor, the default: go on looking
  for one that fits).
- Partial admission (PartialAdmission, on by default): a workload with a pod set whose minCount is below its
  count (a Job's `kueue.x-k8s.io/job-min-parallelism`) that neither fits nor can preempt whole is admitted with
  the largest counts PodSetReducer's binary search finds that do (`_reduced`); the Job then runs that many.
- Preemption (classical, pkg/scheduler/preemption): candidates in the same ClusterQueue by
  withinClusterQueue, in other ClusterQueues of the cohort tree that are over their nominal quota by
  reclaimWithinCohort, and borrowWithinCohort for reclaiming while the preemptor borrows; candidates ordered
  other queues first, lower priority first, most recently admitted first; removed one by one until the
  preemptor fits, then those not needed are put back (last to first). Victims are evicted (an EvictWorkload with
  reason InClusterQueue, InCohortReclamation or InCohortReclaimWhileBorrowing) and requeued by this policy;
  the preemptor is admitted in a later pass of the same cycle (its quota is held for it meanwhile). A
  workload evicted in a cycle waits again from the next cycle on (Kueue waits for the eviction to finish);
  in a StrictFIFO queue it blocks the workloads ordered behind it meanwhile (Kueue requeues it before its
  preemptor is admitted).
- Fair sharing, when Kueue's Configuration turns it on (`config`): the order of a pass's entries is the
  tournament by dominant resource share and preemption is fairPreemptions (phalanx.admission.kueue_fair); a
  ClusterQueue may then try preemption while borrowing whenever reclaimWithinCohort allows it.

- Admission fair sharing (`config.admission_fair_sharing`, ClusterQueues with usage-based admissionScope): their
  queues order by LocalQueue usage first (phalanx.admission.kueue_afs), kept sorted again whenever a LocalQueue's
  usage changes; preemption candidates of one such ClusterQueue in different LocalQueues go busier first.

Not modelled (named by `not_modelled()` when the inputs use them): waitForPodsReady (from the Configuration),
admission checks, topology-aware scheduling, concurrent admission. Never
modelled: the capacity Kueue holds back for a preemptor without candidates
(reserveCapacityForUnreclaimablePreempt), evicted workloads being tried first as preemption victims, required
node affinity of the pods (PodSet carries a nodeSelector only), the PrioritizePreemptorWorkloads gate, requeue
backoff.
"""

from __future__ import annotations

import bisect
import functools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from phalanx.admission.base import Admit, EvictWorkload, PodSet, QueuedWorkload
from phalanx.admission.kueue_afs import AdmissionUsage
from phalanx.admission.kueue_config import KueueConfig
from phalanx.admission.kueue_fair import DRS, IN_COHORT_FAIR_SHARING, fair_order, fair_targets, share
from phalanx.admission.kueue_objects import (
    PRIORITY_CLASS_LABEL,
    ClusterQueue,
    Cohort,
    FlavorFungibility,
    LocalQueue,
    ResourceFlavor,
    ResourceGroup,
    WorkloadPriorityClass,
    parse_kueue_object,
)
from phalanx.admission.partial import search_counts
from phalanx.admission.quota import (
    FlavorResource,
    Limits,
    QuotaNode,
    QuotaTree,
    available,
    borrowing,
    borrowing_level,
    borrowing_with,
    is_within_nominal,
    path_to_root,
    potential_available,
    quantities_fit_in_quota,
    subtree_cluster_queues,
)
from phalanx.api.fields import Manifest, fail
from phalanx.api.objects import Source
from phalanx.api.tolerations import first_untolerated
from phalanx.errors import InputError

IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
_REASON_TEXT = {
    IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    IN_COHORT_RECLAMATION: "reclamation within the cohort",
    IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
    IN_COHORT_FAIR_SHARING: "Fair Sharing within the cohort",
}
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

# Kueue's granular modes, worst to best (flavorassigner preemptionMode): a larger value is better.
NO_FIT, NO_CANDIDATES, PREEMPT, RECLAIM, FIT = range(5)
Mode = int
_MAX_PASSES = 100_000  # a guard only: each pass that changes something admits, evicts or sets aside


@dataclass(frozen=True, slots=True)
class _Granular:
    mode: Mode
    borrow: int  # 0: within the ClusterQueue's quota; higher: quota from a more distant cohort


_WORST = _Granular(NO_FIT, 1 << 62)
_BEST = _Granular(FIT, 0)


def _preferred(a: _Granular, b: _Granular, fungibility: FlavorFungibility) -> bool:
    """isPreferred: is a better than b? NoFit is worst, then a mode without preemption candidates; the rest by
    preference (BorrowingOverPreemption by default: mode first, then borrowing level)."""
    if a.mode == NO_FIT:
        return False
    if b.mode == NO_FIT:
        return True
    if (a.mode == NO_CANDIDATES) != (b.mode == NO_CANDIDATES):
        return a.mode != NO_CANDIDATES
    if fungibility.preference == "PreemptionOverBorrowing":
        if a.borrow != b.borrow:
            return a.borrow < b.borrow
        return a.mode > b.mode
    if a.mode != b.mode:
        return a.mode > b.mode
    return a.borrow < b.borrow


def _try_next_flavor(g: _Granular, fungibility: FlavorFungibility) -> bool:
    """shouldTryNextFlavor."""
    if g.mode in (NO_FIT, NO_CANDIDATES):
        return True
    if g.mode in (PREEMPT, RECLAIM) and fungibility.when_can_preempt == "TryNextFlavor":
        return True
    return g.borrow > 0 and fungibility.when_can_borrow == "TryNextFlavor"


@dataclass(slots=True)
class _Assignment:
    mode: Mode  # the worst over pod sets: FIT, PREEMPT (including no candidates, reclaim) or NO_FIT
    borrow: int
    usage: dict[FlavorResource, int]
    flavors: dict[str, dict[str, str]]  # pod set -> resource -> flavor
    need_preemption: set[FlavorResource]
    reason: str = ""
    counts: dict[str, int] | None = None  # pod set -> count, when partial admission reduced it


@dataclass(slots=True)
class _Pending:
    wl: QueuedWorkload
    local_queue: str  # namespace/name
    since: float  # when it (last) entered the queue: waits are measured from here
    aside: int = -1  # the requeue epoch of its cohort tree in which it was set aside (inadmissible while current)
    reason: str = ""
    order: tuple[int, float, int] | None = None  # its queue order, once computed
    seq: int = 0  # its submission's number: the order among workloads created at one instant
    listed: bool = False  # in its ClusterQueue's queue list
    shape: int | None = None  # what a nomination reads of it (KueueAdmission._shape, numbered), once computed


@dataclass(slots=True)
class _Admitted:
    wl: QueuedWorkload
    cq: str
    local_queue: str
    usage: dict[FlavorResource, int]
    at: float
    sequence: int  # admission order, to break ties of `at`
    seq: int = 0  # its submission's number (its queue order when evicted and requeued)


@dataclass(slots=True)
class _Counters:
    admitted: int = 0
    preempted: int = 0  # its workloads evicted InClusterQueue
    reclaimed: int = 0  # its workloads evicted by reclamation from another ClusterQueue
    preemptions: int = 0  # evictions it caused
    borrowed_admissions: int = 0
    wait_total: float = 0.0


@dataclass(slots=True)
class _Candidate:
    adm: _Admitted
    lca: QuotaNode | None
    variant: Literal["WithinCQ", "HierarchicalReclaim", "ReclaimWithoutBorrowing", "ReclaimWhileBorrowing",
                     "FairSharing"]

    @property
    def reason(self) -> str:
        if self.variant == "WithinCQ":
            return IN_CLUSTER_QUEUE
        if self.variant == "FairSharing":
            return IN_COHORT_FAIR_SHARING
        if self.variant == "ReclaimWhileBorrowing":
            return IN_COHORT_RECLAIM_WHILE_BORROWING
        return IN_COHORT_RECLAMATION


# a queue walked ahead of the passes
# (ClusterQueue, its queue list, its pending entries, the next position, its tree's version, StrictFIFO)
_Walk = list[Any]  # ClusterQueue, queue, pending, position, tree version, requeue epoch, memos, (entry, reason, next)
_WALK_REACHED, _WALK_END = -1, -2
# a nomination remembered by shape: the tree version it saw, the assignment, the preemption targets, and the
# reason the head is set aside (None when it is not)
_Memo = tuple[int, _Assignment, list[_Candidate], str | None]


@dataclass(frozen=True, slots=True)
class _FairHead:
    node: QuotaNode
    usage: dict[FlavorResource, int]
    priority: int
    order: tuple[float, str]
    entry: tuple[str, _Pending, _Assignment, list[_Candidate]]


def _rounded_share(drs: DRS) -> int | None:
    """status.fairSharing.weightedShare: the share rounded up; None for a weight-0 queue that borrows (Kueue
    writes MaxInt64)."""
    if drs.zero_weight_borrows:
        return None
    return math.ceil(drs.precise())


def _quota_map(groups: Iterable[ResourceGroup]) -> dict[FlavorResource, Limits]:
    return {(fq.name, rq.name): Limits(rq.nominal, rq.borrowing_limit, rq.lending_limit)
            for group in groups for fq in group.flavors for rq in fq.resources}


def _queue_order(p: _Pending) -> tuple[int, float, int]:
    """Priority, then creation, then (created at one instant) the order of creation. Kueue breaks a tie of
    creationTimestamp (whole seconds) by UID, at random: the oracle creates queued Jobs a second apart."""
    return (-p.wl.priority, p.wl.created, p.seq)


class KueueAdmission:
    """Kueue's admission over the given objects (see the module docstring for what is modelled).

    Evicted workloads are requeued by the policy itself, as Kueue requeues a preempted Workload: the caller
    deletes their pods but calls neither `finished()` (that would drop the requeued workload) nor `submit()`
    for them (harmless: a pending workload submitted again replaces its queued copy).
    """

    def __init__(self, flavors: Iterable[ResourceFlavor] = (), cluster_queues: Iterable[ClusterQueue] = (),
                 cohorts: Iterable[Cohort] = (), local_queues: Iterable[LocalQueue] = (),
                 priority_classes: Iterable[WorkloadPriorityClass] = (),
                 namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
                 passes_per_cycle: int | None = None, config: KueueConfig | None = None) -> None:
        """`passes_per_cycle`: Kueue scheduling passes per `cycle()`; None repeats them until nothing changes
        (every workload that can be admitted now is), 1 is exactly one pass of Kueue's scheduler. `config`:
        Kueue's Configuration (fair sharing and its preemption strategies)."""
        self.passes_per_cycle = passes_per_cycle
        self.config = config or KueueConfig()
        self.fair_sharing = self.config.fair_sharing
        self.flavors = {f.name: f for f in flavors}
        self.cluster_queues = {cq.name: cq for cq in cluster_queues}
        self.cohorts = {c.name: c for c in cohorts}
        self.local_queues = {lq.key: lq for lq in local_queues}
        self.priority_classes = {pc.name: pc for pc in priority_classes}
        self.namespace_labels = dict(namespace_labels or {})
        self.tree = QuotaTree()
        for cohort in self.cohorts.values():
            self.tree.add_cohort(cohort.name, _quota_map(cohort.resource_groups), cohort.parent)
        for cq in self.cluster_queues.values():
            self.tree.add_cluster_queue(cq.name, _quota_map(cq.resource_groups), cq.cohort)
        self.tree.build()
        for cq in self.cluster_queues.values():
            self.tree.cqs[cq.name].weight = float(cq.fair_weight)
        for cohort in self.cohorts.values():
            self.tree.cohorts[cohort.name].weight = float(cohort.fair_weight)
        # admission fair sharing: the ClusterQueues that order by LocalQueue usage, and that usage
        afs_config = self.config.admission_fair_sharing
        self._afs_cqs = {cq.name for cq in self.cluster_queues.values()
                         if afs_config is not None and cq.admission_mode == "UsageBasedAdmissionFairSharing"}
        self.afs = None if afs_config is None else AdmissionUsage(afs_config, {
            lq.key: float(lq.fair_weight) for lq in self.local_queues.values() if lq.cluster_queue in self._afs_cqs})
        self._afs_dirty: set[str] = set()
        self._pending: dict[str, dict[str, _Pending]] = {name: {} for name in self.cluster_queues}
        # per ClusterQueue, the waiting entries in queue order (a sorted list): entries admitted or replaced
        # are dropped lazily when a head is looked for; set-aside entries stay in place, skipped until requeued.
        # Everything before `_front` is set aside (or dropped): the head is looked for from there.
        self._queues: dict[str, list[tuple[tuple[float, ...], int, _Pending]]] = {
            name: [] for name in self.cluster_queues}
        self._front: dict[str, int] = {name: 0 for name in self.cluster_queues}
        self._deferred: list[tuple[str, _Pending]] = []  # evicted this cycle: back in the queue next cycle
        self._pushes = 0
        self._submitted = 0
        self._parked: dict[str, _Pending] = {}  # pending outside any ClusterQueue's queue, with the reason
        self._admitted: dict[str, _Admitted] = {}
        self._admitted_in: dict[str, dict[str, _Admitted]] = {name: {} for name in self.cluster_queues}
        self._counters = {name: _Counters() for name in self.cluster_queues}
        self._lq_counters: dict[str, _Counters] = {}
        # a version per cohort tree (root node), bumped on every change of its quota usage or admitted
        # workloads: a nomination depends only on its own ClusterQueue's cohort tree
        self._root_of: dict[str, QuotaNode] = {name: self.tree.root_of(node) for name, node in self.tree.cqs.items()}
        self._versions: dict[QuotaNode, int] = {node: 0 for node in self._root_of.values()}
        # the last nomination per ClusterQueue and the tree version it saw: reused while the tree is unchanged
        self._nominated: dict[str, tuple[_Pending, int, _Assignment, list[_Candidate]]] = {}
        # per cohort tree, its requeue epoch: an entry set aside in the current epoch is inadmissible until the
        # tree's set-aside workloads are requeued (the epoch moves on); and its ClusterQueues
        self._epochs: dict[QuotaNode, int] = {node: 0 for node in self._versions}
        self._cqs_of: dict[QuotaNode, list[str]] = {node: [] for node in self._versions}
        for name, root in self._root_of.items():
            self._cqs_of[root].append(name)
        self._requeue_due: set[QuotaNode] = set()  # cohort trees whose set-aside entries requeue after the passes
        # preemption searches of the current tree version: (cq, requests, frs) -> (preemptor, version, targets)
        self._targets_memo: dict[tuple[str, frozenset[tuple[FlavorResource, int]], frozenset[FlavorResource]],
                                 tuple[QueuedWorkload, int, list[_Candidate]]] = {}
        # nominations by ClusterQueue and workload shape (what flavor assignment and preemption read of a
        # workload), with the tree version they saw; and each workload's shape
        self._by_shape: dict[str, dict[int, _Memo]] = {name: {} for name in self.cluster_queues}
        self._shape_ids: dict[tuple[Any, ...], int] = {}
        self._shapes: dict[str, tuple[QueuedWorkload, tuple[Any, ...]]] = {}
        self._sequence = 0

    # --- priorities -----------------------------------------------------------------------------------------

    def workload_priority(self, priority_class: str, priority: int) -> int:
        return self.resolve_priority({PRIORITY_CLASS_LABEL: priority_class}, priority)

    def resolve_priority(self, labels: Mapping[str, str], pod_priority: int) -> int:
        """A workload's priority: its WorkloadPriorityClass's value when it names one with the label
        `kueue.x-k8s.io/priority-class`, else its pods' priority. Naming a class that does not exist is
        an error (Kueue does not create the Workload)."""
        name = labels.get(PRIORITY_CLASS_LABEL, "")
        if not name:
            return pod_priority
        pc = self.priority_classes.get(name)
        if pc is None:
            raise fail(f"metadata.labels[{PRIORITY_CLASS_LABEL}]", f"WorkloadPriorityClass {name!r} not found")
        return pc.value

    # --- the protocol ---------------------------------------------------------------------------------------

    def submit(self, workload: QueuedWorkload, now: float) -> None:
        """Queue a workload (again, if it was already known: a pending copy is replaced, an admitted one
        gives its quota back first)."""
        key = workload.key
        if key in self._admitted:
            self._release(key, now)
        self._drop_pending(key)
        lq_key = f"{workload.namespace}/{workload.queue}"
        self._submitted += 1
        entry = _Pending(workload, lq_key, now, seq=self._submitted)
        cq_name, reason = self._route(workload)
        if cq_name is None:
            entry.reason = reason
            self._parked[key] = entry
        else:
            self._enqueue(cq_name, entry)
        if self.afs is not None and self.afs.touched(lq_key, now):
            self._afs_changed(lq_key)

    def finished(self, key: str, now: float) -> None:
        self._shapes.pop(key, None)
        if key in self._admitted:
            self._release(key, now)
        else:
            self._drop_pending(key)

    def cycle(self, now: float) -> list[Admit | EvictWorkload]:
        out: list[Admit | EvictWorkload] = []
        if self.afs is not None:
            for lq_key in self.afs.catch_up(now):
                self._afs_changed(lq_key)
        for cq_name, entry in self._deferred:
            self._push(cq_name, entry)
        self._deferred = []
        budget = self.passes_per_cycle or _MAX_PASSES
        while budget > 0:
            budget -= self._skip_set_aside_passes(budget)
            if budget <= 0:
                break
            budget -= 1
            if not self._pass(now, out):
                if not self._requeue_due:
                    break
                for root in self._requeue_due:
                    self._requeue_set_aside(root)
                self._requeue_due.clear()
        return out

    def queue_rows(self) -> list[dict[str, object]]:
        rows: list[dict[str, object]] = []
        for name, cq in self.cluster_queues.items():
            node = self.tree.cqs[name]
            c = self._counters[name]
            pending = self._pending[name].values()
            running = self._admitted_in[name]
            rows.append({
                "kind": "ClusterQueue", "name": name, "cohort": cq.cohort,
                "queueing_strategy": cq.queueing_strategy,
                "admitted": c.admitted, "running": len(running), "pending": len(pending),
                "inadmissible": sum(1 for p in pending if p.aside == self._epochs[self._root_of[name]]),
                "borrowing": any(borrowing(node, fr) for fr in node.usage),
                "borrowed_admissions": c.borrowed_admissions,
                "preempted": c.preempted, "reclaimed": c.reclaimed, "preemptions": c.preemptions,
                "wait_total": c.wait_total, "wait_mean": c.wait_total / c.admitted if c.admitted else 0.0,
                "usage": {f"{f}/{r}": v for (f, r), v in sorted(node.usage.items()) if v},
                "nominal": {f"{f}/{r}": q.nominal for (f, r), q in sorted(node.quotas.items())},
                **({"weighted_share": _rounded_share(share(node))} if self.fair_sharing is not None else {}),
            })
        lq_names = sorted(set(self.local_queues) | set(self._lq_counters)
                          | {p.local_queue for p in self._parked.values()})
        for lq_key in lq_names:
            c = self._lq_counters.get(lq_key, _Counters())
            lq = self.local_queues.get(lq_key)
            waiting = sum(1 for q in self._pending.values() for p in q.values() if p.local_queue == lq_key)
            waiting += sum(1 for p in self._parked.values() if p.local_queue == lq_key)
            rows.append({
                "kind": "LocalQueue", "name": lq_key, "cluster_queue": lq.cluster_queue if lq else "",
                "exists": lq is not None,
                "admitted": c.admitted, "pending": waiting,
                "running": sum(1 for a in self._admitted.values() if a.local_queue == lq_key),
                "preempted": c.preempted + c.reclaimed,
                "wait_total": c.wait_total, "wait_mean": c.wait_total / c.admitted if c.admitted else 0.0,
                **({"afs_consumed": self.afs.consumed(lq_key), "afs_usage": round(self.afs.usage(lq_key), 6)}
                   if self.afs is not None and lq is not None and lq.cluster_queue in self._afs_cqs else {}),
            })
        return rows

    def not_modelled(self) -> list[str]:
        out: list[str] = []
        for cq in self.cluster_queues.values():
            out.extend(f"ClusterQueue {cq.name}: {name} (ignored)" for name in cq.ignored)
        for flavor in self.flavors.values():
            if flavor.topology_name:
                out.append(f"ResourceFlavor {flavor.name}: spec.topologyName (topology-aware scheduling)")
        weighted = [f"ClusterQueue {cq.name}" for cq in self.cluster_queues.values() if cq.fair_weight != 1]
        weighted += [f"Cohort {c.name}" for c in self.cohorts.values() if c.fair_weight != 1]
        if weighted and self.fair_sharing is None:
            out.append(f"fairSharing.weight ({', '.join(weighted)}): ignored, as Kueue ignores it, since no Kueue "
                       "Configuration among the inputs turns fairSharing on; ordering and preemption are the "
                       "classical ones")
        lq_weighted = [f"LocalQueue {lq.key}" for lq in self.local_queues.values()
                       if lq.fair_weight != 1 and lq.cluster_queue not in self._afs_cqs]
        if lq_weighted:
            out.append(f"fairSharing.weight ({', '.join(lq_weighted)}): ignored, as Kueue ignores a LocalQueue's "
                       "weight outside a ClusterQueue with usage-based admission fair sharing")
        scoped = [f"ClusterQueue {cq.name}" for cq in self.cluster_queues.values()
                  if cq.admission_mode == "UsageBasedAdmissionFairSharing" and cq.name not in self._afs_cqs]
        if scoped:
            out.append(f"spec.admissionScope ({', '.join(scoped)}): ignored, as Kueue ignores it, since no Kueue "
                       "Configuration among the inputs sets admissionFairSharing")
        out.extend(f"{self.config.name}: {note}" for note in self.config.not_modelled)
        return out

    def pending_reason(self, key: str) -> str:
        """The Workload's QuotaReserved=False message: why routing parked it, why its ClusterQueue set it aside,
        or that it waits its turn."""
        parked = self._parked.get(key)
        if parked is not None:
            return parked.reason
        for cq_name, pending in self._pending.items():
            entry = pending.get(key)
            if entry is not None:
                return entry.reason or f"waiting for its turn in ClusterQueue {cq_name}"
        return ""

    def object_warnings(self) -> list[str]:
        """What in the objects leaves a queue admitting nothing though each object is valid: a ClusterQueue
        inactive (a missing ResourceFlavor, a cohort cycle), a LocalQueue naming a missing ClusterQueue."""
        out: list[str] = []
        for cq in self.cluster_queues.values():
            reason = self._inactive_reason(cq)
            if reason and cq.stop_policy == "None":
                out.append(reason)
        for lq in self.local_queues.values():
            if lq.cluster_queue not in self.cluster_queues:
                out.append(f"LocalQueue {lq.key}: ClusterQueue {lq.cluster_queue or '(none)'} doesn't exist")
        return out

    # --- routing --------------------------------------------------------------------------------------------

    def _route(self, wl: QueuedWorkload) -> tuple[str | None, str]:
        if not wl.queue:
            return None, "the workload names no LocalQueue"
        lq = self.local_queues.get(f"{wl.namespace}/{wl.queue}")
        if lq is None:
            return None, f"LocalQueue {wl.queue} doesn't exist"
        if lq.stop_policy != "None":
            return None, f"LocalQueue {wl.queue} is stopped ({lq.stop_policy})"
        cq = self.cluster_queues.get(lq.cluster_queue)
        if cq is None:
            return None, f"ClusterQueue {lq.cluster_queue} doesn't exist" if lq.cluster_queue else \
                f"LocalQueue {wl.queue} names no ClusterQueue"
        labels = dict(self.namespace_labels.get(wl.namespace, {}))
        labels.setdefault(NAMESPACE_NAME_LABEL, wl.namespace)
        if cq.namespace_selector is None or not cq.namespace_selector.matches(labels):
            return None, "Workload namespace doesn't match ClusterQueue selector"
        inactive = self._inactive_reason(cq)
        if inactive:
            return None, inactive
        return cq.name, ""

    def _inactive_reason(self, cq: ClusterQueue) -> str:
        """The Workload's QuotaReserved=False message for a ClusterQueue that admits nothing, in Kueue's words
        (workload_controller.go, scheduler.go nominate), with the ClusterQueue's own Active=False reason
        (clusterqueue.go inactiveReason) or the cohort cycle (cache: "cohort has a cycle") after it."""
        if cq.stop_policy != "None":
            return f"ClusterQueue {cq.name} is stopped ({cq.stop_policy})"
        missing = [fq.name for g in cq.resource_groups for fq in g.flavors if fq.name not in self.flavors]
        if missing:
            return (f"ClusterQueue {cq.name} is inactive: FlavorNotFound: Can't admit new workloads: references "
                    f"missing ResourceFlavor(s): {','.join(missing)}.")
        if not self.tree.active(cq.name):
            return f"ClusterQueue {cq.name} is inactive: {self.tree.cycle_reason(cq.name)}"
        return ""

    # --- one scheduling pass --------------------------------------------------------------------------------

    def _enqueue(self, cq_name: str, entry: _Pending) -> None:
        self._pending[cq_name][entry.wl.key] = entry
        self._push(cq_name, entry)

    def _push(self, cq_name: str, entry: _Pending) -> None:
        """Put an entry in its queue (again: a requeued entry never left it, it is only looked at again)."""
        if entry.listed:
            self._front[cq_name] = 0
            return
        self._pushes += 1
        queue = self._queues[cq_name]
        item = (self._key(cq_name, entry), self._pushes, entry)
        at = bisect.bisect_left(queue, item)
        queue.insert(at, item)
        entry.listed = True
        if at < self._front[cq_name]:
            self._front[cq_name] = at

    def _strict_evicted(self) -> dict[str, tuple[float, ...]]:
        """StrictFIFO queues whose workload was evicted this cycle, each to the first such workload's queue key:
        Kueue requeues the victim as it gives its quota back, before its preemptor is admitted, so no workload
        ordered behind it is a head meanwhile."""
        evicted: dict[str, tuple[float, ...]] = {}
        for name, entry in self._deferred:
            if self.cluster_queues[name].queueing_strategy == "StrictFIFO":
                key = self._key(name, entry)
                evicted[name] = min(key, evicted.get(name, key))
        return evicted

    def _heads(self) -> list[tuple[str, _Pending]]:
        """Each ClusterQueue's head: its first waiting entry in queue order; for BestEffortFIFO the first not
        set aside (StrictFIFO never sets its head aside)."""
        if self._afs_dirty:
            self._resort()
        heads: list[tuple[str, _Pending]] = []
        evicted = self._strict_evicted()
        epochs, root_of = self._epochs, self._root_of
        for name, queue in self._queues.items():
            pending = self._pending[name]
            epoch = epochs[root_of[name]]
            i = self._front[name]
            while i < len(queue):
                entry = queue[i][2]
                if pending.get(entry.wl.key) is not entry:
                    del queue[i]
                    entry.listed = False
                elif entry.aside == epoch:
                    i += 1
                else:
                    if name not in evicted or self._key(name, entry) < evicted[name]:
                        heads.append((name, entry))
                    break
            self._front[name] = i
        return heads

    def _nominate(self, cq_name: str, entry: _Pending) -> tuple[_Assignment, list[_Candidate]]:
        """The entry's flavor assignment and preemption targets against the current state."""
        cached = self._nominated.get(cq_name)
        version = self._versions[self._root_of[cq_name]]
        if cached is not None and cached[0] is entry and cached[1] == version:
            return cached[2], cached[3]  # nothing changed since: same nomination
        memo = self._memo(cq_name, entry, version)
        self._nominated[cq_name] = (entry, version, memo[1], memo[2])
        return memo[1], memo[2]

    def _memo(self, cq_name: str, entry: _Pending, version: int) -> _Memo:
        """The nomination of the entry's shape in its ClusterQueue at this version of the cohort tree: a head
        of the same shape nominated against the same state gets the same answer."""
        shape = entry.shape
        if shape is None:
            shape = entry.shape = self._shape_ids.setdefault(self._shape(cq_name, entry.wl), len(self._shape_ids))
        memos = self._by_shape[cq_name]
        memo = memos.get(shape)
        if memo is not None and memo[0] == version:
            return memo
        assignment = self._assign(cq_name, entry.wl)
        targets: list[_Candidate] = []
        if assignment.mode == PREEMPT:
            targets = self._targets(cq_name, entry.wl, assignment.usage, assignment.need_preemption)
        if assignment.mode == NO_FIT or (assignment.mode == PREEMPT and not targets):
            reduced = self._reduced(cq_name, entry.wl)
            if reduced is not None:
                assignment, targets = reduced
        set_aside: str | None = None
        if assignment.mode == NO_FIT:
            set_aside = assignment.reason
        elif assignment.mode == PREEMPT and not targets:
            set_aside = "no preemption candidates: " + assignment.reason
        memo = memos[shape] = (version, assignment, targets, set_aside)
        return memo

    def _reduced(self, cq_name: str, wl: QueuedWorkload) -> tuple[_Assignment, list[_Candidate]] | None:
        """Partial admission (getInitialAssignments with PartialAdmission on, Kueue's default): when the whole
        workload neither fits nor can preempt, the largest counts between each pod set's count and its minCount
        that fit, or can preempt with targets (`search_counts`)."""
        def fits(counts: list[int]) -> tuple[_Assignment, list[_Candidate]] | None:
            assignment = self._assign(cq_name, wl, counts)
            if assignment.mode == FIT:
                return assignment, []
            if assignment.mode == PREEMPT:
                targets = self._targets(cq_name, wl, assignment.usage, assignment.need_preemption)
                if targets:
                    return assignment, targets
            return None

        return search_counts([ps.count for ps in wl.pod_sets], [ps.min_count for ps in wl.pod_sets], fits)

    def _skip_set_aside_passes(self, budget: int) -> int:
        """Do at once the passes (at most `budget`) that would only set heads aside, and return how many.

        While no pass admits or preempts, the quota state stays as it is, so each next pass nominates
        each BestEffortFIFO queue's next entry against the same state: the j-th such pass sets aside every
        queue's j-th entry, as long as no queue's j-th entry would be admitted or preempt (a StrictFIFO head
        that cannot be admitted just stays). The first pass with an entry that would not be set aside is left to
        `_pass`. So the passes skipped are the fewest of: `budget`, the depth of the shallowest entry that
        decides, and the longest queue's entries. Each queue is walked on its own, deeper by rounds (1, 2, 4, ...
        entries), so that a queue with a long backlog is not walked past an entry of another that decides."""
        if self._afs_dirty:
            self._resort()
        versions, root_of, memos = self._versions, self._root_of, self._by_shape
        walks: list[_Walk] = []
        blocked: list[tuple[_Pending, str]] = []
        evicted = self._strict_evicted()
        for name, queue in self._queues.items():
            root = root_of[name]
            walk: _Walk = [name, queue, self._pending[name], self._front[name], versions[root], self._epochs[root],
                           memos[name], []]
            if self.cluster_queues[name].queueing_strategy != "StrictFIFO":
                walks.append(walk)
                continue
            decided = self._walk(walk, 1)
            if decided >= 0:
                return 0  # its head is admitted or preempts in the next pass
            if walk[7]:
                entry, reason, _ = walk[7][0]
                if name not in evicted or self._key(name, entry) < evicted[name]:
                    blocked.append((entry, reason))  # its head stays: the passes only say why
        bound, depth, live = budget, 1, walks
        while live and bound > 0:
            limit = min(depth, bound)
            deeper: list[_Walk] = []
            for walk in live:
                decided = self._walk(walk, limit)
                if decided >= 0:
                    bound = min(bound, decided)
                elif decided == _WALK_REACHED:
                    deeper.append(walk)
            if limit >= bound:
                break
            live, depth = deeper, depth * 2
        passes = min(bound, max((len(walk[7]) for walk in walks), default=0))
        if passes == 0:
            return 0
        front = self._front
        for walk in walks:
            rows = walk[7][:passes]
            if not rows:
                continue
            epoch = walk[5]
            for entry, reason, _ in rows:
                entry.reason = reason
                entry.aside = epoch
            front[walk[0]] = rows[-1][2]
        for entry, reason in blocked:
            entry.reason = reason
        return passes

    def _walk(self, walk: _Walk, limit: int) -> int:
        """Walk a queue on from where its walk stopped, noting the entries a pass would set aside, until it has
        `limit` of them: `_WALK_REACHED`, or `_WALK_END` at the end of the queue, or the depth of the first entry
        that would be admitted or preempt."""
        name, queue, pending, i, version, epoch, memos, rows = walk
        n, count = len(queue), len(rows)
        while count < limit:
            if i >= n:
                walk[3] = i
                return _WALK_END
            entry = queue[i][2]
            i += 1
            if entry.aside == epoch or pending.get(entry.wl.key) is not entry:
                continue
            shape = entry.shape
            memo = None if shape is None else memos.get(shape)
            if memo is None or memo[0] != version:
                memo = self._memo(name, entry, version)
            reason = memo[3]
            if reason is None:
                walk[3] = i
                return count
            rows.append((entry, reason, i))
            count += 1
        walk[3] = i
        return _WALK_REACHED

    def _pass(self, now: float, out: list[Admit | EvictWorkload]) -> bool:
        """scheduler.schedule: nominate every head (flavors and preemption targets against the state at the
        pass's start), order the entries, then admit or preempt for those that still fit. True if anything
        changed."""
        changed = False
        entries: list[tuple[str, _Pending, _Assignment, list[_Candidate]]] = []
        for cq_name, entry in self._heads():
            assignment, targets = self._nominate(cq_name, entry)
            if assignment.mode == NO_FIT:
                changed |= self._set_aside(cq_name, entry, assignment.reason)
                continue
            entries.append((cq_name, entry, assignment, targets))
        preempted: set[str] = set()
        reserved: list[tuple[str, dict[FlavorResource, int]]] = []  # preemptors' quota, held for this pass
        victims: list[tuple[str, dict[FlavorResource, int]]] = []  # evicted this pass (Kueue's snapshot has them)
        for cq_name, entry, assignment, targets in self._ordered(entries, victims):
            if assignment.mode == PREEMPT and not targets:
                changed |= self._set_aside(cq_name, entry, "no preemption candidates: " + assignment.reason)
                continue
            if any(t.adm.wl.key in preempted for t in targets):
                entry.reason = "overlapping preemption targets with another workload"
                continue
            if not self._fits_without(cq_name, assignment.usage, targets):
                entry.reason = "the workload no longer fits after processing another workload"
                continue
            changed = True
            if assignment.mode == FIT:
                self._admit(cq_name, entry, assignment, now, out)
                continue
            for target in targets:
                preempted.add(target.adm.wl.key)
                victims.append((target.adm.cq, target.adm.usage))
                self._evict(target, entry.wl, cq_name, now, out)
            entry.reason = "waiting for preempted workloads to be evicted"
            self._bump(cq_name)
            self.tree.add(cq_name, assignment.usage)
            reserved.append((cq_name, assignment.usage))
        for cq_name, usage in reserved:
            self._bump(cq_name)
            self.tree.remove(cq_name, usage)
        return changed

    def _ordered(self, entries: list[tuple[str, _Pending, _Assignment, list[_Candidate]]],
                 victims: list[tuple[str, dict[FlavorResource, int]]],
                 ) -> Iterator[tuple[str, _Pending, _Assignment, list[_Candidate]]]:
        """The pass's entries in Kueue's order: makeClassicalIterator (lower borrowing level, then priority, then
        FIFO), or with fair sharing the tournament of each cohort tree, decided pick by pick against the usage of
        what the pass admitted so far (and of its victims, still in Kueue's snapshot until the pass ends)."""
        if self.fair_sharing is None:
            entries.sort(key=lambda e: (e[2].borrow, -e[1].wl.priority, e[1].wl.created, e[1].wl.key))
            yield from entries
            return
        heads = [_FairHead(self.tree.cqs[e[0]], e[2].usage, e[1].wl.priority, (e[1].wl.created, e[1].wl.key), e)
                 for e in entries]
        for head in fair_order(heads, self.tree, victims):
            yield head.entry

    def _shape(self, cq_name: str, wl: QueuedWorkload) -> tuple[Any, ...]:
        """What a nomination reads of the workload: its pod sets (names, counts, requests in order, node
        selectors, tolerations), its priority, and its creation time where a preemption policy compares it."""
        known = self._shapes.get(wl.key)
        if known is not None and known[0] is wl:
            shape = known[1]
        else:
            shape = (wl.priority, wl.created, tuple(
                (ps.name, ps.count, ps.min_count, tuple(ps.requests.items()), tuple(ps.node_selector.items()),
                 ps.tolerations) for ps in wl.pod_sets))
            self._shapes[wl.key] = (wl, shape)
        preemption = self.cluster_queues[cq_name].preemption
        if "LowerOrNewerEqualPriority" in (preemption.within_cluster_queue, preemption.reclaim_within_cohort):
            return shape
        return (shape[0], shape[2])

    def _bump(self, cq_name: str) -> None:
        """The ClusterQueue's cohort tree changed: its cached nominations and preemption searches are stale."""
        self._versions[self._root_of[cq_name]] += 1

    def _fits_without(self, cq_name: str, usage: Mapping[FlavorResource, int], targets: list[_Candidate]) -> bool:
        """ClusterQueueSnapshot.Fits with the entry's preemption targets removed."""
        node = self.tree.cqs[cq_name]
        for t in targets:
            self.tree.remove(t.adm.cq, t.adm.usage)
        fits = all(value <= available(node, fr) for fr, value in usage.items())
        for t in targets:
            self.tree.add(t.adm.cq, t.adm.usage)
        return fits

    def _set_aside(self, cq_name: str, entry: _Pending, reason: str) -> bool:
        """A head that cannot be admitted: BestEffortFIFO sets it aside; StrictFIFO keeps it at the head."""
        entry.reason = reason
        epoch = self._epochs[self._root_of[cq_name]]
        if self.cluster_queues[cq_name].queueing_strategy == "StrictFIFO" or entry.aside == epoch:
            return False
        entry.aside = epoch
        return True

    def _admit(self, cq_name: str, entry: _Pending, a: _Assignment, now: float,
               out: list[Admit | EvictWorkload]) -> None:
        wl = entry.wl
        self._bump(cq_name)
        self.tree.add(cq_name, a.usage)
        del self._pending[cq_name][wl.key]
        self._sequence += 1
        adm = _Admitted(wl, cq_name, entry.local_queue, a.usage, now, self._sequence, entry.seq)
        self._admitted[wl.key] = self._admitted_in[cq_name][wl.key] = adm
        wait = now - entry.since
        for c in (self._counters[cq_name], self._lq_counters.setdefault(entry.local_queue, _Counters())):
            c.admitted += 1
            c.wait_total += wait
            c.borrowed_admissions += a.borrow > 0
        if self.afs is not None and self.afs.admitted(entry.local_queue, a.usage, now):
            self._afs_changed(entry.local_queue)
        by_resource: dict[str, list[str]] = {}
        selectors: dict[str, dict[str, str]] = {}
        node_selector: dict[str, str] = {}
        tolerations: list[Mapping[str, str]] = []
        for ps_name, flavors in a.flavors.items():
            selectors[ps_name] = {}
            for resource, flavor_name in flavors.items():
                names = by_resource.setdefault(resource, [])
                if flavor_name not in names:
                    names.append(flavor_name)
                flavor = self.flavors[flavor_name]
                selectors[ps_name].update(flavor.node_labels)
                node_selector.update(flavor.node_labels)
                tolerations.extend(t for t in flavor.raw_tolerations if t not in tolerations)
        out.append(Admit(key=wl.key, queue=cq_name, node_selector=node_selector, tolerations=tuple(tolerations),
                         flavors={r: ",".join(f) for r, f in by_resource.items()}, borrowed=a.borrow > 0,
                         pod_set_flavors=a.flavors, pod_set_node_selectors=selectors, counts=a.counts or {}))

    def _evict(self, target: _Candidate, by: QueuedWorkload, by_cq: str, now: float,
               out: list[Admit | EvictWorkload]) -> None:
        victim = target.adm
        reason = target.reason
        self._release(victim.wl.key, now)
        victim_counters = (self._counters[victim.cq], self._lq_counters.setdefault(victim.local_queue, _Counters()))
        for c in victim_counters:
            if reason == IN_CLUSTER_QUEUE:
                c.preempted += 1
            else:
                c.reclaimed += 1
        self._counters[by_cq].preemptions += 1
        requeued = _Pending(victim.wl, victim.local_queue, now, seq=victim.seq)
        self._pending[victim.cq][victim.wl.key] = requeued
        self._deferred.append((victim.cq, requeued))
        out.append(EvictWorkload(key=victim.wl.key, reason=reason, by=by.key,
                         message=f"Preempted to make room for {by.key} ({_REASON_TEXT[reason]}); "
                                 f"preemptor in ClusterQueue {by_cq}, preemptee in ClusterQueue {victim.cq}"))

    def _release(self, key: str, now: float) -> None:
        """Give back an admitted workload's quota and requeue the set-aside workloads of its cohort tree."""
        adm = self._admitted.pop(key)
        del self._admitted_in[adm.cq][key]
        self._bump(adm.cq)
        self.tree.remove(adm.cq, adm.usage)
        self._requeue_inadmissible(adm.cq)
        if self.afs is not None and self.afs.released(adm.local_queue, adm.usage, now):
            self._afs_changed(adm.local_queue)

    # --- admission fair sharing -----------------------------------------------------------------------------

    def _afs_changed(self, lq_key: str) -> None:
        """A LocalQueue's usage changed: its ClusterQueue's queue order, and the order of preemption candidates
        (remembered with the tree's version), follow it."""
        lq = self.local_queues.get(lq_key)
        if lq is not None and lq.cluster_queue in self._afs_cqs:
            self._afs_dirty.add(lq.cluster_queue)
            self._bump(lq.cluster_queue)

    def _key(self, cq_name: str, entry: _Pending) -> tuple[float, ...]:
        order = entry.order
        if order is None:
            order = entry.order = _queue_order(entry)
        if self.afs is not None and cq_name in self._afs_cqs:
            return (self.afs.usage(entry.local_queue), *order)
        return order

    def _resort(self) -> None:
        """Order again the queues of ClusterQueues whose LocalQueues' usage changed."""
        for cq_name in self._afs_dirty:
            queue = self._queues[cq_name]
            queue[:] = sorted((self._key(cq_name, entry), pushes, entry) for _, pushes, entry in queue)
            self._front[cq_name] = 0
        self._afs_dirty.clear()

    def _requeue_inadmissible(self, cq_name: str) -> None:
        """Quota was freed in the ClusterQueue's cohort tree: its set-aside workloads are requeued once the
        cycle's passes have settled without them (Kueue requeues them a batch period later, requeueBatchPeriod:
        the heads still queued, a StrictFIFO head or one just arrived, take the freed quota first)."""
        self._requeue_due.add(self._root_of[cq_name])

    def _requeue_set_aside(self, root: QuotaNode) -> None:
        """Requeue the set-aside workloads of a cohort tree: a new epoch, in which none is set aside. They never
        left their queues (only listed entries are set aside): the heads are looked for from the start again."""
        self._epochs[root] += 1
        for name in self._cqs_of[root]:
            self._front[name] = 0

    def _drop_pending(self, key: str) -> None:
        self._parked.pop(key, None)
        for queue in self._pending.values():
            queue.pop(key, None)

    # --- flavor assignment ----------------------------------------------------------------------------------

    def _assign(self, cq_name: str, wl: QueuedWorkload, counts: list[int] | None = None) -> _Assignment:
        """assignFlavors: a flavor per pod set per resource group; the assignment's mode is the worst. `counts`:
        the pods of each pod set to assign (partial admission), else every pod set's count."""
        cq = self.cluster_queues[cq_name]
        group_of = {r: g for g in cq.resource_groups for r in g.covered}
        usage: dict[FlavorResource, int] = {}
        flavors: dict[str, dict[str, str]] = {}
        need: set[FlavorResource] = set()
        mode, borrow = FIT, 0
        reasons: list[str] = []
        for i, ps in enumerate(wl.pod_sets):
            count = ps.count if counts is None else counts[i]
            requests = {r: v * count for r, v in ps.requests.items() if v}
            if "pods" in group_of:
                requests["pods"] = count
            flavors[ps.name] = {}
            groups: list[ResourceGroup] = []
            for resource in requests:
                group = group_of.get(resource)
                if group is None:
                    return _Assignment(NO_FIT, 0, {}, {}, set(),
                                       f"resource {resource} unavailable in ClusterQueue {cq_name}")
                if group not in groups:
                    groups.append(group)
            for group in groups:
                wanted = {r: v for r, v in requests.items() if r in group.covered}
                chosen = self._flavor_for(cq, wl, ps, group, wanted, usage)
                if chosen is None:
                    reasons.append(f"pod set {ps.name}: no flavor of {', '.join(group.covered)} fits")
                    return _Assignment(NO_FIT, 0, {}, {}, set(), "; ".join(reasons))
                flavor_name, g, per_resource = chosen
                for resource, value in wanted.items():
                    fr = (flavor_name, resource)
                    usage[fr] = usage.get(fr, 0) + value
                    flavors[ps.name][resource] = flavor_name
                    if per_resource[resource] != FIT:
                        need.add(fr)
                mode = min(mode, g.mode)
                borrow = max(borrow, g.borrow)
        if mode in (PREEMPT, RECLAIM, NO_CANDIDATES):
            mode = PREEMPT
            reasons.append("insufficient unused quota: needs preemption")
        reduced = None if counts is None else \
            {ps.name: n for ps, n in zip(wl.pod_sets, counts, strict=True) if n != ps.count}
        return _Assignment(mode, borrow, usage, flavors, need, "; ".join(reasons), reduced or None)

    def _flavor_for(self, cq: ClusterQueue, wl: QueuedWorkload, ps: PodSet, group: ResourceGroup,
                    wanted: Mapping[str, int], assigned: Mapping[FlavorResource, int],
                    ) -> tuple[str, _Granular, dict[str, Mode]] | None:
        """findFlavorForPodSets for one pod set and one resource group."""
        best: tuple[str, _Granular, dict[str, Mode]] | None = None
        best_mode = _WORST
        node = self.tree.cqs[cq.name]
        for fq in group.flavors:
            flavor = self.flavors.get(fq.name)
            if flavor is None or not self._flavor_matches(flavor, ps):
                continue
            rep = _BEST
            per_resource: dict[str, Mode] = {}
            for resource, value in wanted.items():
                fr = (fq.name, resource)
                g = self._fits_quota(cq, node, wl, fr, assigned.get(fr, 0) + value)
                per_resource[resource] = g.mode
                if _preferred(rep, g, cq.flavor_fungibility):
                    rep = g
                if rep.mode == NO_FIT:
                    break
            if not _try_next_flavor(rep, cq.flavor_fungibility):
                return fq.name, rep, per_resource
            if _preferred(rep, best_mode, cq.flavor_fungibility):
                best, best_mode = (fq.name, rep, per_resource), rep
        return best

    @staticmethod
    def _flavor_matches(flavor: ResourceFlavor, ps: PodSet) -> bool:
        """checkFlavorForPodSets: taints tolerated, nodeSelector satisfied on the flavor's label keys."""
        blocking = [t for t in flavor.node_taints if t.effect in ("NoSchedule", "NoExecute")]
        if first_untolerated(blocking, [*ps.tolerations, *flavor.tolerations], harmless="PreferNoSchedule"):
            return False
        return all(flavor.node_labels[k] == v for k, v in ps.node_selector.items() if k in flavor.node_labels)

    def _fits_quota(self, cq: ClusterQueue, node: QuotaNode, wl: QueuedWorkload, fr: FlavorResource,
                    value: int) -> _Granular:
        """fitsResourceQuota: Fit within what is available now; else, if preemption could make room, the
        preemption oracle's verdict (candidates in the same queue: Preempt; only elsewhere: Reclaim)."""
        if value > potential_available(node, fr):
            return _Granular(NO_FIT, 0)
        borrow, may_reclaim = borrowing_level(node, fr, value)
        if value <= available(node, fr):
            return _Granular(FIT, borrow)
        can_preempt_while_borrowing = cq.preemption.borrow_within_cohort != "Never" or (
            self.fair_sharing is not None and cq.preemption.reclaim_within_cohort != "Never")
        if node.nominal(fr) >= value or may_reclaim or can_preempt_while_borrowing:
            targets = self._targets(cq.name, wl, {fr: value}, {fr})
            if not targets:
                return _Granular(NO_CANDIDATES, borrow)
            for t in targets:
                self.tree.remove(t.adm.cq, t.adm.usage)
            after, _ = borrowing_level(node, fr, value)
            for t in targets:
                self.tree.add(t.adm.cq, t.adm.usage)
            same = any(t.adm.cq == cq.name for t in targets)
            return _Granular(PREEMPT if same else RECLAIM, after)
        return _Granular(NO_FIT, borrow)

    # --- preemption -----------------------------------------------------------------------------------------

    @staticmethod
    def _satisfies(preemptor: QueuedWorkload, candidate: QueuedWorkload, policy: str) -> bool:
        """SatisfiesPreemptionPolicy."""
        if policy == "Any":
            return True
        lower = preemptor.priority > candidate.priority
        if policy == "LowerPriority":
            return lower
        if policy == "LowerOrNewerEqualPriority":
            return lower or (preemptor.priority == candidate.priority and preemptor.created < candidate.created)
        return False

    def _classify(self, cq: ClusterQueue, wl: QueuedWorkload, adm: _Admitted, frs: set[FlavorResource],
                  advantage: bool) -> str | None:
        """classifyPreemptionVariant (pkg/scheduler/preemption/classical/hierarchical_preemption.go)."""
        if not any(fr in frs for fr in adm.usage):
            return None
        same = adm.cq == cq.name
        policy = cq.preemption.within_cluster_queue if same else cq.preemption.reclaim_within_cohort
        if not self._satisfies(wl, adm.wl, policy):
            return None
        if same:
            return "WithinCQ"
        if advantage:
            return "HierarchicalReclaim"
        if cq.preemption.borrow_within_cohort == "Never":
            return "ReclaimWithoutBorrowing"
        threshold = cq.preemption.max_priority_threshold
        if adm.wl.priority >= wl.priority or (threshold is not None and adm.wl.priority > threshold):
            return "ReclaimWithoutBorrowing"
        return "ReclaimWhileBorrowing"

    def _from_cq(self, cq: ClusterQueue, wl: QueuedWorkload, source: str, lca: QuotaNode | None,
                 frs: set[FlavorResource], advantage: bool) -> list[_Candidate]:
        out: list[_Candidate] = []
        for adm in self._admitted_in[source].values():
            variant = self._classify(cq, wl, adm, frs, advantage)
            if variant is not None:
                out.append(_Candidate(adm, lca, variant))  # type: ignore[arg-type]
        return out

    def _collect_in_subtree(self, cq: ClusterQueue, wl: QueuedWorkload, subtree_root: QuotaNode,
                            skip: QuotaNode | None, frs: set[FlavorResource], advantage: bool,
                            result: list[_Candidate]) -> None:
        """collectCandidatesInSubtree: ClusterQueues over their quota in the cohort's subtree, not descending
        into the subtree already searched or into cohorts within their quota; a child cohort's candidates
        before its parent's own ClusterQueues', as Kueue's recursion lists them (walked here with a stack)."""
        stack: list[tuple[QuotaNode, bool]] = [(subtree_root, False)]
        while stack:
            current, expanded = stack.pop()
            if not expanded:
                stack.append((current, True))
                stack.extend((child, False) for child in reversed(current.child_cohorts)
                             if child is not skip and not is_within_nominal(child, frs))
                continue
            for child_cq in current.child_cqs:
                if child_cq.name == cq.name or is_within_nominal(child_cq, frs):
                    continue
                result.extend(self._from_cq(cq, wl, child_cq.name, subtree_root, frs, advantage))

    def _targets(self, cq_name: str, wl: QueuedWorkload, requests: Mapping[FlavorResource, int],
                 frs: set[FlavorResource]) -> list[_Candidate]:
        """classicalPreemptions, remembered while the ClusterQueue's cohort tree is unchanged (flavor
        assignment and the nomination ask the same question)."""
        key = (cq_name, frozenset(requests.items()), frozenset(frs))
        version = self._versions[self._root_of[cq_name]]
        memo = self._targets_memo.get(key)
        if memo is not None and memo[0] is wl and memo[1] == version:
            return list(memo[2])
        targets = self._search_targets(cq_name, wl, requests, frs)
        self._targets_memo[key] = (wl, version, targets)
        return list(targets)

    def _search_targets(self, cq_name: str, wl: QueuedWorkload, requests: Mapping[FlavorResource, int],
                        frs: set[FlavorResource]) -> list[_Candidate]:
        """classicalPreemptions: the smallest set of victims, found greedily then filled back (or, with fair
        sharing on, fairPreemptions)."""
        if self.fair_sharing is not None:
            return self._fair_targets(cq_name, wl, requests, frs)
        cq = self.cluster_queues[cq_name]
        node = self.tree.cqs[cq_name]
        if cq.preemption.within_cluster_queue == "Never" and (
                node.parent is None or cq.preemption.reclaim_within_cohort == "Never"):
            return []
        same: list[_Candidate] = []
        if cq.preemption.within_cluster_queue != "Never":
            same = self._from_cq(cq, wl, cq_name, None, frs, False)
        hierarchy: list[_Candidate] = []
        by_priority: list[_Candidate] = []
        if node.parent is not None and cq.preemption.reclaim_within_cohort != "Never":
            advantage, remaining = quantities_fit_in_quota(node, requests)
            previous: QuotaNode | None = None
            for subtree_root in path_to_root(node):
                target_list = hierarchy if advantage else by_priority
                self._collect_in_subtree(cq, wl, subtree_root, previous, frs, advantage, target_list)
                subtree_fits, remaining = quantities_fit_in_quota(subtree_root, remaining)
                advantage = advantage or subtree_fits
                previous = subtree_root

        def order(c: _Candidate) -> Any:
            """CandidatesOrdering: other queues first, lower priority, most recently admitted."""
            return self._candidate_order(cq_name)(c.adm)

        candidates = sorted(hierarchy, key=order) + sorted(by_priority, key=order) + sorted(same, key=order)
        forbidden = cq.preemption.borrow_within_cohort == "Never"
        under_nominal = all(node.nominal(fr) > node.usage.get(fr, 0) for fr in frs)
        if (not hierarchy and not by_priority) or (forbidden and not under_nominal):
            attempts = [True]
        elif forbidden and not hierarchy:
            attempts = [False, True]
        else:
            attempts = [True, False]

        def fits(allow_borrowing: bool) -> bool:
            for fr, value in requests.items():
                if not allow_borrowing and borrowing_with(node, fr, value):
                    return False
                if value > available(node, fr):
                    return False
            return True

        def valid(c: _Candidate, allow_borrowing: bool) -> bool:
            """candidateIsValid: still over quota (it and its cohorts up to the common ancestor)."""
            if c.adm.cq == cq_name:
                return True
            if allow_borrowing and c.variant == "ReclaimWithoutBorrowing":
                return False
            cand_node = self.tree.cqs[c.adm.cq]
            if is_within_nominal(cand_node, frs):
                return False
            for ancestor in path_to_root(cand_node):
                if ancestor is c.lca:
                    break
                if is_within_nominal(ancestor, frs):
                    return False
            return True

        for allow in attempts:
            removed: list[_Candidate] = []
            for c in candidates:
                if not valid(c, allow):
                    continue
                self.tree.remove(c.adm.cq, c.adm.usage)
                removed.append(c)
                if fits(allow):
                    # fillBackWorkloads: put back, last removed first, those not needed after all
                    for i in range(len(removed) - 2, -1, -1):
                        self.tree.add(removed[i].adm.cq, removed[i].adm.usage)
                        if fits(allow):
                            removed[i] = removed[-1]
                            removed.pop()
                        else:
                            self.tree.remove(removed[i].adm.cq, removed[i].adm.usage)
                    for t in removed:
                        self.tree.add(t.adm.cq, t.adm.usage)
                    return removed
            for t in removed:
                self.tree.add(t.adm.cq, t.adm.usage)
        return []


    def _candidate_order(self, cq_name: str) -> Callable[[_Admitted], Any]:
        """CandidatesOrdering as a sort key: other ClusterQueues first, then (two workloads of one ClusterQueue with
        admission fair sharing, in different LocalQueues) the higher LocalQueue usage, lower priority, most
        recently admitted."""
        afs = self.afs
        if afs is None or not self._afs_cqs:
            return lambda adm: (adm.cq == cq_name, adm.wl.priority, -adm.sequence, adm.wl.key)
        afs_cqs = self._afs_cqs

        def compare(a: _Admitted, b: _Admitted) -> int:
            if (a.cq == cq_name) != (b.cq == cq_name):
                return 1 if a.cq == cq_name else -1
            if a.cq == b.cq and a.local_queue != b.local_queue and a.cq in afs_cqs:
                ua, ub = afs.usage(a.local_queue), afs.usage(b.local_queue)
                if ua != ub:
                    return -1 if ua > ub else 1
            for x, y in ((a.wl.priority, b.wl.priority), (-a.sequence, -b.sequence)):
                if x != y:
                    return -1 if x < y else 1
            return -1 if a.wl.key < b.wl.key else int(a.wl.key > b.wl.key)

        return functools.cmp_to_key(compare)

    def _fair_targets(self, cq_name: str, wl: QueuedWorkload, requests: Mapping[FlavorResource, int],
                      frs: set[FlavorResource]) -> list[_Candidate]:
        """fairPreemptions (phalanx.admission.kueue_fair): candidates by findCandidates, in CandidatesOrdering."""
        assert self.fair_sharing is not None
        cq = self.cluster_queues[cq_name]
        node = self.tree.cqs[cq_name]
        candidates: list[_Admitted] = []
        if cq.preemption.within_cluster_queue != "Never":
            candidates += [adm for adm in self._admitted_in[cq_name].values()
                           if any(fr in frs for fr in adm.usage)
                           and self._satisfies(wl, adm.wl, cq.preemption.within_cluster_queue)]
        if node.parent is not None and cq.preemption.reclaim_within_cohort != "Never":
            for other in subtree_cluster_queues(self.tree.root_of(node)):
                if other is node or not any(borrowing(other, fr) for fr in frs):
                    continue
                candidates += [adm for adm in self._admitted_in[other.name].values()
                               if any(fr in frs for fr in adm.usage)
                               and self._satisfies(wl, adm.wl, cq.preemption.reclaim_within_cohort)]

        order = self._candidate_order(cq_name)
        candidates.sort(key=order)
        found = fair_targets(node, requests, frs, candidates, self.fair_sharing, self.tree, order)
        variants = {IN_CLUSTER_QUEUE: "WithinCQ", IN_COHORT_RECLAMATION: "HierarchicalReclaim",
                    IN_COHORT_FAIR_SHARING: "FairSharing"}
        return [_Candidate(adm, None, variants[reason]) for adm, reason in found]  # type: ignore[arg-type]


# --- building from manifests --------------------------------------------------------------------------------

def load_kueue(docs: Iterable[tuple[Manifest, Source]],
               namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
               config: KueueConfig | None = None) -> KueueAdmission:
    """A KueueAdmission over the Kueue objects among `docs` (ResourceFlavor, ClusterQueue, Cohort,
    LocalQueue, WorkloadPriorityClass of kueue.x-k8s.io); two objects of one kind with one name are an
    error, as the API server would refuse the second."""
    seen: dict[tuple[str, str], Source] = {}
    objects: dict[str, list[Any]] = {kind: [] for kind in
                                     ("ResourceFlavor", "ClusterQueue", "Cohort", "LocalQueue",
                                      "WorkloadPriorityClass")}
    for doc, source in docs:
        obj = parse_kueue_object(doc, source)
        kind = type(obj).__name__
        name = obj.key if isinstance(obj, LocalQueue) else obj.name
        if (kind, name) in seen:
            first = seen[(kind, name)]
            raise InputError(f"already defined in {first.file} (document {first.index})", file=source.file,
                             obj=f"{kind} {name}", field="metadata.name")
        seen[(kind, name)] = source
        objects[kind].append(obj)
    return KueueAdmission(objects["ResourceFlavor"], objects["ClusterQueue"], objects["Cohort"],
                          objects["LocalQueue"], objects["WorkloadPriorityClass"], namespace_labels,
                          config=config)
