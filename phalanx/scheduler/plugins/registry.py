"""The plugin registry: every plugin Phalanx implements, by its kube-scheduler name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from phalanx.scheduler.plugins.node_affinity import NodeAffinity
from phalanx.scheduler.plugins.node_name import NodeName
from phalanx.scheduler.plugins.node_resources import NodeResourcesBalancedAllocation, NodeResourcesFit
from phalanx.scheduler.plugins.node_unschedulable import NodeUnschedulable
from phalanx.scheduler.plugins.taint_toleration import TaintToleration

Factory = Callable[[Mapping[str, Any]], Any]

REGISTRY: dict[str, Factory] = {
    "NodeUnschedulable": lambda args: NodeUnschedulable(),
    "NodeName": lambda args: NodeName(),
    "TaintToleration": lambda args: TaintToleration(),
    "NodeAffinity": lambda args: NodeAffinity(),
    "NodeResourcesFit": NodeResourcesFit,
    "NodeResourcesBalancedAllocation": NodeResourcesBalancedAllocation,
}
FILTERS = ("NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodeResourcesFit")
SCORERS = ("TaintToleration", "NodeAffinity", "NodeResourcesFit", "NodeResourcesBalancedAllocation")

# kube-scheduler's default plugins that Phalanx does not implement yet: a profile lists them as missing.
NOT_IMPLEMENTED = ("NodePorts", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone",
                   "PodTopologySpread", "InterPodAffinity", "ImageLocality", "DynamicResources",
                   "DefaultPreemption")
