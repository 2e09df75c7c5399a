"""JobSet, LeaderWorkerSet and Kubeflow training job manifests, written as a user writes them (dicts, for
write_manifests)."""

from __future__ import annotations

from typing import Any

from tests.controllers.apps_manifests import pod_template

Doc = dict[str, Any]


def _meta(name: str, namespace: str, annotations: dict[str, str]) -> Doc:
    meta: Doc = {"name": name, "namespace": namespace}
    if annotations:
        meta["annotations"] = annotations
    return meta


def replicated_job(name: str, replicas: int = 1, parallelism: int = 1, cpu: str = "1", duration: str = "10m",
                   **pod_spec: Any) -> Doc:
    template = pod_template(name, cpu, restartPolicy="Never", **pod_spec)
    template["metadata"]["annotations"] = {"phalanx.dev/duration": duration}
    return {"name": name, "replicas": replicas,
            "template": {"spec": {"parallelism": parallelism, "completions": parallelism, "template": template}}}


def job_set(name: str, *replicated: Doc, namespace: str = "default", order: str | None = None,
            **annotations: str) -> Doc:
    spec: Doc = {"replicatedJobs": list(replicated)}
    if order is not None:
        spec["startupPolicy"] = {"startupPolicyOrder": order}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": _meta(name, namespace, annotations), "spec": spec}


def leader_worker_set(name: str, replicas: int = 1, size: int = 2, cpu: str = "1", leader_cpu: str | None = None,
                      restart_policy: str | None = None, namespace: str = "default", **annotations: str) -> Doc:
    lwt: Doc = {"size": size, "workerTemplate": pod_template(name, cpu)}
    if leader_cpu is not None:
        lwt["leaderTemplate"] = pod_template(name, leader_cpu)
    if restart_policy is not None:
        lwt["restartPolicy"] = restart_policy
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": _meta(name, namespace, annotations),
            "spec": {"replicas": replicas, "leaderWorkerTemplate": lwt}}


def replica(replicas: int = 1, cpu: str = "1", restart_policy: str = "OnFailure", **pod_spec: Any) -> Doc:
    return {"replicas": replicas, "restartPolicy": restart_policy, "template": pod_template("train", cpu, **pod_spec)}


def training_job(kind: str, name: str, specs: dict[str, Doc], min_available: int | None = None,
                 duration: str | None = "10m", namespace: str = "default", **annotations: str) -> Doc:
    field = {"PyTorchJob": "pytorchReplicaSpecs", "TFJob": "tfReplicaSpecs", "MPIJob": "mpiReplicaSpecs"}[kind]
    spec: Doc = {field: specs}
    if min_available is not None:
        spec["runPolicy"] = {"schedulingPolicy": {"minAvailable": min_available}}
    if duration is not None:
        annotations = {"phalanx.dev/duration": duration, **annotations}
    version = "kubeflow.org/v2beta1" if kind == "MPIJob" else "kubeflow.org/v1"
    return {"apiVersion": version, "kind": kind, "metadata": _meta(name, namespace, annotations), "spec": spec}


def pytorch_job(name: str, workers: int = 2, cpu: str = "1", **kwargs: Any) -> Doc:
    return training_job("PyTorchJob", name, {"Master": replica(1, cpu), "Worker": replica(workers, cpu)}, **kwargs)
