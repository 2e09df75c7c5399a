"""The Deployment controller, without rollouts: a Deployment owns one ReplicaSet, `<deployment>-<hash>`, with
its replicas and template (plus the `pod-template-hash` label, in the template and the selector); the
ReplicaSet controller makes the pods. The hash is a digest of the template as written, not Kubernetes' own.

A Deployment whose ReplicaSets are already in the input (a snapshot's, naming it as their controller) makes
none: those ReplicaSets keep their own replicas. Without them, its ReplicaSet adopts the snapshot's pods
that name a ReplicaSet `<deployment>-<their pod-template-hash label>`.
Rolling updates, history and scaling are not modelled.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

from phalanx.api.apps import Deployment, ReplicaSet
from phalanx.api.objects import LabelSelector, OwnerRef, Pod
from phalanx.controllers.protocol import Actions, Controller, Given, Setup
from phalanx.controllers.replicaset import ReplicaSetController

HASH_LABEL = "pod-template-hash"


def replica_set_for(deployment: Deployment, now: float) -> ReplicaSet:
    """The ReplicaSet the Deployment creates at `now`."""
    labels = {**deployment.template.labels, HASH_LABEL: deployment.template_hash}
    template = dataclasses.replace(deployment.template, labels=labels)
    selector = LabelSelector(match_labels=tuple(sorted({**dict(deployment.selector.match_labels),
                                                        HASH_LABEL: deployment.template_hash}.items())),
                             expressions=deployment.selector.expressions)
    return ReplicaSet(namespace=deployment.namespace, name=f"{deployment.name}-{deployment.template_hash}",
                      replicas=deployment.replicas, selector=selector, template=template,
                      owner=OwnerRef("Deployment", deployment.name), arrival=now, source=deployment.source)


def deployment_pods(deployment: Deployment, given: Given) -> list[Pod]:
    """A snapshot's pods of the Deployment whose ReplicaSet is not in the input: they name a ReplicaSet
    `<deployment>-<their pod-template-hash label>` and match the Deployment's selector."""
    return [p for p in given.by_deployment.get(deployment.key, ())
            if p.owner not in given.replica_set_keys and p.owner == f"{deployment.key}-{p.labels.get(HASH_LABEL)}"
            and deployment.selector.matches(p.labels)]


@dataclass(slots=True)
class DeploymentController(Controller):
    """Hands each Deployment's ReplicaSet to the ReplicaSet controller, which makes and keeps its pods."""

    kinds: ClassVar[tuple[type[Any], ...]] = (Deployment,)
    replica_sets: ReplicaSetController

    @classmethod
    def build(cls, setup: Setup) -> DeploymentController:
        replica_sets = setup.controller(ReplicaSet)
        assert isinstance(replica_sets, ReplicaSetController)
        return cls(replica_sets)

    def arrive(self, obj: Deployment, now: float, given: Given) -> Actions:
        if obj.key in given.managed:
            return Actions()
        rs = replica_set_for(obj, now)
        self.replica_sets.deployments[obj.key] = rs.key
        return Actions(pods=self.replica_sets.start(rs, [], now, adopt=deployment_pods(obj, given)))
