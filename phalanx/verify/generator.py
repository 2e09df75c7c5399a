"""Small random clusters for the differential suite: seeded, so a failing case is one number to rerun.

Each case is a list of ordinary manifests: 2–12 nodes with hostname and zone labels, some tainted or
cordoned; PriorityClasses; pods with priorities, node selectors, required and preferred node affinity,
tolerations and, optionally, topology spread and pod (anti-)affinity; gangs and basic PodGroups with their
Workloads, some of whose members or PodGroups arrive late; later high-priority pods that preempt.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

ZONES = ("zone-a", "zone-b", "zone-c")
CPUS = ("250m", "500m", "1", "1500m", "2", "3", "4")
MEMORY = ("256Mi", "512Mi", "1Gi", "2Gi", "4Gi", "6Gi")
NODE_CPUS = (2, 4, 4, 8, 8, 16)
NODE_MEMORY = ("4Gi", "8Gi", "16Gi", "32Gi")
PRIORITIES = {"low": 100, "mid": 500, "high": 1000}
# Every pod's end is an instant of its own: pod-i runs 15 + i seconds, and later pods arrive after the earlier
# ones have ended. Two pods never end in the same instant on a real cluster (the oracle's kubelet ends them one
# at a time, and kube-scheduler retries waiting pods in between), so a shared instant would make the real
# outcome depend on the order of the deletions (docs/fidelity.md, known differences).
ARRIVALS = ("40s", "80s", "120s")
LATE_GROUP = "10s"  # a PodGroup created after its pods
LATE_MEMBER = "35s"  # a gang's last member


@dataclass(frozen=True)
class Case:
    seed: int
    profile: str  # default | gang
    manifests: list[dict[str, Any]]


def generate_case(seed: int, *, spread: bool | None = None, pod_affinity: bool | None = None) -> Case:
    """One random cluster and workload; `spread` and `pod_affinity` add those constraints to some pods. Left
    out, they follow the differential suite's mix: spread on odd seeds, pod affinity on every third seed."""
    spread = seed % 2 == 1 if spread is None else spread
    pod_affinity = seed % 3 == 1 if pod_affinity is None else pod_affinity
    rng = random.Random(seed)
    manifests: list[dict[str, Any]] = [_priority_class(name, value) for name, value in PRIORITIES.items()]
    nodes = rng.randint(2, 12)
    for i in range(nodes):
        manifests.append(_node(rng, i))
    pods = rng.randint(3, 20)
    for i in range(pods):
        manifests.append(_pod(rng, f"pod-{i}", spread=spread, pod_affinity=pod_affinity))
    groups = rng.choice((0, 0, 1, 1, 2))
    for g in range(groups):
        manifests.extend(_group(rng, g))
    profile = "gang" if groups and rng.random() < 0.75 else "default"
    return Case(seed, profile, manifests)


def _priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value}


def _node(rng: random.Random, i: int) -> dict[str, Any]:
    name = f"node-{i}"
    labels = {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": ZONES[i % len(ZONES)]}
    if rng.random() < 0.3:
        labels["disk"] = rng.choice(("ssd", "hdd"))
    node: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {"allocatable": {"cpu": str(rng.choice(NODE_CPUS)), "memory": rng.choice(NODE_MEMORY),
                                   "pods": "110"}},
    }
    roll = rng.random()
    if roll < 0.12:
        node["spec"]["taints"] = [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]
    elif roll < 0.18:
        node["spec"]["taints"] = [{"key": "maintenance", "effect": "PreferNoSchedule"}]
    elif roll < 0.22:
        node["spec"]["unschedulable"] = True
    return node


