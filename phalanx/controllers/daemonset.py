"""The DaemonSet controller: one pod on every node the pod may run on, also on nodes that arrive later.

A node qualifies as in kube-controller-manager's `NodeShouldRunDaemonPod`: the template's nodeSelector and
required node affinity match it, and it has no NoSchedule or NoExecute taint the pod does not tolerate,
counting the tolerations the controller adds to every daemon pod (`pkg/controller/daemon/util/
daemonset_util.go AddOrUpdateDaemonPodTolerations`): node.kubernetes.io/not-ready and unreachable
(NoExecute), disk-pressure, memory-pressure, pid-pressure and unschedulable (NoSchedule), and
network-unavailable (NoSchedule) for hostNetwork pods. Cordoned nodes qualify (the pods tolerate it).

Each pod is pinned the v1.37 way (`ReplaceDaemonSetPodNodeNameNodeAffinity`): its required node affinity is
replaced by one term `matchFields: metadata.name In [node]`, and the scheduler places it. A pod that is gone
(after an eviction's grace, a deletion, a finish) is made again for its node. Pods a snapshot holds (naming
it as their controller) are adopted by node. Nodes that stop qualifying keep their pod; updates are not
modelled.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from phalanx.api.apps import DaemonSet
from phalanx.api.objects import Node, Pod, Requirement, SelectorTerm, Toleration
from phalanx.api.tolerations import first_untolerated
from phalanx.controllers.naming import suffix
from phalanx.controllers.protocol import Actions, Controller, Given, Setup

KIND = "DaemonSet"
DAEMON_TOLERATIONS = (
    Toleration(key="node.kubernetes.io/not-ready", operator="Exists", effect="NoExecute"),
    Toleration(key="node.kubernetes.io/unreachable", operator="Exists", effect="NoExecute"),
    Toleration(key="node.kubernetes.io/disk-pressure", operator="Exists", effect="NoSchedule"),
    Toleration(key="node.kubernetes.io/memory-pressure", operator="Exists", effect="NoSchedule"),
    Toleration(key="node.kubernetes.io/pid-pressure", operator="Exists", effect="NoSchedule"),
    Toleration(key="node.kubernetes.io/unschedulable", operator="Exists", effect="NoSchedule"),
)
HOST_NETWORK_TOLERATION = Toleration(key="node.kubernetes.io/network-unavailable", operator="Exists",
                                     effect="NoSchedule")


def daemon_tolerations(daemon_set: DaemonSet) -> tuple[Toleration, ...]:
    """The template's tolerations plus those the controller adds (each added only if not already there)."""
    extra = (*DAEMON_TOLERATIONS, *((HOST_NETWORK_TOLERATION,) if daemon_set.host_network else ()))
    own = daemon_set.template.placement.tolerations
    return (*own, *(t for t in extra if t not in own))


def should_run(daemon_set: DaemonSet, node: Node) -> bool:
    placement = daemon_set.template.placement
    if any(node.labels.get(k) != v for k, v in placement.node_selector):
        return False
    terms = placement.required_terms
    if terms is not None and not any(t.matches(node.name, node.labels) for t in terms):
        return False
    blocking = [t for t in node.taints if t.effect in ("NoSchedule", "NoExecute")]
    return first_untolerated(blocking, daemon_tolerations(daemon_set), harmless="PreferNoSchedule") is None


def _pinned_node(pod: Pod) -> str | None:
    if pod.node_name is not None:
        return pod.node_name
    for term in pod.placement.required_terms or ():
        for req in term.fields:
            if req.key == "metadata.name" and req.operator == "In" and len(req.values) == 1:
                return req.values[0]
    return None


@dataclass(slots=True)
class _Record:
    daemon_set: DaemonSet
    pods: dict[str, str] = field(default_factory=dict)  # node name -> its pod's key
    serial: int = 0


@dataclass(slots=True)
class DaemonSetController(Controller):
    kinds: ClassVar[tuple[type[Any], ...]] = (DaemonSet,)
    seed: int = 0
    nodes: dict[str, Node] = field(default_factory=dict)
    sets: dict[str, _Record] = field(default_factory=dict)
    names: set[str] = field(default_factory=set)  # every pod key it made or adopted, never reused

    @classmethod
    def build(cls, setup: Setup) -> DaemonSetController:
        controller = cls(seed=setup.seed)
        for node in setup.given.nodes:  # no pods are made for them until a DaemonSet arrives
            controller.nodes[node.name] = node
        return controller

    def arrive(self, obj: DaemonSet, now: float, given: Given) -> Actions:
        return Actions(pods=self.start(obj, given.owned(obj.key, KIND), now))

    def node_arrived(self, node: Node, now: float) -> Actions:
        return Actions(pods=self.node_added(node, now))

    def node_removed(self, name: str) -> None:
        """A node was deleted: no pod is made for it again."""
        self.nodes.pop(name, None)

    def pod_gone(self, pod: Pod, now: float) -> Actions:
        return Actions(pods=self.gone(pod, now))

    def replaces(self, pod: Pod) -> bool:
        return self.owns(pod)

    def start(self, daemon_set: DaemonSet, existing: Iterable[Pod], now: float) -> list[Pod]:
        record = self.sets[daemon_set.key] = _Record(daemon_set)
        for pod in existing:
            node = _pinned_node(pod) if pod.controller == KIND and pod.owner == daemon_set.key else None
            if node is not None:
                record.pods[node] = pod.key
                self.names.add(pod.key)
        placed = (self._place(record, node, now) for node in sorted(self.nodes))
        return [pod for pod in placed if pod is not None]

    def node_added(self, node: Node, now: float) -> list[Pod]:
        """A node arrives (or changes): every DaemonSet that should run there and has no pod there makes one."""
        self.nodes[node.name] = node
        placed = (self._place(self.sets[key], node.name, now) for key in sorted(self.sets))
        return [pod for pod in placed if pod is not None]

    def gone(self, pod: Pod, now: float) -> list[Pod]:
        """One of its pods is gone: made again for its node, if the node still qualifies."""
        record = self.sets.get(pod.owner or "") if pod.controller == KIND else None
        node = _pinned_node(pod) if record is not None else None
        if record is None or node is None or record.pods.get(node) != pod.key:
            return []
        del record.pods[node]
        new = self._place(record, node, now)
        return [new] if new is not None else []

    def owns(self, pod: Pod) -> bool:
        return pod.controller == KIND and pod.owner in self.sets

    def _place(self, record: _Record, node_name: str, now: float) -> Pod | None:
        node = self.nodes.get(node_name)
        if node is None or node_name in record.pods or not should_run(record.daemon_set, node):
            return None
        daemon_set = record.daemon_set
        while True:  # five letters of a digest repeat within a few thousand pods: skip a name already used
            record.serial += 1
            name = f"{daemon_set.name}-{suffix(self.seed, daemon_set.key, record.serial)}"
            if f"{daemon_set.namespace}/{name}" not in self.names:
                break
        self.names.add(f"{daemon_set.namespace}/{name}")
        pin = SelectorTerm(fields=(Requirement(key="metadata.name", operator="In", values=(node_name,)),))
        placement = dataclasses.replace(daemon_set.template.placement, required_terms=(pin,),
                                        tolerations=daemon_tolerations(daemon_set))
        pod = dataclasses.replace(daemon_set.template, name=name, namespace=daemon_set.namespace, arrival=now,
                                  owner=daemon_set.key, controller=KIND, labels=dict(daemon_set.template.labels),
                                  placement=placement, node_name=None, start_time=None, source=daemon_set.source)
        record.pods[node_name] = pod.key
        return pod
