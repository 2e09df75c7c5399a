"""What the Job controller stamps from a Job: its PodGroup (with spec.scheduling) and its pods."""

from __future__ import annotations

import dataclasses

from phalanx.api.objects import Job, Pod, PodGroup


def job_pod_group(job: Job) -> PodGroup | None:
    """The PodGroup the Job controller creates for a Job with `spec.scheduling`, named after the Job: it copies
    the pod template's priority class (and the priority and preemption policy admission gave the template),
    so that its pods pass the scheduler's check that members share the group's priority and policy."""
    if job.policy is None:
        return None
    template = job.template
    return PodGroup(namespace=job.namespace, name=job.name, policy=job.policy, arrival=job.arrival,
                    disruption_mode="single", priority_class_name=template.priority_class_name,
                    priority=template.priority, preemption_policy=template.preemption_policy, source=job.source)


def job_pod(job: Job, index: int, now: float) -> Pod:
    """The pod for completion index `index` (`<job>-<index>`), created at `now`."""
    pod = dataclasses.replace(
        job.template, name=f"{job.name}-{index}", namespace=job.namespace, arrival=now, owner=job.key, controller="Job",
        labels={**job.template.labels, "job-name": job.name, "batch.kubernetes.io/job-completion-index": str(index)},
        pod_group=job.name if job.policy is not None else job.template.pod_group,
    )
    return pod
