"""The DaemonSet controller: a pod per qualifying node, pinned by matchFields, with the added tolerations."""

from __future__ import annotations

import dataclasses

from phalanx.api.objects import Requirement, SelectorTerm, Toleration
from phalanx.controllers.daemonset import DaemonSetController, daemon_tolerations, should_run
from tests.builders import MakeNode
from tests.controllers.apps_manifests import daemon_set, ds_obj


def _controller(*nodes: MakeNode) -> DaemonSetController:
    controller = DaemonSetController()
    for node in nodes:
        controller.nodes[node.obj().name] = node.obj()
    return controller


def test_one_pod_per_node_pinned_by_match_fields() -> None:
    controller = _controller(MakeNode("a"), MakeNode("b"))
    pods = controller.start(ds_obj(daemon_set("agent")), [], 0.0)
    assert len(pods) == 2
    pins = [p.placement.required_terms for p in pods]
    assert pins == [(SelectorTerm(fields=(Requirement("metadata.name", "In", (n,)),)),) for n in ("a", "b")]
    assert all(p.owner == "default/agent" and p.controller == "DaemonSet" and p.node_name is None for p in pods)


def test_tainted_and_unselected_nodes_get_none() -> None:
    controller = _controller(MakeNode("a").label("role", "worker"), MakeNode("b").label("role", "worker")
                             .taint("dedicated", "gpu"), MakeNode("c"))
    pods = controller.start(ds_obj(daemon_set("agent", nodeSelector={"role": "worker"})), [], 0.0)
    assert [p.placement.required_terms[0].fields[0].values for p in pods if p.placement.required_terms] == [("a",)]


def test_the_controller_adds_its_tolerations() -> None:
    ds = ds_obj(daemon_set("agent"))
    keys = {(t.key, t.effect) for t in daemon_tolerations(ds)}
    assert keys == {("node.kubernetes.io/not-ready", "NoExecute"), ("node.kubernetes.io/unreachable", "NoExecute"),
                    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
                    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
                    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
                    ("node.kubernetes.io/unschedulable", "NoSchedule")}
    assert should_run(ds, MakeNode("a").taint("node.kubernetes.io/not-ready", effect="NoExecute").obj())
    assert should_run(ds, MakeNode("a").unschedulable().taint("node.kubernetes.io/unschedulable").obj())
    assert should_run(ds, MakeNode("a").taint("soft", effect="PreferNoSchedule").obj())
    assert not should_run(ds, MakeNode("a").taint("node.kubernetes.io/network-unavailable").obj())
    host = ds_obj(daemon_set("agent", hostNetwork=True))
    assert should_run(host, MakeNode("a").taint("node.kubernetes.io/network-unavailable").obj())
    tolerant = ds_obj(daemon_set("agent", tolerations=[{"operator": "Exists"}]))
    assert should_run(tolerant, MakeNode("a").taint("dedicated", "gpu", "NoExecute").obj())
    assert Toleration(operator="Exists") in daemon_tolerations(tolerant)


def test_nodes_arriving_later_get_a_pod_and_a_lost_pod_comes_back() -> None:
    controller = _controller(MakeNode("a"))
    (first,) = controller.start(ds_obj(daemon_set("agent")), [], 0.0)
    (later,) = controller.node_added(MakeNode("b").obj(), 100.0)
    assert later.arrival == 100.0 and later.placement.required_terms is not None
    assert controller.node_added(MakeNode("b").obj(), 200.0) == []  # it has its pod already
    (again,) = controller.gone(first, 300.0)
    assert again.name != first.name and again.placement.required_terms == first.placement.required_terms


def test_snapshot_pods_are_adopted_by_node() -> None:
    template = ds_obj(daemon_set("agent")).template
    running = dataclasses.replace(template, name="agent-x1", owner="default/agent", controller="DaemonSet",
                                  node_name="a")
    controller = _controller(MakeNode("a"), MakeNode("b"))
    pods = controller.start(ds_obj(daemon_set("agent")), [running], 0.0)
    assert [p.placement.required_terms[0].fields[0].values for p in pods if p.placement.required_terms] == [("b",)]


def test_pod_names_never_repeat_on_thousands_of_nodes() -> None:
    """The five-letter suffix repeats within a few thousand draws; a repeated name would replace a pod."""
    controller = _controller(*(MakeNode(f"node-{i:05d}") for i in range(6000)))
    pods = controller.start(ds_obj(daemon_set("agent")), [], 0.0)
    assert len(pods) == 6000
    assert len({p.key for p in pods}) == 6000
