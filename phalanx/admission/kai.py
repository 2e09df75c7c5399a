"""KAI Scheduler's queueing (NVIDIA/KAI-Scheduler, commit 72de64fc) as an admission policy: which workloads
(KAI's PodGroups) run, and which are evicted for queue fairness. Phalanx's engine places what is admitted.

Restated from `pkg/scheduler`, function by function:
- fair share (`plugins/proportion/resource_division/resource_division.go`, `proportion.go`): per resource
  (cpu, memory, gpu), see `set_resource_share`; a queue's request is what its subtree's jobs hold and ask for.
- queue order (`plugins/proportion/queue_order/queue_order.go`, `actions/utils/job_order_by_queue.go`): at each
  level of the hierarchy the sibling whose subtree's next job should go first: a queue not above its fair share
  in every resource, then a queue that stays within its quota with the job, then higher `spec.priority`, then no
  allocation where its allocatable share is 0, then the lower dominant resource share with the job (DRF), then
  without it, then the smaller allocatable share, then the older queue. Job order within a leaf queue: higher
  priority, then creation (`plugins/priority`, `framework/session_plugins.go`).
- allocate (`actions/allocate/allocate.go`, `capacity_policy/`): a job runs when no queue on its path goes over
  its limit, a non-preemptible job keeps its queues' non-preemptible allocation within quota, and the cluster's
  free resources hold it. A job that fails waits; the next one is tried.
- reclaim (`actions/reclaim/reclaim.go`, `reclaimable/`): a pending job whose queue stays within its fair share
  with it (and, non-preemptible, within its quota) evicts preemptible jobs of other queues, in reverse queue
  order and lowest priority/newest first, while the victim's queue (at the level where the two paths part) is
  above its allocatable share (MaintainFairShare) or above its quota while the reclaimer stays within its own
  (GuaranteeDeservedQuota); the reclaimer's queues may not end up more saturated than a sibling they take from.
- preempt (`actions/preempt/preempt.go`): a pending job evicts preemptible, lower-priority running jobs of its
  own queue; a non-preemptible preemptor must stay within quota.
- preemptibility (`pkg/common/podgroup/preemptible.go`): priority below 100 is preemptible.

Simplifications (named by `not_modelled()`): the cluster is one pool of the given capacity; jobs are admitted
and evicted whole; minimum runtimes and time-based fair share are left out (consolidation is the engine's, under
the kai profile: phalanx/scheduler/consolidation.py). A gpu-fraction pod's
share counts against its queue's GPU quota (the `kai` profile's GpuShare plugin places shares on devices).
Speed: within one cycle the checks only get stricter as jobs are admitted, so once a job of one shape fails in a
queue, the queue's other jobs of that shape (same requests and preemptibility) are not tried again that cycle.
"""

from __future__ import annotations

import heapq
import math
from bisect import insort
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from phalanx.admission.base import Admit, EvictWorkload, QueuedWorkload
from phalanx.admission.kai_objects import (
    RESOURCES,
    KaiQueue,
    KaiResource,
    check_hierarchy,
    is_queue,
    parse_queue,
)
from phalanx.errors import InputError

UNLIMITED = -1.0
DEFAULT_QUEUE = "default-queue"  # the pod grouper's queue for a workload naming none (constants.DefaultQueueName)
DEFAULT_PARENT_QUEUE = "default-parent-queue"  # both made by KAI's Helm chart (values.yaml defaultQueue)
NON_PREEMPTIBLE_PRIORITY = 100  # podgroup.CalculatePreemptibility
# The PriorityClasses KAI's chart deploys (docs/priority/README.md, "Priority Classes").
KAI_PRIORITY_CLASSES = {"train": 50, "build-preemptible": 75, "build": 100, "inference": 125}
MB = 1_000_000  # KAI's memory unit (proportion.go: `mebibytes = 1000 * 1000`)
PHALANX_NAMES = {"cpu": "cpu", "memory": "memory", "gpu": "nvidia.com/gpu"}
_NO_FAIR_SHARE_DRF = 1000.0  # noFairShareDrfMultiplier
PENDING, RUNNING = "Pending", "Running"
Vec = tuple[float, float, float]  # cpu (millicores), memory (bytes), gpu (devices)
ZERO: Vec = (0.0, 0.0, 0.0)


@dataclass(slots=True)
class Share:
    """One queue's numbers for one resource, as KAI's ResourceShare (the amounts in one unit)."""

    name: str
    deserved: float = 0.0  # the quota; -1: unlimited
    max_allowed: float = UNLIMITED  # the limit; -1: none
    weight: float = 0.0  # overQuotaWeight
    request: float = 0.0  # allocated + pending requests of the queue's subtree
    priority: int = 100
    order: int = 0  # creation order: the older queue wins ties
    fair: float = 0.0

    def requestable(self) -> float:
        return self.request if self.max_allowed == UNLIMITED else min(self.max_allowed, self.request)

    def remaining_requested(self) -> float:
        return max(0.0, self.requestable() - self.fair)

    def satisfied(self) -> bool:
        return self.request <= self.fair or (self.max_allowed != UNLIMITED and self.max_allowed <= self.fair)


