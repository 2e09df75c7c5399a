"""The Kubeflow training operators as scheduling sees them (PyTorchJob, TFJob, MPIJob): every replica spec's
`replicas` pods, `<job>-<replica type, lowercase>-<index>` (an MPIJob's launcher is `<job>-launcher`), labelled
with the job's name, the replica type (lowercase) and index, and one gang PodGroup named after the job with
`minCount` = `runPolicy.schedulingPolicy.minAvailable` (default: every pod), created before the pods.

That PodGroup is what a gang-enabled operator's Volcano or scheduler-plugins PodGroup becomes in v1.37's
native API. When a template already names a PodGroup (`schedulingGroup.podGroupName`), none is made and the
pods keep the name they carry. Pods run for their `phalanx.dev/duration`; the job is done once they have all
succeeded. An evicted pod comes back under its name after its grace period (the simulator requeues it, as the
operator recreates a missing pod), whatever the replica's `restartPolicy`. Pods a snapshot already holds that
name the job as their controller are adopted by name (and then no PodGroup is made: the adopted pods are
in none, so a gang of the rest could never reach minCount).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from phalanx.api.objects import GroupPolicy, Pod, PodGroup
from phalanx.api.training import (
    JOB_NAME_LABEL,
    JOB_ROLE_LABEL,
    REPLICA_INDEX_LABEL,
    REPLICA_TYPE_LABEL,
    ReplicaSpec,
    TrainingJob,
)
from phalanx.controllers.protocol import Actions, Controller, Given

ROLES = {"Master": "master", "Chief": "master", "Launcher": "launcher"}  # job-role label values


def pod_name(job: TrainingJob, spec: ReplicaSpec, index: int) -> str:
    if job.kind == "MPIJob" and spec.type == "Launcher":
        return f"{job.name}-launcher"
    return f"{job.name}-{spec.type.lower()}-{index}"


def job_pod_group(job: TrainingJob, now: float) -> PodGroup | None:
    """The job's gang, or None when it has no pods or its templates name their own PodGroup. It takes the first
    replica type's template priority, which every member must share (v1.37 refuses a gang whose members
    differ)."""
    if job.pods == 0 or any(spec.template.pod_group for spec in job.replica_specs):
        return None
    first = job.replica_specs[0].template
    return PodGroup(namespace=job.namespace, name=job.name,
                    policy=GroupPolicy(kind="gang", min_count=job.min_available), arrival=now,
                    priority_class_name=first.priority_class_name, priority=first.priority,
                    preemption_policy=first.preemption_policy, source=job.source)


@dataclass(slots=True)
class TrainingJobController(Controller):
    kinds: ClassVar[tuple[type[Any], ...]] = (TrainingJob,)
    jobs: dict[str, TrainingJob] = field(default_factory=dict)

    def arrive(self, obj: TrainingJob, now: float, given: Given) -> Actions:
        group, pods = self.start(obj, given.owned(obj.key, obj.kind), now)
        return Actions(pod_groups=[group] if group is not None else [], pods=pods)

    def start(self, job: TrainingJob, existing: Iterable[Pod], now: float) -> tuple[PodGroup | None, list[Pod]]:
        """A training job appears: its PodGroup and the pods it lacks (a snapshot's pods count)."""
        self.jobs[job.key] = job
        have = {p.name for p in existing if p.controller == job.kind and p.owner == job.key}
        # A snapshot's pods already run outside any native PodGroup: a gang of the rest could never form.
        group = job_pod_group(job, now) if not have else None
        pods = []
        for spec in job.replica_specs:
            template = spec.template
            for index in range(spec.replicas):
                name = pod_name(job, spec, index)
                if name in have:
                    continue
                labels = {**template.labels, JOB_NAME_LABEL: job.name, REPLICA_TYPE_LABEL: spec.type.lower(),
                          REPLICA_INDEX_LABEL: str(index)}
                if spec.type in ROLES:
                    labels[JOB_ROLE_LABEL] = ROLES[spec.type]
                pods.append(dataclasses.replace(
                    template, name=name, namespace=job.namespace, arrival=now, owner=job.key, controller=job.kind,
                    labels=labels, pod_group=job.name if group is not None else template.pod_group, node_name=None,
                    start_time=None, source=job.source))
        return group, pods
