"""The JobSet controller as scheduling sees it: for each replicated job, `replicas` child Jobs named
`<jobset>-<replicatedJob>-<index>`, run by the Job controller (their pods `<job>-<completion index>`), with
JobSet's labels on the Jobs' pods.

`startupPolicyOrder: InOrder` creates a replicated job's Jobs only once every Job of the one before it is
ready, read here as: each has had min(parallelism, completions) pods bound (readiness probes are not
modelled). `AnyOrder` (the default) creates them all at once. A Job template's `spec.scheduling` is dropped:
the Job controller makes a PodGroup only for root Jobs, and a JobSet's Jobs have a controller. Gangs come
from a PodGroup the user creates and the templates' `schedulingGroup.podGroupName` (JobSet's documented way).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from phalanx.api.objects import Job, Pod
from phalanx.api.sets import (
    JOB_GLOBAL_INDEX_LABEL,
    JOB_INDEX_LABEL,
    JOBSET_NAME_LABEL,
    REPLICATED_JOB_LABEL,
    REPLICATED_JOB_REPLICAS_LABEL,
    JobSet,
)
from phalanx.controllers.protocol import NOTHING, Actions, Controller, Given


@dataclass(slots=True)
class _Record:
    job_set: JobSet
    started: int = 0  # replicated jobs whose Jobs exist
    need: dict[str, int] = field(default_factory=dict)  # Job not yet ready -> pods to bind before it is
    bound: dict[str, set[str]] = field(default_factory=dict)  # Job not yet ready -> its pods bound so far


def child_jobs(job_set: JobSet, position: int, now: float) -> list[Job]:
    """The Jobs of replicated job number `position`, created at `now`."""
    offset = sum(rj.replicas for rj in job_set.replicated_jobs[:position])
    rj = job_set.replicated_jobs[position]
    jobs = []
    for index in range(rj.replicas):
        template = rj.job.template
        labels = {**template.labels, JOBSET_NAME_LABEL: job_set.name, REPLICATED_JOB_LABEL: rj.name,
                  REPLICATED_JOB_REPLICAS_LABEL: str(rj.replicas), JOB_INDEX_LABEL: str(index),
                  JOB_GLOBAL_INDEX_LABEL: str(offset + index)}
        jobs.append(dataclasses.replace(rj.job, name=f"{job_set.name}-{rj.name}-{index}", arrival=now,
                                        template=dataclasses.replace(template, labels=labels)))
    return jobs


@dataclass(slots=True)
class JobSetController(Controller):
    kinds: ClassVar[tuple[type[Any], ...]] = (JobSet,)
    sets: dict[str, _Record] = field(default_factory=dict)
    owner_of: dict[str, str] = field(default_factory=dict)  # a Job still to be ready (InOrder) -> its JobSet

    def arrive(self, obj: JobSet, now: float, given: Given) -> Actions:
        return Actions(jobs=self.start(obj, now))

    def pod_bound(self, pod: Pod, now: float) -> Actions:
        if pod.controller != "Job" or not self.waits_on(pod.owner):
            return NOTHING
        return Actions(jobs=self.bound(pod, now))

    def start(self, job_set: JobSet, now: float) -> list[Job]:
        record = self.sets[job_set.key] = _Record(job_set)
        return self._next(record, now)

    def waits_on(self, job_key: str | None) -> bool:
        return job_key is not None and job_key in self.owner_of

    def bound(self, pod: Pod, now: float) -> list[Job]:
        """A pod of a child Job is bound: under InOrder, once every Job of the current replicated job is ready,
        the next replicated job's Jobs."""
        job_key = pod.owner or ""
        record = self.sets.get(self.owner_of.get(job_key, ""))
        if record is None:
            return []
        bound = record.bound.setdefault(job_key, set())
        bound.add(pod.key)
        if len(bound) < record.need[job_key]:
            return []
        del record.need[job_key], record.bound[job_key], self.owner_of[job_key]
        return [] if record.need else self._next(record, now)

    def _next(self, record: _Record, now: float) -> list[Job]:
        job_set = record.job_set
        jobs: list[Job] = []
        while record.started < len(job_set.replicated_jobs):
            made = child_jobs(job_set, record.started, now)
            record.started += 1
            jobs.extend(made)
            if job_set.in_order:
                for job in made:
                    need = min(job.parallelism, job.completions)
                    if need > 0:
                        record.need[job.key] = need
                        self.owner_of[job.key] = job_set.key
                if record.need:
                    break
        return jobs
