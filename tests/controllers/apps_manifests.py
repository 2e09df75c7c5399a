"""Manifests of workload controllers' objects, written as a user writes them (dicts, for write_manifests)."""

from __future__ import annotations

from typing import Any

from phalanx.api.apps import (
    CronJob,
    DaemonSet,
    Deployment,
    ReplicaSet,
    StatefulSet,
    parse_cron_job,
    parse_daemon_set,
    parse_deployment,
    parse_replica_set,
    parse_stateful_set,
)
from phalanx.api.objects import Source

Doc = dict[str, Any]
SOURCE = Source("<test>", 0)


def pod_template(app: str, cpu: str = "1", **spec: Any) -> Doc:
    return {"metadata": {"labels": {"app": app}},
            "spec": {"containers": [{"name": "main", "image": "registry.example.com/app:v1",
                                     "resources": {"requests": {"cpu": cpu}}}], **spec}}


def _workload(kind: str, name: str, spec: Doc, namespace: str = "default", **annotations: str) -> Doc:
    meta: Doc = {"name": name, "namespace": namespace}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": spec}


def deployment(name: str, replicas: int | None = 3, cpu: str = "1", **spec: Any) -> Doc:
    body: Doc = {"selector": {"matchLabels": {"app": name}}, "template": pod_template(name, cpu), **spec}
    if replicas is not None:
        body["replicas"] = replicas
    return _workload("Deployment", name, body)


def replica_set(name: str, replicas: int = 3, cpu: str = "1", **spec: Any) -> Doc:
    return _workload("ReplicaSet", name, {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                                          "template": pod_template(name, cpu), **spec})


def stateful_set(name: str, replicas: int = 3, cpu: str = "1", policy: str | None = None) -> Doc:
    spec: Doc = {"replicas": replicas, "serviceName": name, "selector": {"matchLabels": {"app": name}},
                 "template": pod_template(name, cpu)}
    if policy is not None:
        spec["podManagementPolicy"] = policy
    return _workload("StatefulSet", name, spec)


def daemon_set(name: str, cpu: str = "100m", **pod_spec: Any) -> Doc:
    return _workload("DaemonSet", name, {"selector": {"matchLabels": {"app": name}},
                                         "template": pod_template(name, cpu, **pod_spec)})


def cron_job(name: str, schedule: str, duration: str | None = "2m", **spec: Any) -> Doc:
    job_meta: Doc = {"annotations": {"phalanx.dev/duration": duration}} if duration else {}
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedule": schedule, **spec,
                     "jobTemplate": {"metadata": job_meta,
                                     "spec": {"template": pod_template(name, "100m", restartPolicy="Never")}}}}


def rs_obj(doc: Doc) -> ReplicaSet:
    return parse_replica_set(doc, SOURCE)


def deploy_obj(doc: Doc) -> Deployment:
    return parse_deployment(doc, SOURCE)


def sts_obj(doc: Doc) -> StatefulSet:
    return parse_stateful_set(doc, SOURCE)


def ds_obj(doc: Doc) -> DaemonSet:
    return parse_daemon_set(doc, SOURCE)


def cron_obj(doc: Doc) -> CronJob:
    return parse_cron_job(doc, SOURCE)
