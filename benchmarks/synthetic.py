"""Synthetic clusters and workloads shaped after kube-scheduler's scheduler_perf.

Nodes follow scheduler_perf's `node-default.yaml` (4 cpu, 32Gi, 110 pods) dressed as `kubectl get node -o
yaml` prints a real one (well-known labels, addresses, conditions, nodeInfo, ephemeral-storage and
hugepages). Pods follow `pod-default.yaml` (100m cpu, 500Mi, one pause container) for pod-at-a-time and the
gang test's `gang-pod.yaml` (100m cpu, 100Mi, `spec.schedulingGroup.podGroupName`) for gangs, dressed as a
pending pod looks after admission (service-account volume, default tolerations, status).

Everything is deterministic: the same shape gives the same manifests, byte for byte.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from phalanx.api.kinds import KINDS
from phalanx.api.objects import Job, Node, Pod, PodGroup, PriorityClass, Source, Workload
from phalanx.api.resolve import resolve
from phalanx.inputs.load import Inputs

Manifest = dict[str, Any]
NAMESPACE = "bench"
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
CREATED = "2026-05-01T08:00:00Z"
_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


@dataclass(frozen=True, slots=True)
class Shape:
    """One benchmark workload: `pods` pods on `nodes` nodes, alone or in gangs of `gang_size`."""

    name: str
    nodes: int
    pods: int
    gang_size: int | None  # None: pod-at-a-time under the default profile
    profile: str

    @property
    def groups(self) -> int:
        return 0 if self.gang_size is None else self.pods // self.gang_size

    @property
    def pod_count(self) -> int:
        """Pods actually generated (a whole number of gangs)."""
        return self.pods if self.gang_size is None else self.groups * self.gang_size


# scheduler_perf: SchedulingBasic/5000Nodes_10000Pods and GangScheduling/5000Nodes_*Gangs.
SHAPES: dict[str, Shape] = {
    "pod-at-a-time": Shape("pod-at-a-time", 5000, 10_000, None, "default"),
    "gangs-of-3": Shape("gangs-of-3", 5000, 10_000, 3, "gang"),
    "gangs-of-500": Shape("gangs-of-500", 5000, 10_000, 500, "gang"),
}


def _uid(kind: int, i: int) -> str:
    return f"{kind:08x}-{i >> 16:04x}-4{i & 0xfff:03x}-8000-{i:012x}"


def node_manifest(i: int) -> Manifest:
    name = f"node-{i:05d}"
    zone = ZONES[i % len(ZONES)]
    ip = f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"
    resources = {"cpu": "4", "ephemeral-storage": "95491281146", "hugepages-1Gi": "0", "hugepages-2Mi": "0",
                 "memory": "32Gi", "pods": "110"}
    condition = {"lastHeartbeatTime": CREATED, "lastTransitionTime": CREATED}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                            "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
            "creationTimestamp": CREATED,
            "labels": {
                "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": "m5.xlarge", "topology.kubernetes.io/region": "us-east-1",
                "topology.kubernetes.io/zone": zone,
            },
            "name": name,
            "resourceVersion": str(1000 + i),
            "uid": _uid(1, i),
        },
        "spec": {"podCIDR": f"10.{100 + (i >> 8) % 100}.{i & 255}.0/24",
                 "podCIDRs": [f"10.{100 + (i >> 8) % 100}.{i & 255}.0/24"],
                 "providerID": f"aws:///{zone}/i-{i:017x}"},
        "status": {
            "addresses": [{"address": ip, "type": "InternalIP"}, {"address": name, "type": "Hostname"}],
            "allocatable": resources,
            "capacity": dict(resources),
            "conditions": [
                {**condition, "message": "kubelet has sufficient memory available",
                 "reason": "KubeletHasSufficientMemory", "status": "False", "type": "MemoryPressure"},
                {**condition, "message": "kubelet has no disk pressure", "reason": "KubeletHasNoDiskPressure",
                 "status": "False", "type": "DiskPressure"},
                {**condition, "message": "kubelet has sufficient PID available",
                 "reason": "KubeletHasSufficientPID", "status": "False", "type": "PIDPressure"},
                {**condition, "message": "kubelet is posting ready status", "reason": "KubeletReady",
                 "status": "True", "type": "Ready"},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": "amd64", "bootID": _uid(2, i), "containerRuntimeVersion": "containerd://2.1.4",
                "kernelVersion": "6.8.0-1024-aws", "kubeProxyVersion": "v1.37.0", "kubeletVersion": "v1.37.0",
                "machineID": f"{i:032x}", "operatingSystem": "linux", "osImage": "Ubuntu 24.04.2 LTS",
                "systemUUID": _uid(3, i),
            },
        },
    }


def pod_manifest(i: int, group: str | None = None) -> Manifest:
    """A pending pod; `group` names its PodGroup (the gang test's pod) or None (scheduler_perf's default pod)."""
    name = f"pod-{i:05d}" if group is None else f"{group}-{i:05d}"
    memory = "500Mi" if group is None else "100Mi"
    token = f"kube-api-access-{i % 100000:05d}"
    spec: Manifest = {
        "containers": [{
            "image": "registry.k8s.io/pause:3.10.1",
            "imagePullPolicy": "IfNotPresent",
            "name": "pause",
            "ports": [{"containerPort": 80, "protocol": "TCP"}],
            "resources": {"limits": {"cpu": "100m", "memory": memory},
                          "requests": {"cpu": "100m", "memory": memory}},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "volumeMounts": [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": token,
                              "readOnly": True}],
        }],
        "dnsPolicy": "ClusterFirst",
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "priority": 0,
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "serviceAccount": "default",
        "serviceAccountName": "default",
        "terminationGracePeriodSeconds": 30,
        "tolerations": [
            {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists",
             "tolerationSeconds": 300},
            {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists",
             "tolerationSeconds": 300},
        ],
        "volumes": [{"name": token, "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
        ]}}],
    }
    labels = {"app": "bench"}
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
        labels["phalanx.dev/group"] = group
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"creationTimestamp": CREATED, "labels": labels, "name": name, "namespace": NAMESPACE,
                     "resourceVersion": str(100_000 + i), "uid": _uid(4, i)},
        "spec": spec,
        "status": {"conditions": [{"lastProbeTime": None, "lastTransitionTime": CREATED, "status": "False",
                                   "type": "PodScheduled"}],
                   "phase": "Pending", "qosClass": "Guaranteed"},
    }


def pod_group_manifest(name: str, min_count: int) -> Manifest:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}


def manifests(shape: Shape) -> Iterator[Manifest]:
    """Nodes, then PodGroups, then pods, in document order."""
    for i in range(shape.nodes):
        yield node_manifest(i)
    if shape.gang_size is None:
        for i in range(shape.pods):
            yield pod_manifest(i)
        return
    for g in range(shape.groups):
        yield pod_group_manifest(f"gang-{g:05d}", shape.gang_size)
    for i in range(shape.pod_count):
        yield pod_manifest(i, f"gang-{i // shape.gang_size:05d}")


def write_yaml(path: str, docs: Iterator[Manifest] | Sequence[Manifest]) -> int:
    """Write one multi-document YAML file; returns its size in bytes."""
    with open(path, "w", encoding="utf-8") as handle:
        yaml.dump_all(docs, handle, Dumper=_Dumper, default_flow_style=False, sort_keys=True)
    return os.path.getsize(path)


def inputs(shape: Shape) -> Inputs:
    """The shape's objects built straight from the manifests (the parsers, no YAML text)."""
    out = Inputs()
    buckets: dict[type, list[Any]] = {Node: out.nodes, Pod: out.pods, PriorityClass: out.priority_classes,
                                      Workload: out.workloads, PodGroup: out.pod_groups, Job: out.jobs}
    for index, doc in enumerate(manifests(shape), start=1):
        parser = KINDS[doc["kind"]].parse
        obj = parser(doc, Source(f"synthetic/{shape.name}", index))
        buckets[type(obj)].append(obj)
    resolve(out)
    return out
