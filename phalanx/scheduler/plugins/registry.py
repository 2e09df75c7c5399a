"""The plugin registry: every plugin Phalanx implements, by its kube-scheduler name."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from phalanx.scheduler.framework import FilterPlugin
from phalanx.scheduler.plugins.dra.dynamic_resources import DynamicResources
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
from phalanx.scheduler.plugins.gpu_share.sharing_order import GpuSharingOrder
from phalanx.scheduler.plugins.inter_pod_affinity import InterPodAffinity
from phalanx.scheduler.plugins.node_affinity import NodeAffinity
from phalanx.scheduler.plugins.node_name import NodeName
from phalanx.scheduler.plugins.node_ports import NodePorts
from phalanx.scheduler.plugins.node_resources import NodeResourcesBalancedAllocation, NodeResourcesFit
from phalanx.scheduler.plugins.node_unschedulable import NodeUnschedulable
from phalanx.scheduler.plugins.pod_topology_spread import PodTopologySpread
from phalanx.scheduler.plugins.taint_toleration import TaintToleration

ExtensionPoint = Literal["filter", "score", "reserve"]


@dataclass(frozen=True)
class PluginSpec:
    """A plugin and the extension points it implements (kube-scheduler's plugins declare theirs by interface).
    A plugin with a Reserve half runs it whenever its Filter is enabled: it holds what its Filter counted.
    A configurable plugin's constructor takes its pluginConfig args; the others take none."""

    plugin: type
    points: frozenset[ExtensionPoint]
    configurable: bool = False

    def build(self, args: Mapping[str, Any]) -> Any:
        return self.plugin(args) if self.configurable else self.plugin()

    @property
    def node_static(self) -> bool:
        """A Filter that looks only at the pod and the node's own labels, taints and spec (its `node_static`):
        it answers for a node that does not exist yet, a node group's template, as well as for a real one."""
        return "filter" in self.points and bool(getattr(self.plugin, "node_static", False))


def _spec(plugin: type, *points: ExtensionPoint) -> PluginSpec:
    return PluginSpec(plugin, frozenset(points))


def _configurable(plugin: type, *points: ExtensionPoint) -> PluginSpec:
    return PluginSpec(plugin, frozenset(points), configurable=True)


PLUGINS: dict[str, PluginSpec] = {
    "NodeUnschedulable": _spec(NodeUnschedulable, "filter"),
    "NodeName": _spec(NodeName, "filter"),
    "TaintToleration": _spec(TaintToleration, "filter", "score"),
    "NodeAffinity": _spec(NodeAffinity, "filter", "score"),
    "NodePorts": _spec(NodePorts, "filter"),  # host ports, held by the bound pods
    "NodeResourcesFit": _configurable(NodeResourcesFit, "filter", "score"),
    "NodeResourcesBalancedAllocation": _configurable(NodeResourcesBalancedAllocation, "score"),
    "PodTopologySpread": _configurable(PodTopologySpread, "filter", "score"),  # rules between pods
    "InterPodAffinity": _configurable(InterPodAffinity, "filter", "score"),
    "DynamicResources": _configurable(DynamicResources, "filter", "reserve"),  # DRA device claims
    # GPU sharing (the FGD paper's policies).
    "GpuShare": _configurable(GpuShare, "filter", "reserve"),
    "RandomScore": _configurable(RandomScore, "score"),
    "DotProductScore": _configurable(DotProductScore, "score"),
    "GpuClusteringScore": _configurable(GpuClusteringScore, "score"),
    "GpuPackingScore": _configurable(GpuPackingScore, "score"),
    "BestFitScore": _configurable(BestFitScore, "score"),
    "FGDScore": _configurable(FGDScore, "score"),
    "StrandingScore": _configurable(StrandingScore, "score"),
    "GpuSharingOrder": _configurable(GpuSharingOrder, "score"),  # KAI's gpusharingorder
}


def build(name: str, args: Mapping[str, Any]) -> Any:
    """A new instance of the plugin registered as `name`, configured with its pluginConfig `args`."""
    return PLUGINS[name].build(args)


def node_static_filters(filters: Iterable[str], plugin_args: Mapping[str, Mapping[str, Any]]) -> list[FilterPlugin]:
    """New instances of the node-static Filters among a profile's enabled `filters`, in their order: what the
    cluster autoscaler checks a pod against on a node group's template node."""
    return [build(name, plugin_args.get(name, {})) for name in filters if PLUGINS[name].node_static]


def reserve_plugins(filters: Iterable[str]) -> list[str]:
    """The Reserve plugins of a profile with these Filters, in Filter order."""
    return [name for name in filters if "reserve" in PLUGINS[name].points]
# In kube-scheduler's default order: a node's first failing plugin gives its reason in `0/N nodes are available`.
FILTERS = ("NodeName", "NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit",
           "PodTopologySpread", "InterPodAffinity", "DynamicResources")
RESERVERS = tuple(reserve_plugins(FILTERS))  # Reserve plugins of the default profiles
SCORERS = ("TaintToleration", "NodeAffinity", "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity",
           "NodeResourcesBalancedAllocation")
# Opt-in plugins: not in the default profile, but a profile may enable them.
GPU_FILTERS = ("GpuShare",)
GPU_SCORERS = ("RandomScore", "DotProductScore", "GpuClusteringScore", "GpuPackingScore", "BestFitScore",
               "FGDScore", "StrandingScore", "GpuSharingOrder")

# kube-scheduler's default plugins that Phalanx does not implement yet: a profile lists them as missing.
NOT_IMPLEMENTED = ("VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone",
                   "ImageLocality")
