"""ClusterState: nodes as NumPy arrays (nodes × resources) plus the pods bound to them.

Everything the scheduler reads about nodes lives here in vector form: allocatable and requested
resources (millicores for cpu, base units otherwise, and one `pods` column), the non-zero requests
kube-scheduler scores with, cordons, label ids per key and taint sets. Binding (assume) and unbinding
(forget) change one row (and the same node's column of the resources × nodes copies the filter and the
scores read), and log the node, so that per-node results can be brought up to date node by node. The
state never decides anything; it only holds and checks.

Trial placements (a PodGroup cycle, preemption's dry runs and reprieves) run inside `trial()`: every change
made there, by the state and by its extensions (DRA devices, GPU shares), is journaled with its exact
inverse, and undone when the trial ends unless it is kept. The state after an abandoned trial is the state
before it, whatever the trial did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar, cast

import numpy as np
import numpy.typing as npt

from phalanx.api.objects import Node, Pod, Taint
from phalanx.cluster.labels import LabelIndex
from phalanx.cluster.pods import PodIndex

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
BASE_RESOURCES = ("cpu", "memory", "pods")
E = TypeVar("E")


class StateCorrupted(ValueError):
    """An invariant of the books is broken by the engine itself (a pod bound twice, a node over-committed by a
    binding the engine decided, a device handed out twice). Nothing is rolled back or retried for it: the
    engine's state is wrong, and whatever runs the engine stops."""


@dataclass(frozen=True, slots=True)
class PodDemand:
    """A pod's requests as vectors over the state's resource columns."""

    requests: IntArray      # what the fit filter checks, with 1 in the `pods` column
    nonzero: IntArray       # cpu and memory with kube-scheduler's non-zero defaults, for scoring
    columns: tuple[int, ...]  # columns the pod requests (pods column included)


@dataclass(slots=True)
class Trial:
    """One `ClusterState.trial()` block: its changes' inverses, and whether to keep the changes."""

    undo: list[Callable[[], object]] = field(default_factory=list)
    kept: bool = False

    def keep(self) -> None:
        """Keep the block's changes (a kept inner trial's changes still go if its outer trial does not keep)."""
        self.kept = True


