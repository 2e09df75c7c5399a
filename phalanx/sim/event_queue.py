"""The event core: a heap of (time, priority, tie, sequence, event). Deterministic by construction (a shuffled
order is drawn from its seed)."""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

# At equal times, completions free room before new objects arrive.
COMPLETION = 0
ARRIVAL = 1
_LISTED = -1e15  # below every other tie: listed events first


class EventQueue(Generic[T]):
    def __init__(self, *, reverse_ties: bool = False, shuffle_ties: int = 0) -> None:
        """`reverse_ties`: events of one time and priority come out last pushed first; `shuffle_ties` (a seed, 0
        for none): in an order drawn from it."""
        self._heap: list[tuple[float, int, float, int, T]] = []
        self._draw = random.Random(shuffle_ties).random if shuffle_ties else None
        self._seq = 0
        self._step = -1 if reverse_ties else 1

    def __len__(self) -> int:
        return len(self._heap)

    def push(self, time: float, priority: int, event: T, *, listed: bool = False) -> None:
        """`listed`: with ties reversed or shuffled, the event still comes first among its ties, in push order (the
        cluster's state: nodes, pods already bound)."""
        self._seq += self._step
        if listed and (self._step < 0 or self._draw is not None):
            tie: float = _LISTED + abs(self._seq)
        else:
            tie = self._draw() if self._draw is not None else self._seq
        heapq.heappush(self._heap, (time, priority, tie, self._seq, event))

    def only(self, test: Callable[[T], bool]) -> bool:
        """Whether every queued event passes `test` (True when none is queued)."""
        return all(test(item[4]) for item in self._heap)

    def peek_time(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def pop_until(self, time: float) -> list[T]:
        """Every event due at or before `time`, in order."""
        out: list[T] = []
        while self._heap and self._heap[0][0] <= time:
            out.append(heapq.heappop(self._heap)[4])
        return out

    def pop_one(self, time: float) -> T | None:
        """The first event due at or before `time`, or None."""
        return heapq.heappop(self._heap)[4] if self._heap and self._heap[0][0] <= time else None
