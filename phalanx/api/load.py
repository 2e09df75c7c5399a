"""Read manifests (files, directories, multi-document YAML, `kind: List`) into validated objects."""

from __future__ import annotations

import gc
import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from phalanx.api.dra import DeviceClass, DeviceTaintRule, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from phalanx.api.fields import object_name
from phalanx.api.objects import Job, Node, Pod, PodDisruptionBudget, PodGroup, PriorityClass, Source, Workload
from phalanx.api.parse import PARSERS
from phalanx.errors import InputError

_YAML_SUFFIXES = (".yaml", ".yml", ".json")
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# --- a fast reader for block-style YAML ---------------------------------------------------------------------
#
# Most manifests (`kubectl get -o yaml`, hand-written files) use a small part of YAML: block mappings and
# sequences, one-line plain and quoted scalars, one-line flow collections (`{cpu: "4"}`), comments, `---`
# between documents. `_fast_documents` reads exactly that part line by line and hands every scalar (and
# every one-line flow collection) to PyYAML's own resolver and constructors, so it returns what
# `yaml.load_all(text, Loader=SafeLoader)` returns. On anything else (block scalars, anchors, aliases,
# tags, multi-line scalars and collections, quoted keys, tabs, CR line breaks, directives, anything PyYAML
# would reject) it gives up and the file is read by PyYAML itself, errors and all.

class _GiveUp(Exception):
    """The text leaves the part of YAML the fast reader reads."""


# Characters the fast reader accepts (YAML's printable set less tab, CR, NEL, BOM and the line separators).
_FOREIGN = re.compile("[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")
# The same set for ASCII text: the bytes the fast reader accepts.
_ASCII_READ = bytes([0x0A, *range(0x20, 0x7F)])
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_.](?:[A-Za-z0-9_./:-]*[A-Za-z0-9_./-])?")
_SINGLE_QUOTED = re.compile(r"'((?:[^']|'')*)' *(?:#.*)?")
_DOUBLE_QUOTED = re.compile(r'"([^"\\]*)" *(?:#.*)?')
_DOUBLE_QUOTED_ESCAPES = re.compile(r'("(?:[^"\\]|\\[^\n])*") *(?:#.*)?')
_RESOLVER = yaml.resolver.Resolver()
_CONSTRUCTOR = yaml.constructor.SafeConstructor()
# First characters of the implicit types (int, float, bool, null, timestamp, …): a plain scalar starting
# with any other character resolves to a string (unless a resolver matches every first character).
_IMPLICIT_FIRST = frozenset(c for c in yaml.resolver.Resolver.yaml_implicit_resolvers if c) \
    if None not in yaml.resolver.Resolver.yaml_implicit_resolvers else frozenset(map(chr, range(0x110000)))
_SCALAR_TAGS = frozenset("tag:yaml.org,2002:" + t for t in ("str", "int", "float", "bool", "null", "timestamp"))


class _Fresh:
    """A collection value written on one line (`{}`, `[a, b]`, `{cpu: "4"}`): every use gets its own copy."""

    __slots__ = ("value",)

    def __init__(self, value: dict[Any, Any] | list[Any]) -> None:
        self.value = value

    def make(self) -> Any:
        return _copy(self.value)


def _copy(value: Any) -> Any:
    if type(value) is dict:
        return {k: _copy(v) for k, v in value.items()}
    if type(value) is list:
        return [_copy(v) for v in value]
    return value
_NO_KEY = object()


def _plain(text: str) -> Any:
    """A one-line plain scalar, resolved and constructed as PyYAML's SafeLoader does."""
    if text[0] not in _IMPLICIT_FIRST:
        return text  # no implicit type starts with this character: a string, as the resolver would say
    tag: str = _RESOLVER.resolve(yaml.ScalarNode, text, (True, False))  # type: ignore[no-untyped-call]
    if tag not in _SCALAR_TAGS:
        raise _GiveUp
    try:
        return _CONSTRUCTOR.yaml_constructors[tag](_CONSTRUCTOR, yaml.ScalarNode(tag, text))
    except Exception:
        raise _GiveUp from None