def set_resource_share(total: float, queues: Sequence[Share], k_value: float = 1.0) -> float:
    """Fair shares of `total` among sibling `queues` (added to `fair`); returns what no queue took."""
    remaining = set_deserved(total, queues)
    if remaining <= 0:
        return 0.0
    return divide_over_quota(remaining, queues, k_value)


def set_deserved(total: float, queues: Iterable[Share]) -> float:
    remaining = total
    for q in queues:
        deserved = total if q.deserved == UNLIMITED else q.deserved
        amount = min(deserved, q.requestable())
        q.fair += amount
        remaining -= amount
    return remaining


def divide_over_quota(total: float, queues: Sequence[Share], k_value: float = 1.0) -> float:
    by_priority: dict[int, list[Share]] = {}
    for q in sorted(queues, key=lambda s: s.name):
        by_priority.setdefault(q.priority, []).append(q)
    priorities = sorted(by_priority, reverse=True)
    leftovers: dict[int, dict[str, tuple[Share, float]]] = {}
    remaining = total
    for priority in priorities:
        remaining, leftovers[priority] = _divide_up_to_fair_share(remaining, by_priority[priority], k_value)
    for priority in priorities:
        if remaining <= 0:
            break
        if leftovers[priority]:
            remaining = _divide_remaining(remaining, leftovers[priority])
    return remaining


def _divide_up_to_fair_share(total: float, queues: list[Share], k_value: float
                             ) -> tuple[float, dict[str, tuple[Share, float]]]:
    leftovers: dict[str, tuple[Share, float]] = {}
    while True:
        another_round = False
        to_give = total
        weights = _share_weights(queues, k_value)
        weight_sum = sum(weights.values())
        if weight_sum == 0:
            break
        for q in queues:
            if total == 0:
                break
            if q.satisfied() or q.weight == 0:
                continue
            requested = q.remaining_requested()
            part = to_give * weights[q.name] / weight_sum
            if requested <= part:
                give = requested
                leftovers.pop(q.name, None)
            else:
                give = float(math.floor(part)) if math.floor(part) > 0 else 0.0
                if part - give > 0:
                    leftovers[q.name] = (q, part - give)
            if give == 0:
                continue
            q.fair += give
            total -= give
            another_round = another_round or requested < part
        if not another_round or total == 0:
            break
    return total, leftovers


def _share_weights(queues: Iterable[Share], k_value: float) -> dict[str, float]:
    """calcShareWeights with no historical usage: w/Σw × (1 + k) for the unsatisfied queues."""
    queues = list(queues)
    total = sum(q.weight for q in queues if q.remaining_requested() > 0)
    if total == 0:
        return {}
    out: dict[str, float] = {}
    for q in queues:
        if q.satisfied():
            continue
        normalised = q.weight / total
        out[q.name] = max(0.0, normalised + k_value * normalised)
    return out


def _divide_remaining(total: float, leftovers: Mapping[str, tuple[Share, float]]) -> float:
    for q, _ in sorted(leftovers.values(), key=lambda item: (-item[1], item[0].order, item[0].name)):
        if total == 0:
            break
        give = min(1.0, total)
        q.fair += give
        total -= give
    return total


@dataclass(slots=True)
class TreeNode:
    """A queue in the hierarchy with its per-resource shares."""

    name: str
    shares: dict[str, Share] = field(default_factory=dict)
    children: list[TreeNode] = field(default_factory=list)


def set_fair_shares(total: Mapping[str, float], top: Sequence[TreeNode], k_value: float = 1.0) -> None:
    """setFairShareForQueues: each level divides what its parent got (the cluster for the top level)."""
    stack: list[tuple[Mapping[str, float], Sequence[TreeNode]]] = [(total, top)]
    while stack:
        amounts, level = stack.pop()
        if not level:
            continue
        for resource, amount in amounts.items():
            set_resource_share(amount, [node.shares[resource] for node in level], k_value)
        for node in level:
            if node.children:
                stack.append(({r: s.fair for r, s in node.shares.items()}, node.children))


# --- vectors of KAI's three resources -----------------------------------------------------------------------

def vec(requests: Mapping[str, int | float]) -> Vec:
    gpu = requests.get(PHALANX_NAMES["gpu"], 0)
    return (float(requests.get("cpu", 0)), float(requests.get("memory", 0)), float(gpu))


def _add(a: Vec, b: Vec, sign: float = 1.0) -> Vec:
    return (a[0] + sign * b[0], a[1] + sign * b[1], a[2] + sign * b[2])


def _cmp(quantity: float, other: float) -> int:
    """compareQuantities: -1 (unlimited) is above every amount."""
    if quantity == UNLIMITED:
        return 0 if other == UNLIMITED else 1
    if other == UNLIMITED:
        return -1
    return (quantity > other) - (quantity < other)


