"""Reading manifest fields: each reader raises InputError naming the field, so every parser reports bad input
as `file: object: field: what is wrong`. Also an object's metadata (`Meta`) and its name for messages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from phalanx.api.names import (
    check,
    generate_name_problem,
    generated_name,
    label_problem,
    label_value_problem,
    qualified_name_problem,
    subdomain_problem,
)
from phalanx.api.objects import ARRIVAL_ANNOTATION, DEFAULT_NAMESPACE, OwnerRef
from phalanx.api.quantity import parse_duration
from phalanx.errors import InputError

Manifest = Mapping[str, Any]
_MIN_INT64, _MAX_INT64 = -(2**63), 2**63 - 1


def fail(field: str, message: str) -> InputError:
    return InputError(message, field=field)


def mapping(value: Any, field: str, *, required: bool = False) -> Mapping[str, Any]:
    if value is None:
        if required:
            raise fail(field, "is required")
        return {}
    if not isinstance(value, Mapping):
        raise fail(field, f"must be an object, got {type(value).__name__}")
    return value


def sequence(value: Any, field: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise fail(field, f"must be a list, got {type(value).__name__}")
    return value


def text(value: Any, field: str, *, required: bool = False) -> str:
    """A string field; YAML's unquoted true/false read back as Kubernetes wrote them. Empty counts as unset."""
    if value is None or (required and value == ""):
        if required:
            raise fail(field, "is required")
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    raise fail(field, f"must be a string, got {type(value).__name__}")


def integer(value: Any, field: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(field, f"must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise fail(field, f"must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise fail(field, f"must be at most {maximum}, got {value}")
    if not _MIN_INT64 <= value <= _MAX_INT64:  # every Kubernetes integer is an int32 or an int64
        raise fail(field, f"must fit in a 64-bit integer, got a {len(str(abs(value)))}-digit number")
    return value


def labels(value: Any, field: str) -> dict[str, str]:
    """A map of labels (metadata.labels, a nodeSelector, matchLabels): keys qualified names, values label values."""
    return {check(str(k), field, qualified_name_problem): check(text(v, f"{field}.{k}"), field, label_value_problem)
            for k, v in mapping(value, field).items()}


def annotation_map(value: Any, field: str) -> dict[str, str]:
    """metadata.annotations: keys qualified names (checked lowercased, as the API server does), values any text."""
    out = {str(k): text(v, f"{field}.{k}") for k, v in mapping(value, field).items()}
    for key in out:
        check(key.lower(), field, qualified_name_problem)
    return out


def name(value: Any, field: str) -> str:
    """A reference to an object by name (a DNS-1123 subdomain), or "" when unset."""
    found = text(value, field)
    return check(found, field, subdomain_problem) if found else found


def seconds(annotations: Mapping[str, str], key: str, field: str) -> float | None:
    if key not in annotations:
        return None
    try:
        return parse_duration(annotations[key])
    except ValueError as exc:
        raise fail(f"{field}[{key}]", str(exc)) from None


# Plain `y`/`n` are booleans to go-yaml v2 (sigs.k8s.io/yaml, so kubectl and the API server) but strings to
# PyYAML, which reads the rest of YAML 1.1's booleans (yes/no/on/off/true/false) as go-yaml does.
_GO_YAML_BOOLEANS = {"y": True, "Y": True, "n": False, "N": False}


def boolean(value: Any, field: str) -> bool:
    """A boolean field: true or false only, as the API server takes it (a quoted "false" is an error there)."""
    if value is None:
        return False
    if isinstance(value, str) and value in _GO_YAML_BOOLEANS:
        return _GO_YAML_BOOLEANS[value]
    if not isinstance(value, bool):
        raise fail(field, f"must be true or false, got {value!r}")
    return value


class Meta:
    """An object's metadata as the parsers need it."""

    def __init__(self, doc: Manifest, *, namespaced: bool, template: bool = False) -> None:
        meta = mapping(doc.get("metadata"), "metadata", required=True)
        self.name = text(meta.get("name"), "metadata.name", required=True)
        if not self.name:
            raise fail("metadata.name", "is required")
        if not template:  # a template's own name is not the API server's to check: its owner names what it makes
            check(self.name, "metadata.name", subdomain_problem)
        ns = text(meta.get("namespace"), "metadata.namespace") if namespaced else ""
        self.namespace = check(ns, "metadata.namespace", label_problem) if ns else (
            DEFAULT_NAMESPACE if namespaced else "")
        self.labels = labels(meta.get("labels"), "metadata.labels")
        self.annotations = annotation_map(meta.get("annotations"), "metadata.annotations")
        self.arrival = seconds(self.annotations, ARRIVAL_ANNOTATION, "metadata.annotations") or 0.0
        self.controller: str | None = None
        for i, ref in enumerate(sequence(meta.get("ownerReferences"), "metadata.ownerReferences")):
            item = mapping(ref, f"metadata.ownerReferences[{i}]")
            if boolean(item.get("controller"), f"metadata.ownerReferences[{i}].controller"):
                self.controller = text(item.get("kind"), f"metadata.ownerReferences[{i}].kind") or None


def with_generated_name(doc: Manifest, key: str) -> Manifest:
    """`doc`, or for an object with `metadata.generateName` and no name, a copy named as the API server names it:
    the prefix (validated as ValidateObjectMeta does) and five
    characters derived from `key`, where the object was written, so that the same input gets the same names."""
    meta = doc.get("metadata")
    if not isinstance(meta, Mapping) or meta.get("name") or "generateName" not in meta:
        return doc
    base = text(meta.get("generateName"), "metadata.generateName", required=True)
    check(base, "metadata.generateName", generate_name_problem)
    return {**doc, "metadata": {**meta, "name": generated_name(base, key)}}


def object_name(doc: Manifest) -> str:
    """`Pod default/web-1`, for error messages; tolerant of broken metadata."""
    kind = doc.get("kind") if isinstance(doc.get("kind"), str) else "object"
    raw_meta = doc.get("metadata")
    meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, Mapping) else {}
    name = meta.get("name") if isinstance(meta.get("name"), str) else None
    if not name:
        return f"{kind} (unnamed)"
    namespace = meta.get("namespace")
    return f"{kind} {namespace}/{name}" if isinstance(namespace, str) and namespace else f"{kind} {name}"


def controller_ref(doc: Manifest) -> OwnerRef | None:
    """The ownerReference with `controller: true`, if any (Meta has already checked the list's shape)."""
    meta = mapping(doc.get("metadata"), "metadata")
    for i, raw in enumerate(sequence(meta.get("ownerReferences"), "metadata.ownerReferences")):
        ref = mapping(raw, f"metadata.ownerReferences[{i}]")
        if ref.get("controller"):
            return OwnerRef(kind=text(ref.get("kind"), f"metadata.ownerReferences[{i}].kind"),
                            name=text(ref.get("name"), f"metadata.ownerReferences[{i}].name"))
    return None


def template_meta(template: Mapping[str, Any], owner: Meta, field: str) -> Meta:
    """A pod template's metadata (`field` is where the template is): named after its owner unless it names
    itself, always in its owner's namespace."""
    raw = dict(mapping(template.get("metadata"), f"{field}.metadata"))
    raw.setdefault("name", owner.name)
    raw["namespace"] = owner.namespace
    try:
        return Meta({"metadata": raw}, namespaced=True, template=True)
    except InputError as exc:
        raise fail(f"{field}.{exc.field}", exc.detail) from None


KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