def _value(raw: str) -> Any:
    """The scalar (or empty flow collection marker) written as `raw`, a value with no leading spaces."""
    first = raw[0]
    if first == "'":
        match = _SINGLE_QUOTED.fullmatch(raw)
        if match is None:
            raise _GiveUp
        return match.group(1).replace("''", "'")
    if first == '"':
        match = _DOUBLE_QUOTED.fullmatch(raw)
        if match is not None:
            return match.group(1)
        match = _DOUBLE_QUOTED_ESCAPES.fullmatch(raw)
        if match is None:
            raise _GiveUp
        try:
            value = yaml.load(match.group(1), Loader=_Loader)
        except yaml.YAMLError:
            raise _GiveUp from None
        if not isinstance(value, str):
            raise _GiveUp
        return value
    if first in "[{":
        # A one-line flow collection reads the same on its own as in its place; PyYAML reads it (anchors
        # and aliases excepted: they could tie it to other nodes).
        if "&" in raw or "*" in raw:
            raise _GiveUp
        try:
            value = yaml.load(raw, Loader=_Loader)
        except yaml.YAMLError:
            raise _GiveUp from None
        if type(value) is not (dict if first == "{" else list):
            raise _GiveUp
        return _Fresh(value)
    if first in ",]}#&*!|>%@`" or (first in "-?:" and (len(raw) == 1 or raw[1] == " ")):
        raise _GiveUp
    end = raw.find(" #")
    text = (raw if end < 0 else raw[:end]).rstrip(" ")
    if ": " in text or text.endswith(":"):
        raise _GiveUp
    return _plain(text)


_SKIP, _DOCUMENT, _ENTRY, _ITEM, _ITEM_ENTRY = range(5)
_NESTED = object()  # an entry's value is the block on the next lines


def _entry(text: str, keys: dict[str, Any], values: dict[str, Any]) -> tuple[Any, Any]:
    """`key: value` (or `key:` with the value nested below) with a plain key."""
    name, sep, raw = text.partition(": ")
    if not sep:
        if not text.endswith(":"):
            raise _GiveUp
        name, raw = text[:-1], ""
    key = keys.get(name, _NO_KEY)
    if key is _NO_KEY:
        if _PLAIN_KEY.fullmatch(name) is None:
            raise _GiveUp
        key = keys[name] = _plain(name)
    raw = raw.lstrip(" ")
    if not raw or raw[0] == "#":
        return key, _NESTED
    value = values.get(raw, _NO_KEY)
    if value is _NO_KEY:
        value = values[raw] = _value(raw)
    return key, value


def _line(line: str, keys: dict[str, Any], values: dict[str, Any]) -> tuple[Any, ...]:
    """What one line says, whatever surrounds it: (_SKIP,), (_DOCUMENT,), (_ENTRY, column, key, value),
    (_ITEM, column, value) or (_ITEM_ENTRY, column, column of the entry, key, value)."""
    s = line.lstrip(" ")
    if not s or s[0] == "#":
        return (_SKIP,)
    col = len(line) - len(s)
    if col == 0 and s[0] in "-.":
        if s.startswith("---") and (len(s) == 3 or s[3] == " "):
            rest = s[3:].lstrip(" ")
            if rest and rest[0] != "#":
                raise _GiveUp
            return (_DOCUMENT,)
        if s.startswith("..."):
            raise _GiveUp
    if s[0] == "-" and (len(s) == 1 or s[1] == " "):
        item = s[1:].lstrip(" ")
        if not item or item[0] == "#" or (item[0] == "-" and (len(item) == 1 or item[1] == " ")):
            raise _GiveUp
        if item[0] in "'\"" or (": " not in item and not item.endswith(":")):
            value = values.get(item, _NO_KEY)
            if value is _NO_KEY:
                value = values[item] = _value(item)
            return (_ITEM, col, value)
        return (_ITEM_ENTRY, col, col + len(s) - len(item), *_entry(item, keys, values))
    return (_ENTRY, col, *_entry(s, keys, values))


