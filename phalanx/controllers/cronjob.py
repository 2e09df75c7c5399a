"""The CronJob controller: at each time `spec.schedule` matches, a Job from `spec.jobTemplate`, named
`<cronjob>-<scheduled time in minutes since the Unix epoch>` as the real controller names it, run by the Job
controller.

Simulated time 0 stands for 2024-01-01T00:00:00Z (a Monday; `phalanx.api.apps.CRON_EPOCH`), or for the
time a CronJob's `phalanx.dev/start-time` annotation names. The first run is the first matching minute
strictly after the CronJob arrives. `concurrencyPolicy`: Allow starts a Job even while earlier ones run;
Forbid skips a run while one is active; Replace deletes the active Jobs (and their pods) and starts the new
one. `suspend: true` never runs. Left out: `startingDeadlineSeconds` and missed-run catch-up (the simulator
never misses a run), history limits, `timeZone` other than UTC.
"""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass, field
from typing import Any, ClassVar

from phalanx.api.apps import CronJob
from phalanx.api.objects import Job
from phalanx.controllers.job import JobController
from phalanx.controllers.protocol import Actions, Controller, Given, Setup

# Without a simulation horizon (`--until`), CronJobs run for this long after they arrive: a schedule never
# runs out, and the simulation has to end.
CRON_HORIZON = 24 * 3600.0


@dataclass(slots=True)
class CronRun:
    """What one scheduled time asks for: a Job to start (None: skipped), Jobs to delete, the next time."""

    job: Job | None = None
    delete: list[str] = field(default_factory=list)
    next_time: float | None = None


@dataclass(slots=True)
class _Record:
    cron_job: CronJob
    jobs: list[str] = field(default_factory=list)  # keys of the Jobs it started, oldest first


@dataclass(slots=True)
class CronJobController(Controller):
    kinds: ClassVar[tuple[type[Any], ...]] = (CronJob,)
    jobs: JobController
    until: float | None = None  # the simulation's horizon
    cron_jobs: dict[str, _Record] = field(default_factory=dict)
    _horizon: dict[str, float] = field(default_factory=dict)  # CronJob key -> when its runs stop

    @classmethod
    def build(cls, setup: Setup) -> CronJobController:
        return cls(setup.jobs, until=setup.until)

    def arrive(self, obj: CronJob, now: float, given: Given) -> Actions:
        self._horizon[obj.key] = self.until if self.until is not None else now + CRON_HORIZON
        return self._wake(obj.key, self.start(obj, now))

    def woken(self, key: str, now: float) -> Actions:
        run = self.run(key, now)
        actions = self._wake(key, run.next_time)
        actions.delete_jobs = run.delete
        if run.job is not None:
            actions.jobs.append(run.job)
        return actions

    def _wake(self, key: str, time: float | None) -> Actions:
        if time is None or time > self._horizon[key]:
            return Actions()
        return Actions(wake=[(time, key)])

    def start(self, cron_job: CronJob, now: float) -> float | None:
        """A CronJob appears: the simulated time of its first run (None: suspended, or it never matches)."""
        self.cron_jobs[cron_job.key] = _Record(cron_job)
        return None if cron_job.suspend else self.next_time(cron_job, now)

    @staticmethod
    def next_time(cron_job: CronJob, now: float) -> float | None:
        """The simulated time of the first scheduled minute strictly after `now`."""
        try:
            moment = cron_job.start + datetime.timedelta(seconds=now)
        except OverflowError:
            return None
        fire = cron_job.schedule.next_after(moment)
        return None if fire is None else (fire - cron_job.start).total_seconds()

    def active(self, job_key: str) -> bool:
        record = self.jobs.jobs.get(job_key)
        return record is not None and record.succeeded < record.job.completions

    def run(self, key: str, now: float) -> CronRun:
        """The scheduled time `now` of CronJob `key` has come."""
        record = self.cron_jobs[key]
        cron_job = record.cron_job
        out = CronRun(next_time=self.next_time(cron_job, now))
        active = [k for k in record.jobs if self.active(k)]
        if active and cron_job.concurrency_policy == "Forbid":
            return out
        if active and cron_job.concurrency_policy == "Replace":
            for job_key in active:
                del self.jobs.jobs[job_key]
            out.delete = active
        minutes = int((cron_job.start + datetime.timedelta(seconds=now)).timestamp() // 60)
        out.job = dataclasses.replace(cron_job.job, name=f"{cron_job.name}-{minutes}", arrival=now)
        record.jobs.append(out.job.key)
        return out
