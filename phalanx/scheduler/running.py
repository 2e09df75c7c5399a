"""Bound pods as preemption sees them: per node, by effective priority, with start times and terminations.

Kept beside ClusterState (which only sums requests) so that preemption can ask, as vector operations
over nodes, how much room removing every pod below a priority would free, and then, for a handful of
candidate nodes, which pods run there.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from phalanx.cluster.state import ClusterState, IntArray


class RunningPods:
    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster
        self.on_node: dict[int, set[str]] = defaultdict(set)
        self.node_of: dict[str, int] = {}
        self.priority: dict[str, int] = {}
        self.started: dict[str, float] = {}
        self.terminating: dict[str, str] = {}  # victim -> preemptor that evicted it
        self._requests: dict[str, IntArray] = {}
        self._by_priority: dict[int, IntArray] = {}
        self._leaving: dict[int, IntArray] = {}   # node -> requests of its terminating pods
        self._incoming: dict[int, IntArray] = {}  # node -> requests of preemptors nominated to it
        self._nominated: dict[str, tuple[int, IntArray]] = {}

    def _width(self, array: IntArray) -> IntArray:
        width = len(self.cluster.resources)
        if array.shape[-1] == width:
            return array
        pad = [(0, 0)] * (array.ndim - 1) + [(0, width - array.shape[-1])]
        return np.pad(array, pad)

    def _level(self, priority: int) -> IntArray:
        level = self._by_priority.get(priority)
        shape = (len(self.cluster), len(self.cluster.resources))
        if level is None or level.shape != shape:
            grown = np.zeros(shape, dtype=np.int64)
            if level is not None:
                grown[: level.shape[0], : level.shape[1]] = level
            self._by_priority[priority] = level = grown
        return level

    def add(self, key: str, node: int, priority: int, started: float) -> None:
        requests = self.cluster.bound[key][1].requests
        self.on_node[node].add(key)
        self.node_of[key] = node
        self.priority[key] = priority
        self.started[key] = started
        self._requests[key] = requests
        level = self._level(priority)
        level[node, : requests.shape[0]] += requests

    def _unaccount(self, key: str) -> None:
        requests = self._requests[key]
        self._level(self.priority[key])[self.node_of[key], : requests.shape[0]] -= requests

    def mark_terminating(self, key: str, preemptor: str) -> None:
        """An evicted pod keeps its node until it is gone, but is no longer a victim to choose."""
        if key in self.node_of and key not in self.terminating:
            self.terminating[key] = preemptor
            self._unaccount(key)
            self._shift(self._leaving, self.node_of[key], self._requests[key], 1)

    def remove(self, key: str) -> None:
        node = self.node_of.get(key)
        if node is None:
            return
        if key not in self.terminating:
            self._unaccount(key)
        else:
            self._shift(self._leaving, node, self._requests[key], -1)
        self.terminating.pop(key, None)
        self.on_node[node].discard(key)
        del self.node_of[key], self.priority[key], self.started[key], self._requests[key]

    def _shift(self, table: dict[int, IntArray], node: int, requests: IntArray, sign: int) -> None:
        row = self._width(table.get(node, np.zeros(len(self.cluster.resources), dtype=np.int64)))
        row = row.copy()
        row[: requests.shape[0]] += sign * requests
        table[node] = row

    def nominate(self, key: str, node: int, requests: IntArray) -> None:
        """A preemptor expects `node` once its victims are gone: preemption keeps that room for it."""
        self.clear_nomination(key)
        self._nominated[key] = (node, requests)
        self._shift(self._incoming, node, requests, 1)

    def clear_nomination(self, key: str) -> None:
        entry = self._nominated.pop(key, None)
        if entry is not None:
            self._shift(self._incoming, entry[0], entry[1], -1)

    def pending_change(self, node: int) -> IntArray:
        """Room that terminating pods will free on the node, less room nominated preemptors will take."""
        width = len(self.cluster.resources)
        zero = np.zeros(width, dtype=np.int64)
        return self._width(self._leaving.get(node, zero)) - self._width(self._incoming.get(node, zero))

    def pending_changes(self) -> IntArray:
        """`pending_change` for every node at once."""
        out = np.zeros((len(self.cluster), len(self.cluster.resources)), dtype=np.int64)
        for table, sign in ((self._leaving, 1), (self._incoming, -1)):
            for node, row in table.items():
                out[node] += sign * self._width(row)
        return out

    def removable_below(self, priority: int) -> IntArray:
        """Per node, the requests of running pods (not already terminating) with a lower priority."""
        total = np.zeros((len(self.cluster), len(self.cluster.resources)), dtype=np.int64)
        for level, requests in self._by_priority.items():
            if level < priority:
                total[: requests.shape[0], : requests.shape[1]] += requests
        return total

    def requests(self, key: str) -> IntArray:
        return self._width(self._requests[key])
