"""The plugin registry: every plugin Phalanx implements, by its kube-scheduler name."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from phalanx.scheduler.plugins.dynamic_resources import DynamicResources
from phalanx.scheduler.plugins.gpu_share import (
    BestFitScore,
    DotProductScore,
    FGDScore,
    GpuClusteringScore,
    GpuPackingScore,
    GpuShare,
    RandomScore,
    StrandingScore,
)
from phalanx.scheduler.plugins.inter_pod_affinity import InterPodAffinity
from phalanx.scheduler.plugins.node_affinity import NodeAffinity
from phalanx.scheduler.plugins.node_name import NodeName
from phalanx.scheduler.plugins.node_resources import NodeResourcesBalancedAllocation, NodeResourcesFit
from phalanx.scheduler.plugins.node_unschedulable import NodeUnschedulable
from phalanx.scheduler.plugins.pod_topology_spread import PodTopologySpread
from phalanx.scheduler.plugins.taint_toleration import TaintToleration

Factory = Callable[[Mapping[str, Any]], Any]
ExtensionPoint = Literal["filter", "score", "reserve"]


@dataclass(frozen=True)
class PluginSpec:
    """A plugin and the extension points it implements (kube-scheduler's plugins declare theirs by interface).
    A plugin with a Reserve half runs it whenever its Filter is enabled: it holds what its Filter counted."""

    factory: Factory
    points: frozenset[ExtensionPoint]


def _spec(factory: Factory, *points: ExtensionPoint) -> PluginSpec:
    return PluginSpec(factory, frozenset(points))


PLUGINS: dict[str, PluginSpec] = {
    "NodeUnschedulable": _spec(lambda args: NodeUnschedulable(), "filter"),
    "NodeName": _spec(lambda args: NodeName(), "filter"),
    "TaintToleration": _spec(lambda args: TaintToleration(), "filter", "score"),
    "NodeAffinity": _spec(lambda args: NodeAffinity(), "filter", "score"),
    "NodeResourcesFit": _spec(NodeResourcesFit, "filter", "score"),
    "NodeResourcesBalancedAllocation": _spec(NodeResourcesBalancedAllocation, "score"),
    "PodTopologySpread": _spec(PodTopologySpread, "filter", "score"),  # rules between pods
    "InterPodAffinity": _spec(InterPodAffinity, "filter", "score"),
    "DynamicResources": _spec(DynamicResources, "filter", "reserve"),  # DRA device claims
    # GPU sharing (the FGD paper's policies).
    "GpuShare": _spec(GpuShare, "filter", "reserve"),
    "RandomScore": _spec(RandomScore, "score"),
    "DotProductScore": _spec(DotProductScore, "score"),
    "GpuClusteringScore": _spec(GpuClusteringScore, "score"),
    "GpuPackingScore": _spec(GpuPackingScore, "score"),
    "BestFitScore": _spec(BestFitScore, "score"),
    "FGDScore": _spec(FGDScore, "score"),
    "StrandingScore": _spec(StrandingScore, "score"),
}
REGISTRY: dict[str, Factory] = {name: spec.factory for name, spec in PLUGINS.items()}


def reserve_plugins(filters: Iterable[str]) -> list[str]:
    """The Reserve plugins of a profile with these Filters, in Filter order."""
    return [name for name in filters if "reserve" in PLUGINS[name].points]
# In kube-scheduler's default order: a node's first failing plugin gives its reason in `0/N nodes are available`.
FILTERS = ("NodeName", "NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodeResourcesFit",
           "PodTopologySpread", "InterPodAffinity", "DynamicResources")
RESERVERS = tuple(reserve_plugins(FILTERS))  # Reserve plugins of the default profiles
SCORERS = ("TaintToleration", "NodeAffinity", "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity",
           "NodeResourcesBalancedAllocation")
# Opt-in plugins: not in the default profile, but a profile may enable them.
GPU_FILTERS = ("GpuShare",)
GPU_SCORERS = ("RandomScore", "DotProductScore", "GpuClusteringScore", "GpuPackingScore", "BestFitScore",
               "FGDScore", "StrandingScore")

# kube-scheduler's default plugins that Phalanx does not implement yet: a profile lists them as missing.
NOT_IMPLEMENTED = ("NodePorts", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone",
                   "ImageLocality", "DefaultPreemption")
