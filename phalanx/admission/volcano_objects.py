"""Volcano's Queue (`scheduling.volcano.sh/v1beta1`, cluster-scoped) as the Volcano-style admission reads it.

Fields follow volcano-sh/apis `pkg/apis/scheduling/v1beta1/types.go` (QueueSpec, QueueStatus), restated:
- `spec.weight`: the queue's share of the cluster under the proportion plugin; 1 when omitted, 1..65535.
- `spec.capability`: a hard cap per resource; a resource it does not name is not capped.
- `spec.deserved`: what the capacity plugin gives the queue (the proportion plugin ignores it).
- `spec.guarantee.resource`: capacity reserved for the queue; the other queues' caps shrink by it.
- `spec.reclaimable`: whether other queues may take back what it holds beyond its deserved share (default true).
- `spec.parent`: the parent queue (hierarchical queues); `spec.priority`: queue order before share.
- `spec.dequeueStrategy`: `traverse` (default: a job that does not fit is skipped) or `fifo` (it blocks).
- `status.state`: Open (also when unset), Closed, Closing or Unknown; only an Open queue takes new jobs.

Bad input raises InputError naming the field, with the object filled in as `Queue <name>`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from phalanx.admission.crd import crd_header, crd_int
from phalanx.api.fields import Manifest, boolean, fail, mapping, text
from phalanx.api.quantity import QuantityError, resource_value
from phalanx.errors import InputError

VOLCANO_SCHEDULING_GROUP = "scheduling.volcano.sh"
QUEUE_API_VERSIONS = (f"{VOLCANO_SCHEDULING_GROUP}/v1beta1",)
QUEUE_STATES = ("Open", "Closed", "Closing", "Unknown")
DEQUEUE_STRATEGIES = ("traverse", "fifo")
DEFAULT_QUEUE = "default"  # a PodGroup naming no queue joins this one, which Volcano creates itself
ROOT_QUEUE = "root"  # the implicit top of a queue hierarchy
MAX_WEIGHT = 65535
# Spec fields read but not acted on by the admission model; named in not_modelled() when set.
_UNMODELLED_SPEC = ("affinity", "extendClusters", "type")


@dataclass(frozen=True, slots=True)
class VolcanoQueue:
    name: str
    weight: int = 1
    capability: Mapping[str, int] = field(default_factory=dict)
    deserved: Mapping[str, int] = field(default_factory=dict)
    guarantee: Mapping[str, int] = field(default_factory=dict)
    reclaimable: bool = True
    parent: str = ""
    priority: int = 0
    dequeue_strategy: str = "traverse"
    state: str = "Open"
    unmodelled: tuple[str, ...] = ()  # spec fields set that the model does not act on

    @property
    def open(self) -> bool:
        return self.state == "Open"


def _resources(value: Any, where: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, raw in mapping(value, where).items():
        key = str(name)
        try:
            out[key] = resource_value(key, raw)
        except QuantityError as exc:
            raise fail(f"{where}.{key}", str(exc)) from None
    return out


def is_queue(doc: Manifest) -> bool:
    api = doc.get("apiVersion")
    return doc.get("kind") == "Queue" and isinstance(api, str) and api.startswith(VOLCANO_SCHEDULING_GROUP + "/")


def parse_queue(doc: Manifest) -> VolcanoQueue:
    """One Queue manifest; InputError names the object and the field."""
    name_hint = doc.get("metadata", {}).get("name") if isinstance(doc.get("metadata"), Mapping) else None
    obj = f"Queue {name_hint}" if isinstance(name_hint, str) and name_hint else "Queue (unnamed)"
    try:
        return _parse_queue(doc)
    except InputError as exc:
        raise exc.at(obj=obj) from None


def _parse_queue(doc: Manifest) -> VolcanoQueue:
    meta, spec = crd_header(doc, "Queue", QUEUE_API_VERSIONS)
    status = mapping(doc.get("status"), "status")
    weight = 1 if spec.get("weight") is None else crd_int(spec["weight"], "spec.weight", minimum=1,
                                                          maximum=MAX_WEIGHT)
    guarantee = mapping(spec.get("guarantee"), "spec.guarantee")
    reclaimable = True if spec.get("reclaimable") is None else boolean(spec["reclaimable"], "spec.reclaimable")
    priority = 0 if spec.get("priority") is None else crd_int(spec["priority"], "spec.priority", minimum=0)
    strategy = text(spec.get("dequeueStrategy"), "spec.dequeueStrategy") or "traverse"
    if strategy not in DEQUEUE_STRATEGIES:
        raise fail("spec.dequeueStrategy", f"must be one of {', '.join(DEQUEUE_STRATEGIES)}, got {strategy!r}")
    state = text(status.get("state"), "status.state") or "Open"
    if state not in QUEUE_STATES:
        raise fail("status.state", f"must be one of {', '.join(QUEUE_STATES)}, got {state!r}")
    parent = text(spec.get("parent"), "spec.parent")
    if parent == meta.name:
        raise fail("spec.parent", "a queue cannot be its own parent")
    unmodelled = tuple(f"spec.{key}" for key in _UNMODELLED_SPEC if spec.get(key))
    return VolcanoQueue(
        name=meta.name, weight=weight,
        capability=_resources(spec.get("capability"), "spec.capability"),
        deserved=_resources(spec.get("deserved"), "spec.deserved"),
        guarantee=_resources(guarantee.get("resource"), "spec.guarantee.resource"),
        reclaimable=reclaimable, parent=parent, priority=priority, dequeue_strategy=strategy, state=state,
        unmodelled=unmodelled,
    )


def check_hierarchy(queues: Mapping[str, VolcanoQueue]) -> None:
    """Every `spec.parent` names a known queue (or `root`) and parents form no cycle (Volcano's queue webhook
    refuses both). Each queue is walked up once: a chain of thousands is checked in linear time."""
    done: set[str] = set()
    for queue in queues.values():
        path: dict[str, None] = {}
        name = queue.name
        while name and name != ROOT_QUEUE and name not in done:
            if name in path:
                raise InputError(f"queue parents form a cycle through {name!r}", obj=f"Queue {queue.name}",
                                 field="spec.parent")
            if name not in queues:
                child = list(path)[-1]
                raise InputError(f"names queue {name!r}, which is not defined", obj=f"Queue {child}",
                                 field="spec.parent")
            path[name] = None
            name = queues[name].parent
        done.update(path)
