"""The scheduling queue: activeQ (priority, then when the entry last came back), backoffQ, and unschedulable
entries, as kube-scheduler v1.37's `backend/queue` keeps them.

An entry is a pod or, with GenericWorkload on, a whole PodGroup. A failed entry waits in the unschedulable
set until a cluster event moves it; it then goes to backoffQ if its backoff (1 s doubling per attempt, at
most 10 s, or 10 s × √size for a group of several pods) has not yet expired, else straight to activeQ.
Backoff ends on whole-second windows, and when activeQ is empty the next entry comes from backoffQ at once
(`SchedulerPopFromBackoffQ`, on by default since v1.33); an entry backing off after an error (a failed
binding) is not taken early.

A PodGroup whose cycle failed is *timed* (unless the profile says `groupRetry: event`, Phalanx's own policy):
v1.37.2 records no rejecting plugin for it, so it goes to the error backoffQ whatever the events
(`requeuePodGroup`) and is tried again when the backoff ends, and again, for as long as it fails; an event does
not move it. A retry with nothing changed since the last attempt fails the same way, so such an entry sleeps
instead, and the first event takes up its retry schedule where it would be then (the retries in between
counted, as they grow the backoff). With no backoff at all (verify's replay), a timed retry comes after
everything else of the instant, as the real one comes a backoff later, once the replay's other pods have been
tried.
"""

from __future__ import annotations

import heapq
import math
import zlib
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
    timed: bool = False  # retried when its backoff ends, whatever the events (a failed group cycle)
    order: int = 0  # ties of timestamp: the order in which entries got it

    def backoff_expiry(self, initial: float = INITIAL_BACKOFF, most: float = MAX_BACKOFF) -> float:
        """The whole-second window in which the backoff ends (backoff_queue.go `getBackoffTime`): the entry is
        backing off until that window has passed. No backoff at all when `most` is 0, as upstream."""
        if self.attempts == 0 or most == 0:
            return -math.inf
        most = self._most(most)
        # The doubling stops mattering once it passes `most`; capping the exponent keeps 2.0 ** n from overflowing
        # after a thousand-odd attempts.
        return math.floor(self.last_failure + min(initial * 2.0 ** min(self.attempts - 1, _MAX_DOUBLINGS), most))

    def backoff_capped(self, initial: float = INITIAL_BACKOFF, most: float = MAX_BACKOFF) -> bool:
        """The backoff has reached its maximum: it grows no more with further attempts."""
        return initial * 2.0 ** min(max(self.attempts - 1, 0), _MAX_DOUBLINGS) >= self._most(most)

    def _most(self, most: float) -> float:
        """The maximum backoff: a group's of several pods is × √size (calculateBackoffDuration)."""
        return most * math.sqrt(self.size) if self.size > 1 else most

    def backoff_ends(self, initial: float = INITIAL_BACKOFF, most: float = MAX_BACKOFF) -> float:
        """When the entry stops backing off: the end of its expiry window (`isEntityBackingoff`)."""
        window = self.backoff_expiry(initial, most)
        return window + 1.0 if window != -math.inf else -math.inf


