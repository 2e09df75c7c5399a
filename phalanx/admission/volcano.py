"""Volcano-style queueing as an admission policy: which workloads leave Pending for Inqueue, which run, and which
are evicted for queue fairness. Phalanx's engine places what is admitted (allocate, backfill, gang and
predicates happen there, with the gang profile); this policy decides admission and eviction.

Restated from volcano-sh/volcano `pkg/scheduler` (commit ed72c7c8), function by function:
- proportion plugin (`plugins/proportion/proportion.go`, `OnSessionOpen`): each queue that has jobs gets a
  `deserved` share by water-filling: every round hands the remaining cluster capacity to the unsatisfied queues
  in proportion to `weight`, clips each queue to its `realCapability` (cluster total less every queue's
  guarantee, plus its own guarantee, capped by `capability`) and to its `request` (everything its jobs ask
  for, running or pending), raises it to its guarantee, and returns what was clipped to the pool; a queue
  whose request is met, or whose deserved stopped growing, leaves the game. `updateQueueAttrShare`: share =
  the largest allocated/deserved over resources. The queue order (`AddQueueOrderFn`) is queue priority,
  then lowest share. `JobEnqueueable`: the queue is Open and minimum + what the queue's jobs hold fits
  realCapability. `Allocatable`: allocated + the request fits deserved. `Overused`: deserved ≤ allocated.
  `Reclaimable`: a victim counts while its queue's allocation still exceeds its deserved share.
- overcommit plugin (`plugins/overcommit/overcommit.go`): a job is enqueued only if the minimums of the
  Inqueue jobs plus its own fit `factor` × cluster total less what is in use (factor 1.2 by default).
- priority plugin (`plugins/priority/priority.go`): job order by priority; a preemptor only takes from jobs of
  lower priority. drf (`plugins/drf/drf.go`): lower dominant share first. Ties: creation time
  (`framework/session_plugins.go` `JobOrderFn`). gang (`plugins/gang/gang.go`): the task-level preempt and
  reclaim actions only take pods above a job's minimum, so a workload with none to spare is no victim.
  conformance: kube-system pods and system-critical priority classes are never evicted.
- actions, in the conf's order: `enqueue` (`actions/enqueue/enqueue.go`: queues in queue order, one job at a
  time in job order, Pending → Inqueue when every JobEnqueueable permits; without enqueue, allocate promotes
  every Pending job, `actions/allocate/allocate.go`); `allocate`/`backfill` (here: an Inqueue workload runs
  when the queue's deserved share and the cluster's free capacity hold its whole request); `preempt`
  (`actions/preempt/preempt.go`: a starving job takes from lower-priority running jobs of its own queue);
  `reclaim` (`actions/reclaim/reclaim.go`: queues not overused, starving jobs that fit their queue's
  deserved share, victims from other reclaimable queues above their deserved share, lowest priority first).

Simplifications, also named by `not_modelled()`: capacity is one pool (the engine finds the nodes); an admitted
workload counts as allocated with its whole request; evictions remove whole workloads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from phalanx.admission.base import Admit, EvictWorkload, QueuedWorkload
from phalanx.admission.volcano_conf import VolcanoConf, default_conf, parse_volcano_conf
from phalanx.admission.volcano_objects import DEFAULT_QUEUE, VolcanoQueue, check_hierarchy, is_queue, parse_queue
from phalanx.errors import InputError

Resources = dict[str, float]
# Volcano's Resource.IsEmpty treats amounts below 0.1 (milli-units) as nothing.
_EMPTY = 0.1
_EPS = 1e-6
_MAX_ROUNDS = 10_000
_CRITICAL_CLASSES = ("system-cluster-critical", "system-node-critical")

PENDING, INQUEUE, RUNNING = "Pending", "Inqueue", "Running"


@dataclass(frozen=True, slots=True)
class QueueDemand:
    """What the proportion plugin knows of one queue in a session."""

    name: str
    weight: int
    request: Mapping[str, float]
    capability: Mapping[str, float] = field(default_factory=dict)  # a resource not named is not capped
    guarantee: Mapping[str, float] = field(default_factory=dict)


def _add(a: Mapping[str, float], b: Mapping[str, float], sign: float = 1.0) -> Resources:
    out = dict(a)
    for key, value in b.items():
        out[key] = out.get(key, 0.0) + sign * value
    return out


def _fits(need: Mapping[str, float], limit: Mapping[str, float], *, missing: float = 0.0) -> bool:
    """`need` ≤ `limit` on every resource `need` asks for (a zero request is no constraint), as Volcano's
    LessEqualWithDimension; a resource `limit` does not name counts as `missing`."""
    return all(v <= limit.get(k, missing) + _EPS for k, v in need.items() if v > 0)


def _le_all(a: Mapping[str, float], b: Mapping[str, float]) -> bool:
    """Every resource of `a` ≤ the same resource of `b` (absent = 0): Volcano's LessEqual with Zero default."""
    return all(v <= b.get(k, 0.0) + _EPS for k, v in a.items())


