"""Pod templates of workload controllers whose metadata names another scheduler's gang (the
scheduler-plugins label `scheduling.x-k8s.io/pod-group` on a ReplicaSet's template, as its coscheduling README
demo writes it): every pod the controller makes joins that gang, so the template is linked to the translated
PodGroup (`spec.template.spec.schedulingGroup.podGroupName`) and a foreign `schedulerName` dropped from it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from phalanx.migrate import foreign, native

Doc = dict[str, Any]

# kind -> the keys from the object down to its pod template
PATHS: dict[str, tuple[str, ...]] = {
    "ReplicaSet": ("spec", "template"),
    "Deployment": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "ReplicationController": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}


def linked(doc: Mapping[str, Any], apps: bool = False) -> tuple[Doc, list[str], str] | None:
    """The controller with its template linked to the gang the template names: (copy, notes, whose), or None
    when it names none or is linked already (`apps`: a peer's application gang names one too, as YuniKorn's task
    groups do)."""
    path = PATHS.get(str(doc.get("kind")))
    if path is None or not isinstance(doc.get("apiVersion"), str):
        return None
    template = at(doc, path)
    if template is None:
        return None
    spec = template.get("spec")
    if not isinstance(spec, Mapping) or spec.get("schedulingGroup"):
        return None
    found = foreign.pointer(template, apps)
    if found is None:
        return None
    group, whose, key = found
    pod = native.join(template, group)
    where = ".".join(path)
    notes = [f"{where}: {key}: {group} -> {where}.spec.schedulingGroup.podGroupName {group}"]
    scheduler = pod["spec"].get("schedulerName")
    if isinstance(scheduler, str) and scheduler != "default-scheduler":
        pod["spec"].pop("schedulerName")
        notes.append(f"{where}.spec.schedulerName {scheduler} dropped (the default scheduler places native gangs)")
    return _replaced(doc, path, pod), notes, whose


def at(doc: Mapping[str, Any], path: tuple[str, ...]) -> Mapping[str, Any] | None:
    value: Any = doc
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value if isinstance(value, Mapping) else None


def _replaced(doc: Mapping[str, Any], path: tuple[str, ...], value: Doc) -> Doc:
    """A copy of `doc` with `value` at `path` (each mapping on the way copied; the input is not changed)."""
    if not path:
        return value
    inner = doc.get(path[0])
    assert isinstance(inner, Mapping)
    return {**doc, path[0]: _replaced(inner, path[1:], value)}
