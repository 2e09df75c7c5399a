"""One pass over a stream of manifests, rewriting what v1.37 native scheduling reads differently.

`Migrator.feed(doc)` answers the documents that replace `doc` (itself when nothing changes), each with the
Change that made it; `finish()` adds the PodGroups only known once every pod was seen (Kueue pod groups,
the per-replica-key groups of v1.35 pods). Pods pointing at a translated group, and controllers' pod templates
that do (phalanx.migrate.templates), are linked to it (`spec.schedulingGroup.podGroupName`) and a foreign
`schedulerName` is dropped, so that the default
scheduler (v1.37 native gangs) places them. A shape it cannot read passes through unchanged and the loader
names what is wrong with it; a count the other project would refuse (phalanx.migrate.foreign, and a Kueue pod
group's total count, which Kueue's pod webhook reads with strconv.Atoi and wants ≥ 1) raises InputError
naming the object and the field.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from phalanx.admission.crd import MAX_INT32, shown
from phalanx.api.fields import fail, object_name
from phalanx.errors import InputError
from phalanx.migrate import alpha, applications, foreign, native
from phalanx.migrate import templates as pod_templates
from phalanx.migrate.foreign import Change

Doc = dict[str, Any]
Out = list[tuple[Mapping[str, Any], Change | None]]
_ATOI = re.compile(r"[+-]?[0-9]+")  # what Go's strconv.Atoi reads: an optional sign and ASCII digits
_MAX_INT64 = 2**63 - 1


@dataclass
class _AlphaGroups:
    """What the v1.35 pods of one namespace need: workloads' templates, and (workload, group, key) seen."""

    templates: dict[str, dict[str, Doc]] = field(default_factory=dict)  # workload -> template name -> template
    wanted: dict[tuple[str, str, str | None], None] = field(default_factory=dict)
    implicit: set[str] = field(default_factory=set)  # v1alpha1 Workloads: their pod groups exist without objects
    referenced: set[tuple[str, str]] = field(default_factory=set)  # (workload, template) an input PodGroup names


