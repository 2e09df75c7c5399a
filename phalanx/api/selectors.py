"""Selectors: node selector requirements and terms (node affinity, ResourceSlice node selectors) and label
selectors (PodDisruptionBudgets), parsed with the fields they came from named in errors."""

from __future__ import annotations

from typing import Any, cast

from phalanx.api.fields import fail as _fail
from phalanx.api.fields import labels as _labels
from phalanx.api.fields import mapping as _mapping
from phalanx.api.fields import sequence as _list
from phalanx.api.fields import text as _text
from phalanx.api.objects import LabelSelector, Requirement, SelectorTerm

_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


def requirement(raw: Any, field: str) -> Requirement:
    item = _mapping(raw, field)
    key = _text(item.get("key"), f"{field}.key", required=True)
    op = _text(item.get("operator"), f"{field}.operator", required=True)
    if op not in _OPERATORS:
        raise _fail(f"{field}.operator", f"unsupported value {op!r}: one of {', '.join(_OPERATORS)}")
    raw_values = _list(item.get("values"), f"{field}.values")
    values = tuple(_text(v, f"{field}.values[{i}]") for i, v in enumerate(raw_values))
    if op in ("In", "NotIn") and not values:
        raise _fail(f"{field}.values", f"must be non-empty for operator {op}")
    if op in ("Exists", "DoesNotExist") and values:
        raise _fail(f"{field}.values", f"must be empty for operator {op}")
    if op in ("Gt", "Lt"):
        if len(values) != 1:
            raise _fail(f"{field}.values", f"must hold exactly one integer for operator {op}")
        try:
            int(values[0])
        except ValueError:
            raise _fail(f"{field}.values[0]", f"must be an integer for operator {op}") from None
    return Requirement(key=key, operator=cast(Any, op), values=values)


def term(raw: Any, field: str) -> SelectorTerm:
    item = _mapping(raw, field)
    exprs = _list(item.get("matchExpressions"), f"{field}.matchExpressions")
    fields = _list(item.get("matchFields"), f"{field}.matchFields")
    parsed_fields = tuple(requirement(r, f"{field}.matchFields[{i}]") for i, r in enumerate(fields))
    for i, r in enumerate(parsed_fields):
        if r.key != "metadata.name":
            raise _fail(f"{field}.matchFields[{i}].key", f"unsupported field {r.key!r}: only metadata.name")
        if r.operator not in ("In", "NotIn"):  # as the API server validates node field selectors
            raise _fail(f"{field}.matchFields[{i}].operator", f"unsupported value {r.operator!r}: one of In, NotIn")
        if len(r.values) != 1:
            raise _fail(f"{field}.matchFields[{i}].values", "must hold exactly one node name")
    return SelectorTerm(
        expressions=tuple(requirement(r, f"{field}.matchExpressions[{i}]") for i, r in enumerate(exprs)),
        fields=parsed_fields,
    )


def parse_selector(raw: Any, field: str) -> LabelSelector:
    selector = _mapping(raw, field)
    exprs = _list(selector.get("matchExpressions"), f"{field}.matchExpressions")
    requirements = tuple(requirement(r, f"{field}.matchExpressions[{i}]") for i, r in enumerate(exprs))
    for i, req in enumerate(requirements):
        if req.operator in ("Gt", "Lt"):
            raise _fail(f"{field}.matchExpressions[{i}].operator", f"unsupported value {req.operator!r}")
    labels = _labels(selector.get("matchLabels"), f"{field}.matchLabels")
    return LabelSelector(match_labels=tuple(sorted(labels.items())), expressions=requirements)
