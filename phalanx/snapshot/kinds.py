"""What `phalanx snapshot` reads from a cluster: one row per kind, in the order the files are written.

`versions` are the apiVersions tried, in order (the ones Phalanx reads, newest first); empty means the server's
preferred version, for the kinds Phalanx keeps for the record but does not model (KAI's Queue). `names` limits a
kind to objects of these names (the queue ConfigMaps; no other ConfigMap is read). Secrets are never in this
table, so they are never requested.
"""

from __future__ import annotations

from typing import NamedTuple

from phalanx.api.peers import PEERS


class Captured(NamedTuple):
    kind: str
    group: str  # "" for the core group
    versions: tuple[str, ...]
    plural: str  # the resource name in discovery and in the URL
    file: str  # the file in DIR that holds this kind
    names: tuple[str, ...] = ()


_DRA = ("v1", "v1beta2", "v1beta1")
_KUEUE = ("v1beta2", "v1beta1")

CAPTURED: tuple[Captured, ...] = (
    Captured("Namespace", "", ("v1",), "namespaces", "namespaces.yaml"),
    Captured("Node", "", ("v1",), "nodes", "nodes.yaml"),
    Captured("PriorityClass", "scheduling.k8s.io", ("v1",), "priorityclasses", "priorityclasses.yaml"),
    Captured("Pod", "", ("v1",), "pods", "pods.yaml"),
    Captured("PodDisruptionBudget", "policy", ("v1",), "poddisruptionbudgets", "poddisruptionbudgets.yaml"),
    # workload controllers
    Captured("Deployment", "apps", ("v1",), "deployments", "deployments.yaml"),
    Captured("ReplicaSet", "apps", ("v1",), "replicasets", "replicasets.yaml"),
    Captured("StatefulSet", "apps", ("v1",), "statefulsets", "statefulsets.yaml"),
    Captured("DaemonSet", "apps", ("v1",), "daemonsets", "daemonsets.yaml"),
    Captured("Job", "batch", ("v1",), "jobs", "jobs.yaml"),
    Captured("CronJob", "batch", ("v1",), "cronjobs", "cronjobs.yaml"),
    Captured("JobSet", "jobset.x-k8s.io", ("v1alpha2",), "jobsets", "jobsets.yaml"),
    Captured("LeaderWorkerSet", "leaderworkerset.x-k8s.io", ("v1",), "leaderworkersets", "leaderworkersets.yaml"),
    Captured("PyTorchJob", "kubeflow.org", ("v1",), "pytorchjobs", "pytorchjobs.yaml"),
    Captured("TFJob", "kubeflow.org", ("v1",), "tfjobs", "tfjobs.yaml"),
    Captured("MPIJob", "kubeflow.org", ("v2beta1", "v1"), "mpijobs", "mpijobs.yaml"),
    Captured("HorizontalPodAutoscaler", "autoscaling", ("v2",), "horizontalpodautoscalers",
             "horizontalpodautoscalers.yaml"),
    # workload-aware scheduling
    Captured("Workload", "scheduling.k8s.io", ("v1beta1",), "workloads", "workloads.yaml"),
    Captured("PodGroup", "scheduling.k8s.io", ("v1beta1",), "podgroups", "podgroups.yaml"),
    Captured("CompositePodGroup", "scheduling.k8s.io", ("v1alpha3",), "compositepodgroups",
             "compositepodgroups.yaml"),
    # DRA
    Captured("DeviceClass", "resource.k8s.io", _DRA, "deviceclasses", "deviceclasses.yaml"),
    Captured("ResourceSlice", "resource.k8s.io", _DRA, "resourceslices", "resourceslices.yaml"),
    Captured("ResourceClaim", "resource.k8s.io", _DRA, "resourceclaims", "resourceclaims.yaml"),
    Captured("ResourceClaimTemplate", "resource.k8s.io", _DRA, "resourceclaimtemplates",
             "resourceclaimtemplates.yaml"),
    Captured("DeviceTaintRule", "resource.k8s.io", (*_DRA, "v1alpha3"), "devicetaintrules", "devicetaintrules.yaml"),
    # the peers' queues
    Captured("ResourceFlavor", "kueue.x-k8s.io", _KUEUE, "resourceflavors", "kueue-resourceflavors.yaml"),
    Captured("ClusterQueue", "kueue.x-k8s.io", _KUEUE, "clusterqueues", "kueue-clusterqueues.yaml"),
    Captured("Cohort", "kueue.x-k8s.io", _KUEUE, "cohorts", "kueue-cohorts.yaml"),
    Captured("LocalQueue", "kueue.x-k8s.io", _KUEUE, "localqueues", "kueue-localqueues.yaml"),
    Captured("WorkloadPriorityClass", "kueue.x-k8s.io", _KUEUE, "workloadpriorityclasses",
             "kueue-workloadpriorityclasses.yaml"),
    Captured("Queue", "scheduling.volcano.sh", ("v1beta1",), "queues", "volcano-queues.yaml"),
    *(Captured(*capture) for peer in PEERS for capture in peer.captured),
    # Volcano's scheduler configuration (its Helm chart's name), Kueue's (fair sharing) and the later peers' (their
    # queues) live in ConfigMaps.
    Captured("ConfigMap", "", ("v1",), "configmaps", "configmaps.yaml",
             names=("volcano-scheduler-configmap", "kueue-manager-config",
                    *(name for peer in PEERS for name in peer.config_maps))),
)


def label(entry: Captured) -> str:
    """How the summary names a kind: the kind, with its group where two groups share the kind's name."""
    shared = sum(1 for other in CAPTURED if other.kind == entry.kind) > 1
    return f"{entry.kind}.{entry.group}" if shared else entry.kind
