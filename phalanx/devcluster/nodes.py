"""The Node objects of a dev cluster: API objects only, Ready from the start, as the control plane's tests make
them. No kubelet runs, so nothing ever heartbeats, starts a container or changes a pod's phase."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from phalanx.api.quantity import QuantityError, parse_quantity
from phalanx.errors import InputError

GPU_RESOURCE = "nvidia.com/gpu"  # the extended resource NVIDIA's device plugin advertises
MAX_NODES = 1000
NODE_LABEL = "phalanx.dev/dev-cluster"  # on every node the dev cluster made


@dataclass(frozen=True)
class NodeShape:
    """What each node has: `count` nodes of `cpu` and `memory` (quantities) and `gpus` whole GPUs."""

    count: int
    cpu: str
    memory: str
    gpus: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.count <= MAX_NODES:
            raise InputError(f"want a whole number of nodes from 1 to {MAX_NODES}, got {self.count}", field="--nodes")
        for flag, value in (("--node-cpu", self.cpu), ("--node-memory", self.memory)):
            try:
                amount = parse_quantity(value)
            except QuantityError as exc:
                raise InputError(str(exc), field=flag) from None
            if amount <= 0:
                raise InputError(f"must be above 0, got {value!r}", field=flag)
        if not 0 <= self.gpus <= 1024:
            raise InputError(f"want a whole number of GPUs per node from 0 to 1024, got {self.gpus}", field="--gpus")

    def resources(self) -> dict[str, str]:
        found = {"cpu": self.cpu, "memory": self.memory, "pods": "110"}
        if self.gpus:
            found[GPU_RESOURCE] = str(self.gpus)
        return found

    def describe(self) -> str:
        gpus = f", {self.gpus} {GPU_RESOURCE}" if self.gpus else ""
        return f"{self.count} node(s) of {self.cpu} CPU, {self.memory} memory{gpus}"


def node_names(shape: NodeShape) -> list[str]:
    return [f"dev-node-{i}" for i in range(shape.count)]


def node_documents(shape: NodeShape) -> list[dict[str, Any]]:
    """One Node per name, its status Ready with capacity = allocatable = the shape (the API server keeps a
    Node's status on create)."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady",
             "message": "registered by phalanx dev-cluster", "lastHeartbeatTime": now, "lastTransitionTime": now}
    return [{
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                              NODE_LABEL: "true"}},
        "status": {"capacity": shape.resources(), "allocatable": shape.resources(), "conditions": [ready]},
    } for name in node_names(shape)]