def real_capability(total: Mapping[str, float], total_guarantee: Mapping[str, float],
                    queue: QueueDemand) -> Resources:
    """The most a queue may hold: the cluster less all guarantees plus its own, capped by its capability
    (proportion.go: ExceededPart(total, totalGuarantee) + guarantee, then MinDimensionResource(capability)).
    A zero cpu or memory capability means no cap, as the plugin reads it."""
    out = {k: max(0.0, v - total_guarantee.get(k, 0.0)) for k, v in total.items()}
    out = _add(out, queue.guarantee)
    for key, cap in queue.capability.items():
        if key in ("cpu", "memory") and cap <= 0:
            continue
        out[key] = min(out.get(key, 0.0), cap)
    return out


def proportion_deserved(total: Mapping[str, float], queues: Sequence[QueueDemand],
                        total_guarantee: Mapping[str, float] | None = None) -> dict[str, Resources]:
    """Each queue's deserved resources: the proportion plugin's water-filling (see the module docstring).
    `total_guarantee` defaults to the sum of the given queues' guarantees (Volcano sums every queue's)."""
    if total_guarantee is None:
        total_guarantee = {}
        for q in queues:
            total_guarantee = _add(total_guarantee, q.guarantee)
    caps = {q.name: real_capability(total, total_guarantee, q) for q in queues}
    deserved: dict[str, Resources] = {q.name: {} for q in queues}
    remaining: Resources = {k: float(v) for k, v in total.items()}
    met: set[str] = set()
    for _ in range(_MAX_ROUNDS):
        total_weight = sum(q.weight for q in queues if q.name not in met)
        if total_weight == 0:
            break
        before = dict(remaining)
        increased: Resources = {}
        decreased: Resources = {}
        for q in queues:
            if q.name in met:
                continue
            old = deserved[q.name]
            new = _add(old, {k: v * q.weight / total_weight for k, v in remaining.items()})
            cap = caps[q.name]
            new = {k: min(v, cap[k]) if k in cap else v for k, v in new.items()}
            new = {k: min(v, q.request.get(k, 0.0)) for k, v in new.items()}
            for key, value in q.guarantee.items():
                new[key] = max(new.get(key, 0.0), value)
            deserved[q.name] = new
            if _le_all(q.request, new) or new == old:
                met.add(q.name)
            for key in set(new) | set(old):
                diff = new.get(key, 0.0) - old.get(key, 0.0)
                if diff > 0:
                    increased[key] = increased.get(key, 0.0) + diff
                elif diff < 0:
                    decreased[key] = decreased.get(key, 0.0) - diff
        remaining = {k: max(0.0, v) for k, v in _add(_add(remaining, decreased), increased, -1.0).items()}
        if all(v < _EMPTY for v in remaining.values()) or remaining == before:
            break
    return deserved


