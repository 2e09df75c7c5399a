"""Bound pods as preemption sees them: per node, by effective priority, with start times and terminations.

Kept beside ClusterState (which only sums requests) so that preemption can ask, as vector operations
over nodes, how much room removing every pod below a priority would free, and then, for many candidate
nodes at once, which pods run there.

Three kinds of per-node sums are kept up to date as pods come and go, each split by priority level (a
cluster has few distinct priorities): the requests of running pods (`removable_below`), of pods that were
evicted and are still terminating (`leaving_below`), and of preemptors nominated to a node
(`incoming_from`). Besides, every node has a small table of *slots*, one per running pod that is not
terminating: its requests, priority, start time, bind order and whether preemption must look at it one
by one (a member of a `disruptionMode: all` group, a pod a PodDisruptionBudget selects). Preemption
gathers the slots of hundreds of candidate nodes into one padded array and reprieves victims on all of
them at once.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

import numpy as np
import numpy.typing as npt

from phalanx.cluster.state import ClusterState, IntArray

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
EMPTY_PRIORITY = 2**62  # an empty slot: never below any preemptor's priority
INITIAL_SLOTS = 4


class RunningPods:
    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster
        self.on_node: dict[int, set[str]] = defaultdict(set)
        self.node_of: dict[str, int] = {}
        self.priority: dict[str, int] = {}
        self.started: dict[str, float] = {}
        self.seq: dict[str, int] = {}  # bind order: the last tie-break between equally important pods
        self.terminating: dict[str, str] = {}  # victim -> preemptor that evicted it
        # Decides whether a newly bound pod needs one-by-one treatment by preemption (set by the Preemptor).
        self.classify: Callable[[str], bool] | None = None
        self._next_seq = 0
        self._requests: dict[str, IntArray] = {}
        self._by_priority: dict[int, IntArray] = {}
        self._leaving: dict[int, IntArray] = {}   # priority -> nodes × resources of terminating pods
        self._incoming: dict[int, IntArray] = {}  # priority -> nodes × resources of nominated preemptors
        self._nominated: dict[str, tuple[int, IntArray, int | None]] = {}
        # Slots: nodes × capacity (× resources).
        self._slot: dict[str, int] = {}
        self._slot_keys: list[list[str | None]] = []
        self.slot_requests: IntArray = np.zeros((0, INITIAL_SLOTS, len(cluster.resources)), dtype=np.int64)
        self.slot_priority: IntArray = np.full((0, INITIAL_SLOTS), EMPTY_PRIORITY, dtype=np.int64)
        self.slot_start: FloatArray = np.zeros((0, INITIAL_SLOTS), dtype=np.float64)
        self.slot_seq: IntArray = np.zeros((0, INITIAL_SLOTS), dtype=np.int64)
        self.slot_special: BoolArray = np.zeros((0, INITIAL_SLOTS), dtype=bool)
        self.slot_count: IntArray = np.zeros(0, dtype=np.int64)
        # Per node, the lowest priority of a slot that needs one-by-one treatment (EMPTY_PRIORITY: none).
        self.special_floor: IntArray = np.zeros(0, dtype=np.int64)

    # --- shapes ---------------------------------------------------------------------------------------

    def _width(self, array: IntArray) -> IntArray:
        width = len(self.cluster.resources)
        if array.shape[-1] == width:
            return array
        pad = [(0, 0)] * (array.ndim - 1) + [(0, width - array.shape[-1])]
        return np.pad(array, pad)

    def _table(self, tables: dict[int, IntArray], priority: int) -> IntArray:
        """The nodes × resources array of one priority level, grown to the cluster's current shape."""
        table = tables.get(priority)
        shape = (len(self.cluster), len(self.cluster.resources))
        if table is None or table.shape != shape:
            grown = np.zeros(shape, dtype=np.int64)
            if table is not None:
                grown[: table.shape[0], : table.shape[1]] = table
            tables[priority] = table = grown
        return table

    @staticmethod
    def _sum(tables: dict[int, IntArray], shape: tuple[int, int], keep: Callable[[int], bool]) -> IntArray:
        total = np.zeros(shape, dtype=np.int64)
        for level, table in tables.items():
            if keep(level):
                total[: table.shape[0], : table.shape[1]] += table
        return total

    def _sync_slots(self) -> None:
        """Grow the slot tables when nodes or resource columns were added to the cluster."""
        n, width = len(self.cluster), len(self.cluster.resources)
        have, capacity, old_width = self.slot_requests.shape
        if have == n and old_width == width:
            return
        requests = np.zeros((n, capacity, width), dtype=np.int64)
        requests[:have, :, :old_width] = self.slot_requests
        self.slot_requests = requests
        self.slot_priority = np.concatenate(
            [self.slot_priority, np.full((n - have, capacity), EMPTY_PRIORITY, dtype=np.int64)])
        self.slot_start = np.concatenate([self.slot_start, np.zeros((n - have, capacity))])
        self.slot_seq = np.concatenate([self.slot_seq, np.zeros((n - have, capacity), dtype=np.int64)])
        self.slot_special = np.concatenate([self.slot_special, np.zeros((n - have, capacity), dtype=bool)])
        self.slot_count = np.concatenate([self.slot_count, np.zeros(n - have, dtype=np.int64)])
        self.special_floor = np.concatenate([self.special_floor, np.full(n - have, EMPTY_PRIORITY, dtype=np.int64)])
        for _ in range(have, n):
            self._slot_keys.append([None] * capacity)

    def _grow_slots(self) -> None:
        n, capacity, width = self.slot_requests.shape
        more = capacity
        self.slot_requests = np.concatenate([self.slot_requests, np.zeros((n, more, width), dtype=np.int64)], 1)
        self.slot_priority = np.concatenate(
            [self.slot_priority, np.full((n, more), EMPTY_PRIORITY, dtype=np.int64)], 1)
        self.slot_start = np.concatenate([self.slot_start, np.zeros((n, more))], 1)
        self.slot_seq = np.concatenate([self.slot_seq, np.zeros((n, more), dtype=np.int64)], 1)
        self.slot_special = np.concatenate([self.slot_special, np.zeros((n, more), dtype=bool)], 1)
        for node in range(n):
            self._slot_keys[node].extend([None] * more)

    def _slot_arrays(self) -> tuple[IntArray, IntArray, FloatArray, IntArray, BoolArray]:
        return self.slot_requests, self.slot_priority, self.slot_start, self.slot_seq, self.slot_special

    def _take_slot(self, key: str, node: int) -> None:
        """Insert the pod into its node's slots, which stay sorted most important first: priority (high
        first), then start (early first), then bind order."""
        self._sync_slots()
        count = int(self.slot_count[node])
        if count == self.slot_requests.shape[1]:
            self._grow_slots()
        priority, started, seq = self.priority[key], self.started[key], self.seq[key]
        prio = self.slot_priority[node, :count]
        start = self.slot_start[node, :count]
        later = (start > started) | ((start == started) & (self.slot_seq[node, :count] > seq))
        after = (prio < priority) | ((prio == priority) & later)
        pos = int(np.argmax(after)) if after.any() else count
        if pos < count:
            for array in self._slot_arrays():
                array[node, pos + 1:count + 1] = array[node, pos:count].copy()
        keys = self._slot_keys[node]
        keys.insert(pos, key)
        keys.pop()
        for i in range(pos, count + 1):
            self._slot[keys[i]] = i  # type: ignore[index]
        requests = self._requests[key]
        self.slot_requests[node, pos, :] = 0
        self.slot_requests[node, pos, : requests.shape[0]] = requests
        self.slot_priority[node, pos] = priority
        self.slot_start[node, pos] = started
        self.slot_seq[node, pos] = seq
        self.slot_special[node, pos] = bool(self.classify(key)) if self.classify is not None else False
        self.slot_count[node] = count + 1
        self._floor(node)

    def _floor(self, node: int) -> None:
        count = int(self.slot_count[node])
        special = self.slot_special[node, :count]
        self.special_floor[node] = self.slot_priority[node, :count][special].min() if special.any() else EMPTY_PRIORITY

    def _free_slot(self, key: str, node: int) -> None:
        pos = self._slot.pop(key, None)
        if pos is None:
            return
        count = int(self.slot_count[node])
        for array in self._slot_arrays():
            array[node, pos:count - 1] = array[node, pos + 1:count].copy()
        self.slot_priority[node, count - 1] = EMPTY_PRIORITY
        self.slot_special[node, count - 1] = False
        keys = self._slot_keys[node]
        keys.pop(pos)
        keys.append(None)
        for i in range(pos, count - 1):
            self._slot[keys[i]] = i  # type: ignore[index]
        self.slot_count[node] = count - 1
        self._floor(node)

    def slots(self) -> IntArray:
        """Slot arrays in the cluster's current shape (call before reading the `slot_*` arrays)."""
        self._sync_slots()
        return self.slot_requests

    def slot_key(self, node: int, slot: int) -> str:
        key = self._slot_keys[node][slot]
        assert key is not None, f"empty slot {slot} on node {node}"
        return key

    def set_special(self, keys: Iterable[str], value: bool = True) -> None:
        """Mark running pods as needing one-by-one treatment by preemption (or not)."""
        self._sync_slots()
        touched: set[int] = set()
        for key in keys:
            slot = self._slot.get(key)
            if slot is not None:
                node = self.node_of[key]
                self.slot_special[node, slot] = value
                touched.add(node)
        for node in touched:
            self._floor(node)

    # --- pods -----------------------------------------------------------------------------------------

    def add(self, key: str, node: int, priority: int, started: float) -> None:
        requests = self.cluster.bound[key][1].requests
        self.on_node[node].add(key)
        self.node_of[key] = node
        self.priority[key] = priority
        self.started[key] = started
        self._next_seq += 1
        self.seq[key] = self._next_seq
        self._requests[key] = requests
        self._table(self._by_priority, priority)[node, : requests.shape[0]] += requests
        self._take_slot(key, node)

    def _unaccount(self, key: str) -> None:
        requests = self._requests[key]
        self._table(self._by_priority, self.priority[key])[self.node_of[key], : requests.shape[0]] -= requests
        self._free_slot(key, self.node_of[key])

    def mark_terminating(self, key: str, preemptor: str) -> None:
        """An evicted pod keeps its node until it is gone, but is no longer a victim to choose."""
        if key in self.node_of and key not in self.terminating:
            self.terminating[key] = preemptor
            self._unaccount(key)
            requests = self._requests[key]
            self._table(self._leaving, self.priority[key])[self.node_of[key], : requests.shape[0]] += requests

    def remove(self, key: str) -> None:
        node = self.node_of.get(key)
        if node is None:
            return
        requests = self._requests[key]
        if key not in self.terminating:
            self._unaccount(key)
        else:
            self._table(self._leaving, self.priority[key])[node, : requests.shape[0]] -= requests
        self.terminating.pop(key, None)
        self.on_node[node].discard(key)
        del self.node_of[key], self.priority[key], self.started[key], self._requests[key], self.seq[key]

    # --- nominations ----------------------------------------------------------------------------------

    def nominate(self, key: str, node: int, requests: IntArray, priority: int | None = None) -> None:
        """A preemptor expects `node` once its victims are gone: preemption keeps that room for it.

        Only preemptors of at least its priority see that room as taken (kube-scheduler runs the filters
        with the nominated pods of equal or higher priority); without a priority, every preemptor does.
        """
        self.clear_nomination(key)
        self._nominated[key] = (node, requests, priority)
        level = priority if priority is not None else EMPTY_PRIORITY
        self._table(self._incoming, level)[node, : requests.shape[0]] += requests

    def clear_nomination(self, key: str) -> None:
        entry = self._nominated.pop(key, None)
        if entry is not None:
            node, requests, priority = entry
            level = priority if priority is not None else EMPTY_PRIORITY
            self._table(self._incoming, level)[node, : requests.shape[0]] -= requests

    def nominated_node(self, key: str) -> int | None:
        entry = self._nominated.get(key)
        return entry[0] if entry is not None else None

    # --- queries ----------------------------------------------------------------------------------------

    def _shape(self) -> tuple[int, int]:
        return len(self.cluster), len(self.cluster.resources)

    def removable_below(self, priority: int) -> IntArray:
        """Per node, the requests of running pods (not already terminating) with a lower priority."""
        return self._sum(self._by_priority, self._shape(), lambda level: level < priority)

    def leaving_below(self, priority: int) -> IntArray:
        """Per node, the requests of terminating pods with a lower priority: room that is on its way."""
        return self._sum(self._leaving, self._shape(), lambda level: level < priority)

    def incoming_from(self, priority: int, exclude: Iterable[str] = ()) -> IntArray:
        """Per node, the requests of nominated preemptors of at least `priority`, less those in `exclude`."""
        total = self._sum(self._incoming, self._shape(), lambda level: level >= priority)
        for key in exclude:
            entry = self._nominated.get(key)
            if entry is not None and (entry[2] is None or entry[2] >= priority):
                total[entry[0], : entry[1].shape[0]] -= entry[1]
        return total

    def pending_changes(self, priority: int | None = None, exclude: Iterable[str] = ()) -> IntArray:
        """Room that terminating pods (below `priority`) will free on every node, less the room that
        nominated preemptors (of at least `priority`, except `exclude`) will take. Without a priority:
        every terminating pod and every nomination."""
        if priority is None:
            leaving = self._sum(self._leaving, self._shape(), lambda level: True)
            incoming = self._sum(self._incoming, self._shape(), lambda level: True)
            return leaving - incoming
        return self.leaving_below(priority) - self.incoming_from(priority, exclude)

    def pending_change(self, node: int, priority: int | None = None, exclude: Iterable[str] = ()) -> IntArray:
        """`pending_changes` for one node."""
        row: IntArray = self.pending_changes(priority, exclude)[node]
        return row

    def terminating_below(self, node: int, priority: int) -> bool:
        """Whether a pod of lower priority is still terminating on the node."""
        pods = self.cluster.column["pods"]
        return any(level < priority and node < table.shape[0] and table[node, pods] > 0
                   for level, table in self._leaving.items())

    def requests(self, key: str) -> IntArray:
        return self._width(self._requests[key])
