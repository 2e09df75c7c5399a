"""Kubeflow training jobs as scheduling sees them: PyTorchJob and TFJob (`kubeflow.org/v1`, the training
operator) and MPIJob (`kubeflow.org/v2beta1`, the MPI operator; also its `kubeflow.org/v1` shape). Each has
replica specs (`replicas`, `restartPolicy`, `template`) by replica type, and `runPolicy.schedulingPolicy`
(`minAvailable`). Each parser raises InputError naming the field."""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.api.apps import MAX_REPLICAS
from phalanx.api.fields import Manifest, Meta, fail, integer, mapping, seconds, template_meta, text
from phalanx.api.objects import DURATION_ANNOTATION, Pod, Queueing, Source
from phalanx.api.parse import pod_from_spec
from phalanx.api.peers import queueing

# kind -> (the spec field holding its replica specs, the replica types in the order the pods are made)
REPLICA_SPECS: dict[str, tuple[str, tuple[str, ...]]] = {
    "PyTorchJob": ("pytorchReplicaSpecs", ("Master", "Worker")),
    "TFJob": ("tfReplicaSpecs", ("Chief", "PS", "Worker", "Evaluator")),
    "MPIJob": ("mpiReplicaSpecs", ("Launcher", "Worker")),
}
SINGLE = {"Master", "Chief", "Launcher"}  # replica types with at most one pod
RESTART_POLICIES = ("Always", "OnFailure", "Never", "ExitCode")
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"


@dataclass(slots=True)
class ReplicaSpec:
    type: str  # as the spec names it: Master, Worker, PS, …
    replicas: int
    template: Pod
    restart_policy: str


@dataclass(slots=True)
class TrainingJob:
    kind: str  # PyTorchJob | TFJob | MPIJob
    namespace: str
    name: str
    replica_specs: list[ReplicaSpec]
    min_available: int  # runPolicy.schedulingPolicy.minAvailable, default every pod
    arrival: float = 0.0
    source: Source | None = None
    queueing: Queueing | None = None  # the admission queue it names (read by the gate, not modelled)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def pods(self) -> int:
        return sum(spec.replicas for spec in self.replica_specs)

    def pod_templates(self) -> list[tuple[Pod, str]]:
        field, _ = REPLICA_SPECS[self.kind]
        return [(spec.template, f"spec.{field}.{spec.type}.template.spec") for spec in self.replica_specs]


def parse_training_job(doc: Manifest, source: Source) -> TrainingJob:
    kind = str(doc.get("kind"))
    meta = Meta(doc, namespaced=True)
    spec = mapping(doc.get("spec"), "spec", required=True)
    field, types = REPLICA_SPECS[kind]
    raw_specs = mapping(spec.get(field), f"spec.{field}", required=True)
    for name in raw_specs:
        if name not in types:
            raise fail(f"spec.{field}.{name}", f"unknown replica type: one of {', '.join(types)}")
    if not raw_specs:
        raise fail(f"spec.{field}", "is required: at least one replica spec")
    if kind == "MPIJob" and "Launcher" not in raw_specs:
        raise fail(f"spec.{field}.Launcher", "is required")
    replica_specs = []
    for replica_type in types:
        if replica_type not in raw_specs:
            continue
        where = f"spec.{field}.{replica_type}"
        raw = mapping(raw_specs[replica_type], where, required=True)
        replicas = 1 if raw.get("replicas") is None else integer(raw.get("replicas"), f"{where}.replicas",
                                                                  minimum=0, maximum=MAX_REPLICAS)
        if replica_type in SINGLE and replicas > 1:
            raise fail(f"{where}.replicas", f"must be at most 1 for {replica_type}, got {replicas}")
        policy = text(raw.get("restartPolicy"), f"{where}.restartPolicy") or "Never"  # checked; no other effect
        if policy not in RESTART_POLICIES:
            raise fail(f"{where}.restartPolicy", f"unsupported value {policy!r}: one of {', '.join(RESTART_POLICIES)}")
        template = mapping(raw.get("template"), f"{where}.template", required=True)
        tmeta = template_meta(template, meta, f"{where}.template")
        pod = pod_from_spec(tmeta, mapping(template.get("spec"), f"{where}.template.spec", required=True),
                            f"{where}.template.spec", source)
        if pod.duration is None:
            pod.duration = seconds(meta.annotations, DURATION_ANNOTATION, "metadata.annotations")
        replica_specs.append(ReplicaSpec(type=replica_type, replicas=replicas, template=pod, restart_policy=policy))
    total = sum(s.replicas for s in replica_specs)
    if total > MAX_REPLICAS:
        raise fail(f"spec.{field}", f"the job would have more than {MAX_REPLICAS} pods")
    scheduling = mapping(mapping(spec.get("runPolicy"), "spec.runPolicy").get("schedulingPolicy"),
                         "spec.runPolicy.schedulingPolicy")
    min_available = total
    if scheduling.get("minAvailable") is not None:
        min_available = integer(scheduling.get("minAvailable"), "spec.runPolicy.schedulingPolicy.minAvailable",
                                minimum=1)
        if min_available > total:
            raise fail("spec.runPolicy.schedulingPolicy.minAvailable",
                       f"{min_available} is more than the job's {total} pods: it could never start")
    return TrainingJob(kind=kind, namespace=meta.namespace, name=meta.name, replica_specs=replica_specs,
                       min_available=min_available, arrival=meta.arrival,
                       source=source, queueing=queueing(meta))