def _pod(rng: random.Random, name: str, *, spread: bool, pod_affinity: bool,
         labels: dict[str, str] | None = None) -> dict[str, Any]:
    app = rng.choice(("web", "api", "batch"))
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": {"app": app, **(labels or {})}}
    annotations: dict[str, str] = {}
    if rng.random() < 0.3:
        annotations["phalanx.dev/arrival"] = rng.choice(ARRIVALS)
    if rng.random() < 0.2:
        annotations["phalanx.dev/duration"] = f"{15 + int(name.rpartition('-')[2])}s"
    if annotations:
        meta["annotations"] = annotations
    requests = {"cpu": rng.choice(CPUS), "memory": rng.choice(MEMORY)}
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "registry.example.com/app:v1",
                                            "resources": {"requests": requests}}],
                            "terminationGracePeriodSeconds": 0}
    roll = rng.random()
    if roll < 0.25:
        spec["priorityClassName"] = "low"
    elif roll < 0.4:
        spec["priorityClassName"] = "mid"
    elif roll < 0.55:
        spec["priorityClassName"] = "high"
    if rng.random() < 0.1:
        spec["nodeSelector"] = {"topology.kubernetes.io/zone": rng.choice(ZONES)}
    affinity: dict[str, Any] = {}
    roll = rng.random()
    if roll < 0.08:
        affinity["nodeAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}]}}
    elif roll < 0.2:
        affinity["nodeAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": rng.randint(1, 100), "preference": {"matchExpressions": [
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [rng.choice(ZONES)]}]}}]}
    if pod_affinity and rng.random() < 0.25:
        term = {"labelSelector": {"matchLabels": {"app": rng.choice(("web", "api", "batch"))}},
                "topologyKey": rng.choice(("kubernetes.io/hostname", "topology.kubernetes.io/zone"))}
        kind = rng.choice(("podAffinity", "podAntiAffinity"))
        if rng.random() < 0.5:
            affinity[kind] = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        else:
            affinity[kind] = {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": rng.randint(1, 100), "podAffinityTerm": term}]}
    if affinity:
        spec["affinity"] = affinity
    if spread and rng.random() < 0.25:
        spec["topologySpreadConstraints"] = [{
            "maxSkew": rng.randint(1, 2),
            "topologyKey": rng.choice(("kubernetes.io/hostname", "topology.kubernetes.io/zone")),
            "whenUnsatisfiable": rng.choice(("DoNotSchedule", "ScheduleAnyway")),
            "labelSelector": {"matchLabels": {"app": app}}}]
    if rng.random() < 0.2:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _group(rng: random.Random, g: int) -> list[dict[str, Any]]:
    """A Workload, its PodGroup (gang or basic; sometimes arriving after its pods) and the members."""
    name = f"group-{g}"
    gang = rng.random() < 0.8
    size = rng.randint(2, 5)
    min_count = rng.randint(2, size) if gang else None
    policy: dict[str, Any] = {"gang": {"minCount": min_count}} if gang else {"basic": {}}
    priority_class = rng.choice((None, "low", "mid", "high"))
    template: dict[str, Any] = {"name": "workers", "schedulingPolicy": policy}
    group_spec: dict[str, Any] = {"workloadRef": {"workloadName": name, "templateName": "workers"},
                                  "schedulingPolicy": policy}
    if priority_class is not None:
        template["priorityClassName"] = priority_class
        group_spec["priorityClassName"] = priority_class
    workload = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
                "metadata": {"name": name, "namespace": "default"}, "spec": {"podGroupTemplates": [template]}}
    group: dict[str, Any] = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                             "metadata": {"name": name, "namespace": "default"}, "spec": group_spec}
    if rng.random() < 0.2:
        group["metadata"]["annotations"] = {"phalanx.dev/arrival": LATE_GROUP}
    requests = {"cpu": rng.choice(CPUS), "memory": rng.choice(MEMORY)}
    members: list[dict[str, Any]] = []
    late = rng.random() < 0.25
    for i in range(size):
        spec: dict[str, Any] = {"schedulingGroup": {"podGroupName": name},
                                "containers": [{"name": "worker", "image": "registry.example.com/trainer:v1",
                                                "resources": {"requests": dict(requests)}}],
                                "terminationGracePeriodSeconds": 0}
        if priority_class is not None:
            spec["priorityClassName"] = priority_class
        meta: dict[str, Any] = {"name": f"{name}-worker-{i}", "namespace": "default",
                                "labels": {"app": "batch", "group": name}}
        if late and i == size - 1:
            meta["annotations"] = {"phalanx.dev/arrival": LATE_MEMBER}
        members.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
    return [workload, group, *members]
