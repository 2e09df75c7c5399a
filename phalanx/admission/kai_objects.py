"""KAI Scheduler's Queue (`scheduling.run.ai/v2`, cluster-scoped) as the KAI-style admission reads it.

Fields follow NVIDIA/KAI-Scheduler `pkg/apis/scheduling/v2/queue_types.go` and `resources.go`, restated:
- `spec.parentQueue`: the parent queue; queues without one are top-level (KAI's docs call them departments).
- `spec.priority`: over-quota resources go first to queues of higher priority; 100 when unset
  (`commonconstants.DefaultQueuePriority`).
- `spec.resources.{cpu,memory,gpu}.{quota,limit,overQuotaWeight}`: JSON numbers (`type: number`, fractions
  allowed: 0.5 GPU). Units: cpu in millicores, memory in megabytes (10^6 bytes), gpu in devices. An unset field
  is 0 (the Go zero value: no defaulting webhook). `quota: -1` is an unlimited quota and `limit: -1` no limit;
  a limit of 0 lets no pod requesting that resource run in the queue (capacity_policy/max_allowed_check.go).
- `spec.resources` itself is required: KAI's validating webhook refuses a Queue without it
  (queue_webhook.go: "resources must be specified").
- `spec.displayName` (names the queue in KAI's logs and messages), `spec.preemptMinRuntime`,
  `spec.reclaimMinRuntime` (read, not modelled).

KAI accepts any number; this parser refuses what can only be a mistake: a negative value other than -1, a
negative overQuotaWeight, a value that is not a number. KAI drops a queue whose parent does not exist (and its
children) with a log line, so its jobs never run; here that is an InputError, as is a parent cycle.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from phalanx.admission.crd import crd_header, crd_int, shown
from phalanx.api.fields import Manifest, fail, mapping, text
from phalanx.errors import InputError

KAI_SCHEDULING_GROUP = "scheduling.run.ai"
QUEUE_API_VERSIONS = (f"{KAI_SCHEDULING_GROUP}/v2",)
UNLIMITED = -1.0
DEFAULT_QUEUE_PRIORITY = 100
RESOURCES = ("cpu", "memory", "gpu")
_FIELDS = ("quota", "limit", "overQuotaWeight")
_UNMODELLED_SPEC = ("preemptMinRuntime", "reclaimMinRuntime")


@dataclass(frozen=True, slots=True)
class KaiResource:
    """One resource of a queue, in KAI's units (cpu millicores, memory MB, gpu devices); -1: unlimited."""

    quota: float = 0.0
    limit: float = 0.0
    over_quota_weight: float = 0.0


@dataclass(frozen=True, slots=True)
class KaiQueue:
    name: str
    parent: str = ""
    priority: int = DEFAULT_QUEUE_PRIORITY
    display_name: str = ""
    resources: Mapping[str, KaiResource] = field(default_factory=dict)  # cpu, memory, gpu (all three present)
    unset_limits: tuple[str, ...] = ()  # resources whose limit is left out (read as 0)
    unmodelled: tuple[str, ...] = ()

    def resource(self, name: str) -> KaiResource:
        return self.resources.get(name, KaiResource())


def is_queue(doc: Manifest) -> bool:
    api = doc.get("apiVersion")
    return doc.get("kind") == "Queue" and isinstance(api, str) and api.startswith(KAI_SCHEDULING_GROUP + "/")


def parse_queue(doc: Manifest) -> KaiQueue:
    """One Queue manifest; InputError names the object and the field."""
    meta = doc.get("metadata")
    hint = meta.get("name") if isinstance(meta, Mapping) else None
    obj = f"Queue {hint}" if isinstance(hint, str) and hint else "Queue (unnamed)"
    try:
        return _parse_queue(doc)
    except InputError as exc:
        raise exc.at(obj=obj) from None


def number(value: Any, where: str) -> float:
    """A CRD `type: number`: a JSON integer or float (not a string, a boolean, NaN or infinity)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        kind = "boolean" if isinstance(value, bool) else "string" if isinstance(value, str) else type(value).__name__
        raise fail(where, f"must be of type number, got {kind} {shown(value)}")
    if not math.isfinite(value):
        raise fail(where, f"must be a finite number, got {value}")
    return float(value)


def _resource(value: Any, where: str) -> tuple[KaiResource, bool]:
    spec = mapping(value, where)
    for key in spec:
        if key not in _FIELDS:
            raise fail(f"{where}.{key}", f"unknown field (known: {', '.join(_FIELDS)})")
    values: dict[str, float] = {}
    for key in _FIELDS:
        raw = spec.get(key)
        amount = 0.0 if raw is None else number(raw, f"{where}.{key}")
        if key == "overQuotaWeight" and amount < 0:
            raise fail(f"{where}.{key}", f"must not be negative, got {shown(raw)}")
        if key != "overQuotaWeight" and amount < 0 and amount != UNLIMITED:
            raise fail(f"{where}.{key}", f"must be -1 (unlimited) or at least 0, got {shown(raw)}")
        values[key] = amount
    return KaiResource(values["quota"], values["limit"], values["overQuotaWeight"]), spec.get("limit") is None


def _parse_queue(doc: Manifest) -> KaiQueue:
    meta, spec = crd_header(doc, "Queue", QUEUE_API_VERSIONS)
    if spec.get("resources") is None:
        raise fail("spec.resources", "resources must be specified (KAI's queue webhook refuses the Queue)")
    raw_resources = mapping(spec["resources"], "spec.resources")
    for key in raw_resources:
        if key not in RESOURCES:
            raise fail(f"spec.resources.{key}", f"unknown resource (known: {', '.join(RESOURCES)})")
    resources: dict[str, KaiResource] = {}
    unset: list[str] = []
    for name in RESOURCES:
        resources[name], limit_unset = _resource(raw_resources.get(name), f"spec.resources.{name}")
        if limit_unset:
            unset.append(name)
    parent = text(spec.get("parentQueue"), "spec.parentQueue")
    if parent == meta.name:
        raise fail("spec.parentQueue", "a queue cannot be its own parent")
    priority = DEFAULT_QUEUE_PRIORITY if spec.get("priority") is None else crd_int(spec["priority"], "spec.priority")
    unmodelled = tuple(f"spec.{key}" for key in _UNMODELLED_SPEC if spec.get(key))
    return KaiQueue(name=meta.name, parent=parent, priority=priority,
                    display_name=text(spec.get("displayName"), "spec.displayName"), resources=resources,
                    unset_limits=tuple(unset), unmodelled=unmodelled)


def check_hierarchy(queues: Mapping[str, KaiQueue]) -> None:
    """Every `spec.parentQueue` names a defined queue and parents form no cycle; each queue is walked up once."""
    done: set[str] = set()
    for queue in queues.values():
        path: dict[str, None] = {}
        name = queue.name
        while name and name not in done:
            if name in path:
                raise InputError(f"queue parents form a cycle through {name!r}", obj=f"Queue {queue.name}",
                                 field="spec.parentQueue")
            if name not in queues:
                child = list(path)[-1]
                raise InputError(f"names queue {name!r}, which is not defined (KAI drops the queue and its "
                                 "children, so their jobs never run)", obj=f"Queue {child}", field="spec.parentQueue")
            path[name] = None
            name = queues[name].parent
        done.update(path)
