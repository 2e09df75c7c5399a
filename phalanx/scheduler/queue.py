"""The scheduling queue: activeQ (priority, then when the entry last came back), backoffQ, and unschedulable
entries, as kube-scheduler v1.37's `backend/queue` keeps them.

An entry is a pod or, with GenericWorkload on, a whole PodGroup. A failed entry waits in the unschedulable
set until a cluster event moves it; it then goes to backoffQ if its backoff (1 s doubling per attempt, at
most 10 s, or 10 s × √size for a group of several pods) has not yet expired, else straight to activeQ.
Backoff ends on whole-second windows, and when activeQ is empty the next entry comes from backoffQ at once
(`SchedulerPopFromBackoffQ`, on by default since v1.33); an entry backing off after an error (a failed
binding) is not taken early.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from enum import Enum
from typing import Any

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0
_MAX_DOUBLINGS = 64


class Where(Enum):
    ACTIVE = "active"
    BACKOFF = "backoff"
    UNSCHEDULABLE = "unschedulable"
    IN_FLIGHT = "in-flight"


@dataclass(slots=True)
class Entry:
    key: str
    priority: int
    timestamp: float  # when it arrived, or last came back from an attempt (QueuedPodInfo.Timestamp)
    seq: int
    attempts: int = 0
    last_failure: float = 0.0
    where: Where = Where.ACTIVE
    moved_while_in_flight: bool = False
    size: int = 1  # pods in the entry at its last attempt (a group's backoff grows with it)
    error: bool = False  # came back after an error: its backoff is not cut short
    order: int = 0  # ties of timestamp: the order in which entries got it

    def backoff_expiry(self, initial: float = INITIAL_BACKOFF, most: float = MAX_BACKOFF) -> float:
        """The whole-second window in which the backoff ends (backoff_queue.go `getBackoffTime`): the entry is
        backing off until that window has passed. No backoff at all when `most` is 0, as upstream."""
        if self.attempts == 0 or most == 0:
            return -math.inf
        if self.size > 1:
            most *= math.sqrt(self.size)
        # The doubling stops mattering once it passes `most`; capping the exponent keeps 2.0 ** n from overflowing
        # after a thousand-odd attempts.
        return math.floor(self.last_failure + min(initial * 2.0 ** min(self.attempts - 1, _MAX_DOUBLINGS), most))

    def backoff_ends(self, initial: float = INITIAL_BACKOFF, most: float = MAX_BACKOFF) -> float:
        """When the entry stops backing off: the end of its expiry window (`isEntityBackingoff`)."""
        window = self.backoff_expiry(initial, most)
        return window + 1.0 if window != -math.inf else -math.inf


class SchedulingQueue:
    def __init__(self, initial_backoff: float = INITIAL_BACKOFF, max_backoff: float = MAX_BACKOFF) -> None:
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self._active: list[tuple[int, float, int, int, str]] = []
        # backoffQ by expiry window, then as activeQ orders (lessBackoffCompletedWithPriority); the error
        # backoffQ by expiry only (lessBackoffCompleted).
        self._backoff: list[tuple[float, int, float, int, int, str]] = []
        self._error_backoff: list[tuple[float, int, str]] = []
        self.entries: dict[str, Entry] = {}
        self._seq = 0
        self._order = 0

    def __contains__(self, key: str) -> bool:
        return key in self.entries

    def __len__(self) -> int:
        return len(self.entries)

    def add(self, key: str, priority: int, timestamp: float) -> None:
        """A new entry goes to activeQ; one already queued keeps its place."""
        if key in self.entries:
            return
        self._seq += 1
        self._order += 1
        entry = Entry(key, priority, timestamp, self._seq, order=self._order)
        self.entries[key] = entry
        self._push_active(entry)

    def _push_active(self, entry: Entry) -> None:
        entry.where = Where.ACTIVE
        heapq.heappush(self._active, (-entry.priority, entry.timestamp, entry.order, entry.seq, entry.key))

    def pop(self, now: float) -> str | None:
        """The next entry to schedule (after moving expired backoffs to activeQ; from backoffQ when activeQ is
        empty), or None."""
        self.flush_backoff(now)
        while self._active:
            _, _, _, seq, key = heapq.heappop(self._active)
            if self._take(key, seq) is not None:
                return key
        while self._backoff:  # active_queue.go unlockedPop: SchedulerPopFromBackoffQ
            *_, seq, key = heapq.heappop(self._backoff)
            if self._take(key, seq, Where.BACKOFF) is not None:
                return key
        return None

    def _take(self, key: str, seq: int, where: Where = Where.ACTIVE) -> Entry | None:
        entry = self.entries.get(key)
        if entry is None or entry.where is not where or entry.seq != seq:
            return None
        entry.where = Where.IN_FLIGHT
        entry.moved_while_in_flight = False
        return entry

    def done(self, key: str) -> None:
        """The entry was scheduled (or its object is gone): forget it."""
        self.entries.pop(key, None)

    def failed(self, key: str, now: float, size: int = 1) -> None:
        """Scheduling failed: count the attempt, restamp the entry (AddUnschedulableIfNotPresent) and park it until
        an event moves it. `size`: the pods the attempt tried (a group's backoff grows with it)."""
        entry = self.entries[key]
        entry.attempts += 1
        entry.error = False
        entry.size = size
        self._restamp(entry, now)
        if entry.moved_while_in_flight:
            self._to_backoff_or_active(entry, now)
        else:
            entry.where = Where.UNSCHEDULABLE

    def _restamp(self, entry: Entry, now: float) -> None:
        entry.last_failure = entry.timestamp = now
        self._order += 1
        entry.order = self._order

    def requeue(self, key: str) -> None:
        """A group cycle that succeeded with members left over (AddAttemptedPodGroupIfNeeded): straight back to
        activeQ, attempts reset, its timestamp kept, so that its next cycle, for those members, comes first and
        may preempt."""
        entry = self.entries[key]
        entry.attempts = 0
        entry.error = False
        self._seq += 1
        entry.seq = self._seq
        self._push_active(entry)

    def _to_backoff_or_active(self, entry: Entry, now: float) -> None:
        self._seq += 1
        entry.seq = self._seq
        ends = entry.backoff_ends(self.initial_backoff, self.max_backoff)
        if ends > now:
            entry.where = Where.BACKOFF
            if entry.error:
                heapq.heappush(self._error_backoff, (ends, entry.seq, entry.key))
            else:
                heapq.heappush(self._backoff, (ends, -entry.priority, entry.timestamp, entry.order, entry.seq,
                                               entry.key))
        else:
            self._push_active(entry)

    def backoff(self, key: str, priority: int, timestamp: float, now: float) -> None:
        """An entry whose binding failed after it was scheduled (handleBindingCycleError): back in the queue,
        an attempt counted, through the error backoffQ."""
        entry = self.entries.get(key)
        if entry is None:
            self._seq += 1
            entry = self.entries[key] = Entry(key, priority, timestamp, self._seq)
        entry.attempts += 1
        entry.error = True
        self._restamp(entry, now)
        self._to_backoff_or_active(entry, now)

    def move_all(self, now: float) -> None:
        """A cluster event may have made room: unschedulable entries go to backoffQ or activeQ."""
        for entry in self.entries.values():
            if entry.where is Where.UNSCHEDULABLE:
                self._to_backoff_or_active(entry, now)
            elif entry.where is Where.IN_FLIGHT:
                entry.moved_while_in_flight = True

    def move(self, key: str, now: float) -> None:
        entry = self.entries.get(key)
        if entry is not None and entry.where is Where.UNSCHEDULABLE:
            self._to_backoff_or_active(entry, now)

    def flush_backoff(self, now: float) -> None:
        heaps: tuple[list[Any], ...] = (self._backoff, self._error_backoff)
        for heap in heaps:
            while heap and heap[0][0] <= now:
                item = heapq.heappop(heap)
                entry = self.entries.get(item[-1])
                if entry is not None and entry.where is Where.BACKOFF and entry.seq == item[-2]:
                    self._push_active(entry)

    def next_backoff(self) -> float | None:
        """When the earliest backed-off entry becomes active again."""
        due: list[float] = []
        heaps: tuple[list[Any], ...] = (self._backoff, self._error_backoff)
        for heap in heaps:
            while heap:
                item = heap[0]
                entry = self.entries.get(item[-1])
                if entry is not None and entry.where is Where.BACKOFF and entry.seq == item[-2]:
                    due.append(item[0])
                    break
                heapq.heappop(heap)
        return min(due, default=None)

    def has_active(self) -> bool:
        return any(e.where is Where.ACTIVE for e in self.entries.values())
