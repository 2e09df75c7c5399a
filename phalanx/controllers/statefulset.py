"""The StatefulSet controller: pods `<statefulset>-0` … `-<replicas-1>`, each with a stable name.

`podManagementPolicy: OrderedReady` (the default) creates pod i+1 only once pods 0…i are running (bound, in
the simulator: readiness probes are not modelled); `Parallel` creates them all at once. A pod that is gone
(deleted, finished) is made again under the same name; an evicted one is recreated under its name once its
termination grace has passed (the simulator requeues it). Pods a snapshot already holds (naming it as their
controller) are adopted by ordinal. `scale` changes `replicas` (an HPA's scale subresource): the highest
ordinals go first. Volume claims and updates are not modelled.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from phalanx.api.apps import StatefulSet
from phalanx.api.objects import Pod
from phalanx.controllers.protocol import NOTHING, Actions, Controller, Given

KIND = "StatefulSet"


@dataclass(slots=True)
class _Record:
    stateful_set: StatefulSet
    present: set[int] = field(default_factory=set)  # ordinals whose pod exists (pending or running)
    running: set[int] = field(default_factory=set)


def _ordinal(stateful_set: StatefulSet, pod: Pod) -> int | None:
    prefix = f"{stateful_set.name}-"
    tail = pod.name[len(prefix):] if pod.name.startswith(prefix) else ""
    return int(tail) if tail.isdigit() else None


@dataclass(slots=True)
class StatefulSetController(Controller):
    kinds: ClassVar[tuple[type[Any], ...]] = (StatefulSet,)
    sets: dict[str, _Record] = field(default_factory=dict)

    def arrive(self, obj: StatefulSet, now: float, given: Given) -> Actions:
        return Actions(pods=self.start(obj, given.owned(obj.key, KIND), now))

    def pod_bound(self, pod: Pod, now: float) -> Actions:
        if pod.controller != KIND:
            return NOTHING  # every bind lands here: keep the common case cheap
        return Actions(pods=self.bound(pod, now))

    def pod_terminating(self, pod: Pod, now: float) -> Actions:
        self.stopped(pod)
        return NOTHING

    def pod_gone(self, pod: Pod, now: float) -> Actions:
        return Actions(pods=self.gone(pod, now))

    def start(self, stateful_set: StatefulSet, existing: Iterable[Pod], now: float) -> list[Pod]:
        record = self.sets[stateful_set.key] = _Record(stateful_set)
        for pod in existing:
            ordinal = _ordinal(stateful_set, pod) if pod.controller == KIND and pod.owner == stateful_set.key else None
            if ordinal is not None:
                record.present.add(ordinal)
                if pod.node_name is not None:
                    record.running.add(ordinal)
        return self._fill(record, now)

    def _record(self, pod: Pod) -> tuple[_Record, int] | None:
        record = self.sets.get(pod.owner or "") if pod.controller == KIND else None
        ordinal = _ordinal(record.stateful_set, pod) if record is not None else None
        return None if record is None or ordinal is None else (record, ordinal)

    def bound(self, pod: Pod, now: float) -> list[Pod]:
        """One of its pods runs: under OrderedReady, the next ordinal may be created."""
        found = self._record(pod)
        if found is None:
            return []
        record, ordinal = found
        record.running.add(ordinal)
        return self._fill(record, now)

    def stopped(self, pod: Pod) -> None:
        """One of its pods stopped running (evicted): it will run again under the same name."""
        found = self._record(pod)
        if found is not None:
            found[0].running.discard(found[1])

    def gone(self, pod: Pod, now: float) -> list[Pod]:
        """One of its pods is gone for good (deleted, finished): made again under the same name."""
        found = self._record(pod)
        if found is None:
            return []
        record, ordinal = found
        record.running.discard(ordinal)
        record.present.discard(ordinal)
        return self._fill(record, now)

    def replicas(self, key: str) -> int | None:
        record = self.sets.get(key)
        return None if record is None else record.stateful_set.replicas

    def scale(self, key: str, replicas: int, now: float) -> tuple[list[Pod], list[str]]:
        """Set `spec.replicas`: the pods to create, or the keys of those to delete (the highest ordinals, as
        the controller scales down; all at once, not one by one under OrderedReady)."""
        record = self.sets[key]
        stateful_set = record.stateful_set = dataclasses.replace(record.stateful_set, replicas=replicas)
        gone = sorted((o for o in record.present if o >= replicas), reverse=True)
        for ordinal in gone:
            record.present.discard(ordinal)
            record.running.discard(ordinal)
        return self._fill(record, now), [f"{stateful_set.namespace}/{stateful_set.name}-{o}" for o in gone]

    @staticmethod
    def _fill(record: _Record, now: float) -> list[Pod]:
        stateful_set = record.stateful_set
        pods = []
        for ordinal in range(stateful_set.replicas):
            if ordinal not in record.present:
                record.present.add(ordinal)
                pods.append(_pod(stateful_set, ordinal, now))
            if stateful_set.ordered and ordinal not in record.running:
                break
        return pods


def _pod(stateful_set: StatefulSet, ordinal: int, now: float) -> Pod:
    name = f"{stateful_set.name}-{ordinal}"
    labels = {**stateful_set.template.labels, "statefulset.kubernetes.io/pod-name": name,
              "apps.kubernetes.io/pod-index": str(ordinal)}
    return dataclasses.replace(stateful_set.template, name=name, namespace=stateful_set.namespace, arrival=now,
                               owner=stateful_set.key, controller=KIND, labels=labels, node_name=None,
                               start_time=None, source=stateful_set.source)
