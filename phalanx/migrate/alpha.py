"""The alpha shapes of v1.35 and v1.36, rewritten as v1beta1.

- v1alpha1 (v1.35) Workload `spec.podGroups[] {name, policy}` → v1beta1 `podGroupTemplates[] {name,
  schedulingPolicy}`; pods linked by `spec.workloadRef {name, podGroup, podGroupReplicaKey}` get a PodGroup
  per (workload, group, replica key), named `<workload>-<group>[-<key>]`, and `spec.schedulingGroup`.
- v1alpha2 (v1.36) Workload: `podGroupTemplates` kept; PodGroup `podGroupTemplateRef.workload
  {workloadName, podGroupTemplateName}` → `workloadRef {workloadName, templateName}`.
- `disruptionMode: Pod | PodGroup` (v1.36) → `{single: {}} | {all: {}}` (v1.37).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from phalanx.api.fields import fail, mapping, sequence
from phalanx.migrate import native
from phalanx.migrate.foreign import Change

Doc = dict[str, Any]
ALPHA = ("scheduling.k8s.io/v1alpha1", "scheduling.k8s.io/v1alpha2")
DISRUPTION: dict[str, Doc] = {"Pod": {"single": {}}, "PodGroup": {"all": {}}}


def is_alpha(doc: Mapping[str, Any]) -> bool:
    return doc.get("apiVersion") in ALPHA and doc.get("kind") in ("Workload", "PodGroup")


def _disruption(fields: Doc, change: Change, where: str) -> None:
    mode = fields.get("disruptionMode")
    if isinstance(mode, str) and mode in DISRUPTION:
        fields["disruptionMode"] = DISRUPTION[mode]
        change.notes.append(f"{where}disruptionMode {mode} -> {next(iter(DISRUPTION[mode]))}")


def workload(doc: Mapping[str, Any]) -> tuple[Doc, Change, dict[str, Doc]]:
    """The v1beta1 Workload, and its templates by name (for the PodGroups the pods need)."""
    meta = dict(mapping(doc.get("metadata"), "metadata"))
    spec = dict(mapping(doc.get("spec"), "spec"))
    change = Change(f"Workload {meta.get('namespace') or 'default'}/{meta.get('name')} ({doc.get('apiVersion')})")
    change.notes.append(f"apiVersion {doc.get('apiVersion')} -> {native.V1BETA1}")
    where = "spec.podGroups" if "podGroups" in spec else "spec.podGroupTemplates"
    if "podGroups" in spec:
        templates = []
        for raw in sequence(spec.pop("podGroups"), "spec.podGroups"):
            item = dict(raw) if isinstance(raw, Mapping) else {}
            if "policy" in item:
                item["schedulingPolicy"] = item.pop("policy")
            templates.append(item)
        spec["podGroupTemplates"] = templates
        change.notes.append("spec.podGroups[].policy -> spec.podGroupTemplates[].schedulingPolicy")
    templates = []
    for i, raw in enumerate(sequence(spec.get("podGroupTemplates"), "spec.podGroupTemplates")):
        item = dict(mapping(raw, f"{where}[{i}]"))
        if not isinstance(item.get("name"), str) or not item["name"]:
            raise fail(f"{where}[{i}].name", "is required (a pod group's name)")
        _disruption(item, change, f"podGroupTemplates[{i}].")
        templates.append(item)
    spec["podGroupTemplates"] = templates
    out = {**doc, "apiVersion": native.V1BETA1, "metadata": meta, "spec": spec}
    by_name = {str(t["name"]): t for t in templates}
    return out, change, by_name


def pod_group(doc: Mapping[str, Any]) -> tuple[Doc, Change]:
    meta = dict(mapping(doc.get("metadata"), "metadata"))
    spec = dict(mapping(doc.get("spec"), "spec"))
    change = Change(f"PodGroup {meta.get('namespace') or 'default'}/{meta.get('name')} ({doc.get('apiVersion')})")
    change.notes.append(f"apiVersion {doc.get('apiVersion')} -> {native.V1BETA1}")
    ref = spec.pop("podGroupTemplateRef", None)
    if isinstance(ref, Mapping):
        inner = ref.get("workload") if isinstance(ref.get("workload"), Mapping) else ref
        assert isinstance(inner, Mapping)
        spec["workloadRef"] = {"workloadName": inner.get("workloadName"),
                               "templateName": inner.get("podGroupTemplateName")}
        change.notes.append("spec.podGroupTemplateRef.workload -> spec.workloadRef {workloadName, templateName}")
    _disruption(spec, change, "spec.")
    return {**doc, "apiVersion": native.V1BETA1, "metadata": meta, "spec": spec}, change


def workload_ref(pod: Mapping[str, Any]) -> tuple[str, str, str | None] | None:
    """A v1.35 pod's `spec.workloadRef`: (workload, pod group, replica key)."""
    spec = pod.get("spec")
    ref = spec.get("workloadRef") if isinstance(spec, Mapping) else None
    if not isinstance(ref, Mapping) or not ref.get("name") or not ref.get("podGroup"):
        return None
    key = ref.get("podGroupReplicaKey")
    return str(ref["name"]), str(ref["podGroup"]), str(key) if key else None


def group_name(workload_name: str, group: str, key: str | None) -> str:
    return f"{workload_name}-{group}" + (f"-{key}" if key else "")
