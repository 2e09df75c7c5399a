"""YuniKorn's namespace annotations, as the k8shim turns them into application tags and the core applies them to
a dynamic queue (yunikorn-k8shim `pkg/common/utils/utils.go` GetNamespaceQuotaFromAnnotation,
GetNamespaceGuaranteedFromAnnotation, GetNamespaceMaxAppsFromAnnotation; yunikorn-core `partition.go`
AddApplication: "set resources based on tags, but only if the queue is dynamic (unmanaged)").

- `yunikorn.apache.org/namespace.quota`: a JSON map of resource quantities, the queue's max; without it the
  deprecated `yunikorn.apache.org/namespace.max.cpu` and `namespace.max.memory`.
- `yunikorn.apache.org/namespace.guaranteed`: a JSON map, the queue's guaranteed resources.
- `yunikorn.apache.org/namespace.maxApps`: an integer, the queue's maximum running applications.
A value the shim cannot read it logs and ignores; so does this model, and names it (`warnings`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from phalanx.api.quantity import QuantityError, resource_value

PREFIX = "yunikorn.apache.org/"
QUOTA, GUARANTEED, MAX_APPS = PREFIX + "namespace.quota", PREFIX + "namespace.guaranteed", PREFIX + "namespace.maxApps"
MAX_CPU, MAX_MEMORY = PREFIX + "namespace.max.cpu", PREFIX + "namespace.max.memory"
VCORE = "vcore"

Res = dict[str, int]
Warn = Callable[[str, str], None]


@dataclass(frozen=True, slots=True)
class NamespaceTags:
    maximum: Res | None = None
    guaranteed: Res | None = None
    max_apps: int = 0


def read_namespaces(docs: Iterable[Mapping[str, Any]]) -> tuple[dict[str, NamespaceTags], list[str]]:
    """Namespace name -> what its annotations set on its dynamic queue, and what could not be read."""
    out: dict[str, NamespaceTags] = {}
    warnings: list[str] = []
    for doc in docs:
        meta = doc.get("metadata") if isinstance(doc.get("metadata"), Mapping) else {}
        assert isinstance(meta, Mapping)
        annotations = meta.get("annotations") if isinstance(meta.get("annotations"), Mapping) else {}
        assert isinstance(annotations, Mapping)
        name = str(meta.get("name") or "")
        if not name or not any(str(k).startswith(PREFIX + "namespace.") for k in annotations):
            continue

        def warn(key: str, why: str, name: str = name) -> None:
            warnings.append(f"Namespace {name}: annotation {key}: {why}; the k8shim ignores it, as here")

        maximum = _resources(annotations, QUOTA, warn)
        if maximum is None and (MAX_CPU in annotations or MAX_MEMORY in annotations):
            maximum = {}
            for key, resource in ((MAX_CPU, "cpu"), (MAX_MEMORY, "memory")):
                if key in annotations:
                    value = _quantity(resource, annotations[key], key, warn)
                    if value is not None:
                        maximum[VCORE if resource == "cpu" else resource] = value
        guaranteed = _resources(annotations, GUARANTEED, warn)
        max_apps = 0
        if MAX_APPS in annotations:
            raw = str(annotations[MAX_APPS])
            try:
                max_apps = int(raw, 10)
            except ValueError:
                warn(MAX_APPS, f"{raw!r} is not an integer")
            if max_apps < 0:
                warn(MAX_APPS, f"{raw!r} is negative")
                max_apps = 0
        out[name] = NamespaceTags(maximum or None, guaranteed or None, max_apps)
    return out, warnings


def _resources(annotations: Mapping[str, Any], key: str, warn: Warn) -> Res | None:
    raw = annotations.get(key)
    if raw is None:
        return None
    try:
        parsed = json.loads(str(raw))
    except ValueError:
        warn(key, "is not a JSON map of quantities")
        return None
    if not isinstance(parsed, dict):
        warn(key, "is not a JSON map of quantities")
        return None
    out: Res = {}
    for name, quantity in parsed.items():
        value = _quantity(str(name), quantity, key, warn)
        if value is not None:
            out[VCORE if name == "cpu" else str(name)] = value
    return out


def _quantity(name: str, raw: Any, key: str, warn: Warn) -> int | None:
    try:
        return resource_value(name, str(raw))
    except QuantityError as exc:
        warn(key, f"{name}: {exc}")
        return None
