"""The plugin registry: every plugin Phalanx implements, by its kube-scheduler name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from phalanx.scheduler.plugins.dynamic_resources import DynamicResources
from phalanx.scheduler.plugins.gpu_share import (
    BestFitScore,
    DotProductScore,
    FGDScore,
    GpuClusteringScore,
    GpuPackingScore,
    GpuShare,
    RandomScore,
)
from phalanx.scheduler.plugins.inter_pod_affinity import InterPodAffinity
from phalanx.scheduler.plugins.node_affinity import NodeAffinity
from phalanx.scheduler.plugins.node_name import NodeName
from phalanx.scheduler.plugins.node_resources import NodeResourcesBalancedAllocation, NodeResourcesFit
from phalanx.scheduler.plugins.node_unschedulable import NodeUnschedulable
from phalanx.scheduler.plugins.pod_topology_spread import PodTopologySpread
from phalanx.scheduler.plugins.taint_toleration import TaintToleration

Factory = Callable[[Mapping[str, Any]], Any]

REGISTRY: dict[str, Factory] = {
    "NodeUnschedulable": lambda args: NodeUnschedulable(),
    "NodeName": lambda args: NodeName(),
    "TaintToleration": lambda args: TaintToleration(),
    "NodeAffinity": lambda args: NodeAffinity(),
    "NodeResourcesFit": NodeResourcesFit,
    "NodeResourcesBalancedAllocation": NodeResourcesBalancedAllocation,
    # Rules between pods; Filter and Score plugins.
    "PodTopologySpread": PodTopologySpread,
    "InterPodAffinity": InterPodAffinity,
    # DRA device claims; a Filter and a Reserve plugin.
    "DynamicResources": DynamicResources,
    # GPU sharing (FGD paper's policies); GpuShare is a Filter and a Reserve plugin.
    "GpuShare": GpuShare,
    "RandomScore": RandomScore,
    "DotProductScore": DotProductScore,
    "GpuClusteringScore": GpuClusteringScore,
    "GpuPackingScore": GpuPackingScore,
    "BestFitScore": BestFitScore,
    "FGDScore": FGDScore,
}
# In kube-scheduler's default order: a node's first failing plugin gives its reason in `0/N nodes are available`.
FILTERS = ("NodeName", "NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodeResourcesFit",
           "PodTopologySpread", "InterPodAffinity", "DynamicResources")
RESERVERS = ("DynamicResources",)  # Reserve plugins of the default profiles
SCORERS = ("TaintToleration", "NodeAffinity", "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity",
           "NodeResourcesBalancedAllocation")
# Opt-in plugins: not in the default profile, but a profile may enable them.
GPU_FILTERS = ("GpuShare",)
GPU_SCORERS = ("RandomScore", "DotProductScore", "GpuClusteringScore", "GpuPackingScore", "BestFitScore",
               "FGDScore")

# kube-scheduler's default plugins that Phalanx does not implement yet: a profile lists them as missing.
NOT_IMPLEMENTED = ("NodePorts", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone",
                   "ImageLocality", "DefaultPreemption")
