"""The live engine loop's wall clock: it wakes for an event, for a retry falling due, and ends on stop."""

from __future__ import annotations

import threading
import time

from phalanx.live.clock import Inbox, WallClock


def test_an_event_wakes_the_clock_before_its_wait_is_over() -> None:
    inbox = Inbox()
    clock = WallClock(inbox, threading.Event())
    threading.Timer(0.05, inbox.put, args=(("Pod", "ADDED", {}),)).start()
    started = time.monotonic()
    now = clock.wait(None)  # nothing due: waits up to IDLE_WAIT, woken by the event
    assert now is not None and time.monotonic() - started < 0.9
    assert inbox.take_all() == [("Pod", "ADDED", {})] and len(inbox) == 0


def test_a_retry_already_due_does_not_wait() -> None:
    clock = WallClock(Inbox(), threading.Event(), time_source=lambda: 100.0)
    assert clock.wait(99.0) == 100.0 and clock.now() == 100.0


def test_stop_ends_the_loop() -> None:
    stop = threading.Event()
    clock = WallClock(Inbox(), stop)
    stop.set()
    assert clock.wait(None) is None