def _fast_documents(text: str) -> list[Any]:
    """The documents of `text`, as yaml.load_all gives them; raises _GiveUp outside the subset read."""
    if text.isascii():
        if text.encode("ascii").translate(None, _ASCII_READ):
            raise _GiveUp
    elif _FOREIGN.search(text) is not None:
        raise _GiveUp
    docs: list[Any] = []
    keys: dict[str, Any] = {}
    values: dict[str, Any] = {}
    seen: dict[str, tuple[Any, ...]] = {}  # most lines of a manifest repeat (`kind: Pod`, `cpu: 100m`, …)
    root: Any = None
    explicit = False  # the current document began with `---`
    stack: list[tuple[int, Any, bool]] = []  # the enclosing blocks: (column, container, is a sequence)
    top: Any = None  # the innermost block, at column top_col
    top_col = -1
    top_is_seq = False
    pending: dict[Any, Any] | None = None  # a mapping whose last key waits for a nested value
    pending_key: Any = None
    pending_col = 0
    for line in text.split("\n"):
        parsed = seen.get(line)
        if parsed is None:
            parsed = seen[line] = _line(line, keys, values)
        kind = parsed[0]
        if kind == _ENTRY and parsed[1] == top_col and pending is None and not top_is_seq:
            value = parsed[3]  # the common case: one more key of the current mapping
            if value is _NESTED:
                pending, pending_key, pending_col = top, parsed[2], top_col
            else:
                top[parsed[2]] = value.make() if type(value) is _Fresh else value
            continue
        if kind == _SKIP:
            continue
        if kind == _DOCUMENT:
            if pending is not None:
                pending[pending_key] = None
                pending = None
            if root is not None or explicit:
                docs.append(root)
            root, explicit, stack, top, top_col = None, True, [], None, -1
            continue
        col = parsed[1]
        is_item = kind != _ENTRY
        if root is None:
            if col != 0:
                raise _GiveUp
            root = top = [] if is_item else {}
            top_col, top_is_seq = 0, is_item
        elif pending is not None:
            if is_item and col >= pending_col:
                child: Any = []
            elif not is_item and col > pending_col:
                child = {}
            else:
                child = None
            pending[pending_key] = child
            pending = None
            if child is not None:
                stack.append((top_col, top, top_is_seq))
                top, top_col, top_is_seq = child, col, is_item
        # Close the blocks the line is outside of (a sequence at its key's column ends at the next key).
        while top_col > col or (top_col == col and top_is_seq and not is_item):
            if not stack:
                raise _GiveUp
            top_col, top, top_is_seq = stack.pop()
        if top_col != col or top_is_seq != is_item:
            raise _GiveUp
        if kind == _ITEM:
            value = parsed[2]
            top.append(value.make() if type(value) is _Fresh else value)
            continue
        if kind == _ITEM_ENTRY:
            child = {}
            top.append(child)
            stack.append((top_col, top, top_is_seq))
            top, top_col, top_is_seq = child, parsed[2], False
            key, value = parsed[3], parsed[4]
        else:
            key, value = parsed[2], parsed[3]
        if value is _NESTED:
            pending, pending_key, pending_col = top, key, top_col
            continue
        top[key] = value.make() if type(value) is _Fresh else value
    if pending is not None:
        pending[pending_key] = None
    if root is not None or explicit:
        docs.append(root)
    return docs


