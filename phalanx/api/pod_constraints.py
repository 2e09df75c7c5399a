"""Constraints between pods: `spec.topologySpreadConstraints` and `spec.affinity.podAffinity/podAntiAffinity`
(their types are in objects.py, beside the Placement that holds them).

Parsed as the API server leaves them for kube-scheduler: defaults filled in (minDomains 1, nodeAffinityPolicy
Honor, nodeTaintsPolicy Ignore), `matchLabelKeys`/`mismatchLabelKeys` merged into the label selector with the
pod's own label values (`key In (value)`, `key NotIn (value)`), and an affinity term's namespaces resolved
(none listed and no namespaceSelector: the pod's own namespace).

A selector of None matches no pod (an absent `labelSelector`); an empty LabelSelector matches every pod.
Phalanx loads no Namespace objects, so a `namespaceSelector` may only be `{}` (every namespace); any other
is refused with an InputError naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from phalanx.api.fields import fail, integer, mapping, sequence, text
from phalanx.api.objects import (
    LabelSelector,
    NodeInclusionPolicy,
    PodAffinity,
    PodAffinityTerm,
    Requirement,
    SpreadConstraint,
    WeightedTerm,
    selector_empty,
)
from phalanx.api.selectors import parse_selector

HOSTNAME_KEY = "kubernetes.io/hostname"
ZONE_KEY = "topology.kubernetes.io/zone"
_WHEN = ("DoNotSchedule", "ScheduleAnyway")
_POLICIES = ("Honor", "Ignore")


# --- topologySpreadConstraints -------------------------------------------------------------------------------

def _label_keys(raw: Any, field: str) -> tuple[str, ...]:
    keys = tuple(text(k, f"{field}[{i}]", required=True) for i, k in enumerate(sequence(raw, field)))
    return keys


def _selector_keys(selector: LabelSelector) -> set[str]:
    return {k for k, _ in selector.match_labels} | {r.key for r in selector.expressions}


def _merge_keys(selector: LabelSelector | None, labels: Mapping[str, str], keys: tuple[str, ...],
                operator: Literal["In", "NotIn"]) -> LabelSelector | None:
    """Add `key operator (pod's value)` for each key the pod has a label for (the API server's merge)."""
    extra = tuple(Requirement(key, operator, (labels[key],)) for key in keys if key in labels)
    if selector is None or not extra:
        return selector
    return LabelSelector(match_labels=selector.match_labels, expressions=(*selector.expressions, *extra))


def _policy(raw: Any, field: str, default: NodeInclusionPolicy) -> NodeInclusionPolicy:
    if raw is None:
        return default
    value = text(raw, field)
    if value not in _POLICIES:
        raise fail(field, f"unsupported value {value!r}: one of {', '.join(_POLICIES)}")
    return "Honor" if value == "Honor" else "Ignore"


def _spread_constraint(raw: Any, field: str, labels: Mapping[str, str]) -> SpreadConstraint:
    item = mapping(raw, field)
    if item.get("maxSkew") is None:
        raise fail(f"{field}.maxSkew", "is required")
    max_skew = integer(item.get("maxSkew"), f"{field}.maxSkew", minimum=1, maximum=2_147_483_647)
    key = text(item.get("topologyKey"), f"{field}.topologyKey", required=True)
    when = text(item.get("whenUnsatisfiable"), f"{field}.whenUnsatisfiable", required=True)
    if when not in _WHEN:
        raise fail(f"{field}.whenUnsatisfiable", f"unsupported value {when!r}: one of {', '.join(_WHEN)}")
    min_domains = 1
    if item.get("minDomains") is not None:
        min_domains = integer(item.get("minDomains"), f"{field}.minDomains", minimum=1, maximum=2_147_483_647)
        if when != "DoNotSchedule":
            raise fail(f"{field}.minDomains", f"can only be set with whenUnsatisfiable DoNotSchedule, not {when}")
    raw_selector = item.get("labelSelector")
    selector = None if raw_selector is None else parse_selector(raw_selector, f"{field}.labelSelector")
    keys = _label_keys(item.get("matchLabelKeys"), f"{field}.matchLabelKeys")
    if keys:
        if selector is None:
            raise fail(f"{field}.matchLabelKeys", "must not be set when labelSelector is not set")
        for i, k in enumerate(keys):
            if k in _selector_keys(selector):
                raise fail(f"{field}.matchLabelKeys[{i}]", f"{k!r} exists in both matchLabelKeys and labelSelector")
    return SpreadConstraint(
        max_skew=max_skew, topology_key=key, when_unsatisfiable="DoNotSchedule" if when == "DoNotSchedule"
        else "ScheduleAnyway", selector=_merge_keys(selector, labels, keys, "In"), min_domains=min_domains,
        node_affinity_policy=_policy(item.get("nodeAffinityPolicy"), f"{field}.nodeAffinityPolicy", "Honor"),
        node_taints_policy=_policy(item.get("nodeTaintsPolicy"), f"{field}.nodeTaintsPolicy", "Ignore"),
    )


def parse_spread(spec: Mapping[str, Any], field: str, labels: Mapping[str, str]) -> tuple[SpreadConstraint, ...]:
    """spec.topologySpreadConstraints of a pod whose labels are `labels`."""
    where = f"{field}.topologySpreadConstraints"
    out: list[SpreadConstraint] = []
    seen: set[tuple[str, str]] = set()
    for i, raw in enumerate(sequence(spec.get("topologySpreadConstraints"), where)):
        constraint = _spread_constraint(raw, f"{where}[{i}]", labels)
        pair = (constraint.topology_key, constraint.when_unsatisfiable)
        if pair in seen:
            raise fail(f"{where}[{i}]", f"duplicate {{topologyKey, whenUnsatisfiable}}: {{{pair[0]}, {pair[1]}}}")
        seen.add(pair)
        out.append(constraint)
    return tuple(out)


# --- podAffinity / podAntiAffinity -----------------------------------------------------------------------

def _affinity_term(raw: Any, field: str, namespace: str, labels: Mapping[str, str]) -> PodAffinityTerm:
    item = mapping(raw, field, required=True)
    key = text(item.get("topologyKey"), f"{field}.topologyKey", required=True)
    raw_selector = item.get("labelSelector")
    selector = None if raw_selector is None else parse_selector(raw_selector, f"{field}.labelSelector")
    names = frozenset(text(n, f"{field}.namespaces[{i}]", required=True)
                      for i, n in enumerate(sequence(item.get("namespaces"), f"{field}.namespaces")))
    raw_ns_selector = item.get("namespaceSelector")
    all_namespaces = False
    if raw_ns_selector is not None:
        ns_selector = parse_selector(raw_ns_selector, f"{field}.namespaceSelector")
        if not selector_empty(ns_selector):
            raise fail(f"{field}.namespaceSelector", "only {} (every namespace) is supported: Phalanx loads no "
                                                     "Namespace objects to match labels against")
        all_namespaces = True
    elif not names:
        names = frozenset((namespace,))
    match_keys = _label_keys(item.get("matchLabelKeys"), f"{field}.matchLabelKeys")
    mismatch_keys = _label_keys(item.get("mismatchLabelKeys"), f"{field}.mismatchLabelKeys")
    for name, keys in (("matchLabelKeys", match_keys), ("mismatchLabelKeys", mismatch_keys)):
        if keys and selector is None:
            raise fail(f"{field}.{name}", "must not be set when labelSelector is not set")
    if selector is not None:
        for i, k in enumerate(match_keys):
            if k in _selector_keys(selector):
                raise fail(f"{field}.matchLabelKeys[{i}]", f"{k!r} exists in both matchLabelKeys and labelSelector")
    for i, k in enumerate(match_keys):
        if k in mismatch_keys:
            raise fail(f"{field}.matchLabelKeys[{i}]", f"{k!r} exists in both matchLabelKeys and mismatchLabelKeys")
    selector = _merge_keys(_merge_keys(selector, labels, match_keys, "In"), labels, mismatch_keys, "NotIn")
    return PodAffinityTerm(selector=selector, topology_key=key, namespaces=names, all_namespaces=all_namespaces)


def _weighted(raw: Any, field: str, namespace: str, labels: Mapping[str, str]) -> WeightedTerm:
    item = mapping(raw, field)
    if item.get("weight") is None:
        raise fail(f"{field}.weight", "is required")
    weight = integer(item.get("weight"), f"{field}.weight", minimum=1, maximum=100)
    return WeightedTerm(weight, _affinity_term(item.get("podAffinityTerm"), f"{field}.podAffinityTerm",
                                               namespace, labels))


def parse_pod_affinity(spec: Mapping[str, Any], field: str, namespace: str,
                       labels: Mapping[str, str]) -> PodAffinity | None:
    """spec.affinity.podAffinity and podAntiAffinity (None when the pod sets neither, or only empty ones)."""
    affinity = mapping(spec.get("affinity"), f"{field}.affinity")
    parts: dict[str, tuple[Any, ...]] = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        where = f"{field}.affinity.{kind}"
        section = mapping(affinity.get(kind), where)
        rfield = f"{where}.requiredDuringSchedulingIgnoredDuringExecution"
        pfield = f"{where}.preferredDuringSchedulingIgnoredDuringExecution"
        parts[kind] = (
            tuple(_affinity_term(t, f"{rfield}[{i}]", namespace, labels)
                  for i, t in enumerate(sequence(section.get("requiredDuringSchedulingIgnoredDuringExecution"),
                                                 rfield))),
            tuple(_weighted(t, f"{pfield}[{i}]", namespace, labels)
                  for i, t in enumerate(sequence(section.get("preferredDuringSchedulingIgnoredDuringExecution"),
                                                 pfield))),
        )
    (required, preferred), (required_anti, preferred_anti) = parts["podAffinity"], parts["podAntiAffinity"]
    if not (required or preferred or required_anti or preferred_anti):
        return None
    return PodAffinity(required=required, required_anti=required_anti, preferred=preferred,
                       preferred_anti=preferred_anti)
