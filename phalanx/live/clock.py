"""Wall time for the engine loop, and the inbox of informer events it waits on.

Informer threads put events into the Inbox; the loop's WallClock blocks until an event is there, the
engine's next retry falls due, or the driver is told to stop (then the loop ends). Waits are capped, so a
stop is noticed within a second even when nothing happens.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

IDLE_WAIT = 1.0  # the longest the loop waits before it looks again
Item = tuple[str, str, dict[str, Any]]  # (kind, ADDED|MODIFIED|DELETED, object)


class Inbox:
    """Informer events in arrival order, safe to put from any thread."""

    def __init__(self) -> None:
        self._items: deque[Item] = deque()
        self._arrived = threading.Condition()

    def put(self, item: Item) -> None:
        with self._arrived:
            self._items.append(item)
            self._arrived.notify_all()

    def wait(self, timeout: float) -> bool:
        """Block until an event is there (True) or `timeout` seconds have passed (False)."""
        with self._arrived:
            return self._arrived.wait_for(lambda: bool(self._items), timeout)

    def take_all(self) -> list[Item]:
        with self._arrived:
            items = list(self._items)
            self._items.clear()
        return items

    def __len__(self) -> int:
        return len(self._items)


class WallClock:
    """Unix seconds; `wait` returns early for new events and None once `stop` is set."""

    def __init__(self, inbox: Inbox, stop: threading.Event, time_source: Callable[[], float] = time.time) -> None:
        self.inbox = inbox
        self.stop = stop
        self.time_source = time_source

    def now(self) -> float:
        return self.time_source()

    def wait(self, due: float | None) -> float | None:
        if self.stop.is_set():
            return None
        timeout = IDLE_WAIT if due is None else max(0.0, min(IDLE_WAIT, due - self.now()))
        if timeout > 0:
            self.inbox.wait(timeout)
        return None if self.stop.is_set() else self.now()
