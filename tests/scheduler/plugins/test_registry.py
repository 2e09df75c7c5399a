"""The plugin registry's contract for Filter plugins (docs/engine.md, "Adding a Filter plugin"): a plugin is one
class and one `PLUGINS` entry; once a profile enables it the scheduler runs it, and when it declares
`node_static` the cluster autoscaler's scale-up asks it about node group templates too, with no other edit."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest

from phalanx.autoscale.cluster_autoscaler import ClusterAutoscaler
from phalanx.cluster.state import ClusterState
from phalanx.scheduler.decisions import Bind, Unschedulable
from phalanx.scheduler.framework import BoolArray, Code, CycleState
from phalanx.scheduler.plugins.registry import FILTERS, PLUGINS, PluginSpec, node_static_filters
from phalanx.scheduler.profiles import builtin
from phalanx.scheduler.scheduler import Scheduler
from tests.autoscale.test_cluster_autoscaler import make_group, pod
from tests.builders import MakeNode

SPOT = "test.phalanx.dev/spot"


# --- the throwaway plugin: what would be its own file ---------------------------------------------------------

class NoSpot:
    """Keeps pods off nodes labelled as spot capacity."""

    name = "NoSpot"
    static = True
    node_static = True
    code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE

    def filter(self, state: CycleState, cluster: ClusterState) -> BoolArray:
        return np.asarray(~cluster.labels.equals_any(SPOT, ("true",)), dtype=bool)

    def reasons(self, state: CycleState, cluster: ClusterState, failed: BoolArray) -> Counter[str]:
        return Counter({"node(s) were spot capacity": int(failed.sum())})


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The plugin's one registry line."""
    monkeypatch.setitem(PLUGINS, "NoSpot", PluginSpec(NoSpot, frozenset({"filter"})))
    yield


WITH_NO_SPOT = (*FILTERS, "NoSpot")


def test_the_default_filters_that_are_node_static() -> None:
    assert [f.name for f in node_static_filters(FILTERS, {})] == ["NodeUnschedulable", "TaintToleration",
                                                                 "NodeAffinity"]


def test_the_registry_answers_a_new_static_filter_in_profile_order(registered: None) -> None:
    assert [f.name for f in node_static_filters(WITH_NO_SPOT, {})] == ["NodeUnschedulable", "TaintToleration",
                                                                      "NodeAffinity", "NoSpot"]
    assert [f.name for f in node_static_filters(FILTERS, {})] == ["NodeUnschedulable", "TaintToleration",
                                                                 "NodeAffinity"]  # enabled by the profile only


@pytest.mark.parametrize("filters", [FILTERS, WITH_NO_SPOT])
def test_the_scheduler_runs_a_new_filter_once_the_profile_enables_it(registered: None,
                                                                      filters: tuple[str, ...]) -> None:
    profile = replace(builtin("default"), filters=list(filters))
    s = Scheduler(profile, [MakeNode("spot").alloc(cpu="8", memory="32Gi").label(SPOT, "true").obj()])
    s.add_pod(pod("p", 1), 0.0)
    decisions = s.schedule(0.0)
    if "NoSpot" in filters:
        [failed] = [d for d in decisions if isinstance(d, Unschedulable)]
        assert failed.message == "0/1 nodes are available: 1 node(s) were spot capacity."
    else:
        assert [d.node for d in decisions if isinstance(d, Bind)] == ["spot"]


@pytest.mark.parametrize("filters", [FILTERS, WITH_NO_SPOT])
def test_scale_up_honours_a_new_static_filter_once_the_profile_enables_it(registered: None,
                                                                           filters: tuple[str, ...]) -> None:
    spot = make_group("spot", 8, 32, label=(SPOT, "true"))
    ca = ClusterAutoscaler([spot], filters=filters)
    decisions = ca.scale_up([pod("p", 1)], {})
    if "NoSpot" in filters:
        assert decisions == []
        assert [u.reason for u in ca.unhelped] == ["no node group's template fits the pod"]
        plain = make_group("plain", 8, 32)
        assert [d.group for d in ClusterAutoscaler([spot, plain], filters=filters).scale_up([pod("p", 1)], {})] \
            == ["plain"]
    else:
        assert [d.group for d in decisions] == ["spot"]