def share(allocated: Mapping[str, float], deserved: Mapping[str, float]) -> float:
    """The largest allocated/deserved over the deserved resources (0/0 = 0, x/0 = 1): updateQueueAttrShare."""
    best = 0.0
    for key, limit in deserved.items():
        used = allocated.get(key, 0.0)
        value = (1.0 if used > 0 else 0.0) if limit == 0 else used / limit
        best = max(best, value)
    return best


@dataclass
class _Job:
    workload: QueuedWorkload
    queue: str
    total: dict[str, int]
    minimum: dict[str, int]
    elastic: bool  # has pods above its gang minimum
    submitted: float
    state: str = PENDING
    reason: str = ""  # why the last session left it where it is


@dataclass
class _Stats:
    admitted: int = 0
    reclaimed: int = 0
    preempted: int = 0
    wait_sum: float = 0.0


def minimum_resources(workload: QueuedWorkload) -> dict[str, int]:
    """A workload's minResources: the requests of its gang minimum of pods in each pod set (as Volcano's job
    controller fills a PodGroup's minResources from the first minAvailable tasks)."""
    out: dict[str, int] = {}
    for ps in workload.pod_sets:
        count = ps.count if ps.min_count is None else min(ps.min_count, ps.count)
        for name, value in ps.requests.items():
            out[name] = out.get(name, 0) + value * count
    return out


class _Turns:
    """The actions pop the first queue, try one job and push the queue back: a queue keeps its turn while it
    orders strictly first, and queues that order alike take turns (the least recently served first)."""

    def __init__(self, names: Iterable[str]) -> None:
        self._last = {name: (-1, i) for i, name in enumerate(names)}  # initial turns follow the given order
        self._turn = 0

    def next(self, names: Iterable[str], key: Callable[[str], tuple[int, float]]) -> str:
        name = min(names, key=lambda n: (key(n), self._last[n]))
        self._last[name] = (self._turn, 0)
        self._turn += 1
        return name


