"""Two sigs.k8s.io workload APIs as scheduling sees them: JobSet (`jobset.x-k8s.io/v1alpha2`), a set of
Jobs stamped from `spec.replicatedJobs`, and LeaderWorkerSet (`leaderworkerset.x-k8s.io/v1`), `replicas`
groups of one leader and `size - 1` workers. Each parser raises InputError naming the field."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from phalanx.api.apps import MAX_REPLICAS
from phalanx.api.fields import Manifest, Meta, fail, integer, mapping, seconds, sequence, template_meta, text
from phalanx.api.names import check, label_problem
from phalanx.api.objects import DURATION_ANNOTATION, Job, Pod, Queueing, Source
from phalanx.api.parse import parse_job, pod_from_spec
from phalanx.api.peers import queueing
from phalanx.errors import InputError

JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
REPLICATED_JOB_REPLICAS_LABEL = "jobset.sigs.k8s.io/replicatedjob-replicas"
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"
JOB_GLOBAL_INDEX_LABEL = "jobset.sigs.k8s.io/job-global-index"
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
LWS_GROUP_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
LWS_WORKER_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"


@dataclass(slots=True)
class ReplicatedJob:
    name: str
    replicas: int
    job: Job  # its template read as a Job (named `<jobset>-<replicatedJob>`; each child Job renames it)


@dataclass(slots=True)
class JobSet:
    namespace: str
    name: str
    replicated_jobs: list[ReplicatedJob]
    in_order: bool = False  # startupPolicy.startupPolicyOrder InOrder (default AnyOrder)
    # Job templates' spec.scheduling, which the Job controller ignores for a JobSet's Jobs (not root workloads).
    ignored_scheduling: list[str] = field(default_factory=list)
    arrival: float = 0.0
    source: Source | None = None
    queueing: Queueing | None = None  # the admission queue it names (read by the gate, not modelled)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def pod_templates(self) -> list[tuple[Pod, str]]:
        return [(rj.job.template, f"spec.replicatedJobs[{i}].template.spec.template.spec")
                for i, rj in enumerate(self.replicated_jobs)]


@dataclass(slots=True)
class LeaderWorkerSet:
    namespace: str
    name: str
    replicas: int
    size: int
    leader: Pod
    worker: Pod
    recreate_group: bool = True  # leaderWorkerTemplate.restartPolicy RecreateGroupOnPodRestart (the default)
    arrival: float = 0.0
    source: Source | None = None
    queueing: Queueing | None = None  # the admission queue it names (read by the gate, not modelled)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def pod_templates(self) -> list[tuple[Pod, str]]:
        where = "spec.leaderWorkerTemplate"
        return [(self.leader, f"{where}.leaderTemplate.spec"), (self.worker, f"{where}.workerTemplate.spec")]


def parse_job_set(doc: Manifest, source: Source) -> JobSet:
    meta = Meta(doc, namespaced=True)
    spec = mapping(doc.get("spec"), "spec", required=True)
    raw_jobs = sequence(spec.get("replicatedJobs"), "spec.replicatedJobs")
    if not raw_jobs:
        raise fail("spec.replicatedJobs", "is required: at least one replicated job")
    replicated: list[ReplicatedJob] = []
    ignored: list[str] = []
    seen: set[str] = set()
    total = 0
    for i, raw in enumerate(raw_jobs):
        where = f"spec.replicatedJobs[{i}]"
        item = mapping(raw, where)
        # The JobSet's Jobs are named <jobset>-<this>-<index>: the name is one DNS label of theirs.
        name = check(text(item.get("name"), f"{where}.name", required=True), f"{where}.name", label_problem)
        if name in seen:
            raise fail(f"{where}.name", f"duplicate replicated job name {name!r}")
        seen.add(name)
        replicas = 1 if item.get("replicas") is None else integer(item.get("replicas"), f"{where}.replicas",
                                                                   minimum=0, maximum=MAX_REPLICAS)
        template = mapping(item.get("template"), f"{where}.template", required=True)
        job_meta = dict(mapping(template.get("metadata"), f"{where}.template.metadata"))
        job_meta.update(name=f"{meta.name}-{name}", namespace=meta.namespace)
        try:
            job = parse_job({"metadata": job_meta, "spec": template.get("spec")}, source)
        except InputError as exc:
            raise fail(f"{where}.template.{exc.field}", exc.detail) from None
        if job.template.duration is None:
            job.template.duration = seconds(meta.annotations, DURATION_ANNOTATION, "metadata.annotations")
        if job.policy is not None:
            ignored.append(f"{where}.template.spec.scheduling")
            job.policy = None
        total += replicas * job.completions
        if total > MAX_REPLICAS:
            raise fail(f"{where}.replicas", f"the JobSet would have more than {MAX_REPLICAS} pods")
        replicated.append(ReplicatedJob(name=name, replicas=replicas, job=job))
    startup = mapping(spec.get("startupPolicy"), "spec.startupPolicy")
    order = text(startup.get("startupPolicyOrder"), "spec.startupPolicy.startupPolicyOrder") or "AnyOrder"
    if order not in ("AnyOrder", "InOrder"):
        raise fail("spec.startupPolicy.startupPolicyOrder", f"unsupported value {order!r}: one of AnyOrder, InOrder")
    return JobSet(namespace=meta.namespace, name=meta.name, replicated_jobs=replicated, in_order=order == "InOrder",
                  ignored_scheduling=ignored, arrival=meta.arrival, source=source, queueing=queueing(meta))


def _lws_template(raw: Any, meta: Meta, where: str, source: Source) -> Pod:
    template = mapping(raw, where, required=True)
    tmeta = template_meta(template, meta, where)
    pod = pod_from_spec(tmeta, mapping(template.get("spec"), f"{where}.spec", required=True), f"{where}.spec", source)
    # Serving pods: restarted in place by the kubelet, they hold their node until evicted or deleted.
    pod.duration = None
    return pod


def parse_leader_worker_set(doc: Manifest, source: Source) -> LeaderWorkerSet:
    meta = Meta(doc, namespaced=True)
    spec = mapping(doc.get("spec"), "spec", required=True)
    replicas = 1 if spec.get("replicas") is None else integer(spec.get("replicas"), "spec.replicas", minimum=0,
                                                               maximum=MAX_REPLICAS)
    where = "spec.leaderWorkerTemplate"
    lwt = mapping(spec.get("leaderWorkerTemplate"), where, required=True)
    size = 1 if lwt.get("size") is None else integer(lwt.get("size"), f"{where}.size", minimum=1,
                                                      maximum=MAX_REPLICAS)
    if replicas * size > MAX_REPLICAS:
        raise fail(f"{where}.size", f"replicas × size is more than {MAX_REPLICAS} pods")
    worker = _lws_template(lwt.get("workerTemplate"), meta, f"{where}.workerTemplate", source)
    if lwt.get("leaderTemplate") is not None:
        leader = _lws_template(lwt.get("leaderTemplate"), meta, f"{where}.leaderTemplate", source)
    else:
        leader = dataclasses.replace(worker, labels=dict(worker.labels))
    policy = text(lwt.get("restartPolicy"), f"{where}.restartPolicy") or "RecreateGroupOnPodRestart"
    if policy not in ("RecreateGroupOnPodRestart", "None", "Default"):
        raise fail(f"{where}.restartPolicy", f"unsupported value {policy!r}: one of RecreateGroupOnPodRestart, None")
    startup = text(spec.get("startupPolicy"), "spec.startupPolicy") or "LeaderCreated"
    if startup not in ("LeaderCreated", "LeaderReady"):
        raise fail("spec.startupPolicy", f"unsupported value {startup!r}: one of LeaderCreated, LeaderReady")
    return LeaderWorkerSet(namespace=meta.namespace, name=meta.name, replicas=replicas, size=size, leader=leader,
                           worker=worker, recreate_group=policy == "RecreateGroupOnPodRestart", arrival=meta.arrival,
                           source=source, queueing=queueing(meta))
