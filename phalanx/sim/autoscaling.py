"""The cluster autoscaler in the simulator: it scans every 10 s of simulated time while something may change
(cluster-autoscaler's `--scan-interval`), asks phalanx.autoscale.cluster_autoscaler for scale-ups (the pods the
scheduler found unschedulable) and scale-downs, turns them into Node arrivals after the group's provisioning
delay and into drained, deleted nodes, and keeps the books the report shows: nodes added and removed, node-hours,
cost, and node-hours of added nodes that no pod ever used (partial scale-ups)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from phalanx.api.names import first_few
from phalanx.api.objects import Node, Pod
from phalanx.autoscale.cluster_autoscaler import (
    ClusterAutoscaler,
    NodeRecord,
    cost,
    idle_node_hours,
    node_hours,
    nodes_added,
)
from phalanx.autoscale.nodegroups import MAX_GROUP_SIZE, NodeGroup, group_of
from phalanx.scheduler.port import EnginePort
from phalanx.sim.event_queue import ARRIVAL
from phalanx.sim.records import GroupRecord, PodRecord
from phalanx.sim.report_schema import Autoscaler

SCAN_INTERVAL = 10.0  # cluster-autoscaler's --scan-interval default
# What a pending pod may ask for that the scale-up estimate does not model (cluster_autoscaler.py says why).
UNSEEN: dict[str, Callable[[Pod], bool]] = {
    "topology spread constraints": lambda pod: bool(pod.placement.spread),
    "inter-pod affinity": lambda pod: pod.placement.pod_affinity is not None,
    "DRA resource claims": lambda pod: bool(pod.resource_claims),
    "GPU shares": lambda pod: pod.gpu is not None,
}


@dataclass(slots=True)
class AutoscalerScan:
    """A scan of the cluster autoscaler is due."""


class ScanEvents(Protocol):
    """The simulation's event queue, as the autoscaler uses it: it queues its scans and the nodes it adds."""

    def push(self, time: float, priority: int, event: AutoscalerScan | Node) -> None: ...
    def only(self, test: Callable[[object], bool]) -> bool: ...


class SimulationView(Protocol):
    """What the cluster autoscaler reads and does of the simulation (simulation.py's Simulation)."""

    @property
    def now(self) -> float: ...
    @property
    def until(self) -> float | None: ...
    @property
    def events(self) -> ScanEvents: ...
    @property
    def scheduler(self) -> EnginePort: ...
    @property
    def pods(self) -> Mapping[str, PodRecord]: ...
    @property
    def groups(self) -> Mapping[str, GroupRecord]: ...
    @property
    def group_counts(self) -> Mapping[str, list[int]]: ...  # group key -> [members live, live or done]

    def drain_node(self, name: str, pods: list[Pod], by: str) -> None: ...