def le(a: Vec, b: Vec) -> bool:
    """ResourceQuantities.LessEqual."""
    return all(_cmp(x, y) <= 0 for x, y in zip(a, b, strict=True))


def lt_all(a: Vec, b: Vec) -> bool:
    """ResourceQuantities.Less: strictly less in every resource."""
    return all(x < y for x, y in zip(a, b, strict=True))


def _kai_units(resource: str, value: float) -> float:
    return value if value == UNLIMITED or resource != "memory" else value * MB


@dataclass(frozen=True, slots=True)
class _Limits:
    deserved: Vec
    max_allowed: Vec
    weight: Vec


def _limits(queue: KaiQueue) -> _Limits:
    def pick(attr: str) -> Vec:
        values = [_kai_units(r, getattr(queue.resource(r), attr)) if attr != "over_quota_weight"
                  else queue.resource(r).over_quota_weight for r in RESOURCES]
        return (values[0], values[1], values[2])
    return _Limits(pick("quota"), pick("limit"), pick("over_quota_weight"))


def allocatable_share(deserved: float, fair: float, max_allowed: float) -> float:
    """ResourceShare.GetAllocatableShare."""
    if deserved == UNLIMITED:
        return max_allowed
    share = max(deserved, fair)
    return share if max_allowed == UNLIMITED else min(max_allowed, share)


# --- jobs and queues ------------------------------------------------------------------------------------------

@dataclass(eq=False, slots=True)
class _Job:
    workload: QueuedWorkload
    queue: str
    total: dict[str, int]
    req: Vec
    preemptible: bool
    submitted: float
    shape: tuple[Any, ...]
    state: str = PENDING
    reason: str = ""

    def order(self) -> tuple[int, float, str]:
        return (-self.workload.priority, self.workload.created, self.workload.key)


@dataclass
class _Stats:
    admitted: int = 0
    reclaimed: int = 0
    preempted: int = 0
    wait_sum: float = 0.0


@dataclass(eq=False, slots=True)
class _Q:
    """A queue in a session: its limits, the live sums of its subtree, and (leaf) its jobs."""

    spec: KaiQueue
    order: int
    limits: _Limits
    parent: _Q | None = None
    children: list[_Q] = field(default_factory=list)
    allocated: Vec = ZERO
    allocated_np: Vec = ZERO  # non-preemptible
    pending: Vec = ZERO
    fair: Vec = ZERO
    share: Vec = ZERO  # allocatable share, set with the fair share each cycle
    shapes: dict[tuple[Any, ...], list[tuple[tuple[int, float, str], _Job]]] = field(default_factory=dict)
    running: list[tuple[tuple[int, float, str], _Job]] = field(default_factory=list)  # preemptible, job order

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def shown(self) -> str:
        return self.spec.display_name or self.spec.name

    def path(self) -> list[_Q]:
        """Itself and its ancestors, top last."""
        out: list[_Q] = []
        node: _Q | None = self
        while node is not None:
            out.append(node)
            node = node.parent
        return out

    def allocatable(self) -> Vec:
        return self.share

    def compute_allocatable(self) -> Vec:
        d, m = self.limits.deserved, self.limits.max_allowed
        return (allocatable_share(d[0], self.fair[0], m[0]), allocatable_share(d[1], self.fair[1], m[1]),
                allocatable_share(d[2], self.fair[2], m[2]))


def dominant_share(allocated: Vec, allocatable: Vec, total: Vec) -> float:
    """QueueResourceShare.GetDominantResourceShare."""
    best = 0.0
    for used, share, whole in zip(allocated, allocatable, total, strict=True):
        share = whole if share == UNLIMITED else share
        best = max(best, used * _NO_FAIR_SHARE_DRF if share == 0 else used / share)
    return best


def queue_order(lq: _Q, rq: _Q, lreq: Vec, rreq: Vec, total: Vec, lalloc: Vec | None = None,
                ralloc: Vec | None = None) -> int:
    """GetQueueOrderResult: < 0 when `lq` (whose next job asks `lreq`) goes before `rq`. `lalloc`/`ralloc` stand
    in for the allocations in the DRF steps (victim ordering takes the victims out)."""
    l_over, r_over = lt_all(lq.fair, lq.allocated), lt_all(rq.fair, rq.allocated)
    if l_over != r_over:
        return 1 if l_over else -1
    l_starved = le(_add(lq.allocated, lreq), lq.limits.deserved)
    r_starved = le(_add(rq.allocated, rreq), rq.limits.deserved)
    if l_starved != r_starved:
        return -1 if l_starved else 1
    if lq.spec.priority != rq.spec.priority:
        return -1 if lq.spec.priority > rq.spec.priority else 1
    l_alloc = lq.allocated if lalloc is None else lalloc
    r_alloc = rq.allocated if ralloc is None else ralloc
    l_share, r_share = lq.allocatable(), rq.allocatable()
    l_bad = any(s == 0 and a > 0 for s, a in zip(l_share, _add(lq.allocated, lreq), strict=True))
    r_bad = any(s == 0 and a > 0 for s, a in zip(r_share, _add(rq.allocated, rreq), strict=True))
    if l_bad != r_bad:
        return 1 if l_bad else -1
    for la, ra in ((_add(l_alloc, lreq), _add(r_alloc, rreq)), (lq.allocated, rq.allocated)):
        ls, rs = dominant_share(la, l_share, total), dominant_share(ra, r_share, total)
        if ls != rs:
            return -1 if ls < rs else 1
    if not le(r_share, l_share) and le(l_share, r_share):
        return -1
    if not le(l_share, r_share) and le(r_share, l_share):
        return 1
    return -1 if lq.order < rq.order else 1