@dataclass
class Inputs:
    """Everything one simulation reads, in document order."""

    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    priority_classes: list[PriorityClass] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)
    pod_groups: list[PodGroup] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    resource_slices: list[ResourceSlice] = field(default_factory=list)
    device_classes: list[DeviceClass] = field(default_factory=list)
    resource_claims: list[ResourceClaim] = field(default_factory=list)
    claim_templates: list[ResourceClaimTemplate] = field(default_factory=list)
    device_taint_rules: list[DeviceTaintRule] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    terminated_pods: int = 0

    def objects(self) -> Iterator[Node | Pod | PriorityClass | Workload | PodGroup | Job]:
        """All objects in document order (the order they enter a simulation at equal arrival times)."""
        everything: list[Any] = [*self.nodes, *self.pods, *self.priority_classes, *self.workloads,
                                 *self.pod_groups, *self.jobs]
        everything.sort(key=lambda o: (o.source.file, o.source.index) if o.source else ("", 0))
        yield from everything


def _files(paths: Sequence[str]) -> list[str]:
    files: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            found = sorted(
                os.path.join(root, name)
                for root, _, names in os.walk(path)
                for name in names
                if name.endswith(_YAML_SUFFIXES)
            )
            files.extend(found)
        elif os.path.exists(path):
            files.append(path)
        else:
            raise InputError("no such file or directory", file=path)
    return files


