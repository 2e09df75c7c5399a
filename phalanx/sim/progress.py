"""A `rich` progress bar for long simulations: shown on a terminal, silent when output is piped.

The bar appears only once a run has taken `delay` seconds of wall time (short runs print nothing) and
measures virtual time against a horizon: `--until`, or else the last arrival in the inputs.
It is drawn on stderr and removed when the run ends, so tables and JSON on stdout are untouched.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from phalanx.api.quantity import format_duration
from phalanx.sim.simulation import Simulation


def interactive() -> bool:
    """True when both stdout and stderr are terminals (nothing is piped or redirected)."""
    return sys.stdout.isatty() and sys.stderr.isatty()


class RunProgress:
    """Context manager; `track(sim, label)` before `sim.run()` shows that run's progress when it is long."""

    def __init__(self, enabled: bool | None = None, *, delay: float = 1.0, console: Console | None = None) -> None:
        self.enabled = interactive() if enabled is None else enabled
        self.delay = delay
        self.console = console or Console(stderr=True)
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def _display(self) -> Progress:
        if self._progress is None:
            self._progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                      TextColumn("{task.fields[clock]}"), TimeElapsedColumn(),
                                      console=self.console, transient=True)
            self._progress.start()
        return self._progress

    def track(self, sim: Simulation, label: str, horizon: float) -> None:
        """Follow `sim` (call before `sim.run()`) against `horizon` seconds of virtual time; a no-op when the
        bar is disabled."""
        if not self.enabled:
            return
        horizon = max(sim.until if sim.until is not None else horizon, 1e-9)
        started = time.monotonic()
        last = 0.0
        self._task = None

        def observe(run: Simulation) -> None:
            nonlocal last
            now = time.monotonic()
            if now - started < self.delay or now - last < 0.1:
                return
            last = now
            progress = self._display()
            if self._task is None:
                self._task = progress.add_task(label, total=horizon, clock="")
            progress.update(self._task, completed=min(run.now, horizon), clock=f"t={format_duration(run.now)}")

        sim.observers.append(observe)

    def done(self) -> None:
        """The tracked run ended: fill its bar."""
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=self._progress.tasks[-1].total)
        self._task = None
