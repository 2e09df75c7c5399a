"""Every kind Phalanx reads, one registry: kind -> (the apiVersions read, its parser).

A parser takes the manifest and its Source and returns the object (None for a pod that already terminated),
raising InputError naming the field. A new kind is one entry here, beside its parser, and a list in
ApiObjects (collection.py) to file it in."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from phalanx.api.apps import parse_cron_job, parse_daemon_set, parse_deployment, parse_replica_set, parse_stateful_set
from phalanx.api.autoscaling import parse_hpa
from phalanx.api.dra import (
    TAINT_RULE_VERSIONS,
    VERSIONS,
    parse_claim_template,
    parse_device_class,
    parse_device_taint_rule,
    parse_resource_claim,
    parse_resource_slice,
)
from phalanx.api.fields import Manifest
from phalanx.api.objects import Source
from phalanx.api.parse import (
    parse_composite_pod_group,
    parse_job,
    parse_node,
    parse_pdb,
    parse_pod,
    parse_pod_group,
    parse_priority_class,
    parse_workload,
)
from phalanx.api.sets import parse_job_set, parse_leader_worker_set
from phalanx.api.training import parse_training_job

Parser = Callable[[Manifest, Source], object]
PARSERS: dict[str, tuple[tuple[str, ...], Parser]] = {
    "Node": (("v1",), parse_node),
    "Pod": (("v1",), parse_pod),
    "PriorityClass": (("scheduling.k8s.io/v1",), parse_priority_class),
    "Workload": (("scheduling.k8s.io/v1beta1",), parse_workload),
    "PodGroup": (("scheduling.k8s.io/v1beta1",), parse_pod_group),
    "CompositePodGroup": (("scheduling.k8s.io/v1alpha3",), parse_composite_pod_group),
    "Job": (("batch/v1",), parse_job),
    "PodDisruptionBudget": (("policy/v1",), parse_pdb),
    # resource.k8s.io (DRA)
    "ResourceSlice": (VERSIONS, parse_resource_slice),
    "DeviceClass": (VERSIONS, parse_device_class),
    "ResourceClaim": (VERSIONS, parse_resource_claim),
    "ResourceClaimTemplate": (VERSIONS, parse_claim_template),
    "DeviceTaintRule": (TAINT_RULE_VERSIONS, parse_device_taint_rule),
    # workload controllers' objects
    "ReplicaSet": (("apps/v1",), parse_replica_set),
    "Deployment": (("apps/v1",), parse_deployment),
    "StatefulSet": (("apps/v1",), parse_stateful_set),
    "DaemonSet": (("apps/v1",), parse_daemon_set),
    "CronJob": (("batch/v1",), parse_cron_job),
    "JobSet": (("jobset.x-k8s.io/v1alpha2",), parse_job_set),
    "LeaderWorkerSet": (("leaderworkerset.x-k8s.io/v1",), parse_leader_worker_set),
    "PyTorchJob": (("kubeflow.org/v1",), parse_training_job),  # Kubeflow training jobs
    "TFJob": (("kubeflow.org/v1",), parse_training_job),
    "MPIJob": (("kubeflow.org/v2beta1", "kubeflow.org/v1"), parse_training_job),
    "HorizontalPodAutoscaler": (("autoscaling/v2",), parse_hpa),
}


_KUEUE_KINDS = ("ResourceFlavor", "ClusterQueue", "Cohort", "LocalQueue", "WorkloadPriorityClass")
VOLCANO_CONF_KEY = "volcano-scheduler.conf"


def is_queueing_object(doc: Mapping[str, Any]) -> bool:
    """Kueue's queueing kinds, Volcano's Queue, or the ConfigMap holding Volcano's scheduler configuration."""
    group, kind = group_of(doc.get("apiVersion")), doc.get("kind")
    if group == "kueue.x-k8s.io":
        return kind in _KUEUE_KINDS
    if group == "scheduling.volcano.sh":
        return kind == "Queue"
    data = doc.get("data")
    return kind == "ConfigMap" and isinstance(data, Mapping) and VOLCANO_CONF_KEY in data


def group_of(api_version: object) -> str:
    """The API group of an apiVersion (`apps` of `apps/v1`; "" for the core group's `v1`)."""
    return api_version.rsplit("/", 1)[0] if isinstance(api_version, str) and "/" in api_version else ""