def _documents(path: str) -> Iterator[tuple[int, Any]]:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise InputError(exc.strerror or str(exc), file=path) from None
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file", file=path) from None
    if path.endswith(".json"):
        # `kubectl get -o json` output: one JSON value per file, read by the JSON parser (YAML's is 30× slower).
        try:
            docs = [json.loads(text)]
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid JSON: {exc.msg}", file=path, obj=f"line {exc.lineno}") from None
    else:
        try:
            docs = _fast_documents(text)
        except _GiveUp:
            docs = None
    try:
        if docs is None:
            docs = list(yaml.load_all(text, Loader=_Loader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "YAML"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"invalid YAML: {problem}", file=path, obj=where) from None
    for number, doc in enumerate(docs, start=1):
        if doc is None:
            continue
        yield number, doc


def _flatten(doc: Any, path: str, number: int) -> Iterable[Mapping[str, Any]]:
    if not isinstance(doc, Mapping):
        raise InputError(f"document {number} is not an object (got {type(doc).__name__})", file=path)
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(doc.get("items"), list):
        for i, item in enumerate(doc["items"]):
            if not isinstance(item, Mapping):
                raise InputError(f"is not an object (got {type(item).__name__})", file=path,
                                 obj=f"document {number}", field=f"items[{i}]")
            yield from _flatten(item, path, number)
    else:
        yield doc


def load_paths(paths: Sequence[str]) -> Inputs:
    """Load and validate every manifest under `paths`; raises InputError on the first problem."""
    # Loading builds millions of small dicts and lists and frees none: the cyclic garbage collector would
    # only walk them again and again, so it rests until the load is done.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _load_paths(paths)
    finally:
        if collecting:
            gc.enable()


def raw_documents(paths: Sequence[str]) -> Iterator[tuple[Source, Mapping[str, Any]]]:
    """Every object under `paths` as read, `List`s flattened, with the Source that `load_paths` gives it."""
    index = 0
    for path in _files(paths):
        for number, doc in _documents(path):
            for item in _flatten(doc, path, number):
                index += 1
                yield Source(path, index), item


def _load_paths(paths: Sequence[str]) -> Inputs:
    inputs = Inputs()
    seen: dict[tuple[str, str, str], str] = {}
    for source, item in raw_documents(paths):
        _load_one(item, source, inputs, seen)
    resolve(inputs)
    return inputs


def _load_one(doc: Mapping[str, Any], source: Source, inputs: Inputs,
              seen: dict[tuple[str, str, str], str]) -> None:
    kind = doc.get("kind")
    name = object_name(doc)
    if not isinstance(kind, str) or not kind:
        raise InputError("is required", file=source.file, obj=name, field="kind")
    if kind not in PARSERS:
        inputs.skipped[kind] += 1
        return
    versions, parser = PARSERS[kind]
    api_version = doc.get("apiVersion")
    if api_version not in versions:
        raise InputError(f"{kind} is not read in apiVersion {api_version!r} (Phalanx reads {', '.join(versions)})",
                         file=source.file, obj=name, field="apiVersion")
    try:
        obj = parser(doc, source)
    except InputError as exc:
        raise exc.at(file=source.file, obj=name) from None
    if obj is None:
        inputs.terminated_pods += 1
        return
    namespace = getattr(obj, "namespace", "")
    ident = (kind, namespace, getattr(obj, "name", ""))
    if ident in seen:
        raise InputError(f"duplicate {kind} (first defined in {seen[ident]})", file=source.file, obj=name,
                         field="metadata.name")
    seen[ident] = source.file
    bucket = {Node: inputs.nodes, Pod: inputs.pods, PriorityClass: inputs.priority_classes,
              Workload: inputs.workloads, PodGroup: inputs.pod_groups, Job: inputs.jobs,
              PodDisruptionBudget: inputs.pdbs, ResourceSlice: inputs.resource_slices,
              DeviceClass: inputs.device_classes, ResourceClaim: inputs.resource_claims,
              ResourceClaimTemplate: inputs.claim_templates, DeviceTaintRule: inputs.device_taint_rules}[type(obj)]
    bucket.append(obj)  # type: ignore[attr-defined]


def _where(obj: Pod | PodGroup | Job, kind: str) -> dict[str, str]:
    return {"file": obj.source.file if obj.source else "", "obj": f"{kind} {obj.namespace}/{obj.name}"}


def resolve(inputs: Inputs) -> None:
    """Cross-object defaults and checks: priorities from PriorityClasses, group policies from Workloads."""
    classes = {pc.name: pc for pc in inputs.priority_classes}
    defaults = [pc for pc in inputs.priority_classes if pc.global_default]
    default_priority = defaults[0].value if defaults else 0
    node_arrival = {n.name: n.arrival for n in inputs.nodes}

    def pod_priority(pod: Pod, kind: str, field: str) -> None:
        if pod.priority_class_name is not None:
            pc = classes.get(pod.priority_class_name)
            if pc is None:
                raise InputError(f"no PriorityClass named {pod.priority_class_name!r}", field=field,
                                 **_where(pod, kind))
            pod.priority = pc.value if pod.explicit_priority is None else pod.explicit_priority
            if pod.preemption_policy == "PreemptLowerPriority":
                pod.preemption_policy = pc.preemption_policy
        elif pod.explicit_priority is None:
            pod.priority = default_priority

    for pod in inputs.pods:
        pod_priority(pod, "Pod", "spec.priorityClassName")
        if pod.node_name is not None and pod.node_name not in node_arrival:
            raise InputError(f"no Node named {pod.node_name!r}", field="spec.nodeName", **_where(pod, "Pod"))
        if pod.node_name is not None and node_arrival[pod.node_name] > pod.arrival:
            raise InputError(f"Node {pod.node_name!r} arrives at {node_arrival[pod.node_name]:g}s, after this pod "
                             f"({pod.arrival:g}s)", field="spec.nodeName", **_where(pod, "Pod"))
    # status.startTime of running pods, made relative to the snapshot: the latest start is time 0.
    started = [p.start_time for p in inputs.pods if p.start_time is not None]
    latest = max(started, default=0.0)
    for pod in inputs.pods:
        if pod.start_time is not None:
            pod.start_time -= latest
    for job in inputs.jobs:
        pod_priority(job.template, "Job", "spec.template.spec.priorityClassName")
        job.template.source = job.source
    workloads = {w.key: w for w in inputs.workloads}
    for group in inputs.pod_groups:
        template = None
        if group.workload_name is not None:
            workload = workloads.get(f"{group.namespace}/{group.workload_name}")
            if workload is not None:
                template = workload.templates.get(group.template_name or "")
                if template is None:
                    raise InputError(f"Workload {workload.key} has no podGroupTemplate {group.template_name!r}",
                                     field="spec.workloadRef.templateName", **_where(group, "PodGroup"))
        if group.policy is None:  # the API server rejects it: the controller that creates it copies the policy
            raise InputError("is required: one of basic, gang", field="spec.schedulingPolicy",
                             **_where(group, "PodGroup"))
        # Every other field is the PodGroup's own: the scheduler reads the PodGroup only, and the controller
        # that creates a PodGroup copies the template's fields into it. Priority admission fills priority (and
        # preemptionPolicy) from priorityClassName, else from the global default class, else 0.
        pc = None
        if group.priority_class_name is not None:
            pc = classes.get(group.priority_class_name)
            if pc is None:
                raise InputError(f"no PriorityClass named {group.priority_class_name!r}",
                                 field="spec.priorityClassName", **_where(group, "PodGroup"))
        elif defaults:
            pc = defaults[0]
        if group.priority is None:
            group.priority = pc.value if pc is not None else default_priority
        if group.preemption_policy is None:
            group.preemption_policy = pc.preemption_policy if pc is not None else "PreemptLowerPriority"
    resolve_devices(inputs)


def _device_where(obj: ResourceClaim | ResourceClaimTemplate | DeviceTaintRule, kind: str) -> dict[str, str]:
    namespace = getattr(obj, "namespace", "")
    return {"file": obj.source.file if obj.source else "", "obj": f"{kind} {namespace + '/' if namespace else ''}"
            f"{obj.name}"}


def resolve_devices(inputs: Inputs) -> None:
    """DRA cross-object checks: device classes named by claims and rules exist; pods' claims and templates
    exist in the pod's namespace."""
    classes = {c.name for c in inputs.device_classes}

    def check_spec(obj: ResourceClaim | ResourceClaimTemplate, kind: str, where: str) -> None:
        for i, request in enumerate(obj.spec.requests):
            if request.exactly is not None:
                fields = [(request.exactly, f"{where}.devices.requests[{i}].exactly.deviceClassName")]
            else:
                fields = [(sub, f"{where}.devices.requests[{i}].firstAvailable[{j}].deviceClassName")
                          for j, sub in enumerate(request.first_available)]
            for exact, field_name in fields:
                if exact.device_class_name not in classes:
                    raise InputError(f"no DeviceClass named {exact.device_class_name!r}", field=field_name,
                                     **_device_where(obj, kind))

    for claim in inputs.resource_claims:
        check_spec(claim, "ResourceClaim", "spec")
    for template in inputs.claim_templates:
        check_spec(template, "ResourceClaimTemplate", "spec.spec")
    for rule in inputs.device_taint_rules:
        name = rule.selector.device_class_name
        if name is not None and name not in classes:
            raise InputError(f"no DeviceClass named {name!r}", field="spec.deviceSelector.deviceClassName",
                             **_device_where(rule, "DeviceTaintRule"))
    claims = {c.key for c in inputs.resource_claims}
    templates = {t.key for t in inputs.claim_templates}

    def check_pod(pod: Pod, kind: str, obj: Pod | Job, where: str) -> None:
        for i, ref in enumerate(pod.resource_claims):
            if ref.claim_name is not None and f"{obj.namespace}/{ref.claim_name}" not in claims:
                raise InputError(f"no ResourceClaim named {ref.claim_name!r} in namespace {obj.namespace!r}",
                                 field=f"{where}.resourceClaims[{i}].resourceClaimName", **_where(obj, kind))
            if ref.template_name is not None and f"{obj.namespace}/{ref.template_name}" not in templates:
                raise InputError(f"no ResourceClaimTemplate named {ref.template_name!r} in namespace "
                                 f"{obj.namespace!r}", field=f"{where}.resourceClaims[{i}].resourceClaimTemplateName",
                                 **_where(obj, kind))

    for pod in inputs.pods:
        check_pod(pod, "Pod", pod, "spec")
    for job in inputs.jobs:
        check_pod(job.template, "Job", job, "spec.template.spec")
