"""A second, independent generator for the differential suite: wider clusters and the v1.37 workload features.

`generate_wide_case(seed)` draws, from `random.Random(seed)` alone, one case of ordinary Kubernetes manifests
(as `kubectl get -o yaml` prints them, no status but a Node's allocatable) with Phalanx's
`phalanx.dev/arrival` and `phalanx.dev/duration` annotations, for `phalanx verify` to replay on the real
kube-scheduler v1.37.2. Where the first generator (`phalanx.verify.generator`) draws small clusters of plain
pods and gangs, this one draws:

- 20-60 node clusters labelled by zone, block and rack (some nodes unlabelled below the zone), with
  pre-bound pods that leave the nodes unevenly full;
- `tas`: gangs with a required topology level (`schedulingConstraints.topology`), gate
  TopologyAwareWorkloadScheduling;
- `composite`: flat and nested CompositePodGroup trees (v1alpha3) under a Workload's
  `compositePodGroupTemplates`, gates TopologyAwareWorkloadScheduling and CompositePodGroup;
- `dra`: a DeviceClass, per-node ResourceSlices with some devices tainted, ResourceClaimTemplates (some
  tolerating the taint), pods with their own claims and (gate DRAWorkloadResourceClaims) PodGroups with one
  claim for the whole group;
- `preemption`: low-priority gangs (`disruptionMode` all or single) and pods filling a pool of nodes, then
  waves of higher-priority gangs or pods, some with PodGroup `preemptionPolicy: Never` (gate
  PodGroupPreemptionPolicy);
- `jobs`: batch/v1 Indexed Jobs, as gangs through `spec.scheduling.schedulingPolicy.gang` (with or without
  `minCount`) under `gang`, plain under `default`, with durations;
- `gpus`: `nvidia.com/gpu` in node allocatable and in pod requests, gangs of mixed-size members.

The profile is `gang` for most cases and `default` for some (then only the families that need no workload
API: dra with per-pod claims, gpus, preemption of bare pods, plain Jobs). Gates are set only when the case uses
the feature. Every case holds at most MAX_PODS pods (Job pods counted by completions).
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

Doc = dict[str, Any]

MAX_PODS = 80
FAMILIES = ("tas", "composite", "dra", "preemption", "jobs", "gpus")
DEFAULT_FAMILIES = ("dra", "preemption", "jobs", "gpus")
TAS_GATE = "TopologyAwareWorkloadScheduling"
COMPOSITE_GATE = "CompositePodGroup"
POLICY_GATE = "PodGroupPreemptionPolicy"
CLAIMS_GATE = "DRAWorkloadResourceClaims"

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
BLOCK = "example.com/block"
RACK = "example.com/rack"
POOL = "example.com/pool"
GPU = "nvidia.com/gpu"
DRIVER = "gpu.example.com"
TAINT_KEY = "example.com/degraded"
NAMESPACE = "default"
PRIORITIES = {"low": 0, "mid": 100, "high": 1000, "top": 2000}


@dataclass(frozen=True)
class WideCase:
    seed: int
    profile: str
    gates: dict[str, bool]
    manifests: list[Doc]
    families: tuple[str, ...] = field(default=())

    def pods(self) -> int:
        return _pod_count(self.manifests)


def _pod_count(docs: list[Doc]) -> int:
    count = 0
    for doc in docs:
        if doc["kind"] == "Pod":
            count += 1
        elif doc["kind"] == "Job":
            count += int(doc["spec"]["completions"])
    return count


@dataclass
class _Node:
    name: str
    cpu: int
    memory_gi: int
    gpus: int
    labels: dict[str, str]
    used_cpu: int = 0


class _Draw:
    """One case being drawn: the cluster, a clock for distinct arrivals, unique durations and names."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.docs: list[Doc] = []
        self.gates: dict[str, bool] = {}
        self.nodes: list[_Node] = []
        self.clock = 0
        self.durations = itertools.count(1)
        self.names: Counter[str] = Counter()
        self.classes: set[str] = set()

    # names, times and common objects

    def name(self, stem: str) -> str:
        self.names[stem] += 1
        return f"{stem}-{self.names[stem]}"

    def arrival(self) -> str:
        self.clock += self.rng.randint(4, 40)
        return f"{self.clock}s"

    def duration(self) -> str | None:
        if self.rng.random() < 0.2:
            return None  # runs to the end
        base = self.rng.choice((60, 180, 300, 600, 1200))
        return f"{base + 7 * next(self.durations)}s"

    def meta(self, name: str, *, arrival: str | None = None, duration: str | None = None,
             namespaced: bool = True) -> Doc:
        meta: Doc = {"name": name}
        if namespaced:
            meta["namespace"] = NAMESPACE
        annotations = {}
        if arrival is not None and arrival != "0s":
            annotations["phalanx.dev/arrival"] = arrival
        if duration is not None:
            annotations["phalanx.dev/duration"] = duration
        if annotations:
            meta["annotations"] = annotations
        return meta

    def priority_class(self, name: str) -> str:
        if name not in self.classes:
            self.classes.add(name)
            value = PRIORITIES[name.removesuffix("-never")]
            doc: Doc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                        "value": value}
            if name.endswith("-never"):
                doc["preemptionPolicy"] = "Never"
            self.docs.insert(0, doc)
        return name

    def pods_left(self) -> int:
        return MAX_PODS - _pod_count(self.docs)

    # the cluster

    def cluster(self, *, gpu_racks: bool, unlabelled: bool) -> None:
        count = self.rng.randint(20, 60)
        zones = self.rng.randint(2, 3)
        blocks_per_zone = self.rng.randint(1, 3)
        racks_per_block = self.rng.randint(2, 3)
        racks = [(z, b, r) for z in range(zones) for b in range(blocks_per_zone) for r in range(racks_per_block)]
        rack_cpu = {rack: self.rng.choice((8, 16, 16, 32)) for rack in racks}
        rack_gpus = {rack: (self.rng.choice((4, 8)) if gpu_racks and self.rng.random() < 0.4 else 0) for rack in racks}
        if gpu_racks and not any(rack_gpus.values()):
            rack_gpus[racks[0]] = 8
        for i in range(count):
            rack = racks[i % len(racks)] if self.rng.random() < 0.85 else self.rng.choice(racks)
            z, b, r = rack
            name = f"node-{i:02d}"
            labels = {HOSTNAME: name, ZONE: f"zone-{'abc'[z]}"}
            if not (unlabelled and self.rng.random() < 0.12):
                labels[BLOCK] = f"block-{'abc'[z]}{b}"
                labels[RACK] = f"rack-{'abc'[z]}{b}{r}"
            cpu = rack_cpu[rack] if self.rng.random() < 0.9 else self.rng.choice((8, 16, 32))
            self.nodes.append(_Node(name, cpu, cpu * 4, rack_gpus[rack], labels))
        if gpu_racks and not any(n.gpus for n in self.nodes):
            for node in self.nodes[:2]:
                node.gpus = 8
        for node in self.nodes:
            allocatable: Doc = {"cpu": str(node.cpu), "memory": f"{node.memory_gi}Gi", "pods": "110"}
            if node.gpus:
                allocatable[GPU] = str(node.gpus)
            self.docs.append({"apiVersion": "v1", "kind": "Node",
                              "metadata": {"name": node.name, "labels": dict(node.labels)},
                              "status": {"allocatable": allocatable}})

    def fillers(self) -> None:
        """Pre-bound pods on some nodes: uneven free room (what topology placement scores)."""
        count = min(self.rng.randint(len(self.nodes) // 5, len(self.nodes) // 2), 18)
        for node in self.rng.sample(self.nodes, count):
            cpu = self.rng.randint(1, node.cpu - 1)
            node.used_cpu += cpu
            self.docs.append(self.pod(self.name("filler"), cpu=str(cpu), memory="1Gi", node_name=node.name,
                                      arrival=None, duration=None))

    def pool(self, size: int, label: str) -> list[_Node]:
        """`size` nodes labelled `example.com/pool: label` (a pool that a family keeps its pods on)."""
        free = [n for n in self.nodes if POOL not in n.labels]
        chosen = self.rng.sample(free, min(size, len(free)))
        for node in chosen:
            node.labels[POOL] = label
        for doc in self.docs:
            if doc["kind"] == "Node" and doc["metadata"]["name"] in {n.name for n in chosen}:
                doc["metadata"]["labels"][POOL] = label
        return chosen

    # pods and groups

    def pod(self, name: str, *, cpu: str, memory: str = "1Gi", node_name: str | None = None,
            arrival: str | None, duration: str | None, group: str | None = None, priority_class: str | None = None,
            gpus: int = 0, claims: Sequence[tuple[str, str]] = (), selector: dict[str, str] | None = None) -> Doc:
        requests: Doc = {"cpu": cpu, "memory": memory}
        resources: Doc = {"requests": requests}
        if gpus:
            requests[GPU] = str(gpus)
            resources["limits"] = {GPU: str(gpus)}
        if claims:
            resources["claims"] = [{"name": ref} for ref, _ in claims]
        spec: Doc = {"containers": [{"name": "main", "image": "registry.example.com/work:v1", "resources": resources}]}
        if node_name is not None:
            spec["nodeName"] = node_name
        if selector:
            spec["nodeSelector"] = dict(selector)
        if priority_class is not None:
            spec["priorityClassName"] = priority_class
        if group is not None:
            spec["schedulingGroup"] = {"podGroupName": group}
        if claims:
            spec["resourceClaims"] = [{"name": ref, "resourceClaimTemplateName": template} for ref, template in claims]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": self.meta(name, arrival=arrival, duration=duration),
                "spec": spec}

    def pod_group(self, name: str, *, min_count: int | None, arrival: str, topology: str | None = None,
                  workload: tuple[str, str] | None = None, parent: str | None = None,
                  priority_class: str | None = None, disruption: str | None = None,
                  preemption_policy: str | None = None, claims: Sequence[tuple[str, str]] = ()) -> Doc:
        spec: Doc = {}
        if parent is not None:
            spec["parentCompositePodGroupName"] = parent
        if workload is not None:
            spec["workloadRef"] = {"workloadName": workload[0], "templateName": workload[1]}
        spec.update(_group_fields(min_count, topology, priority_class, disruption, preemption_policy))
        if claims:
            spec["resourceClaims"] = [{"name": ref, "resourceClaimTemplateName": template} for ref, template in claims]
        return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                "metadata": self.meta(name, arrival=arrival), "spec": spec}

    def workload(self, name: str, arrival: str, *, groups: list[Doc] | None = None,
                 composites: list[Doc] | None = None) -> Doc:
        spec: Doc = {"controllerRef": {"apiGroup": "example.com", "kind": "TrainJob", "name": name}}
        if groups is not None:
            spec["podGroupTemplates"] = groups
        if composites is not None:
            spec["compositePodGroupTemplates"] = composites
        return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
                "metadata": self.meta(name, arrival=arrival), "spec": spec}

    def cpu_for(self, size: int, domain_cpu: int) -> int:
        """A per-pod cpu that makes `size` pods fill about 40-110% of `domain_cpu`."""
        share = domain_cpu * self.rng.uniform(0.4, 1.1) / size
        return max(1, min(int(share), 16))

    # the families

    def tas(self) -> None:
        level_keys = [(RACK, 0.5), (BLOCK, 0.35), (ZONE, 0.15)]
        for _ in range(self.rng.randint(1, 3)):
            if self.pods_left() < 10:
                return
            key = self.rng.choices([k for k, _ in level_keys], [w for _, w in level_keys])[0]
            domains: dict[str, int] = {}
            for node in self.nodes:
                if key in node.labels:
                    domains[node.labels[key]] = domains.get(node.labels[key], 0) + node.cpu - node.used_cpu
            domain_cpu = self.rng.choice(sorted(domains.values()))
            size = self.rng.randint(2, min(8, self.pods_left() - 2))
            min_count = size if self.rng.random() < 0.7 else self.rng.randint(1, size)
            cpu = self.cpu_for(size, domain_cpu)
            name = self.name("tas")
            at = self.arrival()
            template = {"name": "workers", "schedulingPolicy": {"gang": {"minCount": min_count}},
                        "schedulingConstraints": {"topology": [{"key": key}]}}
            self.docs.append(self.workload(name, at, groups=[template]))
            self.docs.append(self.pod_group(name, min_count=min_count, arrival=at, topology=key,
                                            workload=(name, "workers")))
            for i in range(size):
                self.docs.append(self.pod(f"{name}-{i}", cpu=str(cpu), memory=f"{cpu}Gi", arrival=at,
                                          duration=self.duration(), group=name))
        self.gates[TAS_GATE] = True

    def composite(self) -> None:
        self.gates[TAS_GATE] = True
        self.gates[COMPOSITE_GATE] = True
        for _ in range(self.rng.randint(1, 2)):
            if self.pods_left() < 12:
                return
            if self.rng.random() < 0.5:
                self._flat_tree()
            else:
                self._nested_tree()

    def _composite_policy(self, children: int) -> Doc:
        if self.rng.random() < 0.3:
            return {"basic": {}}
        return {"gang": {"minGroupCount": self.rng.randint(1, children) if self.rng.random() < 0.3 else children}}

    def _leaves(self, root: str, parent: str, at: str, templates: list[Doc], prefix: str, count: int,
                cpu_budget: int) -> list[Doc]:
        """`count` leaf PodGroups under `parent` with their pods; their templates appended to `templates`."""
        docs: list[Doc] = []
        for j in range(count):
            size = self.rng.randint(1, 4)
            min_count = size if self.rng.random() < 0.75 else self.rng.randint(1, size)
            template = f"{prefix}leaf{j}"
            templates.append({"name": template, "schedulingPolicy": {"gang": {"minCount": min_count}}})
            group = f"{parent}-{j}"
            docs.append(self.pod_group(group, min_count=min_count, arrival=at, workload=(root, template),
                                       parent=parent))
            cpu = self.cpu_for(size * count, cpu_budget)
            for i in range(size):
                docs.append(self.pod(f"{group}-{i}", cpu=str(cpu), memory="2Gi", arrival=at,
                                     duration=self.duration(), group=group))
        return docs

    def _composite(self, name: str, root: str, template: str, at: str, policy: Doc, topology: str | None,
                   parent: str | None) -> Doc:
        spec: Doc = {}
        if parent is not None:
            spec["parentCompositePodGroupName"] = parent
        spec["workloadRef"] = {"workloadName": root, "templateName": template}
        spec["schedulingPolicy"] = policy
        if topology is not None:
            spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
        return {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
                "metadata": self.meta(name, arrival=at), "spec": spec}

    def _topology(self, keys: tuple[str, ...]) -> str | None:
        return self.rng.choice((None, *keys))

    def _domain_cpu(self, key: str | None) -> int:
        if key is None:
            return sum(n.cpu - n.used_cpu for n in self.nodes) // 4
        domains: dict[str, int] = {}
        for node in self.nodes:
            if key in node.labels:
                domains[node.labels[key]] = domains.get(node.labels[key], 0) + node.cpu - node.used_cpu
        return self.rng.choice(sorted(domains.values()))

    def _flat_tree(self) -> None:
        root = self.name("tree")
        at = self.arrival()
        children = self.rng.randint(2, 3)
        topology = self._topology((RACK, BLOCK))
        policy = self._composite_policy(children)
        leaf_templates: list[Doc] = []
        leaves = self._leaves(root, root, at, leaf_templates, "", children, self._domain_cpu(topology))
        template: Doc = {"name": "replica", "schedulingPolicy": policy, "podGroupTemplates": leaf_templates}
        if topology is not None:
            template["schedulingConstraints"] = {"topology": [{"key": topology}]}
        self.docs.append(self.workload(root, at, composites=[template]))
        self.docs.append(self._composite(root, root, "replica", at, policy, topology, None))
        self.docs.extend(leaves)

    def _nested_tree(self) -> None:
        root = self.name("nest")
        at = self.arrival()
        parts = self.rng.randint(2, 3)
        root_topology = self._topology((BLOCK, ZONE))
        root_policy = self._composite_policy(parts)
        budget = self._domain_cpu(root_topology)
        part_templates: list[Doc] = []
        objects: list[Doc] = [self._composite(root, root, "root", at, root_policy, root_topology, None)]
        for p in range(parts):
            part = f"{root}-p{p}"
            children = self.rng.randint(1, 2)
            topology = self._topology((RACK,)) if root_topology is not None else self._topology((RACK, BLOCK))
            policy = self._composite_policy(children)
            leaf_templates: list[Doc] = []
            leaves = self._leaves(root, part, at, leaf_templates, f"p{p}", children,
                                  max(budget // parts, 4) if topology is None else self._domain_cpu(topology))
            template: Doc = {"name": f"part{p}", "schedulingPolicy": policy, "podGroupTemplates": leaf_templates}
            if topology is not None:
                template["schedulingConstraints"] = {"topology": [{"key": topology}]}
            part_templates.append(template)
            objects.append(self._composite(part, root, f"part{p}", at, policy, topology, root))
            objects.extend(leaves)
        root_template: Doc = {"name": "root", "schedulingPolicy": root_policy,
                              "compositePodGroupTemplates": part_templates}
        if root_topology is not None:
            root_template["schedulingConstraints"] = {"topology": [{"key": root_topology}]}
        self.docs.append(self.workload(root, at, composites=[root_template]))
        self.docs.extend(objects)

    def dra(self, gang: bool) -> None:
        holders = self.rng.sample(self.nodes, self.rng.randint(2, min(8, len(self.nodes))))
        self.docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
                          "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
        for node in holders:
            devices = []
            for i in range(self.rng.randint(1, 4)):
                device: Doc = {"name": f"gpu-{i}", "attributes": {"index": {"int": i}},
                               "capacity": {"memory": {"value": "80Gi"}}}
                if self.rng.random() < 0.25:
                    device["taints"] = [{"key": TAINT_KEY, "value": "true", "effect": "NoSchedule"}]
                devices.append(device)
            self.docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                              "metadata": {"name": f"{node.name}-gpus"},
                              "spec": {"driver": DRIVER, "nodeName": node.name, "devices": devices,
                                       "pool": {"name": node.name, "generation": 1, "resourceSliceCount": 1}}})
        toleration = {"key": TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}
        for name, count, tolerate in (("one-gpu", 1, False), ("two-gpu", 2, False), ("tolerant-gpu", 1, True)):
            exactly: Doc = {"deviceClassName": DRIVER, "count": count}
            if tolerate:
                exactly["tolerations"] = [dict(toleration)]
            self.docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                              "metadata": {"name": name, "namespace": NAMESPACE},
                              "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}})
        templates = ("one-gpu", "one-gpu", "two-gpu", "tolerant-gpu")
        for _ in range(self.rng.randint(2, 6)):
            if self.pods_left() < 4:
                return
            self.docs.append(self.pod(self.name("claimer"), cpu=str(self.rng.randint(1, 4)), arrival=self.arrival(),
                                      duration=self.duration(), claims=[("gpu", self.rng.choice(templates))]))
        if not gang:
            return
        for _ in range(self.rng.randint(1, 2)):
            if self.pods_left() < 6:
                return
            name = self.name("dragang")
            at = self.arrival()
            size = self.rng.randint(2, 4)
            template = self.rng.choice(templates)
            shared = self.rng.random() < 0.6
            if shared:
                self.gates[CLAIMS_GATE] = True
            self.docs.append(self.pod_group(name, min_count=size, arrival=at,
                                            claims=[("gpu", template)] if shared else []))
            for i in range(size):
                self.docs.append(self.pod(f"{name}-{i}", cpu=str(self.rng.randint(1, 4)), arrival=at,
                                          duration=self.duration(), group=name, claims=[("gpu", template)]))

    def preemption(self, gang: bool) -> None:
        pool = self.pool(self.rng.randint(3, 6), "batch")
        selector = {POOL: "batch"}
        cpu = min(n.cpu - n.used_cpu for n in pool)
        # the victims: one per node, or a gang over the pool
        low = self.priority_class(self.rng.choice(("low", "mid")))
        victims = list(pool)
        if gang and self.rng.random() < 0.7:
            name = self.name("victims")
            at = self.arrival()
            size = min(len(victims), self.pods_left() - 8)
            mode = self.rng.choice(("all", "single"))
            self.docs.append(self.pod_group(name, min_count=size, arrival=at, priority_class=low, disruption=mode))
            per = max(1, cpu * self.rng.randint(6, 10) // 10)
            for i in range(size):
                self.docs.append(self.pod(f"{name}-{i}", cpu=str(per), arrival=at, duration=self.duration(),
                                          group=name, priority_class=low, selector=selector))
            victims = victims[size:]
        for _ in victims:
            per = max(1, cpu * self.rng.randint(5, 10) // 10)
            self.docs.append(self.pod(self.name("low"), cpu=str(per), arrival=self.arrival(), duration=self.duration(),
                                      priority_class=self.priority_class(self.rng.choice(("low", "mid"))),
                                      selector=selector))
        # the waves: higher-priority gangs or pods that need room in the pool
        for _ in range(self.rng.randint(1, 3)):
            if self.pods_left() < 5:
                return
            klass = self.rng.choice(("high", "high", "top"))
            policy = None
            if gang and self.rng.random() < 0.3:
                klass = self.priority_class(f"{klass}-never")
                # The field as the class has it: with the gate on, the API server defaults an unset field to
                # PreemptLowerPriority before Priority admission, which then refuses it against a Never class.
                self.rng.random()  # (kept: the draws after it stay those of the measured runs)
                policy = "Never"
                self.gates[POLICY_GATE] = True
            self.priority_class(klass)
            at = self.arrival()
            per = max(1, cpu * self.rng.randint(4, 9) // 10)
            if gang and self.rng.random() < 0.8:
                name = self.name("wave")
                size = self.rng.randint(2, min(len(pool) + 1, self.pods_left() - 1))
                min_count = size if self.rng.random() < 0.75 else self.rng.randint(1, size)
                wave_mode: str | None = self.rng.choice((None, "all", "single"))
                self.docs.append(self.pod_group(name, min_count=min_count, arrival=at, priority_class=klass,
                                                disruption=wave_mode, preemption_policy=policy))
                for i in range(size):
                    self.docs.append(self.pod(f"{name}-{i}", cpu=str(per), arrival=at, duration=self.duration(),
                                              group=name, priority_class=klass, selector=selector))
            else:
                self.docs.append(self.pod(self.name("urgent"), cpu=str(per), arrival=at, duration=self.duration(),
                                          priority_class=klass, selector=selector))

    def jobs(self, gang: bool) -> None:
        for _ in range(self.rng.randint(1, 3)):
            parallelism = self.rng.randint(2, 6)
            completions = self.rng.randint(parallelism, 2 * parallelism)
            if self.pods_left() < completions + 2:
                return
            name = self.name("job")
            spec: Doc = {"parallelism": parallelism, "completions": completions, "completionMode": "Indexed"}
            if gang:
                policy: Doc = {}
                if self.rng.random() < 0.6:
                    policy["minCount"] = self.rng.randint(1, parallelism)
                spec["scheduling"] = {"schedulingPolicy": {"gang": policy}}
            cpu = self.rng.randint(1, 8)
            spec["template"] = {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "worker", "image": "registry.example.com/trainer:v1",
                 "resources": {"requests": {"cpu": str(cpu), "memory": "2Gi"}}}]}}
            duration = f"{self.rng.choice((120, 300, 600)) + 7 * next(self.durations)}s"
            self.docs.append({"apiVersion": "batch/v1", "kind": "Job",
                              "metadata": self.meta(name, arrival=self.arrival(), duration=duration), "spec": spec})

    def gpus(self, gang: bool) -> None:
        gpu_nodes = [n for n in self.nodes if n.gpus]
        largest = max(n.gpus for n in gpu_nodes)
        for _ in range(self.rng.randint(2, 4)):
            if self.pods_left() < 6:
                return
            at = self.arrival()
            if gang and self.rng.random() < 0.75:
                name = self.name("gpugang")
                size = self.rng.randint(2, min(6, self.pods_left() - 2))
                min_count = size if self.rng.random() < 0.75 else self.rng.randint(1, size)
                self.docs.append(self.pod_group(name, min_count=min_count, arrival=at))
                for i in range(size):
                    count = self.rng.choice([c for c in (1, 2, 4, 8) if c <= largest])
                    self.docs.append(self.pod(f"{name}-{i}", cpu=str(self.rng.randint(1, 4)), arrival=at,
                                              duration=self.duration(), group=name, gpus=count))
            else:
                count = self.rng.choice([c for c in (1, 2, 4, 8) if c <= largest])
                self.docs.append(self.pod(self.name("gpu"), cpu=str(self.rng.randint(1, 4)), arrival=at,
                                          duration=self.duration(), gpus=count))


