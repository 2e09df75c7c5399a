"""The scheduling queue: activeQ (priority, then age), backoffQ, and unschedulable entries.

An entry is a pod or, with GenericWorkload on, a whole PodGroup. A failed entry waits in the
unschedulable set until a cluster event moves it; it then goes to backoffQ if its backoff (1 s doubling
per attempt, at most 10 s) has not yet expired, else straight to activeQ.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from enum import Enum

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
    timestamp: float
    seq: int
    attempts: int = 0
    last_failure: float = 0.0
    where: Where = Where.ACTIVE
    moved_while_in_flight: bool = False

    def backoff_expiry(self, initial: float = INITIAL_BACKOFF, most: float = MAX_BACKOFF) -> float:
        if self.attempts == 0:
            return self.last_failure
        # The doubling stops mattering once it passes `most`; capping the exponent keeps 2.0 ** n from overflowing
        # after a thousand-odd attempts.
        return self.last_failure + min(initial * 2.0 ** min(self.attempts - 1, _MAX_DOUBLINGS), most)


class SchedulingQueue:
    def __init__(self, initial_backoff: float = INITIAL_BACKOFF, max_backoff: float = MAX_BACKOFF) -> None:
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self._active: list[tuple[int, float, int, str]] = []
        self._backoff: list[tuple[float, int, str]] = []
        self.entries: dict[str, Entry] = {}
        self._seq = 0

    def __contains__(self, key: str) -> bool:
        return key in self.entries

    def __len__(self) -> int:
        return len(self.entries)

    def add(self, key: str, priority: int, timestamp: float) -> None:
        """A new entry goes to activeQ; one already queued keeps its place."""
        if key in self.entries:
            return
        self._seq += 1
        entry = Entry(key, priority, timestamp, self._seq)
        self.entries[key] = entry
        self._push_active(entry)

    def _push_active(self, entry: Entry) -> None:
        entry.where = Where.ACTIVE
        heapq.heappush(self._active, (-entry.priority, entry.timestamp, entry.seq, entry.key))

    def pop(self, now: float) -> str | None:
        """The next entry to schedule (after moving expired backoffs to activeQ), or None."""
        self.flush_backoff(now)
        while self._active:
            _, _, seq, key = heapq.heappop(self._active)
            entry = self.entries.get(key)
            if entry is None or entry.where is not Where.ACTIVE or entry.seq != seq:
                continue
            entry.where = Where.IN_FLIGHT
            entry.moved_while_in_flight = False
            return key
        return None

    def done(self, key: str) -> None:
        """The entry was scheduled (or its object is gone): forget it."""
        self.entries.pop(key, None)

    def failed(self, key: str, now: float) -> None:
        """Scheduling failed: count the attempt and park the entry until an event moves it."""
        entry = self.entries[key]
        entry.attempts += 1
        entry.last_failure = now
        if entry.moved_while_in_flight:
            self._to_backoff_or_active(entry, now)
        else:
            entry.where = Where.UNSCHEDULABLE

    def requeue(self, key: str) -> None:
        """A group cycle that succeeded with members left over (AddAttemptedPodGroupIfNeeded): straight back to
        activeQ, attempts reset, its timestamp kept, so that its next cycle, for those members, comes first and
        may preempt."""
        entry = self.entries[key]
        entry.attempts = 0
        self._seq += 1
        entry.seq = self._seq
        self._push_active(entry)

    def _to_backoff_or_active(self, entry: Entry, now: float) -> None:
        self._seq += 1
        entry.seq = self._seq
        expiry = entry.backoff_expiry(self.initial_backoff, self.max_backoff)
        if expiry > now:
            entry.where = Where.BACKOFF
            heapq.heappush(self._backoff, (expiry, entry.seq, entry.key))
        else:
            self._push_active(entry)

    def backoff(self, key: str, priority: int, timestamp: float, now: float) -> None:
        """An entry whose binding failed after it was scheduled (handleBindingCycleError): back in the queue,
        an attempt counted, through backoffQ."""
        entry = self.entries.get(key)
        if entry is None:
            self._seq += 1
            entry = self.entries[key] = Entry(key, priority, timestamp, self._seq)
        entry.attempts += 1
        entry.last_failure = now
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
        while self._backoff and self._backoff[0][0] <= now:
            _, seq, key = heapq.heappop(self._backoff)
            entry = self.entries.get(key)
            if entry is not None and entry.where is Where.BACKOFF and entry.seq == seq:
                self._push_active(entry)

    def next_backoff(self) -> float | None:
        """When the earliest backed-off entry becomes active again."""
        while self._backoff:
            expiry, seq, key = self._backoff[0]
            entry = self.entries.get(key)
            if entry is not None and entry.where is Where.BACKOFF and entry.seq == seq:
                return expiry
            heapq.heappop(self._backoff)
        return None

    def has_active(self) -> bool:
        return any(e.where is Where.ACTIVE for e in self.entries.values())
