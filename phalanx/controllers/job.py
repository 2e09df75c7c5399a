"""The Job controller as scheduling sees it: a Job's PodGroup (a gang Job, KEP-5547) and its pods, created up
to `parallelism` at a time until `completions` have succeeded. The simulator calls it; it keeps no clock."""

from __future__ import annotations

from dataclasses import dataclass, field

from phalanx.api.jobs import job_pod, job_pod_group
from phalanx.api.objects import Job, Pod, PodGroup


@dataclass(slots=True)
class JobRecord:
    job: Job
    created: int = 0
    succeeded: int = 0
    gone: int = 0  # pods deleted before they ran (a Job resized down): never to succeed
    free: list[int] = field(default_factory=list)  # their indexes, which the next pods take again


@dataclass(slots=True)
class JobController:
    jobs: dict[str, JobRecord] = field(default_factory=dict)

    def start(self, job: Job, now: float, adopted: int = 0) -> tuple[PodGroup | None, list[Pod]]:
        """A Job appears: its PodGroup (None unless it is a gang Job) and the pods it creates now. `adopted`: the
        input's pods it controls, running or pending (a snapshot's), which it counts as created (the Job
        controller's active pods), so that it makes only the missing ones."""
        record = self.jobs[job.key] = JobRecord(job, created=adopted)
        return job_pod_group(job), self._fill(record, now)

    def succeeded(self, owner: str | None, now: float) -> list[Pod]:
        """A pod of Job `owner` succeeded: the pods the Job creates in its place (none for other owners)."""
        record = self.jobs.get(owner) if owner is not None else None
        if record is None:
            return []
        record.succeeded += 1
        return self._fill(record, now)

    def resize(self, job: Job, pending: list[str], now: float) -> tuple[list[str], list[Pod]]:
        """The Job runs again with other parallelism and completions (Kueue admitted it again with other counts,
        RunWithPodSetsInfo), `pending` its pods not running, in creation order: those to delete (the last ones,
        beyond what it may run now) and the pods it creates."""
        record = self.jobs.get(job.key)
        if record is None:
            return [], []
        record.job = job
        active = record.created - record.succeeded - record.gone
        allowed = max(0, min(job.parallelism, job.completions - record.succeeded))
        drop = pending[len(pending) - min(len(pending), max(0, active - allowed)):]
        record.gone += len(drop)
        record.free = sorted([*record.free, *(int(key.rsplit("-", 1)[1]) for key in drop)])
        return drop, self._fill(record, now)

    @staticmethod
    def _fill(record: JobRecord, now: float) -> list[Pod]:
        job = record.job
        pods = []
        while (record.created - record.gone < job.completions
               and record.created - record.succeeded - record.gone < job.parallelism):
            if record.free:  # a pod deleted before it ran is made again under its name, as `verify` names them
                pods.append(job_pod(job, record.free.pop(0), now))
                record.gone -= 1
                continue
            pods.append(job_pod(job, record.created, now))
            record.created += 1
        return pods
