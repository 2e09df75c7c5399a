"""The event core: a heap of (time, priority, sequence, event). Deterministic by construction."""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

# At equal times, completions free room before new objects arrive.
COMPLETION = 0
ARRIVAL = 1


class EventQueue(Generic[T]):
    def __init__(self) -> None:
        self._heap: list[tuple[float, int, int, T]] = []
        self._seq = 0

    def __len__(self) -> int:
        return len(self._heap)

    def push(self, time: float, priority: int, event: T) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (time, priority, self._seq, event))

    def only(self, test: Callable[[T], bool]) -> bool:
        """Whether every queued event passes `test` (True when none is queued)."""
        return all(test(item[3]) for item in self._heap)

    def peek_time(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def pop_until(self, time: float) -> list[T]:
        """Every event due at or before `time`, in order."""
        out: list[T] = []
        while self._heap and self._heap[0][0] <= time:
            out.append(heapq.heappop(self._heap)[3])
        return out
