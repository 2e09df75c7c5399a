"""Every kind Phalanx reads, one registry: kind -> the apiVersions read, its parser and, for an object a
workload controller takes in, the type ApiObjects (collection.py) files it under.

A parser takes the manifest and its Source and returns the object (None for a pod that already terminated),
raising InputError naming the field. A new kind is one entry here, beside its parser; a workload controller's
object is filed by its entry's `controlled` type, and phalanx/controllers/registry.py names its controller."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from phalanx.api import peers
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
from phalanx.api.sets import JobSet, LeaderWorkerSet, parse_job_set, parse_leader_worker_set
from phalanx.api.training import TrainingJob, parse_training_job

Parser = Callable[[Manifest, Source], object]


class Kind(NamedTuple):
    versions: tuple[str, ...]  # the apiVersions read
    parse: Parser
    controlled: type | None = None  # the object's type, when a workload controller takes it in


KINDS: dict[str, Kind] = {
    "Node": Kind(("v1",), parse_node),
    "Pod": Kind(("v1",), parse_pod),
    "PriorityClass": Kind(("scheduling.k8s.io/v1",), parse_priority_class),
    "Workload": Kind(("scheduling.k8s.io/v1beta1",), parse_workload),
    "PodGroup": Kind(("scheduling.k8s.io/v1beta1",), parse_pod_group),
    "CompositePodGroup": Kind(("scheduling.k8s.io/v1alpha3",), parse_composite_pod_group),
    "Job": Kind(("batch/v1",), parse_job),
    "PodDisruptionBudget": Kind(("policy/v1",), parse_pdb),
    # resource.k8s.io (DRA)
    "ResourceSlice": Kind(VERSIONS, parse_resource_slice),
    "DeviceClass": Kind(VERSIONS, parse_device_class),
    "ResourceClaim": Kind(VERSIONS, parse_resource_claim),
    "ResourceClaimTemplate": Kind(VERSIONS, parse_claim_template),
    "DeviceTaintRule": Kind(TAINT_RULE_VERSIONS, parse_device_taint_rule),
    # workload controllers' objects
    "ReplicaSet": Kind(("apps/v1",), parse_replica_set, ReplicaSet),
    "Deployment": Kind(("apps/v1",), parse_deployment, Deployment),
    "StatefulSet": Kind(("apps/v1",), parse_stateful_set, StatefulSet),
    "DaemonSet": Kind(("apps/v1",), parse_daemon_set, DaemonSet),
    "CronJob": Kind(("batch/v1",), parse_cron_job, CronJob),
    "JobSet": Kind(("jobset.x-k8s.io/v1alpha2",), parse_job_set, JobSet),
    "LeaderWorkerSet": Kind(("leaderworkerset.x-k8s.io/v1",), parse_leader_worker_set, LeaderWorkerSet),
    "PyTorchJob": Kind(("kubeflow.org/v1",), parse_training_job, TrainingJob),  # Kubeflow training jobs
    "TFJob": Kind(("kubeflow.org/v1",), parse_training_job, TrainingJob),
    "MPIJob": Kind(("kubeflow.org/v2beta1", "kubeflow.org/v1"), parse_training_job, TrainingJob),
    "HorizontalPodAutoscaler": Kind(("autoscaling/v2",), parse_hpa),
}


_KUEUE_KINDS = ("ResourceFlavor", "ClusterQueue", "Cohort", "LocalQueue", "WorkloadPriorityClass")
VOLCANO_CONF_KEY = "volcano-scheduler.conf"
KUEUE_CONFIG_KEY = "controller_manager_config.yaml"
# volcano-sh/volcano pkg/scheduler/conf SchedulerConfiguration's keys
_VOLCANO_CONF_FIELDS = {"actions", "tiers", "configurations", "metrics"}


def is_queueing_object(doc: Mapping[str, Any]) -> bool:
    """Kueue's queueing kinds and its Configuration, Volcano's Queue and scheduler configuration, and the later
    peers' queue objects and configuration (phalanx.api.peers)."""
    group, kind = group_of(doc.get("apiVersion")), doc.get("kind")
    if group == "kueue.x-k8s.io":
        return kind in _KUEUE_KINDS
    if group == "scheduling.volcano.sh":
        return kind == "Queue"
    if peers.is_queue_object(group, kind):
        return True
    return is_volcano_conf(doc) or is_kueue_config(doc) or peers.conf_of(doc) is not None


def is_bare_conf(doc: Any) -> bool:
    """A peer's configuration file as the project ships it, with no kind (volcano-scheduler.conf, queues.yaml)."""
    return is_bare_volcano_conf(doc) or peers.is_bare_conf(doc)


def is_kueue_config(doc: Mapping[str, Any]) -> bool:
    """Kueue's Configuration (`config.kueue.x-k8s.io`), or the ConfigMap holding it under
    `controller_manager_config.yaml`."""
    data = doc.get("data")
    return ((doc.get("kind") == "Configuration" and group_of(doc.get("apiVersion")) == "config.kueue.x-k8s.io")
            or (doc.get("kind") == "ConfigMap" and isinstance(data, Mapping) and KUEUE_CONFIG_KEY in data))


def is_namespace(doc: Mapping[str, Any]) -> bool:
    """A core v1 Namespace: its labels are what a Kueue ClusterQueue's namespaceSelector matches."""
    return doc.get("kind") == "Namespace" and doc.get("apiVersion") == "v1"


def is_volcano_conf(doc: Mapping[str, Any]) -> bool:
    """The ConfigMap holding `volcano-scheduler.conf`, or the file itself as Volcano ships it (no apiVersion or
    kind; `actions` and the other SchedulerConfiguration keys)."""
    data = doc.get("data")
    return ((doc.get("kind") == "ConfigMap" and isinstance(data, Mapping) and VOLCANO_CONF_KEY in data)
            or is_bare_volcano_conf(doc))


def is_bare_volcano_conf(doc: Any) -> bool:
    return (isinstance(doc, Mapping) and "kind" not in doc and "apiVersion" not in doc
            and isinstance(doc.get("actions"), str) and set(doc) <= _VOLCANO_CONF_FIELDS)


def group_of(api_version: object) -> str:
    """The API group of an apiVersion (`apps` of `apps/v1`; "" for the core group's `v1`)."""
    return api_version.rsplit("/", 1)[0] if isinstance(api_version, str) and "/" in api_version else ""
