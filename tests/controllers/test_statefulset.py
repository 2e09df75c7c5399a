"""The StatefulSet controller: ordinal names, OrderedReady vs Parallel, the same name after a loss."""

from __future__ import annotations

import dataclasses

from phalanx.controllers.statefulset import StatefulSetController
from tests.controllers.apps_manifests import stateful_set, sts_obj


def test_ordered_ready_creates_the_next_pod_once_the_previous_runs() -> None:
    controller = StatefulSetController()
    first = controller.start(sts_obj(stateful_set("db", replicas=3)), [], 0.0)
    assert [p.name for p in first] == ["db-0"]
    assert first[0].owner == "default/db" and first[0].controller == "StatefulSet"
    assert first[0].labels["statefulset.kubernetes.io/pod-name"] == "db-0"
    assert [p.name for p in controller.bound(first[0], 5.0)] == ["db-1"]
    assert [p.name for p in controller.bound(dataclasses.replace(first[0], name="db-1"), 9.0)] == ["db-2"]
    assert controller.bound(dataclasses.replace(first[0], name="db-2"), 9.0) == []


def test_parallel_creates_all_at_once() -> None:
    pods = StatefulSetController().start(sts_obj(stateful_set("db", replicas=3, policy="Parallel")), [], 0.0)
    assert [p.name for p in pods] == ["db-0", "db-1", "db-2"]


def test_a_pod_gone_comes_back_under_its_name() -> None:
    controller = StatefulSetController()
    pods = controller.start(sts_obj(stateful_set("db", replicas=2, policy="Parallel")), [], 0.0)
    again = controller.gone(pods[1], 40.0)
    assert [p.name for p in again] == ["db-1"] and again[0].arrival == 40.0


def test_snapshot_pods_are_adopted_by_ordinal() -> None:
    template = sts_obj(stateful_set("db")).template
    running = dataclasses.replace(template, name="db-0", owner="default/db", controller="StatefulSet",
                                  node_name="node-a")
    pods = StatefulSetController().start(sts_obj(stateful_set("db", replicas=3)), [running], 0.0)
    assert [p.name for p in pods] == ["db-1"]  # db-0 runs already; OrderedReady waits for db-1