class Migrator:
    """`applications`: a peer's application gangs (YuniKorn's task groups) become native gangs too (`phalanx
    migrate`; a simulation reads them only under that peer's profile, whose placeholders are their own)."""

    def __init__(self, *, applications: bool = False) -> None:
        self.applications = applications
        self.changes: list[Change] = []
        self.translated: Counter[str] = Counter()  # what was translated, by its description
        self._emitted: set[tuple[str, str, str]] = set()  # (kind, namespace, name) of groups written
        self._kueue: dict[tuple[str, str], tuple[int, Change, str | None]] = {}
        self._apps: dict[tuple[str, str, str], Any] = {}  # (whose, namespace, application) -> its Application
        self._alpha: dict[str, _AlphaGroups] = {}
        # The documents a foreign translator made (not copied from the input), by id() (held, so ids stay theirs)
        self.made: dict[int, Mapping[str, Any]] = {}

    def _note(self, change: Change, what: str) -> Change:
        self.changes.append(change)
        self.translated[what] += 1
        return change

    def feed(self, doc: Mapping[str, Any]) -> Out:
        """The documents that replace `doc`; InputError naming the object and the field when it cannot be read."""
        try:
            return self._feed(doc)
        except InputError as exc:
            raise exc.at(obj=object_name(doc)) from None

    def _feed(self, doc: Mapping[str, Any]) -> Out:
        translate = foreign.translator(doc)
        if translate is not None:
            docs, change = translate(doc)
            self.made.update((id(d), d) for d in docs)
            self._note(change, f"{change.what.split(' ', 2)[0]} {doc.get('kind')}")
            return self._fresh([(d, change) for d in docs], change)
        if alpha.is_alpha(doc):
            return self._alpha_object(doc)
        if doc.get("kind") == "Pod" and doc.get("apiVersion") == "v1":
            return self._pod(doc)
        found = pod_templates.linked(doc, self.applications)
        if found is not None:
            controller, notes, whose = found
            namespace, name = _where(doc)
            if applications.is_peer(whose):
                template = pod_templates.at(doc, pod_templates.PATHS[str(doc.get("kind"))]) or {}
                self._application_member(template, namespace)
            change = self._note(Change(f"{doc.get('kind')} {namespace}/{name}", notes), f"{whose} pod template")
            return [(controller, change)]
        if doc.get("apiVersion") == native.V1BETA1 and doc.get("kind") in ("PodGroup", "Workload"):
            namespace, name = _where(doc)
            self._emitted.add((str(doc["kind"]), namespace, name))
            self._referenced(doc, namespace)
        return [(doc, None)]

    def _referenced(self, group: Mapping[str, Any], namespace: str) -> None:
        """Note the Workload template a v1beta1 PodGroup names: that template needs no made-up group."""
        spec = group.get("spec")
        ref = spec.get("workloadRef") if group.get("kind") == "PodGroup" and isinstance(spec, Mapping) else None
        if isinstance(ref, Mapping) and ref.get("workloadName") and ref.get("templateName"):
            self._alpha.setdefault(namespace, _AlphaGroups()).referenced.add(
                (str(ref["workloadName"]), str(ref["templateName"])))

    def _fresh(self, out: Out, change: Change) -> Out:
        """Drop translated Workloads and PodGroups whose name is taken already (the first one stays)."""
        kept: Out = []
        for doc, why in out:
            kind = doc.get("kind")
            if kind in ("Workload", "PodGroup"):
                ident = (str(kind), *_where(doc))
                if ident in self._emitted:
                    change.warnings.append(f"{kind} {ident[1]}/{ident[2]} exists already; the translated one "
                                           "is left out")
                    continue
                self._emitted.add(ident)
            kept.append((doc, why))
        return kept

    def _alpha_object(self, doc: Mapping[str, Any]) -> Out:
        namespace, name = _where(doc)
        groups = self._alpha.setdefault(namespace, _AlphaGroups())
        if doc.get("kind") == "Workload":
            out, change, templates = alpha.workload(doc)
            groups.templates[name] = templates
            if doc.get("apiVersion") == alpha.ALPHA[0]:
                groups.implicit.add(name)
        else:
            out, change = alpha.pod_group(doc)
            self._referenced(out, namespace)
        self._note(change, f"{doc.get('apiVersion')} {doc.get('kind')}")
        return self._fresh([(out, change)], change)

    def _pod(self, doc: Mapping[str, Any]) -> Out:
        spec = doc.get("spec")
        if isinstance(spec, Mapping) and spec.get("schedulingGroup"):
            return [(doc, None)]
        namespace, name = _where(doc)
        ref = alpha.workload_ref(doc)
        if ref is not None:
            workload_name, group, key = ref
            self._alpha.setdefault(namespace, _AlphaGroups()).wanted[ref] = None
            target = alpha.group_name(workload_name, group, key)
            pod = native.join(doc, target)
            pod["spec"].pop("workloadRef", None)
            change = Change(f"Pod {namespace}/{name}", [f"spec.workloadRef -> spec.schedulingGroup.podGroupName "
                                                        f"{target}"])
            self._note(change, "Pod spec.workloadRef")
            return [(pod, change)]
        found = foreign.pointer(doc, self.applications)
        if found is None:
            return [(doc, None)]
        group, whose, key = found
        pod = native.join(doc, group)
        change = Change(f"Pod {namespace}/{name}", [f"{key}: {group} -> spec.schedulingGroup.podGroupName {group}"])
        scheduler = pod["spec"].get("schedulerName")
        if isinstance(scheduler, str) and scheduler != "default-scheduler":
            pod["spec"].pop("schedulerName")
            change.notes.append(f"schedulerName {scheduler} dropped (the default scheduler places native gangs)")
        if key == foreign.KUEUE_GROUP_LABEL:
            self._kueue_member(doc, namespace, group)
        elif applications.is_peer(whose):
            self._application_member(doc, namespace)
        self._note(change, f"{whose} pod")
        return [(pod, change)]

    def _kueue_member(self, pod: Mapping[str, Any], namespace: str, group: str) -> None:
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        raw = annotations.get(foreign.KUEUE_TOTAL) if isinstance(annotations, Mapping) else None
        total = 0 if raw is None else _total_count(raw)
        known = self._kueue.get((namespace, group))
        count = max(total, known[0] if known else 0)
        change = known[1] if known else Change(f"Kueue pod group {namespace}/{group}")
        spec = pod.get("spec")
        raw_class = spec.get("priorityClassName") if isinstance(spec, Mapping) else None
        priority_class = known[2] if known else raw_class if isinstance(raw_class, str) and raw_class else None
        self._kueue[(namespace, group)] = (count, change, priority_class)

    def _application_member(self, pod: Mapping[str, Any], namespace: str) -> None:
        meta = pod.get("metadata")
        found = applications.pointer(meta) if isinstance(meta, Mapping) else None
        if found is None:
            return
        seen = self._apps.setdefault((found.whose, namespace, found.app), found.module.Application())
        if found.minimum > seen.minimum:
            seen.minimum, seen.groups, seen.policy = found.minimum, found.groups, found.policy

    def finish(self) -> Out:
        out: Out = []
        for (whose, namespace, app), seen in sorted(self._apps.items(), key=lambda item: item[0]):
            if ("PodGroup", namespace, app) in self._emitted:
                continue
            module = applications.members_of(whose)
            notes, warnings = module.notes(app, seen)
            change = Change(f"{module.OBJECT} {namespace}/{app}", notes, warnings)
            self._note(change, module.DESCRIBED)
            out.extend(self._fresh([(d, change) for d in native.gang(namespace, app, seen.minimum)], change))
        for (namespace, group), (total, change, priority_class) in sorted(self._kueue.items()):
            if ("PodGroup", namespace, group) in self._emitted:
                continue
            if total <= 0:
                change.warnings.append(f"no {foreign.KUEUE_TOTAL} annotation: a gang of 1 assumed")
            change.notes.append(f"pods labelled {foreign.KUEUE_GROUP_LABEL}={group} -> Workload and PodGroup "
                                f"{group} with gang.minCount {max(1, total)}")
            if priority_class:
                # v1.37 requires a gang's pods to share its PodGroup's priority (the scheduler refuses it else)
                change.notes.append(f"priorityClassName {priority_class} of its pods kept on the PodGroup template")
            self._note(change, "Kueue pod group")
            out.extend(self._fresh([(d, change) for d in native.gang(namespace, group, total, priority_class)],
                                   change))
        for namespace, groups in sorted(self._alpha.items()):
            out.extend(self._alpha_groups(namespace, groups))
        return out

    def _alpha_groups(self, namespace: str, groups: _AlphaGroups) -> Out:
        """One PodGroup per (workload, group, replica key) the v1.35 pods named, and a keyless one for each
        template of a v1alpha1 Workload that no pod and no PodGroup of the input names (v1alpha2 Workloads
        have PodGroup objects of their own, as JobSet's workload-aware-scheduling example writes them)."""
        wanted = dict(groups.wanted)
        for workload_name, templates in groups.templates.items():
            if workload_name not in groups.implicit:
                continue
            for template_name in templates:
                if (workload_name, template_name) in groups.referenced:
                    continue
                if not any(w == workload_name and g == template_name for w, g, _ in wanted):
                    wanted[(workload_name, template_name, None)] = None
        out: Out = []
        for workload_name, template_name, key in wanted:
            target = alpha.group_name(workload_name, template_name, key)
            change = Change(f"PodGroup {namespace}/{target} (for v1alpha1 Workload {workload_name})")
            template = groups.templates.get(workload_name, {}).get(template_name)
            if template is None:
                change.warnings.append(f"Workload {namespace}/{workload_name} with pod group {template_name!r} "
                                       "is not in the input: no PodGroup written, its pods wait for one")
                self.changes.append(change)
                continue
            change.notes.append(f"pod group {template_name}" + (f", replica key {key}" if key else "")
                                + f" -> PodGroup {target}")
            self._note(change, "v1alpha1 pod group")
            out.extend(self._fresh([(native.pod_group(namespace, target, template, workload_name), change)],
                                   change))
        return out


def _where(doc: Mapping[str, Any]) -> tuple[str, str]:
    meta = doc.get("metadata")
    if not isinstance(meta, Mapping):
        return "default", ""
    return str(meta.get("namespace") or "default"), str(meta.get("name") or "")


def _total_count(raw: object) -> int:
    """`kueue.x-k8s.io/pod-group-total-count` as Kueue's pod webhook reads it (groupTotalCount: strconv.Atoi,
    then at least 1); the native gang it becomes holds an int32."""
    field = f"metadata.annotations[{foreign.KUEUE_TOTAL}]"
    text = raw if isinstance(raw, str) else str(raw)
    if len(text) > 25 or not _ATOI.fullmatch(text) or abs(int(text)) > _MAX_INT64:
        raise fail(field, f"invalid value {shown(text)}: must be an integer (strconv.Atoi)")
    total = int(text)
    if total < 1:
        raise fail(field, f"incorrect annotation value '{text}': group total count should be greater than zero")
    if total > MAX_INT32:
        raise fail(field, f"{total} is more than a v1.37 gang's minCount (an int32) can be")
    return total