class ClusterState:
    """Nodes as arrays; bound pods by key."""

    def __init__(self, nodes: Sequence[Node] = (), resources: Iterable[str] = ()) -> None:
        self.resources: list[str] = []
        self.column: dict[str, int] = {}
        for name in (*BASE_RESOURCES, *resources):
            self._add_column_name(name)
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self.allocatable: IntArray = np.zeros((0, len(self.resources)), dtype=np.int64)
        self.requested: IntArray = np.zeros((0, len(self.resources)), dtype=np.int64)
        self.nonzero_requested: IntArray = np.zeros((0, 2), dtype=np.int64)
        self.unschedulable: BoolArray = np.zeros(0, dtype=bool)
        self.labels = LabelIndex()
        self.taint_sets: list[tuple[Taint, ...]] = [()]
        self._taint_set_ids: dict[tuple[Taint, ...], int] = {(): 0}
        self.taint_set: npt.NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self.version = 0
        self.bound: dict[str, tuple[int, PodDemand]] = {}
        # The bound pods themselves, for the rules between pods (pod_index); `affinity_pods` counts those that
        # carry pod (anti-)affinity terms, `terminating` those evicted and not gone yet.
        self.pods: dict[str, Pod] = {}
        self.on_node: list[dict[str, None]] = []  # keys of the pods bound to each node, in binding order
        self.affinity_pods = 0
        self.terminating: set[str] = set()
        self._pod_index: PodIndex | None = None
        # Typed extensions (DRA devices, per-GPU shares), by their class, made on first use (`extension`).
        self._extensions: dict[type, object] = {}
        self._demand_cache: dict[tuple[tuple[str, int], ...], PodDemand] = {}
        self._last_demand: tuple[Pod, dict[str, int], PodDemand] | None = None
        # Free capacity (allocatable − requested) and allocatable laid out resources × nodes, one contiguous
        # row per resource, which is how the fit filter and the scores read them. Kept in step with the
        # arrays above by every method that changes them.
        self.free_by_resource: IntArray = np.zeros((len(self.resources), 0), dtype=np.int64)
        self.allocatable_by_resource: IntArray = np.zeros((len(self.resources), 0), dtype=np.int64)
        self.generation = 0  # bumped by every change to the resource arrays (assume, forget, new nodes)
        # Which nodes' requests changed, in order, so that per-node results (scores) can be brought up to
        # date node by node: `changes_since(mark)` with a mark from `change_mark()`. New nodes or resource
        # columns start a new layout, after which every earlier mark is stale.
        self.layout = 0
        self._changes: list[int] = []
        self._changes_base = 0
        self._positive: dict[int, bool] = {}
        self._journal: list[Callable[[], object]] | None = None  # the open trial's undo steps
        self.add_nodes(nodes)

    # --- nodes ----------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.names)

    def _add_column_name(self, name: str) -> int:
        if name not in self.column:
            self.column[name] = len(self.resources)
            self.resources.append(name)
        return self.column[name]

    def ensure_resource(self, name: str) -> int:
        """The column of a resource, adding a zero column when no node offered it yet."""
        if name in self.column:
            return self.column[name]
        col = self._add_column_name(name)
        pad = np.zeros((len(self.names), 1), dtype=np.int64)
        self.allocatable = np.hstack([self.allocatable, pad])
        self.requested = np.hstack([self.requested, pad])
        self._demand_cache.clear()
        self._last_demand = None
        self.bound = {k: (n, self._widen(d)) for k, (n, d) in self.bound.items()}
        self._lay_out()
        return col

    def _lay_out(self) -> None:
        """Rebuild the resources × nodes arrays from the nodes × resources ones."""
        # np.array copies: a transposed view of a one-node array would already count as contiguous.
        self.free_by_resource = np.array((self.allocatable - self.requested).T, order="C")
        self.allocatable_by_resource = np.array(self.allocatable.T, order="C")
        self._positive.clear()
        self.generation += 1
        self.layout += 1
        self._changes_base += len(self._changes)
        self._changes.clear()

    def change_mark(self) -> tuple[int, int]:
        """A mark of the current state: (layout, position in the log of changed nodes)."""
        return self.layout, self._changes_base + len(self._changes)

    def changes_since(self, mark: tuple[int, int]) -> list[int] | None:
        """Nodes whose requests changed since `mark` (repeats possible), or None when the mark is too old
        to tell (another layout, or the log was trimmed since)."""
        layout, position = mark
        start = position - self._changes_base
        if layout != self.layout or start < 0:
            return None
        return self._changes[start:]

    def _changed(self, node: int) -> None:
        self.generation += 1
        changes = self._changes
        changes.append(node)
        if len(changes) > 4096 and len(changes) > 4 * len(self.names):
            self._changes_base += len(changes)
            changes.clear()

    def allocatable_positive(self, col: int) -> bool:
        """Whether every node has a non-zero allocatable amount of the resource in column `col`."""
        known = self._positive.get(col)
        if known is None:
            known = self._positive[col] = bool(np.all(self.allocatable_by_resource[col] > 0))
        return known

    def _widen(self, demand: PodDemand) -> PodDemand:
        width = len(self.resources)
        req = np.zeros(width, dtype=np.int64)
        req[: demand.requests.shape[0]] = demand.requests
        return PodDemand(req, demand.nonzero, demand.columns)

    def add_nodes(self, nodes: Sequence[Node]) -> None:
        if not nodes:
            return
        for node in nodes:
            for name in node.allocatable:
                self.ensure_resource(name)
        start = len(self.names)
        rows = np.zeros((len(nodes), len(self.resources)), dtype=np.int64)
        taint_ids = np.zeros(len(nodes), dtype=np.int32)
        for i, node in enumerate(nodes):
            if node.name in self.index:
                raise ValueError(f"node {node.name} already exists")
            self.index[node.name] = start + i
            self.names.append(node.name)
            self.on_node.append({})
            for name, value in node.allocatable.items():
                rows[i, self.column[name]] = value
            self.labels.append(node.labels)
            taint_ids[i] = self._taint_set_id(node.taints)
        self.allocatable = np.vstack([self.allocatable, rows])
        self.requested = np.vstack([self.requested, np.zeros_like(rows)])
        self.nonzero_requested = np.vstack([self.nonzero_requested, np.zeros((len(nodes), 2), dtype=np.int64)])
        self.unschedulable = np.concatenate([self.unschedulable, np.array([n.unschedulable for n in nodes])])
        self.taint_set = np.concatenate([self.taint_set, taint_ids])
        self._lay_out()
        self.version += 1

    def _taint_set_id(self, taints: tuple[Taint, ...]) -> int:
        key = tuple(taints)
        if key not in self._taint_set_ids:
            self._taint_set_ids[key] = len(self.taint_sets)
            self.taint_sets.append(key)
        return self._taint_set_ids[key]

    def set_taints(self, node: int, taints: tuple[Taint, ...]) -> None:
        self.taint_set[node] = self._taint_set_id(taints)
        self.version += 1

    def set_labels(self, node: int, labels: Mapping[str, str]) -> bool:
        """A node's labels changed (selectors, affinity and topology domains read them anew); False if the
        same."""
        if dict(labels) == self.labels.labels(node):
            return False
        self.labels.set(node, dict(labels))
        self.version += 1
        self.generation += 1
        return True

    def set_unschedulable(self, node: int, value: bool) -> None:
        self.unschedulable[node] = value
        self.version += 1

    def set_allocatable(self, node: int, allocatable: Mapping[str, int]) -> None:
        """A node's allocatable changed (resources it no longer lists become 0); nothing if it is the same."""
        for name in allocatable:
            self.ensure_resource(name)
        row = np.zeros(len(self.resources), dtype=np.int64)
        for name, value in allocatable.items():
            row[self.column[name]] = value
        if np.array_equal(row, self.allocatable[node]):
            return
        self.allocatable[node] = row
        self._lay_out()  # a new layout: per-layout caches (score tables) start afresh
        self.version += 1

    # --- pods -----------------------------------------------------------------------------------------

    def demand(self, pod: Pod) -> PodDemand:
        """The pod's requests as vectors; pods with equal requests share one (read-only) PodDemand."""
        last = self._last_demand
        if last is not None and last[0] is pod and last[1] is pod.requests:
            return last[2]  # a cycle asks for the same pod's demand several times
        key = (*sorted(pod.requests.items()), ("", pod.nonzero("cpu")), ("", pod.nonzero("memory")))
        cached = self._demand_cache.get(key)
        if cached is not None:
            self._last_demand = (pod, pod.requests, cached)
            return cached
        for name in pod.requests:
            self.ensure_resource(name)
        req = np.zeros(len(self.resources), dtype=np.int64)
        for name, value in pod.requests.items():
            req[self.column[name]] = value
        req[self.column["pods"]] = 1
        req.flags.writeable = False
        nonzero = np.array([pod.nonzero("cpu"), pod.nonzero("memory")], dtype=np.int64)
        nonzero.flags.writeable = False
        columns = tuple(int(c) for c in np.flatnonzero(req))
        demand = PodDemand(req, nonzero, columns)
        self._demand_cache[key] = demand
        self._last_demand = (pod, pod.requests, demand)
        return demand

    def assume(self, pod: Pod, node: int) -> None:
        """Account the pod on the node (kube-scheduler's cache AssumePod)."""
        if pod.key in self.bound:
            raise StateCorrupted(f"pod {pod.key} is already bound")
        demand = self.demand(pod)
        requests = demand.requests
        self.requested[node] += requests
        self.nonzero_requested[node] += demand.nonzero
        self.free_by_resource[:, node] -= requests
        self._changed(node)
        self.bound[pod.key] = (node, demand)
        self.pods[pod.key] = pod
        self.on_node[node][pod.key] = None
        if pod.placement.pod_affinity is not None:
            self.affinity_pods += 1
        if self._pod_index is not None:
            self._pod_index.add(pod, node)
        if self._journal is not None:
            self._journal.append(lambda: self.forget(pod.key))

    def forget(self, pod_key: str) -> int:
        """Remove a bound pod's requests from its node; returns the node index."""
        node, demand = self.bound.pop(pod_key)
        requests = demand.requests
        width = requests.shape[0]
        self.requested[node, :width] -= requests
        self.nonzero_requested[node] -= demand.nonzero
        self.free_by_resource[:width, node] += requests
        self._changed(node)
        pod = self.pods.pop(pod_key)
        del self.on_node[node][pod_key]
        if pod.placement.pod_affinity is not None:
            self.affinity_pods -= 1
        terminating = pod_key in self.terminating
        if terminating:
            self.terminating.discard(pod_key)
        if self._pod_index is not None:
            self._pod_index.remove(pod, node)
        if self._journal is not None:
            self._journal.append(lambda: self._put_back(pod, node, terminating))
        return node

    def _replace(self, pod: Pod, node: int) -> None:
        """The pod forgotten and assumed again: no longer terminating."""
        self.forget(pod.key)
        self.assume(pod, node)

    def _put_back(self, pod: Pod, node: int, terminating: bool) -> None:
        self.assume(pod, node)
        if terminating:
            self.mark_terminating(pod.key)

    # --- trials ---------------------------------------------------------------------------------------

    @contextmanager
    def trial(self) -> Iterator[Trial]:
        """A block whose changes are undone when it ends (an exception included), unless `Trial.keep()` was
        called. Trials nest: a kept inner trial's changes join the outer trial's journal."""
        outer = self._journal
        trial = Trial()
        self._journal = trial.undo
        try:
            yield trial
        finally:
            self._journal = outer
            if trial.kept and outer is not None:
                outer.extend(trial.undo)
            elif not trial.kept:
                self._journal = None  # the inverses change the state too: not journaled again
                try:
                    for step in reversed(trial.undo):
                        step()
                finally:
                    self._journal = outer

    @property
    def journaling(self) -> bool:
        """Whether a trial is open (extensions record their changes' inverses only then)."""
        return self._journal is not None

    def record(self, undo: Callable[[], object]) -> None:
        """An extension's change: `undo` reverts it exactly if the open trial is not kept."""
        if self._journal is not None:
            self._journal.append(undo)

    def mark_terminating(self, pod_key: str) -> None:
        """A bound pod was evicted and keeps its node until it is gone (PodTopologySpread skips it)."""
        if pod_key in self.bound and pod_key not in self.terminating:
            self.terminating.add(pod_key)
            if self._pod_index is not None:
                self._pod_index.set_terminating(pod_key)
            if self._journal is not None:
                pod, node = self.pods[pod_key], self.bound[pod_key][0]
                self._journal.append(lambda: self._replace(pod, node))

    def extension(self, kind: type[E]) -> E | None:
        """The state's extension of type `kind` (devices, GPU shares), or None before it was added."""
        found = self._extensions.get(kind)
        return cast(E, found) if found is not None else None

    def add_extension(self, extension: object) -> None:
        """Attach an extension, one per type; it follows the nodes and pods through its own methods."""
        self._extensions[type(extension)] = extension

    @contextmanager
    def hidden_pods(self) -> Iterator[HiddenPods]:
        """A block in which bound pods can be hidden from the rules between pods (the pod index), as
        preemption's dry run removes victims before it runs those filters; resources are not touched. Every
        pod still hidden when the block ends is shown again."""
        hidden = HiddenPods(self)
        try:
            yield hidden
        finally:
            hidden.show_all()

    @property
    def pod_index(self) -> PodIndex:
        """The bound pods by labels and affinity terms; built on first use, then kept up to date."""
        if self._pod_index is None:
            index = PodIndex()
            for key, pod in self.pods.items():
                index.add(pod, self.bound[key][0])
            for key in self.terminating:
                index.set_terminating(key)
            self._pod_index = index
        return self._pod_index

    def fits(self, pod: Pod, node: int) -> bool:
        demand = self.demand(pod)
        cols = list(demand.columns)
        return bool(np.all(self.requested[node, cols] + demand.requests[cols] <= self.allocatable[node, cols]))

    def free(self) -> IntArray:
        return self.allocatable - self.requested

    def check_fits(self, pod_key: str) -> None:
        """Raise StateCorrupted when the bound pod's node has less than nothing left in a resource it asks for
        (what a binding that passed the fit filter can never leave)."""
        node, demand = self.bound[pod_key]
        cols = list(demand.columns)
        if np.any(self.requested[node, cols] > self.allocatable[node, cols]):
            over = [self.resources[c] for c in cols if self.requested[node, c] > self.allocatable[node, c]]
            raise StateCorrupted(f"node {self.names[node]} is over-committed in {', '.join(over)} with pod {pod_key}")

    def overcommitted(self) -> BoolArray:
        """Nodes whose requests exceed allocatable in any resource (must never happen)."""
        return np.asarray(np.any(self.requested > self.allocatable, axis=1))


class HiddenPods:
    """Bound pods taken out of a ClusterState's pod index for a dry run (`ClusterState.hidden_pods`)."""

    def __init__(self, cluster: ClusterState) -> None:
        self._cluster = cluster
        self._hidden: dict[str, tuple[Pod, int]] = {}

    def hide(self, key: str) -> None:
        cluster = self._cluster
        if key in self._hidden or key not in cluster.bound:
            return
        pod, node = cluster.pods[key], cluster.bound[key][0]
        cluster.pod_index.remove(pod, node)
        if pod.placement.pod_affinity is not None:
            cluster.affinity_pods -= 1
        self._hidden[key] = (pod, node)

    def show(self, key: str) -> None:
        found = self._hidden.pop(key, None)
        if found is None:
            return
        pod, node = found
        cluster = self._cluster
        cluster.pod_index.add(pod, node)
        if key in cluster.terminating:
            cluster.pod_index.set_terminating(key)
        if pod.placement.pod_affinity is not None:
            cluster.affinity_pods += 1

    def show_all(self) -> None:
        for key in list(self._hidden):
            self.show(key)