def _fmt(value: float, divisor: float = 1.0) -> str:
    return f"{round(value / divisor, 3):g}"


_UNIT = {0: ("CPU cores", "cores", "CPU cores", 1000.0), 1: ("memory", "GB", "GB memory", 1e9),
         2: ("GPUs", "GPUs", "GPUs", 1.0)}


def over_limit_message(queue: str, i: int, limit: float, allocated: float, requested: float) -> str:
    """GetJobOverMaxAllowedMessageForQueue."""
    name, unit, _, div = _UNIT[i]
    return (f"{queue} quota has reached the allowable limit of {name}. Limit is {_fmt(limit, div)} {unit}, "
            f"currently {_fmt(allocated, div)} {unit} allocated and workload requested {_fmt(requested, div)} {unit}")


def over_quota_message(queue: str, i: int, deserved: float, used: float, requested: float) -> str:
    """GetBuildOverCapacityMessageForQueue."""
    _, unit, asked, div = _UNIT[i]
    quota_unit = "GPUs" if i == 2 else unit
    return (f"Non-preemptible workload is over quota. Workload requested {_fmt(requested, div)} {asked}, but {queue} "
            f"quota is {_fmt(deserved, div)} {quota_unit}, while {_fmt(used, div)} {quota_unit} are already "
            "allocated for non-preemptible pods. Use a preemptible workload to go over quota.")


