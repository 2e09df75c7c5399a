"""Time series of one simulation: what the cluster looked like after every event batch (or every interval).

A `SeriesRecorder` watches a `Simulation` (it registers itself as an observer, called after each event
batch's decisions are carried out) and keeps, per sample: the allocated, useful and stranded fraction of
each resource, pods running and pending (gang members counted), PodGroups pending and preemptions so far.
Every value is read from counters the driver keeps anyway, so a sample costs O(resources) plus the PodGroups
still pending, never a pass over all pods. `to_json` adds the per-pod and per-group waits behind the
wait-time distributions. The JSON shape is documented in `docs/report.md` ("series").
"""

from __future__ import annotations

import math

from phalanx.sim.report_schema import Series
from phalanx.sim.simulation import Simulation

FRACTIONS = ("allocated", "useful", "stranded")
COUNTS = ("podsRunning", "podsPending", "groupsPending", "preemptions")


def _round(value: float) -> float:
    return round(float(value), 6)


class SeriesRecorder:
    """Samples a simulation after every event batch, or at most once per `interval` seconds of virtual time.

    With an interval the sample is taken at the first batch at or after each multiple of the interval (its
    time is that batch's time), so the series stays exact as a step function at the times it shows.
    """

    def __init__(self, interval: float | None = None) -> None:
        if interval is not None and not (interval > 0 and math.isfinite(interval)):
            raise ValueError(f"sample interval must be a positive number of seconds, got {interval!r}")
        self.interval = interval
        self.time: list[float] = []
        self.fractions: dict[str, dict[str, list[float]]] = {name: {} for name in FRACTIONS}
        self.counts: dict[str, list[int]] = {name: [] for name in COUNTS}
        self._next_due = -math.inf
        self._groups_seen = 0
        self.queue_share: dict[str, list[float]] = {}  # kueue and volcano profiles: queue -> share per sample
        self._groups_waiting: set[str] = set()

    def attach(self, sim: Simulation) -> SeriesRecorder:
        """Register with `sim` (before `sim.run()`); returns self."""
        sim.observers.append(self.observe)
        return self

    # --- sampling -------------------------------------------------------------------------------------

    def observe(self, sim: Simulation) -> None:
        """Called by the simulation after each event batch: sample when one is due."""
        if sim.now < self._next_due:
            return
        if self.interval is not None:
            self._next_due = (math.floor(sim.now / self.interval) + 1) * self.interval
        self._sample(sim, sim.now)

    def _groups_pending(self, sim: Simulation) -> int:
        """PodGroups that have not yet had minCount members running together (as summary.podGroups.pending)."""
        if len(sim.groups) != self._groups_seen:
            keys = list(sim.groups)
            self._groups_waiting.update(keys[self._groups_seen:])
            self._groups_seen = len(keys)
        started = {k for k in self._groups_waiting if k not in sim.groups or sim.groups[k].started_at is not None}
        self._groups_waiting -= started
        return len(self._groups_waiting)

    def _sample(self, sim: Simulation, time: float) -> None:
        n = len(self.time)
        self.time.append(_round(time))
        allocated = sim.books.allocated
        useful = sim.books.useful
        for name, total in sorted(sim.allocatable.items()):
            if name == "pods" or total <= 0:
                continue
            held = allocated.get(name, 0.0)
            working = useful.get(name, 0.0)
            values = {"allocated": held, "useful": working, "stranded": held - working}
            for field, value in values.items():
                column = self.fractions[field].get(name)
                if column is None:  # a resource first seen now (a node type that arrived later)
                    column = self.fractions[field][name] = [0.0] * n
                column.append(_round(min(max(value / total, 0.0), 1.0)))
        for column_set in self.fractions.values():  # resources that vanished keep their last length
            for column in column_set.values():
                if len(column) < n + 1:
                    column.append(0.0)
        running = sim.scheduler.bound_count()
        self.counts["podsRunning"].append(running)
        self.counts["podsPending"].append(sim.scheduler.pod_count() - running)
        self.counts["groupsPending"].append(self._groups_pending(sim))
        self.counts["preemptions"].append(sim.preemptions)
        if sim.gate is not None:
            self._queue_shares(sim, n)

    def _queue_shares(self, sim: Simulation, n: int) -> None:
        """Each queue's share of the cluster: the cpu (or, without cpu, the first resource) its admitted
        workloads ask, over the cluster's allocatable."""
        assert sim.gate is not None
        resource = "cpu" if sim.allocatable.get("cpu") else next(iter(sorted(sim.allocatable)), "cpu")
        total = sim.allocatable.get(resource, 0)
        for queue, held in sim.gate.usage().items():
            column = self.queue_share.get(queue)
            if column is None:
                column = self.queue_share[queue] = [0.0] * n
            column.append(_round(held.get(resource, 0) / total) if total > 0 else 0.0)
        for column in self.queue_share.values():
            if len(column) < n + 1:
                column.append(0.0)

    # --- output ---------------------------------------------------------------------------------------

    def to_json(self, sim: Simulation) -> Series:
        """The `series` block of a report; ends with a sample at `sim.end_time` so plots reach the end."""
        if not self.time or self.time[-1] < _round(sim.end_time):
            self._sample(sim, sim.end_time)
        pod_waits = sorted(_round(r.bound_at - r.created) for r in sim.pods.values()
                           if r.bound_at is not None and r.pod.node_name is None and not r.placeholder)
        group_waits = sorted(_round(w) for g in sim.groups.values() for w in g.waits)
        out: Series = {
            "sampleInterval": self.interval,
            "time": list(self.time),
            "allocated": self._fractions("allocated"),
            "useful": self._fractions("useful"),
            "stranded": self._fractions("stranded"),
            "podsRunning": list(self.counts["podsRunning"]),
            "podsPending": list(self.counts["podsPending"]),
            "groupsPending": list(self.counts["groupsPending"]),
            "preemptions": list(self.counts["preemptions"]),
            "waitSeconds": {"pods": pod_waits, "groups": group_waits},
        }
        if sim.gate is not None:
            out["queueShare"] = {q: list(v) for q, v in sorted(self.queue_share.items())}
        return out

    def _fractions(self, field: str) -> dict[str, list[float]]:
        return {name: list(values) for name, values in sorted(self.fractions[field].items())}