def _group_fields(min_count: int | None, topology: str | None, priority_class: str | None,
                  disruption: str | None, preemption_policy: str | None) -> Doc:
    spec: Doc = {"schedulingPolicy": {"basic": {}} if min_count is None else {"gang": {"minCount": min_count}}}
    if topology is not None:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    if disruption is not None and min_count is not None:
        spec["disruptionMode"] = {disruption: {}}
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    if preemption_policy is not None:
        spec["preemptionPolicy"] = preemption_policy
    return spec


def generate_wide_case(seed: int) -> WideCase:
    """The case of `seed`: the same seed always gives the same case."""
    draw = _Draw(seed)
    rng = draw.rng
    profile = "default" if rng.random() < 0.2 else "gang"
    menu = FAMILIES if profile == "gang" else DEFAULT_FAMILIES
    families = sorted(rng.sample(menu, rng.choice((1, 2, 2, 3))), key=FAMILIES.index)
    gang = profile == "gang"
    draw.cluster(gpu_racks="gpus" in families, unlabelled="tas" in families or "composite" in families)
    draw.fillers()
    for family in families:
        if family == "tas":
            draw.tas()
        elif family == "composite":
            draw.composite()
        elif family == "dra":
            draw.dra(gang)
        elif family == "preemption":
            draw.preemption(gang)
        elif family == "jobs":
            draw.jobs(gang)
        elif family == "gpus":
            draw.gpus(gang)
    return WideCase(seed=seed, profile=profile, gates=dict(sorted(draw.gates.items())), manifests=draw.docs,
                    families=tuple(families))
