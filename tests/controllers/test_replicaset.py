"""The ReplicaSet controller: replicas from the template, stable-looking names, owner refs, replacements."""

from __future__ import annotations

import dataclasses
import re

from phalanx.controllers.replicaset import ReplicaSetController
from tests.controllers.apps_manifests import replica_set, rs_obj


def test_replicas_pods_from_the_template_with_owner_and_labels() -> None:
    pods = ReplicaSetController().start(rs_obj(replica_set("web", replicas=3)), [], 0.0)
    assert len(pods) == 3
    assert all(re.fullmatch(r"web-[bcdfghjklmnpqrstvwxz2456789]{5}", p.name) for p in pods)
    assert len({p.name for p in pods}) == 3
    assert all(p.owner == "default/web" and p.controller == "ReplicaSet" for p in pods)
    assert all(p.labels == {"app": "web"} and p.requests == {"cpu": 1000} for p in pods)


def test_replicas_default_to_one() -> None:
    doc = replica_set("web")
    del doc["spec"]["replicas"]
    assert len(ReplicaSetController().start(rs_obj(doc), [], 0.0)) == 1


def test_names_repeat_for_the_same_seed_and_differ_for_another() -> None:
    def names(seed: int) -> list[str]:
        return [p.name for p in ReplicaSetController(seed=seed).start(rs_obj(replica_set("web")), [], 0.0)]

    assert names(0) == names(0)
    assert names(0) != names(1)


def test_a_lost_pod_is_replaced_at_once_and_only_once() -> None:
    controller = ReplicaSetController()
    pods = controller.start(rs_obj(replica_set("web", replicas=2)), [], 0.0)
    replacement = controller.lost(pods[0], 30.0)
    assert len(replacement) == 1 and replacement[0].name not in {p.name for p in pods}
    assert replacement[0].arrival == 30.0
    assert controller.lost(pods[0], 60.0) == []  # already replaced (evicted, then gone after its grace)


def test_pods_of_other_owners_are_not_its_business() -> None:
    controller = ReplicaSetController()
    pods = controller.start(rs_obj(replica_set("web", replicas=1)), [], 0.0)
    stranger = dataclasses.replace(pods[0], name="other-abcde", owner="default/other")
    assert controller.lost(stranger, 1.0) == []


def test_existing_pods_it_controls_are_adopted() -> None:
    template = rs_obj(replica_set("web")).template
    running = dataclasses.replace(template, name="web-abcde", owner="default/web", controller="ReplicaSet",
                                  node_name="node-a")
    other = dataclasses.replace(template, name="web-fghij", owner="default/web-old", controller="ReplicaSet")
    controller = ReplicaSetController()
    pods = controller.start(rs_obj(replica_set("web", replicas=3)), [running, other], 0.0)
    assert len(pods) == 2  # three replicas, one already there
    assert controller.lost(running, 5.0) != []  # an adopted pod is replaced like its own


def test_a_duration_on_the_template_never_ends_its_pods() -> None:
    doc = replica_set("web")
    doc["spec"]["template"]["metadata"]["annotations"] = {"phalanx.dev/duration": "10m"}
    pods = ReplicaSetController().start(rs_obj(doc), [], 0.0)
    assert all(p.duration is None for p in pods)  # restartPolicy Always: the container restarts in its pod
