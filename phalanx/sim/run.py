"""The one way to run a simulation: build it, let the caller fit it out, run it, report it.

The CLI, sweeps, verify's replay, the timed trace replay and the benchmarks all run simulations through
`simulate`; what each needs beyond the plain sequence is a parameter: a trace's deletions, a time-series
recorder, observers, verify's hints and recording queue, `setup` hooks that fit out the built simulation
before it runs (a progress bar, a benchmark's counters) and `around`, which wraps the run alone (a timer or
a profiler that leaves the building out).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from phalanx.inputs.load import Inputs
from phalanx.scheduler.hints import Hints
from phalanx.scheduler.profiles import Profile
from phalanx.scheduler.queue import SchedulingQueue
from phalanx.sim.interleavings import AS_LISTED, Interleaving
from phalanx.sim.report import build_report
from phalanx.sim.report_schema import Report
from phalanx.sim.scenario import Scenario
from phalanx.sim.series import SeriesRecorder
from phalanx.sim.simulation import Simulation
from phalanx.sim.trace_file import Trace

Observer = Callable[[Simulation], None]


@dataclass(slots=True)
class Run:
    """A finished simulation and the recorder of its time series (with `series=True`)."""

    sim: Simulation
    series: SeriesRecorder | None = None

    def report(self) -> Report:
        """The report (`docs/report.md`), with the `series` block when the run recorded one."""
        return build_report(self.sim, series=self.series)


def simulate(inputs: Inputs, profile: Profile, *, scenario: Scenario | None = None, seed: int = 0,
             until: float | None = None, trace: Trace | None = None, series: bool = False, sample: float | None = None,
             observers: Sequence[Observer] = (), setup: Sequence[Callable[[Simulation], object]] = (),
             recreate_bare_members: bool = True, hints: Hints | None = None, queue: SchedulingQueue | None = None,
             around: Callable[[Callable[[], Simulation]], object] | None = None,
             interleaving: Interleaving = AS_LISTED) -> Run:
    """Run `inputs` under `profile`, in `scenario` (simulator-only settings: admission, scale-up; none by
    default), to `until` (or until nothing more can change).

    `trace` schedules its deletions; `series` records the time series (every event batch, or at most once
    per `sample` seconds); `observers` are called after each event batch; each of `setup` is called with the
    built simulation before it runs; `recreate_bare_members=False` leaves an evicted bare PodGroup member
    gone (no controller makes it again); `hints` (the real scheduler's choices) and `queue` (one that records
    what it hands out) are verification's, given to the Scheduler when it is made; `around(run)` must call
    `run()` once; `interleaving` orders an instant's events (phalanx/sim/interleavings.py).
    """
    sim = Simulation(inputs, profile, scenario=scenario, seed=seed, until=until, hints=hints, queue=queue,
                     interleaving=interleaving)
    sim.recreate_bare_members = recreate_bare_members
    if trace is not None:
        trace.apply(sim)
    recorder = SeriesRecorder(sample).attach(sim) if series else None
    sim.observers.extend(observers)
    for fit in setup:
        fit(sim)
    if around is None:
        sim.run()
    else:
        around(sim.run)
    return Run(sim, recorder)


def one_horizon(runs: Sequence[Run]) -> None:
    """Carry every run on to the latest end among them (nothing changes in a run that ended early: pods keep
    what they hold, pending pods keep waiting), so that waits and resource-hours compare over one horizon."""
    common = max((run.sim.end_time for run in runs), default=0.0)
    for run in runs:
        run.sim.extend_to(common)