class KaiAdmission:
    """KAI's queueing (allocate, reclaim, preempt) over Queue objects."""

    def __init__(self, queues: Iterable[KaiQueue], capacity: Mapping[str, int]) -> None:
        specs: dict[str, KaiQueue] = {q.name: q for q in queues}
        # KAI's Helm chart creates these two; the pod grouper sends workloads naming no queue to the child.
        unlimited = {r: KaiResource(0.0, UNLIMITED, 1.0) for r in RESOURCES}
        specs.setdefault(DEFAULT_PARENT_QUEUE, KaiQueue(DEFAULT_PARENT_QUEUE, resources=unlimited))
        if DEFAULT_QUEUE not in specs and specs[DEFAULT_PARENT_QUEUE].parent == "":
            specs[DEFAULT_QUEUE] = KaiQueue(DEFAULT_QUEUE, parent=DEFAULT_PARENT_QUEUE, resources=unlimited)
        check_hierarchy(specs)
        self.specs = specs
        self._q: dict[str, _Q] = {name: _Q(spec, i, _limits(spec)) for i, (name, spec) in enumerate(specs.items())}
        for q in self._q.values():
            if q.spec.parent:
                q.parent = self._q[q.spec.parent]
                q.parent.children.append(q)
        self._top = [q for q in self._q.values() if q.parent is None]
        self.capacity: dict[str, int] = dict(capacity)
        self._used: dict[str, float] = {}
        self._jobs: dict[str, _Job] = {}
        self._stats: dict[str, _Stats] = {}
        self._missing: set[str] = set()
        self._unknown_classes: set[str] = set()  # priorityClassName labels naming no class KAI deploys
        self._shape_reason: dict[tuple[str, tuple[Any, ...]], str] = {}
        self._fair_done = False

    # --- the AdmissionPolicy protocol ---

    def workload_priority(self, priority_class: str, priority: int) -> int:
        """The priority of a workload whose `priorityClassName` label names `priority_class` (KAI reads the label
        before the pods' spec.priorityClassName): the value of the class KAI's chart deploys under that name
        (train 50, build-preemptible 75, build 100, inference 125); another name keeps the pods' priority, and is
        named under not_modelled (its PriorityClass object is not read)."""
        value = KAI_PRIORITY_CLASSES.get(priority_class)
        if value is None:
            self._unknown_classes.add(priority_class)
            return priority
        return value

    def submit(self, workload: QueuedWorkload, now: float) -> None:
        self.finished(workload.key, now)
        queue = workload.queue or DEFAULT_QUEUE
        total = workload.total()
        req = vec(total)
        shares = sum(ps.gpu_share_milli * ps.count for ps in workload.pod_sets)
        if shares:  # KAI counts a gpu-fraction pod's share of a GPU against the queue's GPU quota
            req = (req[0], req[1], req[2] + shares / 1000)
        preemptible = workload.priority < NON_PREEMPTIBLE_PRIORITY
        shape = (preemptible, tuple(sorted(total.items())))
        job = _Job(workload, queue, total, req, preemptible, now, shape)
        self._jobs[workload.key] = job
        q = self._q.get(queue)
        if q is None:
            self._missing.add(queue)
            return
        if q.children:
            return
        heapq.heappush(q.shapes.setdefault(shape, []), (job.order(), job))
        for node in q.path():
            node.pending = _add(node.pending, req)

    def finished(self, key: str, now: float) -> None:
        job = self._jobs.pop(key, None)
        if job is None:
            return
        q = self._q.get(job.queue)
        if q is None or q.children:
            return
        if job.state == RUNNING:
            self._release(q, job)
        else:
            for node in q.path():
                node.pending = _add(node.pending, job.req, -1.0)

    def nodes_changed(self, total: Mapping[str, int]) -> None:
        """The cluster's allocatable changed: the next cycle uses the new total."""
        self.capacity = dict(total)

    def cycle(self, now: float) -> list[Admit | EvictWorkload]:
        out: list[Admit | EvictWorkload] = []
        self._set_fair_shares()
        failed: dict[str, set[tuple[Any, ...]]] = {}
        capacity_failed: dict[str, set[tuple[Any, ...]]] = {}
        self._allocate(now, out, failed, capacity_failed)
        self._evict_for(now, out, capacity_failed, reclaim=True)
        # Victims in the preemptor's own queue free its queue's allocation too: a job held by its queue's limit may
        # preempt (the solver checks the limit with the victims gone), as well as one held by the cluster's room.
        self._evict_for(now, out, failed, reclaim=False)
        return out

    def queue_rows(self) -> list[dict[str, object]]:
        if not self._fair_done:
            self._set_fair_shares()
        counts: dict[str, list[int]] = {}
        for job in self._jobs.values():
            c = counts.setdefault(job.queue, [0, 0])
            c[0 if job.state == RUNNING else 1] += 1
        rows: list[dict[str, object]] = []
        for name in sorted({*self._q, *self._missing}):
            q = self._q.get(name)
            stats = self._stats.get(name, _Stats())
            running, pending = counts.get(name, [0, 0])
            rows.append({
                "queue": name,
                "parent": q.spec.parent if q else None,
                "state": ("Parent" if q.children else "Open") if q else "Missing",
                "priority": q.spec.priority if q else None,
                "fair_share": self._shown(q.fair) if q else {},
                "allocated": self._shown(q.allocated) if q else {},
                "quota": self._shown(q.limits.deserved, keep_unlimited=True) if q else {},
                "limit": self._shown(q.limits.max_allowed, keep_unlimited=True) if q else {},
                "admitted": stats.admitted,
                "pending": pending,
                "running": running,
                "preempted": stats.preempted,
                "reclaimed": stats.reclaimed,
                "mean_wait": stats.wait_sum / stats.admitted if stats.admitted else None,
            })
        return rows

    def pending_reason(self, key: str) -> str:
        job = self._jobs.get(key)
        if job is None or job.state == RUNNING:
            return ""
        q = self._q.get(job.queue)
        if q is None:
            return f"queue {job.queue} is not defined: KAI does not schedule the PodGroup"
        if q.children:
            return (f"queue {job.queue} has child queues: only leaf queues can be used for scheduling jobs "
                    "(KAI does not schedule the PodGroup)")
        return (job.reason or self._shape_reason.get((q.name, job.shape))
                or f"waiting for its turn in queue {q.shown}")

    def not_modelled(self) -> list[str]:
        out = ["consolidation moves only pods outside a PodGroup that their controller makes again (not for a "
               "gang placed by topology); the moved pods are scheduled anew, not pipelined to the nodes KAI's "
               "solver chose",
               "reclaim/preempt evict whole workloads (KAI evicts only the pods above an elastic job's minimum)",
               "the cluster is one pool of the given capacity; an admitted workload counts as allocated with its "
               "whole request (the engine finds the nodes)",
               "preemptibility is read from priority (below 100: preemptible); a PodGroup's "
               "spec.preemptibility and the kai.scheduler/preemptibility label are not read",
               "time-based fair share (historical usage, kValue) is not modelled: over-quota resources are "
               "divided by overQuotaWeight alone",
               "a gpu-memory pod's share of a GPU is not counted in its queue (KAI knows it once placed, from the "
               "node's GPU memory); topology and node pools are not modelled"]
        for name, spec in sorted(self.specs.items()):
            out.extend(f"Queue {name}: {f} (not modelled)" for f in spec.unmodelled)
            for resource in spec.unset_limits:
                out.append(f"Queue {name}: spec.resources.{resource}.limit is unset, which KAI reads as 0: no "
                           f"workload requesting {resource} runs in the queue (-1 means no limit)")
        for name in sorted(self._missing):
            out.append(f"Queue {name} is named by workloads but not defined: they stay Pending, as in KAI")
        out.extend(f"label priorityClassName {name}: not one of KAI's built-in classes (train, build-preemptible, "
                   "build, inference); the pods' priority is used" for name in sorted(self._unknown_classes))
        return out

    # --- fair share ---

    def _shown(self, v: Vec, *, keep_unlimited: bool = False) -> dict[str, float]:
        out: dict[str, float] = {}
        for resource, value in zip(RESOURCES, v, strict=True):
            if value == UNLIMITED and keep_unlimited:
                out[PHALANX_NAMES[resource]] = UNLIMITED
            elif value:
                out[PHALANX_NAMES[resource]] = round(value, 3)
        return out

    def _total(self) -> Vec:
        return vec(self.capacity)

    def _set_fair_shares(self) -> None:
        nodes: dict[str, TreeNode] = {}
        for q in self._q.values():
            request = _add(q.allocated, q.pending)
            nodes[q.name] = TreeNode(q.name, {r: Share(q.name, q.limits.deserved[i], q.limits.max_allowed[i],
                                                       q.limits.weight[i], request[i], q.spec.priority, q.order)
                                              for i, r in enumerate(RESOURCES)})
        for q in self._q.values():
            nodes[q.name].children = [nodes[c.name] for c in q.children]
        total = self._total()
        set_fair_shares(dict(zip(RESOURCES, total, strict=True)), [nodes[q.name] for q in self._top])
        for q in self._q.values():
            s = nodes[q.name].shares
            q.fair = (s["cpu"].fair, s["memory"].fair, s["gpu"].fair)
            q.share = q.compute_allocatable()
        self._fair_done = True

    # --- bookkeeping ---

    def _stat(self, queue: str) -> _Stats:
        return self._stats.setdefault(queue, _Stats())

    def _run(self, q: _Q, job: _Job, now: float, out: list[Admit | EvictWorkload]) -> None:
        heap = q.shapes[job.shape]
        heapq.heappop(heap)  # the job is its shape's head
        if not heap:
            del q.shapes[job.shape]
        job.state, job.reason = RUNNING, ""
        for node in q.path():
            node.pending = _add(node.pending, job.req, -1.0)
            node.allocated = _add(node.allocated, job.req)
            if not job.preemptible:
                node.allocated_np = _add(node.allocated_np, job.req)
        if job.preemptible:
            insort(q.running, (job.order(), job), key=lambda item: item[0])
        for name, value in job.total.items():
            self._used[name] = self._used.get(name, 0.0) + value
        stats = self._stat(q.name)
        stats.admitted += 1
        stats.wait_sum += max(0.0, now - job.submitted)
        out.append(Admit(job.workload.key, q.name))

    def _release(self, q: _Q, job: _Job) -> None:
        for node in q.path():
            node.allocated = _add(node.allocated, job.req, -1.0)
            if not job.preemptible:
                node.allocated_np = _add(node.allocated_np, job.req, -1.0)
        if job.preemptible:
            q.running = [item for item in q.running if item[1] is not job]
        for name, value in job.total.items():
            self._used[name] = self._used.get(name, 0.0) - value

    def _head(self, q: _Q, skip: set[tuple[Any, ...]]) -> _Job | None:
        best: _Job | None = None
        for shape, heap in list(q.shapes.items()):
            while heap and self._jobs.get(heap[0][1].workload.key) is not heap[0][1]:
                heapq.heappop(heap)  # finished or resubmitted since it was queued
            if not heap:
                del q.shapes[shape]
                continue
            if shape in skip:
                continue
            job = heap[0][1]
            if best is None or job.order() < best.order():
                best = job
        return best

    def _next(self, level: Sequence[_Q], skips: Mapping[str, set[tuple[Any, ...]]]) -> tuple[_Q, _Job] | None:
        """traverseToLeaf: the best sibling by queue order (comparing each subtree's next job), down to a leaf."""
        total = self._total()
        best: tuple[_Q, _Q, _Job] | None = None  # (sibling, leaf, job)
        for q in level:
            found = self._next(q.children, skips) if q.children else (
                (q, job) if (job := self._head(q, skips.get(q.name, set()))) is not None else None)
            if found is None:
                continue
            if best is None or queue_order(q, best[0], found[1].req, best[2].req, total) < 0:
                best = (q, found[0], found[1])
        return None if best is None else (best[1], best[2])

    # --- allocate ---

    def _gate(self, q: _Q, job: _Job, freed: Mapping[str, Vec] | None = None) -> str:
        """IsJobOverQueueCapacity: "" when no queue on the path goes over its limit and a non-preemptible job keeps
        the non-preemptible allocation within quota; else KAI's message."""
        for node in q.path():
            allocated = _add(node.allocated, freed.get(node.name, ZERO), -1.0) if freed else node.allocated
            for i in range(3):
                limit = node.limits.max_allowed[i]
                if limit != UNLIMITED and job.req[i] and limit < allocated[i] + job.req[i]:
                    return over_limit_message(node.shown, i, limit, allocated[i], job.req[i])
        return self._over_quota(q, job)

    @staticmethod
    def _over_quota(q: _Q, job: _Job) -> str:
        """IsNonPreemptibleJobOverQueueQuota: "" unless `job` is non-preemptible and would take the non-preemptible
        allocation of a queue on its path over its quota; else KAI's message."""
        if not job.preemptible:
            for node in q.path():
                for i in range(3):
                    deserved = node.limits.deserved[i]
                    if deserved != UNLIMITED and job.req[i] and deserved < node.allocated_np[i] + job.req[i]:
                        return over_quota_message(node.shown, i, deserved, node.allocated_np[i], job.req[i])
        return ""

    def _fits(self, job: _Job, freed: Mapping[str, float] | None = None) -> bool:
        for name, value in job.total.items():
            if value > 0:
                used = self._used.get(name, 0.0) - (freed.get(name, 0.0) if freed else 0.0)
                if used + value > self.capacity.get(name, 0):
                    return False
        return True

    def _try(self, q: _Q, job: _Job, failed: dict[str, set[tuple[Any, ...]]],
             capacity_failed: dict[str, set[tuple[Any, ...]]]) -> bool:
        reason = self._gate(q, job)
        if not reason and not self._fits(job):
            reason = "the cluster's free resources do not hold its request (no node set can take the PodGroup)"
            capacity_failed.setdefault(q.name, set()).add(job.shape)
        if reason:
            failed.setdefault(q.name, set()).add(job.shape)
            job.reason = reason
            self._shape_reason[(q.name, job.shape)] = reason
            return False
        return True

    def _allocate(self, now: float, out: list[Admit | EvictWorkload], failed: dict[str, set[tuple[Any, ...]]],
                  capacity_failed: dict[str, set[tuple[Any, ...]]]) -> None:
        # Within the action the checks only get stricter, so a job failing now fails whenever its turn comes: such
        # shapes are set aside before ordering, which then only orders the jobs that can run.
        for q in self._q.values():
            if not q.children:
                for shape in list(q.shapes):
                    head = self._head(q, failed.get(q.name, set()) | (set(q.shapes) - {shape}))
                    if head is not None:
                        self._try(q, head, failed, capacity_failed)
        while (found := self._next(self._top, failed)) is not None:
            q, job = found
            if self._try(q, job, failed, capacity_failed):
                self._shape_reason.pop((q.name, job.shape), None)
                self._run(q, job, now, out)

    # --- reclaim and preempt ---

    def _evict_for(self, now: float, out: list[Admit | EvictWorkload],
                   helpable: dict[str, set[tuple[Any, ...]]], *, reclaim: bool) -> None:
        # Only jobs that failed where evicting others can help (`helpable`) are tried.
        skips = {name: {s for s in q.shapes if s not in helpable.get(name, set())}
                 for name, q in self._q.items() if not q.children}
        for name, skip in skips.items():
            q = self._q[name]
            for shape in list(q.shapes):
                head = self._head(q, skip | (set(q.shapes) - {shape}))
                if head is not None and not (self._can_reclaim(q, head) if reclaim else self._may_preempt(q, head)):
                    skip.add(shape)  # set aside before ordering: the attempt fails whenever its turn comes
        while (found := self._next(self._top, skips)) is not None:
            q, job = found
            skips[q.name].add(job.shape)  # one attempt per shape and queue each cycle
            victims = self._reclaim_victims(q, job) if reclaim else self._preempt_victims(q, job)
            if victims is None:
                continue
            reason = "Reclaimed" if reclaim else "Preempted"
            for victim in victims:
                message = (f"Pod group {victim.workload.key} was preempted by workload {job.workload.key}." if reclaim
                           else f"Pod group {victim.workload.key} was preempted by higher priority workload "
                                f"{job.workload.key}")
                stats = self._stat(victim.queue)
                if reclaim:
                    stats.reclaimed += 1
                else:
                    stats.preempted += 1
                self.finished(victim.workload.key, now)  # the driver re-submits it once its pods are gone
                out.append(EvictWorkload(victim.workload.key, reason, message, by=job.workload.key))
            self._shape_reason.pop((q.name, job.shape), None)
            self._run(q, job, now, out)
            skips[q.name].discard(job.shape)  # the next job of that shape may reclaim too

    def _can_reclaim(self, q: _Q, job: _Job) -> bool:
        """CanReclaimResources: the reclaimer's queue stays within its fair share (and quota, non-preemptible)."""
        if not le(_add(q.allocated, job.req), q.fair):
            return False
        return job.preemptible or le(_add(q.allocated_np, job.req), q.limits.deserved)

    def _reclaim_victims(self, q: _Q, job: _Job) -> list[_Job] | None:
        if not self._can_reclaim(q, job):
            return None
        total = self._total()
        my_path = q.path()
        on_my_path = {id(n) for n in my_path}
        remaining: dict[str, Vec] = {}  # per queue: allocation less the victims chosen
        involved: dict[str, set[int]] = {}
        closed: set[str] = set()  # leaf queues whose next victim failed the strategies
        chosen: list[_Job] = []
        taken: dict[str, int] = {}  # leaf -> victims taken from the end of its running list
        freed: dict[str, float] = {}
        while True:
            best: tuple[_Q, _Job] | None = None
            for leaf in self._q.values():
                if leaf is q or leaf.children or leaf.name in closed:
                    continue
                n = taken.get(leaf.name, 0)
                if n >= len(leaf.running):
                    continue
                cand = leaf.running[-1 - n][1]
                left = _add(remaining.get(leaf.name, leaf.allocated), cand.req, -1.0)
                if best is None or queue_order(leaf, best[0], ZERO, ZERO, total, left,
                                               _add(remaining.get(best[0].name, best[0].allocated),
                                                    best[1].req, -1.0)) > 0:
                    best = (leaf, cand)  # victims come from the queue that orders last
            if best is None:
                return None
            leaf, victim = best
            mine, theirs = self._leveled(my_path, leaf)
            left = remaining.get(theirs.name, theirs.allocated)
            fair_ok = not le(left, theirs.allocatable())
            quota_ok = le(_add(mine.allocated, job.req), mine.limits.deserved) and not le(left, theirs.limits.deserved)
            if not (fair_ok or quota_ok):
                closed.add(leaf.name)
                continue
            kinds = {i for i in range(3) if victim.req[i] > 0}
            for node in leaf.path():
                if id(node) in on_my_path:
                    break
                remaining[node.name] = _add(remaining.get(node.name, node.allocated), victim.req, -1.0)
                involved.setdefault(node.name, set()).update(kinds)
            taken[leaf.name] = taken.get(leaf.name, 0) + 1
            chosen.append(victim)
            for name, value in victim.total.items():
                freed[name] = freed.get(name, 0.0) + value
            if self._fits(job, freed):
                return chosen if self._within_boundaries(my_path, job, remaining, involved) else None

    @staticmethod
    def _leveled(my_path: list[_Q], leaf: _Q) -> tuple[_Q, _Q]:
        """getLeveledQueues: the two queues where the reclaimer's and the victim's paths part."""
        mine, theirs = my_path[::-1], leaf.path()[::-1]
        pair = (mine[0], theirs[0])
        for a, b in zip(mine, theirs, strict=False):
            pair = (a, b)
            if a is not b:
                break
        return pair

    def _within_boundaries(self, my_path: list[_Q], job: _Job, remaining: Mapping[str, Vec],
                           involved: Mapping[str, set[int]]) -> bool:
        """reclaimingQueuesRemainWithinBoundaries: on each level the reclaimer's queue, with the job, must not end
        up more saturated (allocated / fair share, in a resource above 1) than a sibling it takes from."""
        mine = {i for i in range(3) if job.req[i] > 0}
        for node in my_path:
            after = _add(remaining.get(node.name, node.allocated), job.req)
            for name, left in remaining.items():
                sibling = self._q[name]
                if sibling is node or sibling.parent is not node.parent:
                    continue
                for i in involved.get(name, set()) | mine:
                    r_fair, s_fair = node.fair[i], sibling.fair[i]
                    ratio = _saturation(after[i], r_fair)
                    if ratio > 1 and s_fair > 0 and ratio >= _saturation(left[i], s_fair):
                        return False
            if not job.preemptible and not le(_add(node.allocated_np, job.req), node.limits.deserved):
                return False
        return True

    def _may_preempt(self, q: _Q, job: _Job) -> bool:
        return not self._over_quota(q, job) and any(v.workload.priority < job.workload.priority for _, v in q.running)

    def _preempt_victims(self, q: _Q, job: _Job) -> list[_Job] | None:
        if self._over_quota(q, job):
            return None  # IsNonPreemptibleJobOverQueueQuota; the queue's limit is checked with the victims gone
        chosen: list[_Job] = []
        freed: dict[str, float] = {}
        freed_vec = ZERO
        for _, victim in reversed(q.running):
            if victim.workload.priority >= job.workload.priority:
                continue
            chosen.append(victim)
            freed_vec = _add(freed_vec, victim.req)
            for name, value in victim.total.items():
                freed[name] = freed.get(name, 0.0) + value
            if self._fits(job, freed):
                shared = {node.name: freed_vec for node in q.path()}
                return chosen if not self._gate(q, job, shared) else None
        return None


def _saturation(allocated: float, fair: float) -> float:
    if fair == 0:
        return math.inf if allocated > 0 else 0.0
    return 0.0 if fair == UNLIMITED else allocated / fair


def load_kai(docs: Iterable[Mapping[str, Any]], capacity: Mapping[str, int]) -> KaiAdmission:
    """A KaiAdmission from raw manifests (KAI Queues are taken, other kinds ignored) and the cluster's capacity."""
    queues: dict[str, KaiQueue] = {}
    for doc in docs:
        if not is_queue(doc):
            continue
        queue = parse_queue(doc)
        if queue.name in queues:
            raise InputError("is defined twice", obj=f"Queue {queue.name}", field="metadata.name")
        queues[queue.name] = queue
    return KaiAdmission(queues.values(), capacity)
