"""Bound pods as preemption sees them: per node, by effective priority, with start times and terminations.

Kept beside ClusterState (which only sums requests) so that preemption can ask, as vector operations
over nodes, how much room removing every pod below a priority would free, and then, for many candidate
nodes at once, which pods run there.

Three kinds of per-node sums (resources × nodes, one contiguous row per resource, like ClusterState's
`free_by_resource`) are kept up to date as pods come and go, each split by priority level (a cluster has
few distinct priorities): the requests of running pods (`removable_below`), of pods that were
evicted and are still terminating (`leaving_below`), and of preemptors nominated to a node
(`incoming_from`). Besides, every node has a small table of *slots*, one per running pod that is not
terminating, kept sorted most important first (priority, then PodGroup members before bare pods, then
start, then bind order): its requests, priority, membership, start time, bind order and whether preemption
must look at it one by one (a member of a
`disruptionMode: all` group, a pod a PodDisruptionBudget selects). The tables are slot-major, so that
preemption gathers the slots of hundreds of candidate nodes into one padded array and reprieves victims
on all of them at once. A pod that leaves leaves a hole, closed when a pod must go in between.
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
    """The running pods of a ClusterState, by node and priority, for preemption."""

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster
        self.on_node: dict[int, set[str]] = defaultdict(set)
        self.node_of: dict[str, int] = {}
        self.priority: dict[str, int] = {}
        self.started: dict[str, float] = {}
        self.seq: dict[str, int] = {}  # bind order: the last tie-break between equally important pods
        self.member: dict[str, bool] = {}  # has spec.schedulingGroup (GenericWorkload on): outranks a bare pod
        self.terminating: dict[str, str] = {}  # victim -> preemptor that evicted it
        # Decides whether a newly bound pod needs one-by-one treatment by preemption (set by the Preemptor).
        self.classify: Callable[[str], bool] | None = None
        self.version = 0  # bumped by every change: a pod added, removed, terminating, nominated or not
        self._next_seq = 0
        self._requests: dict[str, IntArray] = {}
        self._by_priority: dict[int, IntArray] = {}
        self._leaving: dict[int, IntArray] = {}   # priority -> resources × nodes of terminating pods
        self._incoming: dict[int, IntArray] = {}  # priority -> resources × nodes of nominated preemptors
        self._nominated: dict[str, tuple[int, IntArray, int | None]] = {}
        self._anti: set[str] = set()  # nominated preemptors with required pod anti-affinity
        self._slot: dict[str, int] = {}
        self._slot_keys: list[list[str | None]] = []
        self._holes: list[int] = []  # per node, empty slots below its slot count
        # Slot-major (slot × resource × node, slot × node): a slot of many nodes is one contiguous vector.
        self.slot_requests: IntArray = np.zeros((INITIAL_SLOTS, len(cluster.resources), 0), dtype=np.int64)
        self.slot_priority: IntArray = np.full((INITIAL_SLOTS, 0), EMPTY_PRIORITY, dtype=np.int64)
        self.slot_start: FloatArray = np.zeros((INITIAL_SLOTS, 0), dtype=np.float64)
        self.slot_seq: IntArray = np.zeros((INITIAL_SLOTS, 0), dtype=np.int64)
        self.slot_special: BoolArray = np.zeros((INITIAL_SLOTS, 0), dtype=bool)
        self.slot_member: BoolArray = np.zeros((INITIAL_SLOTS, 0), dtype=bool)
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
        """The resources × nodes array of one priority level, grown to the cluster's current shape."""
        table = tables.get(priority)
        shape = self._shape()
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
        n, width = len(self.cluster.names), len(self.cluster.resources)
        capacity, old_width, have = self.slot_requests.shape
        if have == n and old_width == width:
            return
        requests = np.zeros((capacity, width, n), dtype=np.int64)
        requests[:, :old_width, :have] = self.slot_requests
        self.slot_requests = requests
        more = n - have
        self.slot_priority = np.hstack([self.slot_priority, np.full((capacity, more), EMPTY_PRIORITY, dtype=np.int64)])
        self.slot_start = np.hstack([self.slot_start, np.zeros((capacity, more))])
        self.slot_seq = np.hstack([self.slot_seq, np.zeros((capacity, more), dtype=np.int64)])
        self.slot_special = np.hstack([self.slot_special, np.zeros((capacity, more), dtype=bool)])
        self.slot_member = np.hstack([self.slot_member, np.zeros((capacity, more), dtype=bool)])
        self.slot_count = np.concatenate([self.slot_count, np.zeros(more, dtype=np.int64)])
        self.special_floor = np.concatenate([self.special_floor, np.full(more, EMPTY_PRIORITY, dtype=np.int64)])
        for _ in range(have, n):
            self._slot_keys.append([None] * capacity)
            self._holes.append(0)

    def _grow_slots(self) -> None:
        capacity, width, n = self.slot_requests.shape
        more = capacity
        self.slot_requests = np.concatenate([self.slot_requests, np.zeros((more, width, n), dtype=np.int64)])
        self.slot_priority = np.vstack([self.slot_priority, np.full((more, n), EMPTY_PRIORITY, dtype=np.int64)])
        self.slot_start = np.vstack([self.slot_start, np.zeros((more, n))])
        self.slot_seq = np.vstack([self.slot_seq, np.zeros((more, n), dtype=np.int64)])
        self.slot_special = np.vstack([self.slot_special, np.zeros((more, n), dtype=bool)])
        self.slot_member = np.vstack([self.slot_member, np.zeros((more, n), dtype=bool)])
        for keys in self._slot_keys:
            keys.extend([None] * more)

    def _slot_arrays(self) -> tuple[IntArray, IntArray, FloatArray, IntArray, BoolArray, BoolArray]:
        return (self.slot_requests, self.slot_priority, self.slot_start, self.slot_seq, self.slot_special,
                self.slot_member)

    def _take_slot(self, key: str, node: int) -> None:
        """Insert the pod into its node's slots, which stay sorted most important first: priority (high
        first), then PodGroup members before bare pods, then start (early first), then bind order. Removals
        leave holes (empty slots) behind; they are closed when a pod must go in between, or when the node's
        slots are all used."""
        self._sync_slots()
        count = int(self.slot_count[node])
        priority, started, seq, member = self.priority[key], self.started[key], self.seq[key], self.member[key]
        last_place = True  # the usual case: the least important pod of the node (it is the newest)
        if count:  # slot count-1 is occupied: trailing holes are trimmed
            last = int(self.slot_priority[count - 1, node])
            last_member = bool(self.slot_member[count - 1, node])
            last_place = last > priority or (last == priority and (
                last_member > member or (last_member == member
                                         and float(self.slot_start[count - 1, node]) <= started)))
        if not last_place or count == self.slot_requests.shape[0]:
            if self._holes[node]:
                self._compact(node)
                count = int(self.slot_count[node])
            if count == self.slot_requests.shape[0]:
                self._grow_slots()
        pos = count
        if not last_place:
            prio = self.slot_priority[:count, node]
            start = self.slot_start[:count, node]
            members = self.slot_member[:count, node]
            later = (start > started) | ((start == started) & (self.slot_seq[:count, node] > seq))
            after = (prio < priority) | ((prio == priority) & ((members < member) | ((members == member) & later)))
            pos = int(np.argmax(after)) if after.any() else count
        keys = self._slot_keys[node]
        if pos < count:
            for array in self._slot_arrays():
                array[pos + 1:count + 1, ..., node] = array[pos:count, ..., node]  # numpy copes with the overlap
            keys.insert(pos, key)
            keys.pop()
            for i in range(pos + 1, count + 1):
                self._slot[keys[i]] = i  # type: ignore[index]
        else:
            keys[pos] = key
        self._slot[key] = pos
        requests = self._requests[key]
        width = requests.shape[0]
        self.slot_requests[pos, :width, node] = requests
        if width < self.slot_requests.shape[1]:
            self.slot_requests[pos, width:, node] = 0
        self.slot_priority[pos, node] = priority
        self.slot_start[pos, node] = started
        self.slot_seq[pos, node] = seq
        self.slot_member[pos, node] = member
        special = bool(self.classify(key)) if self.classify is not None else False
        self.slot_special[pos, node] = special
        self.slot_count[node] = count + 1
        if special:
            self.special_floor[node] = min(int(self.special_floor[node]), priority)

    def _compact(self, node: int) -> None:
        """Close the holes in the node's slots, keeping the order of the pods."""
        count = int(self.slot_count[node])
        keys = self._slot_keys[node]
        kept = [i for i in range(count) if keys[i] is not None]
        size = len(kept)
        for array in self._slot_arrays():
            array[:size, ..., node] = array[kept, ..., node]
        self.slot_priority[size:count, node] = EMPTY_PRIORITY
        self.slot_special[size:count, node] = False
        live = [keys[i] for i in kept]
        keys[:count] = [*live, *([None] * (count - size))]
        for i, key in enumerate(live):
            self._slot[key] = i  # type: ignore[index]
        self.slot_count[node] = size
        self._holes[node] = 0

    def _floor(self, node: int) -> None:
        count = int(self.slot_count[node])
        special = self.slot_special[:count, node]
        self.special_floor[node] = self.slot_priority[:count, node][special].min() if special.any() else EMPTY_PRIORITY

    def _free_slot(self, key: str, node: int) -> None:
        pos = self._slot.pop(key, None)
        if pos is None:
            return
        count = int(self.slot_count[node])
        special = bool(self.slot_special[pos, node])
        self.slot_priority[pos, node] = EMPTY_PRIORITY  # a hole: never a victim, skipped in order
        self.slot_special[pos, node] = False
        keys = self._slot_keys[node]
        keys[pos] = None
        if pos == count - 1:
            count -= 1
            while count and keys[count - 1] is None:  # trailing holes go
                count -= 1
                self._holes[node] -= 1
            self.slot_count[node] = count
        else:
            self._holes[node] += 1
        if special:
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
                self.slot_special[slot, node] = value
                touched.add(node)
        for node in touched:
            self._floor(node)

    # --- pods -----------------------------------------------------------------------------------------

    def add(self, key: str, node: int, priority: int, started: float, *, member: bool = False) -> None:
        requests = self.cluster.bound[key][1].requests
        self.version += 1
        self.on_node[node].add(key)
        self.node_of[key] = node
        self.priority[key] = priority
        self.started[key] = started
        self.member[key] = member
        self._next_seq += 1
        self.seq[key] = self._next_seq
        self._requests[key] = requests
        self._table(self._by_priority, priority)[: requests.shape[0], node] += requests
        self._take_slot(key, node)

    def _unaccount(self, key: str) -> None:
        requests = self._requests[key]
        self._table(self._by_priority, self.priority[key])[: requests.shape[0], self.node_of[key]] -= requests
        self._free_slot(key, self.node_of[key])

    def mark_terminating(self, key: str, preemptor: str) -> None:
        """An evicted pod keeps its node until it is gone, but is no longer a victim to choose."""
        if key in self.node_of and key not in self.terminating:
            self.version += 1
            self.terminating[key] = preemptor
            self.cluster.mark_terminating(key)
            self._unaccount(key)
            requests = self._requests[key]
            self._table(self._leaving, self.priority[key])[: requests.shape[0], self.node_of[key]] += requests

    def remove(self, key: str) -> None:
        node = self.node_of.get(key)
        if node is None:
            return
        self.version += 1
        requests = self._requests[key]
        if key not in self.terminating:
            self._unaccount(key)
        else:
            self._table(self._leaving, self.priority[key])[: requests.shape[0], node] -= requests
        self.terminating.pop(key, None)
        self.on_node[node].discard(key)
        del self.node_of[key], self.priority[key], self.started[key], self._requests[key], self.seq[key]
        del self.member[key]

    # --- nominations ----------------------------------------------------------------------------------

    def nominate(self, key: str, node: int, requests: IntArray, priority: int | None = None, *,
                 anti_affinity: bool = False) -> None:
        """A preemptor expects `node` once its victims are gone: preemption keeps that room for it.

        Only preemptors of at least its priority see that room as taken (kube-scheduler runs the filters
        with the nominated pods of equal or higher priority); without a priority, every preemptor does.
        `anti_affinity`: the preemptor has required pod anti-affinity terms, which the Filter checks for
        others with it on that node.
        """
        self.clear_nomination(key)
        self.version += 1
        self._nominated[key] = (node, requests, priority)
        if anti_affinity:
            self._anti.add(key)
        level = priority if priority is not None else EMPTY_PRIORITY
        self._table(self._incoming, level)[: requests.shape[0], node] += requests

    @property
    def nominated_anti_affinity(self) -> bool:
        """Whether some nominated preemptor has required pod anti-affinity terms."""
        return bool(self._anti)

    def clear_nomination(self, key: str) -> None:
        self._anti.discard(key)
        entry = self._nominated.pop(key, None)
        if entry is not None:
            self.version += 1
            node, requests, priority = entry
            level = priority if priority is not None else EMPTY_PRIORITY
            self._table(self._incoming, level)[: requests.shape[0], node] -= requests

    def nominated_node(self, key: str) -> int | None:
        entry = self._nominated.get(key)
        return entry[0] if entry is not None else None

    def nominations(self, priority: int, exclude: Iterable[str] = ()) -> dict[int, list[str]]:
        """Node -> the preemptors nominated there whose nomination holds against `priority` (at least it, or
        every priority), except `exclude`: the pods addGENominatedPods adds to the node for the Filter."""
        skip = set(exclude)
        out: dict[int, list[str]] = {}
        for key, (node, _, level) in self._nominated.items():
            if key not in skip and (level is None or level >= priority):
                out.setdefault(node, []).append(key)
        return out

    # --- queries ----------------------------------------------------------------------------------------

    def _shape(self) -> tuple[int, int]:
        return len(self.cluster.resources), len(self.cluster.names)

    def removable_below(self, priority: int, out: IntArray | None = None) -> IntArray:
        """Resources × nodes: the requests of running pods (not already terminating) with a lower priority
        (added into `out` when given)."""
        if out is None:
            return self._sum(self._by_priority, self._shape(), lambda level: level < priority)
        for level, table in self._by_priority.items():
            if level < priority:
                out[: table.shape[0], : table.shape[1]] += table
        return out

    def incoming_from(self, priority: int, exclude: Iterable[str] = ()) -> IntArray:
        """Resources × nodes: the requests of nominated preemptors of at least `priority`, except `exclude`."""
        total = self._sum(self._incoming, self._shape(), lambda level: level >= priority)
        for key in exclude:
            entry = self._nominated.get(key)
            if entry is not None and (entry[2] is None or entry[2] >= priority):
                total[: entry[1].shape[0], entry[0]] -= entry[1]
        return total

    def held_for(self, priority: int, exclude: Iterable[str] = ()) -> IntArray | None:
        """`incoming_from` for the Filter: None when no nomination of at least `priority` holds room, and the
        level's own table (to read, not to change) when a single level holds it all and `exclude` takes
        nothing from it; the table may be narrower than the cluster when nodes were added since."""
        levels = [table for level, table in self._incoming.items() if level >= priority]
        if not levels:
            return None
        own = any((entry := self._nominated.get(key)) is not None and (entry[2] is None or entry[2] >= priority)
                  for key in exclude)
        if len(levels) == 1 and not own:
            return levels[0]
        return self.incoming_from(priority, exclude)

    def pending_changes(self, priority: int | None = None, exclude: Iterable[str] = (),
                        out: IntArray | None = None) -> IntArray:
        """Room that terminating pods (below `priority`) will free on every node, less the room that
        nominated preemptors (of at least `priority`, except `exclude`) will take (resources × nodes, added
        into `out` when given). Without a priority: every terminating pod and every nomination."""
        if out is None:
            out = np.zeros(self._shape(), dtype=np.int64)
        for level, table in self._leaving.items():
            if priority is None or level < priority:
                out[: table.shape[0], : table.shape[1]] += table
        for level, table in self._incoming.items():
            if priority is None or level >= priority:
                out[: table.shape[0], : table.shape[1]] -= table
        for key in exclude:
            entry = self._nominated.get(key)
            if entry is not None and (priority is None or entry[2] is None or entry[2] >= priority):
                out[: entry[1].shape[0], entry[0]] += entry[1]
        return out

    def terminating_below(self, node: int, priority: int) -> bool:
        """Whether a pod of lower priority is still terminating on the node."""
        pods = self.cluster.column["pods"]
        return any(level < priority and node < table.shape[1] and table[pods, node] > 0
                   for level, table in self._leaving.items())

    def requests(self, key: str) -> IntArray:
        return self._width(self._requests[key])
