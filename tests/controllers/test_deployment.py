"""The Deployment controller: one ReplicaSet `<deployment>-<hash>` that makes the pods."""

from __future__ import annotations

import re

from phalanx.controllers.deployment import HASH_LABEL, replica_set_for
from phalanx.controllers.replicaset import ReplicaSetController
from tests.controllers.apps_manifests import deploy_obj, deployment


def test_a_deployment_owns_one_replica_set_named_with_a_template_hash() -> None:
    rs = replica_set_for(deploy_obj(deployment("web", replicas=3)), 0.0)
    assert re.fullmatch(r"web-[bcdfghjklmnpqrstvwxz2456789]{10}", rs.name)
    assert rs.replicas == 3 and rs.owner is not None and (rs.owner.kind, rs.owner.name) == ("Deployment", "web")
    assert rs.template.labels == {"app": "web", HASH_LABEL: rs.name.rsplit("-", 1)[1]}
    assert rs.selector.matches(rs.template.labels)
    pods = ReplicaSetController().start(rs, [], 0.0)
    assert len(pods) == 3 and all(p.name.startswith(rs.name + "-") and p.owner == rs.key for p in pods)


def test_the_hash_follows_the_template() -> None:
    same = replica_set_for(deploy_obj(deployment("web", replicas=5)), 0.0)
    base = replica_set_for(deploy_obj(deployment("web", replicas=3)), 0.0)
    other = replica_set_for(deploy_obj(deployment("web", replicas=3, cpu="2")), 0.0)
    assert same.name == base.name  # replicas are not part of the template
    assert other.name != base.name


def test_a_deployment_whose_replica_set_is_in_the_input_makes_none() -> None:
    from phalanx.api.objects import OwnerRef
    from phalanx.controllers.job import JobController
    from phalanx.controllers.workloads import WorkloadControllers

    deploy = deploy_obj(deployment("web", replicas=3))
    snapshot_rs = replica_set_for(deploy, 0.0)
    snapshot_rs.name, snapshot_rs.owner = "web-5d4f8c7b9", OwnerRef("Deployment", "web")
    assert WorkloadControllers(JobController(), replica_sets=[snapshot_rs]).arrive(deploy, 0.0).pods == []
    assert len(WorkloadControllers(JobController()).arrive(deploy, 0.0).pods) == 3


def test_snapshot_pods_of_its_replica_set_are_adopted_when_the_replica_set_is_not_given() -> None:
    import dataclasses

    from phalanx.controllers.job import JobController
    from phalanx.controllers.workloads import WorkloadControllers

    deploy = deploy_obj(deployment("web", replicas=3))
    running = [dataclasses.replace(deploy.template, name=f"web-5d4f8c7b9-{s}", owner="default/web-5d4f8c7b9",
                                   controller="ReplicaSet", node_name="node-a",
                                   labels={"app": "web", HASH_LABEL: "5d4f8c7b9"}) for s in ("abcde", "fghij")]
    stranger = dataclasses.replace(running[0], name="web-x-abcde", owner="default/web-x",
                                   labels={"app": "web", HASH_LABEL: "y"})  # another ReplicaSet's
    controllers = WorkloadControllers(JobController(), existing=[*running, stranger])
    assert len(controllers.arrive(deploy, 0.0).pods) == 1  # three replicas, two already run
    assert controllers.replaces(running[0]) and not controllers.replaces(stranger)
    assert len(controllers.terminating(running[0], 10.0).pods) == 1  # an adopted pod is replaced too