class SchedulingQueue:
    def __init__(self, initial_backoff: float = INITIAL_BACKOFF, max_backoff: float = MAX_BACKOFF, *,
                 reverse_ties: bool = False, shuffle_ties: int = 0) -> None:
        """`reverse_ties`: entries of one timestamp and priority come out in the reverse of the order they got it
        (an instant's concurrent creations reaching the queue the other way round: phalanx/sim/interleavings.py);
        `shuffle_ties` (a seed, 0 for none): in an order drawn from it."""
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self._tie = -1 if reverse_ties else 1
        self._shuffle = shuffle_ties
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

    def _push_active(self, entry: Entry, timestamp: float | None = None) -> None:
        entry.where = Where.ACTIVE
        when = entry.timestamp if timestamp is None else timestamp
        heapq.heappush(self._active, (-entry.priority, when, self._tie_of(entry), entry.seq, entry.key))

    def _tie_of(self, entry: Entry) -> int:
        """What orders entries of one timestamp and priority."""
        if self._shuffle:
            return zlib.crc32(f"{self._shuffle}/{entry.key}/{entry.order}".encode())
        return self._tie * entry.order

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
        if self._error_backoff and self._error_backoff[0][0] == -math.inf:
            self.flush_backoff(now, late=True)
            while self._active:
                _, _, _, seq, key = heapq.heappop(self._active)
                if self._take(key, seq) is not None:
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

    def failed(self, key: str, now: float, size: int = 1, timed: bool = False) -> None:
        """Scheduling failed: count the attempt, restamp the entry (AddUnschedulableIfNotPresent) and park it until
        an event moves it; or, `timed` (a failed group cycle, no rejecting plugin: requeuePodGroup), back off
        and retry whatever the events. `size`: the pods the attempt tried (a group's backoff grows with it)."""
        entry = self.entries[key]
        entry.attempts += 1
        entry.error = False
        entry.timed = timed
        entry.size = size
        self._restamp(entry, now)
        if timed and entry.moved_while_in_flight:  # its retry will see what changed during the attempt
            self._push_timed(entry, entry.backoff_ends(self.initial_backoff, self.max_backoff))
        elif timed:
            entry.where = Where.UNSCHEDULABLE  # asleep: its retries would fail as this attempt did
        elif entry.moved_while_in_flight:
            self._to_backoff_or_active(entry, now)
        else:
            entry.where = Where.UNSCHEDULABLE

    def _restamp(self, entry: Entry, now: float) -> None:
        entry.last_failure = entry.timestamp = now
        self._order += 1
        entry.order = self._order

    def errored(self, key: str, priority: int, timestamp: float, now: float, size: int = 1) -> None:
        """A cycle that ended in an error (handleSchedulingFailure with an Error status): an attempt counted and
        a retry after the error backoff whatever the events, as a failed group's (`failed(timed=True)`, asleep
        while nothing changes: the same state fails the same way). An entry its cycle had finished comes back."""
        if key not in self.entries:
            self._seq += 1
            self._order += 1
            self.entries[key] = Entry(key, priority, timestamp, self._seq, order=self._order, where=Where.IN_FLIGHT)
        self.failed(key, now, size=size, timed=True)

    def requeue(self, key: str) -> None:
        """A group cycle that succeeded with members left over (AddAttemptedPodGroupIfNeeded): straight back to
        activeQ, attempts reset, its timestamp kept, so that its next cycle, for those members, comes first and
        may preempt."""
        entry = self.entries[key]
        entry.attempts = 0
        entry.error = entry.timed = False
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
                heapq.heappush(self._backoff, (ends, -entry.priority, entry.timestamp, self._tie_of(entry),
                                               entry.seq, entry.key))
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
        entry.timed = False
        self._restamp(entry, now)
        self._to_backoff_or_active(entry, now)

    def _push_timed(self, entry: Entry, ends: float) -> None:
        self._seq += 1
        entry.seq = self._seq
        entry.where = Where.BACKOFF
        heapq.heappush(self._error_backoff, (ends, entry.seq, entry.key))

    def _wake(self, entry: Entry, now: float) -> None:
        """An event for a sleeping timed entry. Its retries went on in the meantime, each failing as before and
        growing the backoff; the first one from `now` on sees the change."""
        initial, most = self.initial_backoff, self.max_backoff
        ends = entry.backoff_ends(initial, most)
        while -math.inf < ends < now:  # a futile retry at `ends` (without backoff there is none: it comes late)
            entry.attempts += 1
            self._restamp(entry, ends)
            following = entry.backoff_ends(initial, most)
            if entry.backoff_capped(initial, most):  # it grows no more: retries a fixed gap apart (whole seconds)
                gap = following - ends
                skipped = max(0, math.ceil((now - following) / gap))
                if skipped:
                    entry.attempts += skipped
                    self._restamp(entry, ends + skipped * gap)
                    following += skipped * gap
            ends = following
        self._push_timed(entry, ends)

    def move_all(self, now: float) -> None:
        """A cluster event may have made room: unschedulable entries go to backoffQ or activeQ."""
        for entry in self.entries.values():
            self._moved(entry, now)

    def move(self, key: str, now: float) -> None:
        entry = self.entries.get(key)
        if entry is not None:
            self._moved(entry, now)

    def _moved(self, entry: Entry, now: float) -> None:
        if entry.where is Where.UNSCHEDULABLE:
            if entry.timed:
                self._wake(entry, now)
            else:
                self._to_backoff_or_active(entry, now)
        elif entry.where is Where.IN_FLIGHT:
            entry.moved_while_in_flight = True

    def flush_backoff(self, now: float, *, late: bool = False) -> None:
        """Backoffs that have ended go to activeQ. Timed retries without backoff wait for `late` (activeQ and
        backoffQ empty)."""
        while self._backoff and self._backoff[0][0] <= now:
            *_, seq, key = heapq.heappop(self._backoff)
            entry = self.entries.get(key)
            if entry is not None and entry.where is Where.BACKOFF and entry.seq == seq:
                self._push_active(entry)
        heap = self._error_backoff
        # Retries whose backoff ends in one flush: as listed, the earlier failure first; in another order of events,
        # which timer fires first is the backoffs' phase, so they tie and the order of ties decides.
        retried = now if self._shuffle or self._tie < 0 else None
        while heap and heap[0][0] <= now and (late or heap[0][0] != -math.inf):
            _, seq, key = heapq.heappop(heap)
            entry = self.entries.get(key)
            if entry is not None and entry.where is Where.BACKOFF and entry.seq == seq:
                self._push_active(entry, retried)

    def next_backoff(self) -> float | None:
        """When the earliest backed-off entry becomes active again."""
        due: list[float] = []
        heaps: tuple[list[Any], ...] = (self._backoff, self._error_backoff)  # both: (ends, …, seq, key)
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
