"""The ReplicaSet controller: keeps `spec.replicas` pods of its template alive.

Pods it creates are named `<replicaset>-<5 chars>` and carry the template's labels and a controlling
ownerReference (`Pod.owner`, `Pod.controller = "ReplicaSet"`). Pods that already name it as their
controller (a snapshot's) are adopted and count toward `replicas`. A pod that stops counting (evicted: at
once, as the real controller ignores terminating pods; deleted; or finished) is replaced by a new one.
Surplus adopted pods are not deleted, and orphans matching the selector are not adopted. `scale` changes
`replicas` (an HorizontalPodAutoscaler's scale subresource): new pods, or the lowest-ranked pods deleted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from phalanx.api.apps import ReplicaSet
from phalanx.api.objects import Pod
from phalanx.controllers.naming import suffix
from phalanx.controllers.protocol import Actions, Controller, Given, Setup

KIND = "ReplicaSet"


@dataclass(slots=True)
class _Record:
    replica_set: ReplicaSet
    live: dict[str, None] = field(default_factory=dict)  # its pods that count toward replicas, oldest first
    serial: int = 0


@dataclass(slots=True)
class ReplicaSetController(Controller):
    kinds: ClassVar[tuple[type[Any], ...]] = (ReplicaSet,)
    seed: int = 0
    sets: dict[str, _Record] = field(default_factory=dict)
    names: set[str] = field(default_factory=set)  # every pod key it made, never reused
    owner_of: dict[str, str] = field(default_factory=dict)  # pod key -> its ReplicaSet's key
    deployments: dict[str, str] = field(default_factory=dict)  # Deployment key -> its ReplicaSet's key

    @classmethod
    def build(cls, setup: Setup) -> ReplicaSetController:
        return cls(seed=setup.seed)

    def arrive(self, obj: ReplicaSet, now: float, given: Given) -> Actions:
        if obj.owner is not None and obj.owner.kind == "Deployment":
            self.deployments[f"{obj.namespace}/{obj.owner.name}"] = obj.key
        return Actions(pods=self.start(obj, given.owned(obj.key, KIND), now))

    def pod_terminating(self, pod: Pod, now: float) -> Actions:
        return Actions(pods=self.lost(pod, now))

    def pod_gone(self, pod: Pod, now: float) -> Actions:
        return Actions(pods=self.lost(pod, now))

    def replaces(self, pod: Pod) -> bool:
        return self.owns(pod)

    def start(self, replica_set: ReplicaSet, existing: Iterable[Pod], now: float,
              adopt: Iterable[Pod] = ()) -> list[Pod]:
        """A ReplicaSet appears: adopt the `existing` pods it controls (and the pods in `adopt`, whatever
        ReplicaSet they name), create the missing ones."""
        record = self.sets[replica_set.key] = _Record(replica_set)
        mine = [p for p in existing if p.controller == KIND and p.owner == replica_set.key]
        for pod in (*mine, *adopt):
            record.live[pod.key] = None
            self.names.add(pod.key)
            self.owner_of[pod.key] = replica_set.key
        return self._fill(record, now)

    def replicas(self, key: str) -> int | None:
        record = self.sets.get(key)
        return None if record is None else record.replica_set.replicas

    def scale(self, key: str, replicas: int, now: float, rank: Callable[[str], Any]) -> tuple[list[Pod], list[str]]:
        """Set `spec.replicas` (an HPA's scale subresource): the pods to create, or the keys of the pods to
        delete, chosen as the controller ranks them (`rank`: lowest first; the caller gives pending pods
        before bound ones, newer before older, as `controller.ActivePodsWithRanks` orders them)."""
        record = self.sets[key]
        record.replica_set = dataclasses.replace(record.replica_set, replicas=replicas)
        surplus = len(record.live) - replicas
        if surplus <= 0:
            return self._fill(record, now), []
        victims = sorted(record.live, key=rank)[:surplus]
        for victim in victims:
            del record.live[victim]  # no longer counted: their deletion is not replaced
        return [], victims

    def owns(self, pod: Pod) -> bool:
        return pod.key in self.owner_of

    def lost(self, pod: Pod, now: float) -> list[Pod]:
        """One of its pods stopped counting (terminating, deleted or finished): its replacement, if owed."""
        record = self.sets.get(self.owner_of.get(pod.key, ""))
        if record is None or pod.key not in record.live:
            return []
        record.live.pop(pod.key, None)
        return self._fill(record, now)

    def _fill(self, record: _Record, now: float) -> list[Pod]:
        replica_set = record.replica_set
        pods = []
        while len(record.live) < replica_set.replicas:
            pod = self._new_pod(record, now)
            record.live[pod.key] = None
            pods.append(pod)
        return pods

    def _new_pod(self, record: _Record, now: float) -> Pod:
        replica_set = record.replica_set
        while True:
            record.serial += 1
            name = f"{replica_set.name}-{suffix(self.seed, replica_set.key, record.serial)}"
            if f"{replica_set.namespace}/{name}" not in self.names:
                break
        self.names.add(f"{replica_set.namespace}/{name}")
        self.owner_of[f"{replica_set.namespace}/{name}"] = replica_set.key
        return dataclasses.replace(replica_set.template, name=name, namespace=replica_set.namespace, arrival=now,
                                   owner=replica_set.key, controller=KIND, labels=dict(replica_set.template.labels),
                                   node_name=None, start_time=None, source=replica_set.source)