class NodeAutoscaling:
    skip_quiet_scans = True  # tests turn it off to compare with a scan every SCAN_INTERVAL

    def __init__(self, groups: Iterable[NodeGroup], initial: Iterable[Node], mode: str, filters: Sequence[str],
                 plugin_args: Mapping[str, Mapping[str, Any]]) -> None:
        """`filters` and `plugin_args`: the scheduler profile's, whose node-static Filters scale-up honours."""
        self.groups = {g.name: g for g in groups}
        self.autoscaler = ClusterAutoscaler(list(self.groups.values()), mode="gang" if mode == "gang" else "pod",
                                            filters=filters, plugin_args=plugin_args)
        self.mode = mode
        self.nodes: dict[str, Node] = {}
        self.size: Counter[str] = Counter()
        self.upcoming: Counter[str] = Counter()
        self.next_index = {g.name: g.min_size for g in self.groups.values()}
        self.records: dict[str, NodeRecord] = {}
        self._members: list[tuple[int, str]] | None = None  # group nodes present: (index, group name)
        self._member_rows: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._last_version: tuple[int, int, int] | None = None  # the cluster's at the last scale-down answer
        self._unneeded: list[str] = []
        self._idle_ask: tuple[object, ...] | None = None  # the last scale-up question that added nothing
        self._idle_unhelped: dict[str, str] = {}
        for node in initial:
            self.arrived(node, 0.0)
        self.unschedulable: set[str] = set()  # pods the scheduler could not place, not yet bound or gone
        self._due = 0.0
        self._woken: set[float] = set()
        self._arriving: dict[str, float] = {}  # nodes being provisioned -> when they become Ready
        self._quiet_from: float | None = None  # the scan after which scans that would change nothing are skipped
        self.unhelped: dict[str, str] = {}  # pod or gang key -> why no node group helped it at the latest scan
        self.removed = 0
        self.unseen: dict[str, set[str]] = {}  # what the template check ignores -> pending pods that used it
        self._added_for: dict[str, tuple[str, ...]] = {}  # node added -> the pending pods it was added for
        self._futile: set[tuple[str, ...]] = set()  # pending pods whose added nodes went away unused

    def arrived(self, node: Node, now: float) -> None:
        self.nodes[node.name] = node
        self._members = None
        group = group_of(node)
        if group is None:
            return
        self.size[group] += 1
        if node.name in self.records:
            self.upcoming[group] -= 1
            self._arriving.pop(node.name, None)
        else:  # a min-size node, there from the start
            self.records[node.name] = NodeRecord(node.name, group, added=now)

    def used(self, node: str) -> None:
        record = self.records.get(node)
        if record is not None:
            record.used = True

    def scan(self, sim: SimulationView) -> None:
        """Called after each event batch: a scan when one is due (at most one per SCAN_INTERVAL)."""
        now = sim.now
        if self._quiet_from is not None:  # the skipped scans keep their times: the next is on their grid
            self._due = max(self._due, self._on_grid(now))
        if now < self._due:
            self._wake(sim, self._due)
            return
        self._due = now + SCAN_INTERVAL
        self._quiet_from = None
        wake: list[float] = []
        if self._scale_up(sim) or (self._arriving and not self.skip_quiet_scans):
            wake.append(now + SCAN_INTERVAL)
        elif self._arriving and self.skip_quiet_scans:
            # Scans while nodes are provisioning ask the same question and get the same answer until the first
            # of them arrives or some event calls `scan`: skip to the first scan at or after that arrival (a
            # scan every 10 s through a provisioning delay of 292 years never ended).
            self._quiet_from = now
            wake.append(self._on_grid(min(self._arriving.values())))
        if any(self.size[g] > group.min_size for g, group in self.groups.items()):
            if self._scale_down(sim):
                wake.append(now + SCAN_INTERVAL)
            unneeded = self.autoscaler.unneeded_since()
            if unneeded:
                wake.append(max(now + SCAN_INTERVAL, min(unneeded.values()) + self.autoscaler.scale_down_delay))
        if wake:
            self._wake(sim, min(wake))

    def _on_grid(self, time: float) -> float:
        """The first time at or after `time` of the scans every SCAN_INTERVAL from `_quiet_from`."""
        assert self._quiet_from is not None
        return self._quiet_from + SCAN_INTERVAL * max(math.ceil((time - self._quiet_from) / SCAN_INTERVAL), 1)

    def unschedulable_pod(self, sim: SimulationView, key: str) -> None:
        """The scheduler could not place the pod: a scan looks at it as soon as one is allowed."""
        self.unschedulable.add(key)
        self._wake(sim, max(sim.now, self._due))

    def _wake(self, sim: SimulationView, time: float) -> None:
        if time not in self._woken:
            self._woken.add(time)
            sim.events.push(time, ARRIVAL, AutoscalerScan())

    def _scale_up(self, sim: SimulationView) -> bool:
        pending: list[Pod] = []
        for key in sorted(self.unschedulable):
            record = sim.pods.get(key)
            if record is None or record.phase != "Pending" or record.node is not None:
                self.unschedulable.discard(key)
                continue
            pending.append(record.pod)
        self.unhelped.clear()  # what the latest scan could not help
        if not pending:
            return False
        self._note_unseen(pending)
        running = {k: counts[0] for k, counts in sim.group_counts.items()}
        # Nothing changed since a scan that added nothing (the same pods wait for the same upcoming nodes):
        # the same answer.
        asked = (tuple(p.key for p in pending), tuple(sorted(self.upcoming.items())),
                 tuple(sorted(self.size.items())), tuple(sorted(running.items())))
        if asked == self._idle_ask:
            self.unhelped.update(self._idle_unhelped)
            return False
        if sim.until is None and asked[0] in self._futile and sim.events.only(self._own_event):
            # Cluster-autoscaler would add the same nodes again and remove them again, for ever. Without --until
            # the run ends once nothing else can change, so these pods get no more nodes.
            for pod in pending:
                self.unhelped[pod.key] = ("nodes added for it were removed unused; without --until they are not "
                                          "added again")
            return False
        groups = {k: g.group for k, g in sim.groups.items()}
        ups = self.autoscaler.scale_up(pending, groups, dict(self.upcoming), sizes=dict(self.size),
                                       running_members=running)
        for miss in self.autoscaler.unhelped:
            self.unhelped[miss.key] = miss.reason
        self._idle_ask, self._idle_unhelped = (None, {}) if ups else (asked, dict(self.unhelped))
        for up in ups:
            group = self.groups[up.group]
            for _ in range(up.count):
                index = self.next_index[up.group]
                self.next_index[up.group] += 1
                node = group.new_node(index, arrival=sim.now + group.provisioning_delay)
                self.records[node.name] = NodeRecord(node.name, up.group, added=sim.now)
                self._added_for[node.name] = asked[0]
                self.upcoming[up.group] += 1
                self._arriving[node.name] = node.arrival
                sim.events.push(node.arrival, ARRIVAL, node)
        return bool(ups)

    def _own_event(self, event: object) -> bool:
        return isinstance(event, AutoscalerScan) or (isinstance(event, Node) and event.name in self.records)

    def _note_unseen(self, pending: list[Pod]) -> None:
        """Remember the pending pods whose scale-up ignored something they ask for (the template check runs
        the node-static filters and the resource fit only), for the report and stderr."""
        for pod in pending:
            for what, used in UNSEEN.items():
                if used(pod):
                    self.unseen.setdefault(what, set()).add(pod.key)

    def _scale_down(self, sim: SimulationView) -> bool:
        cluster = sim.scheduler.node_state()
        if self._members is None:
            self._last_version = None
            self._members = [(cluster.index[name], group) for name, node in self.nodes.items()
                             if (group := group_of(node)) is not None and group in self.groups]
            self._member_rows = np.array([i for i, _ in self._members], dtype=np.int64)
        members, at = self._members, self._member_rows
        if not members:
            return False
        level = np.zeros(len(members))
        for resource in ("cpu", "memory"):
            col = cluster.column.get(resource)
            if col is not None:
                allocatable = cluster.allocatable[at, col]
                used = np.divide(cluster.requested[at, col], allocatable, out=np.zeros(len(members)),
                                 where=allocatable > 0)
                np.maximum(level, used, out=level)
        below = level < self.autoscaler.utilization_threshold
        levels = {int(i): float(v) for i, v in zip(at[below], level[below], strict=True)}
        on_node = {i: [record.pod for key in cluster.on_node[i] if (record := sim.pods.get(key)) is not None]
                   for i in levels}
        # The answer depends only on the pods' placement and the nodes: unchanged since the last scan, reuse it.
        version = (cluster.generation, cluster.version, len(sim.groups))
        if version != self._last_version:
            groups = {k: g.group for k, g in sim.groups.items()}
            self._unneeded = self.autoscaler.unneeded_in(cluster, members, levels, lambda i: on_node.get(i, []),
                                                         groups)
            self._last_version = version
        gone = self.autoscaler.due(self._unneeded, sim.now)
        for name in gone:
            index = cluster.index[name]
            self._remove(sim, name, on_node[index])
        return bool(gone)

    def _remove(self, sim: SimulationView, name: str, pods: list[Pod]) -> None:
        """Drain the node (its pods evicted as cluster-autoscaler does, DaemonSet pods deleted) and delete it."""
        sim.drain_node(name, pods, "cluster-autoscaler")
        node = self.nodes.pop(name)
        self._members = None
        group = group_of(node)
        if group is not None:
            self.size[group] -= 1
        self.records[name].removed = sim.now
        self.removed += 1
        wanted = self._added_for.pop(name, None)
        if wanted is not None and not self.records[name].used:
            self._futile.add(wanted)

    def report(self, end: float) -> Autoscaler:
        records = list(self.records.values())
        added = [r for r in records if r.added > 0 or r.name not in self._initial_names()]
        costs = cost(self.groups, records, end)
        return {
            "scaleUp": self.mode,
            "nodesAdded": nodes_added(added),
            "nodesRemoved": self.removed,
            "nodeHours": {k: round(v, 6) for k, v in sorted(node_hours(records, end).items())},
            "cost": {k: round(v, 6) for k, v in sorted(costs.items())},
            "totalCost": round(sum(costs.values()), 6),
            "idleNodeHours": round(idle_node_hours(added, end), 6),
            "unhelped": [{"name": k, "reason": v} for k, v in sorted(self.unhelped.items())],
            "notModelled": [*(f"{what} of {len(keys)} pending pod(s) ({first_few(sorted(keys))}): scale-up's "
                              "template check does not see them" for what, keys in sorted(self.unseen.items())),
                            *self._capped()],
        }

    def _capped(self) -> list[str]:
        return [f"node group {name}: max-size {group.max_size_given} is more than {MAX_GROUP_SIZE} nodes, the most "
                f"Kubernetes supports in a cluster: capped at {group.max_size}"
                for name, group in sorted(self.groups.items()) if group.max_size_given is not None]

    def _initial_names(self) -> set[str]:
        return {g.node_name(i) for g in self.groups.values() for i in range(g.min_size)}
