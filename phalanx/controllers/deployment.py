"""The Deployment controller, without rollouts: a Deployment owns one ReplicaSet, `<deployment>-<hash>`, with
its replicas and template (plus the `pod-template-hash` label, in the template and the selector); the
ReplicaSet controller makes the pods. The hash is a digest of the template as written, not Kubernetes' own.

A Deployment whose ReplicaSets are already in the input (a snapshot's, naming it as their controller) makes
none: those ReplicaSets keep their own replicas. Without them, its ReplicaSet adopts the snapshot's pods
that name a ReplicaSet `<deployment>-<their pod-template-hash label>` (phalanx.controllers.workloads).
Rolling updates, history and scaling are not modelled.
"""

from __future__ import annotations

import dataclasses

from phalanx.api.apps import Deployment, ReplicaSet
from phalanx.api.objects import LabelSelector, OwnerRef

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