class VolcanoAdmission:
    """Volcano's queueing (enqueue, allocate gate, preempt, reclaim) over Queue objects and a scheduler conf."""

    def __init__(self, queues: Iterable[VolcanoQueue], capacity: Mapping[str, int],
                 conf: VolcanoConf | None = None) -> None:
        self.conf = conf if conf is not None else default_conf()
        self.queues: dict[str, VolcanoQueue] = {q.name: q for q in queues}
        # Volcano creates the `default` queue itself (weight 1, reclaimable) for jobs that name none.
        self.queues.setdefault(DEFAULT_QUEUE, VolcanoQueue(DEFAULT_QUEUE))
        check_hierarchy(self.queues)
        self.capacity: dict[str, int] = dict(capacity)
        self._jobs: dict[str, _Job] = {}
        self._stats: dict[str, _Stats] = {}
        self._deserved: dict[str, Resources] = {}
        self._missing: set[str] = set()  # queue names workloads use that are not defined
        self._alloc: dict[str, Resources] = {}  # per queue: requests of its Running workloads

    # --- the AdmissionPolicy protocol ---

    def workload_priority(self, priority_class: str, priority: int) -> int:
        """Volcano reads no WorkloadPriorityClass: a workload has its pods' priority."""
        return priority

    def submit(self, workload: QueuedWorkload, now: float) -> None:
        self.finished(workload.key, now)
        queue = workload.queue or DEFAULT_QUEUE
        pod_sets = workload.pod_sets
        elastic = any(ps.min_count is not None and ps.min_count < ps.count for ps in pod_sets)
        self._jobs[workload.key] = _Job(workload, queue, workload.total(), minimum_resources(workload), elastic, now)
        if queue not in self.queues:
            self._missing.add(queue)

    def finished(self, key: str, now: float) -> None:
        job = self._jobs.pop(key, None)
        if job is not None and job.state == RUNNING:
            self._alloc[job.queue] = _add(self._alloc[job.queue], job.total, -1.0)

    def nodes_changed(self, total: Mapping[str, int]) -> None:
        """The cluster's allocatable changed (nodes added, removed, cordoned): the next cycle uses the new total."""
        self.capacity = dict(total)

    def cycle(self, now: float) -> list[Admit | EvictWorkload]:
        out: list[Admit | EvictWorkload] = []
        self._deserved = self._compute_deserved() if self._proportion else {}
        enqueue_ran = False
        for action in self.conf.actions:
            if action == "enqueue":
                self._enqueue()
                enqueue_ran = True
            elif action in ("allocate", "backfill"):
                if not enqueue_ran:  # allocate.go: no enqueue action, so Pending jobs go straight to Inqueue
                    for job in self._jobs.values():
                        if job.state == PENDING and job.queue in self.queues:
                            job.state = INQUEUE
                self._allocate(now, out)
            elif action in ("preempt", "gangpreempt"):
                self._evict_for_starving(now, out, reclaim=False, gang_aware=action == "gangpreempt")
            elif action in ("reclaim", "gangreclaim"):
                self._evict_for_starving(now, out, reclaim=True, gang_aware=action == "gangreclaim")
        return out

    def queue_rows(self) -> list[dict[str, object]]:
        rows: list[dict[str, object]] = []
        for name in sorted({*self.queues, *self._missing}):
            queue = self.queues.get(name)
            jobs = [j for j in self._jobs.values() if j.queue == name]
            stats = self._stats.get(name, _Stats())
            allocated = self._allocated(name)
            deserved = self._deserved.get(name, {})
            rows.append({
                "queue": name,
                "state": queue.state if queue else "Missing",
                "weight": queue.weight if queue else 0,
                "admitted": stats.admitted,
                "pending": sum(1 for j in jobs if j.state != RUNNING),
                "inqueue": sum(1 for j in jobs if j.state == INQUEUE),
                "running": sum(1 for j in jobs if j.state == RUNNING),
                "allocated": {k: round(v) for k, v in sorted(allocated.items()) if v},
                "deserved": {k: round(v) for k, v in sorted(deserved.items())},
                "share": round(share(allocated, deserved), 4) if self._proportion else None,
                "reclaimed": stats.reclaimed,
                "preempted": stats.preempted,
                "mean_wait": stats.wait_sum / stats.admitted if stats.admitted else None,
            })
        return rows

    def pending_reason(self, key: str) -> str:
        job = self._jobs.get(key)
        if job is None or job.state == RUNNING:
            return ""
        queue = self.queues.get(job.queue)
        if queue is None:
            return f"queue {job.queue} is not defined: the PodGroup stays Pending (Volcano's webhook refuses it)"
        if not queue.open:
            return f"queue {job.queue} is {queue.state}: only an Open queue takes jobs"
        return job.reason or f"{job.state}: waiting for its turn in queue {job.queue}"

    def not_modelled(self) -> list[str]:
        out = self.conf.not_modelled()
        capacity_plugin = self.conf.has_plugin("capacity")
        for name, queue in sorted(self.queues.items()):
            out.extend(f"Queue {name}: {f} (not modelled)" for f in queue.unmodelled)
            if queue.parent:
                out.append(f"Queue {name}: spec.parent (the proportion plugin shares the cluster among queues "
                           "flat; hierarchical sharing is the capacity plugin's, not modelled)")
            if queue.deserved and not capacity_plugin:
                out.append(f"Queue {name}: spec.deserved (read by the capacity plugin only; proportion derives "
                           "deserved from weights)")
        for name in sorted(self._missing):
            out.append(f"Queue {name} is named by workloads but not defined: they stay Pending, as in Volcano")
        if self.conf.has_action("reclaim") or self.conf.has_action("preempt"):
            out.append("reclaim/preempt evict whole workloads (Volcano's task-level actions evict single pods)")
        if self.conf.has_action("allocate") or self.conf.has_action("backfill"):
            out.append("allocate/backfill: the cluster is one pool of the given capacity; an admitted workload "
                       "counts as allocated with its whole request (the engine finds the nodes)")
        if not self._proportion and (self.conf.has_action("reclaim") or self.conf.has_action("gangreclaim")):
            out.append("reclaim without the proportion plugin (no deserved share to reclaim towards): skipped")
        return out

    # --- sessions ---

    @property
    def _proportion(self) -> bool:
        return self.conf.has_plugin("proportion")

    def _stat(self, queue: str) -> _Stats:
        return self._stats.setdefault(queue, _Stats())

    def _allocated(self, queue: str) -> Resources:
        return self._alloc.get(queue, {})

    def _used(self) -> Resources:
        out: Resources = {}
        for alloc in self._alloc.values():
            out = _add(out, alloc)
        return out

    def _compute_deserved(self) -> dict[str, Resources]:
        requests: dict[str, Resources] = {}
        for job in self._jobs.values():
            if job.queue in self.queues:
                requests[job.queue] = _add(requests.get(job.queue, {}), job.total)
        total_guarantee: Resources = {}
        for queue in self.queues.values():
            total_guarantee = _add(total_guarantee, queue.guarantee)
        demands = [QueueDemand(name, self.queues[name].weight, requests[name],
                               {k: float(v) for k, v in self.queues[name].capability.items()},
                               {k: float(v) for k, v in self.queues[name].guarantee.items()})
                   for name in sorted(requests)]
        total = {k: float(v) for k, v in self.capacity.items()}
        return proportion_deserved(total, demands, total_guarantee)

    def _queue_key(self, name: str) -> tuple[int, float]:
        """QueueOrderFn: higher queue priority first, then (with proportion) lower share."""
        queue = self.queues[name]
        used = share(self._allocated(name), self._deserved.get(name, {})) if self._proportion else 0.0
        return (-queue.priority, used)

    def _job_key(self, job: _Job) -> tuple[int, float, str]:
        """JobOrderFn: priority (priority plugin), drf share (a job not running holds nothing, so 0), creation."""
        priority = job.workload.priority if self.conf.has_plugin("priority") else 0
        return (-priority, job.workload.created, job.workload.key)

    def _ordered_queues(self, state: str) -> list[str]:
        names = {j.queue for j in self._jobs.values() if j.state == state and j.queue in self.queues}
        return sorted(names, key=lambda n: (self._queue_key(n), n))

    def _jobs_in(self, queue: str, state: str) -> list[_Job]:
        return sorted((j for j in self._jobs.values() if j.queue == queue and j.state == state), key=self._job_key)

    # --- enqueue ---

    def _enqueue(self) -> None:
        held: dict[str, Resources] = {}  # per queue: minimums of Inqueue and Running jobs (allocated+inqueue−elastic)
        inqueue_total: Resources = {}  # minimums of Inqueue jobs not yet running (overcommit's inqueueResource)
        for job in self._jobs.values():
            if job.state in (INQUEUE, RUNNING):
                held[job.queue] = _add(held.get(job.queue, {}), job.minimum)
            if job.state == INQUEUE:
                inqueue_total = _add(inqueue_total, job.minimum)
        factor = self.conf.overcommit_factor if self._flag("overcommit", "enableJobEnqueued") else None
        proportion_gate = self._proportion and self._flag("proportion", "enableJobEnqueued")
        idle: Resources = {}
        if factor is not None:
            idle = _add({k: v * factor for k, v in self.capacity.items()}, self._used(), -1.0)
        total_guarantee: Resources = {}
        for queue in self.queues.values():
            total_guarantee = _add(total_guarantee, queue.guarantee)
        total = {k: float(v) for k, v in self.capacity.items()}
        pending = {name: self._jobs_in(name, PENDING)[::-1] for name in self._ordered_queues(PENDING)}
        turns = _Turns(pending)
        while pending:
            name = turns.next(pending, self._queue_key)
            queue = self.queues[name]
            job = pending[name].pop()
            ok = queue.open
            if ok and proportion_gate:
                cap = real_capability(total, total_guarantee, QueueDemand(
                    name, queue.weight, {}, {k: float(v) for k, v in queue.capability.items()},
                    {k: float(v) for k, v in queue.guarantee.items()}))
                ok = _fits(_add(held.get(name, {}), job.minimum), cap)
                job.reason = "" if ok else (f"Pending: not enqueued, its minimum and what queue {name}'s jobs hold "
                                            "exceed the queue's capability (proportion's JobEnqueueable)")
            if ok and factor is not None:
                ok = _fits(_add(inqueue_total, job.minimum), idle)
                job.reason = "" if ok else ("Pending: not enqueued, the Inqueue jobs' minimums and its own exceed "
                                            "the cluster's idle resources (overcommit's JobEnqueueable)")
            if ok:
                job.state = INQUEUE
                held[name] = _add(held.get(name, {}), job.minimum)
                inqueue_total = _add(inqueue_total, job.minimum)
            elif queue.dequeue_strategy == "fifo":
                pending[name] = []  # the head blocks the rest of a FIFO queue
            if not pending[name]:
                del pending[name]

    # --- allocate ---

    def _fits_queue(self, job: _Job, allocated: Mapping[str, float]) -> bool:
        """proportion's Allocatable: the queue is Open and allocated + the job's request fits deserved."""
        if not self._proportion:
            return True
        if not self.queues[job.queue].open:
            return False
        return _fits(_add(allocated, job.total), self._deserved.get(job.queue, {}))

    def _fits_cluster(self, job: _Job, used: Mapping[str, float]) -> bool:
        return _fits(_add(used, job.total), {k: float(v) for k, v in self.capacity.items()})

    def _run(self, job: _Job, now: float, out: list[Admit | EvictWorkload]) -> None:
        job.state = RUNNING
        self._alloc[job.queue] = _add(self._alloc.get(job.queue, {}), job.total)
        stats = self._stat(job.queue)
        stats.admitted += 1
        stats.wait_sum += max(0.0, now - job.submitted)
        out.append(Admit(job.workload.key, job.queue))

    def _allocate(self, now: float, out: list[Admit | EvictWorkload]) -> None:
        """allocate.go: the queue first in queue order offers its next job in job order; the share it gains
        may move the queue back. A job that does not fit waits (Inqueue) for the next cycle."""
        waiting = {name: self._jobs_in(name, INQUEUE)[::-1] for name in self._ordered_queues(INQUEUE)}
        turns = _Turns(waiting)
        used = self._used()
        while waiting:
            name = turns.next(waiting, self._queue_key)
            job = waiting[name].pop()
            if not waiting[name]:
                del waiting[name]
            if not self._fits_queue(job, self._allocated(name)):
                job.reason = (f"Inqueue: its request and what queue {name} holds exceed the queue's deserved "
                              "share (proportion's Allocatable)")
            elif not self._fits_cluster(job, used):
                job.reason = "Inqueue: the cluster's free resources do not hold its request"
            else:
                self._run(job, now, out)
                used = _add(used, job.total)

    # --- preempt and reclaim ---

    def _flag(self, plugin: str, flag: str) -> bool:
        """Whether `plugin` is on with its `flag` extension point enabled (the default)."""
        conf = self.conf.plugin(plugin)
        return conf is not None and conf.enabled(flag)

    def _evictable(self, victim: _Job, gang_aware: bool, reclaim: bool) -> bool:
        gang_flag = "enableReclaimable" if reclaim else "enablePreemptable"
        if self._flag("gang", gang_flag) and not gang_aware and not victim.elastic:
            return False  # gang.go: the task-level actions never take a job below its minimum
        if self.conf.has_plugin("conformance"):
            wl = victim.workload
            if wl.namespace == "kube-system" or wl.priority_class in _CRITICAL_CLASSES:
                return False
        return True

    def _evict_for_starving(self, now: float, out: list[Admit | EvictWorkload], *, reclaim: bool,
                            gang_aware: bool) -> None:
        if reclaim and not self._proportion:
            return
        # Every candidate victim in victim order (lowest priority, then newest), filtered per preemptor below.
        running = sorted((j for j in self._jobs.values()
                          if j.state == RUNNING and self._evictable(j, gang_aware, reclaim)),
                         key=lambda v: (v.workload.priority, -v.workload.created, v.workload.key))
        for name in self._ordered_queues(INQUEUE):
            queue = self.queues[name]
            for job in self._jobs_in(name, INQUEUE):
                if reclaim and _le_all(self._deserved.get(name, {}), self._allocated(name)):
                    break  # Overused: a queue at or above its deserved share reclaims nothing
                if reclaim and not (queue.open and self._fits_queue(job, self._allocated(name))):
                    continue  # Preemptive: the job must fit within its own queue's deserved share
                victims = self._victims(job, running, reclaim=reclaim)
                if victims is None:
                    continue
                reason = "Reclaimed" if reclaim else "Preempted"
                for victim in victims:
                    self.finished(victim.workload.key, now)  # the driver re-submits it once its pods are gone
                    stats = self._stat(victim.queue)
                    if reclaim:
                        stats.reclaimed += 1
                    else:
                        stats.preempted += 1
                    out.append(EvictWorkload(victim.workload.key, reason,
                                     f"{reason.lower()} by {job.workload.key} (queue {name})", by=job.workload.key))
                self._run(job, now, out)

    def _victims(self, job: _Job, running: list[_Job], *, reclaim: bool) -> list[_Job] | None:
        """Running workloads to evict so that `job` fits the cluster, lowest priority and newest first; None if
        even all candidates would not make room (the action's statement is discarded)."""
        if not reclaim and not self.conf.has_plugin("priority"):
            return None
        used = self._used()
        if self._fits_cluster(job, used):
            return None  # room already: only allocate's gates hold it back, and evicting would not help
        if reclaim:
            pool = [v for v in running if self._jobs.get(v.workload.key) is v
                    and v.queue != job.queue and self.queues[v.queue].reclaimable]
        else:
            pool = [v for v in running if self._jobs.get(v.workload.key) is v
                    and v.queue == job.queue and v.workload.priority < job.workload.priority]
        allocations: dict[str, Resources] = {}
        chosen: list[_Job] = []
        for victim in pool:
            if reclaim:
                alloc = allocations.setdefault(victim.queue, self._allocated(victim.queue))
                if _le_all(alloc, self._deserved.get(victim.queue, {})):
                    continue  # proportion's Reclaimable: that queue is within its deserved share
                allocations[victim.queue] = _add(alloc, victim.total, -1.0)
            chosen.append(victim)
            used = _add(used, victim.total, -1.0)
            if self._fits_cluster(job, used):
                return chosen
        return None


def load_volcano(docs: Iterable[Mapping[str, Any]], conf: VolcanoConf | str | Mapping[str, Any] | None = None, *,
                 capacity: Mapping[str, int]) -> VolcanoAdmission:
    """A VolcanoAdmission from raw manifests (Queues are taken, other kinds ignored), an optional conf (parsed,
    YAML text, a mapping or a ConfigMap; Volcano's default conf when None) and the cluster's allocatable total."""
    queues: dict[str, VolcanoQueue] = {}
    for doc in docs:
        if not is_queue(doc):
            continue
        queue = parse_queue(doc)
        if queue.name in queues:
            raise InputError("is defined twice", obj=f"Queue {queue.name}", field="metadata.name")
        queues[queue.name] = queue
    parsed = conf if isinstance(conf, VolcanoConf) or conf is None else parse_volcano_conf(conf)
    return VolcanoAdmission(queues.values(), capacity, parsed)
