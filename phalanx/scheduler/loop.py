"""The engine's loop, the same for both drivers: let time pass until the next wake-up, feed in what
arrived, run a scheduling round, hand its decisions to the driver.

Only the clock differs. The simulator's clock jumps to the next event or retry (virtual seconds); the
live driver's clock blocks on wall time until an informer event arrives or a retry falls due. Either
clock ends the loop by answering None (the simulation has nothing left before its horizon; the live
driver was told to stop).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol

from phalanx.scheduler.decisions import Decision
from phalanx.scheduler.port import EnginePort


class Clock(Protocol):
    def now(self) -> float:
        """The current time, in the engine's seconds."""
        ...

    def wait(self, due: float | None) -> float | None:
        """Let time pass until `due` (the engine's next retry; None when nothing waits on backoff) or until
        new inputs arrive, whichever comes first; the time then, or None when the run is over."""
        ...


class Ends(Protocol):
    """What a driver puts on both sides of the engine."""

    def feed(self, now: float) -> None:
        """Apply every input that has arrived by `now` (objects added, changed, deleted)."""
        ...

    def turn(self) -> AbstractContextManager[bool]:
        """Held around one scheduling round; True when the engine may schedule now (a live standby replica
        may not, nor may a driver whose view of the cluster has not synced yet)."""
        ...

    def carry_out(self, decisions: list[Decision], now: float, seconds: float) -> None:
        """Act on a round's decisions; `seconds` is how long the round took."""
        ...


def run_engine(scheduler: EnginePort, clock: Clock, ends: Ends) -> None:
    """Rounds until the clock says the run is over."""
    while (now := clock.wait(scheduler.next_retry())) is not None:
        ends.feed(now)
        with ends.turn() as may:
            if not may:
                continue
            started = time.perf_counter()
            decisions = scheduler.schedule(now)
            ends.carry_out(decisions, now, time.perf_counter() - started)


class VirtualClock:
    """Simulated time: jumps straight to whichever comes first, the next input (`next_input`) or the
    engine's retry; over once neither is left, or the next one lies beyond `until`."""

    def __init__(self, next_input: Callable[[], float | None], until: float | None = None) -> None:
        self.next_input = next_input
        self.until = until
        self.time = 0.0

    def now(self) -> float:
        return self.time

    def wait(self, due: float | None) -> float | None:
        times = [t for t in (self.next_input(), due) if t is not None]
        if not times:
            return None
        t = min(times)
        if self.until is not None and t > self.until:
            return None
        self.time = max(self.time, t)
        return t
