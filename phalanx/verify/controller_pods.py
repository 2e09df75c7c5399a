"""The pods workload controllers make, named alike on both sides of a replay.

Phalanx's ReplicaSet, Deployment, StatefulSet and DaemonSet controllers name their pods as the real ones do in
shape, but a ReplicaSet's or DaemonSet's suffix (and a Deployment's pod-template-hash) is random on the real
cluster. The oracle runs the real controllers and gives each pod they make the key Phalanx gave its own:

- a StatefulSet's pods have stable names (`<set>-<ordinal>`) on both sides: nothing to do;
- a DaemonSet's pod is the one for its node (the node its `matchFields: metadata.name` term pins);
- a ReplicaSet's pods, a Deployment's through its ReplicaSet, are alike: the n-th pod the real controller made
  takes the n-th name Phalanx's made (a replacement is a new pod on both sides), and the comparison pairs
  them by node and time as it pairs the pods of a Job without completion indexes.

A pod is filed under its top owner: a ReplicaSet named `<deployment>-<its pods' pod-template-hash>` under that
Deployment when the inputs hold it, since the two sides hash the template differently.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# The kinds whose pods the oracle's controllers make, and the kube-controller-manager controllers each needs.
CONTROLLERS: dict[str, tuple[str, ...]] = {
    "ReplicaSet": ("replicaset-controller",),
    "Deployment": ("deployment-controller", "replicaset-controller"),
    "StatefulSet": ("statefulset-controller",),
    "DaemonSet": ("daemonset-controller",),
}
HASH_LABEL = "pod-template-hash"


@dataclass(frozen=True, slots=True)
class MadePod:
    """A pod one of Phalanx's controllers made: its key, when, and (a DaemonSet's) the node it is pinned to."""

    key: str
    arrival: float
    node: str | None = None


def top_owner(kind: str | None, namespace: str, name: str | None, labels: Mapping[str, str],
              deployments: Iterable[str]) -> str | None:
    """`Kind namespace/name` of the object a pod is filed under (see the module's docstring), or None for a pod
    no replayed controller made. `deployments`: the inputs' Deployments as `namespace/name`."""
    if kind not in CONTROLLERS or not name:
        return None
    if kind == "ReplicaSet":
        digest = labels.get(HASH_LABEL)
        if digest and name.endswith(f"-{digest}"):
            deployment = f"{namespace}/{name[:-len(digest) - 1]}"
            if deployment in deployments:
                return f"Deployment {deployment}"
    return f"{kind} {namespace}/{name}"


def controller_of(pod: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """Kind and name of a pod manifest's controlling ownerReference."""
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref.get("kind"), ref.get("name")
    return None, None


def pinned_node(pod: Mapping[str, Any]) -> str | None:
    """The node a DaemonSet pod's required node affinity names (`matchFields: metadata.name In [node]`)."""
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in required.get("nodeSelectorTerms") or ():
        for req in term.get("matchFields") or ():
            values = req.get("values") or []
            if req.get("key") == "metadata.name" and req.get("operator") == "In" and len(values) == 1:
                return str(values[0])
    return None


@dataclass
class ControllerPods:
    """Phalanx's controller-made pods by top owner, in the order made, and the keys given to real ones."""

    made: dict[str, list[MadePod]] = field(default_factory=dict)
    deployments: frozenset[str] = frozenset()
    _given: dict[str, list[str]] = field(default_factory=dict)  # owner -> the keys given, in creation order

    def controllers(self) -> list[str]:
        """The kube-controller-manager controllers that make these pods."""
        return sorted({name for owner in self.made for name in CONTROLLERS[owner.split(" ", 1)[0]]})

    def owner(self, pod: Mapping[str, Any]) -> str | None:
        meta = pod.get("metadata") or {}
        kind, name = controller_of(pod)
        return top_owner(kind, str(meta.get("namespace") or "default"), name, meta.get("labels") or {},
                         self.deployments)

    def made_at(self, owner: str, time: float) -> int:
        """How many pods Phalanx's controller made for `owner` at `time` (the oracle waits for the real ones)."""
        return sum(1 for pod in self.made.get(owner, ()) if pod.arrival == time)

    def key(self, pod: Mapping[str, Any]) -> str | None:
        """The key of a real pod seen for the first time (pods in creation order), or None to keep its own."""
        owner = self.owner(pod)
        if owner is None or owner.startswith("StatefulSet "):
            return None
        mine = self.made.get(owner, [])
        given = self._given.setdefault(owner, [])
        if owner.startswith("DaemonSet "):  # the pod for its node (a replacement takes the next one made for it)
            node = pinned_node(pod)
            key = next((m.key for m in mine if m.node is not None and m.node == node and m.key not in given), None)
        else:
            key = next((m.key for m in mine if m.key not in given), None)
        if key is None:  # more pods than Phalanx made: it keeps its own name, and shows as one Phalanx lacks
            return None
        given.append(key)
        return key

    def interchangeable(self) -> dict[str, list[str]]:
        """The keys given to the pods of each ReplicaSet or Deployment: alike, paired by node and time."""
        return {owner: list(keys) for owner, keys in self._given.items() if not owner.startswith("DaemonSet ")}

    def reset(self) -> None:
        self._given.clear()
