"""Synthetic workloads in the style of kube-scheduler's scheduler_perf: a list of operations, each creating
`count` objects from a template.

A workload file (YAML; `docs/traces.md` documents every key):

    params: {nodes: 100, gangs: 20}
    workloadTemplate:
    - opcode: createNodes
      countParam: $nodes
      nodeTemplate: {status: {allocatable: {cpu: "16", memory: 64Gi}}}
    - opcode: createPods
      count: 50
      interval: 30s           # pod i arrives at i × 30s after the current time
      duration: 1h
    - opcode: sleep
      duration: 2h            # later operations start 2h on
    - opcode: createPodGroups
      countParam: $gangs
      minCount: 4             # gang of 4 (policy: basic for a basic group)
      podTemplate: {spec: {containers: [{name: w, resources: {requests: {cpu: "4"}}}]}}

Operations: `createNodes`, `createPods`, `createPodGroups` and `sleep`. A workload creates at most 200,000
objects, and every arrival is within Go's longest duration (about 292 years): counts and intervals past those
are errors naming the key, not a file that never finishes. Templates are manifests (or
`nodeTemplatePath` / `podTemplatePath` files, relative to the workload file); missing parts take
scheduler_perf's defaults (`node-default.yaml`: 4 cpu, 32Gi, 110 pods; `pod-default.yaml`: 100m cpu,
500Mi). Output is deterministic: the same file gives the same manifests, in the same order.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from phalanx.api.fields import object_name
from phalanx.api.kinds import KINDS
from phalanx.api.objects import (
    ARRIVAL_ANNOTATION,
    DURATION_ANNOTATION,
    Job,
    Node,
    Pod,
    PodDisruptionBudget,
    PodGroup,
    PriorityClass,
    Source,
    Workload,
)
from phalanx.api.quantity import MAX_DURATION_SECONDS, format_duration, parse_duration
from phalanx.api.reading import read_yaml
from phalanx.api.resolve import resolve
from phalanx.errors import InputError
from phalanx.inputs.load import Inputs

Manifest = dict[str, Any]
OPCODES = ("createNodes", "createPods", "createPodGroups", "sleep")
MAX_OBJECTS = 200_000  # every object is a manifest in memory and a document in the output
DEFAULT_NAMESPACE = "default"

# scheduler_perf's config/templates/node-default.yaml and pod-default.yaml, as far as scheduling reads them.
DEFAULT_NODE: Manifest = {
    "apiVersion": "v1", "kind": "Node", "metadata": {"generateName": "scheduler-perf-"},
    "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
               "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
}
DEFAULT_POD: Manifest = {
    "apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "pod-"},
    "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10.1",
                             "resources": {"requests": {"cpu": "100m", "memory": "500Mi"},
                                           "limits": {"cpu": "100m", "memory": "500Mi"}}}]},
}
_OP_KEYS: dict[str, set[str]] = {
    "createNodes": {"count", "countParam", "nodeTemplate", "nodeTemplatePath", "namePrefix"},
    "createPods": {"count", "countParam", "podTemplate", "podTemplatePath", "namespace", "namePrefix", "interval",
                   "duration"},
    "createPodGroups": {"count", "countParam", "podTemplate", "podTemplatePath", "namespace", "namePrefix",
                        "interval", "duration", "minCount", "podsPerGroup", "policy", "priorityClassName"},
    "sleep": {"duration"},
}


@dataclass
class WorkloadSpec:
    """A parsed workload file: its operations (with params substituted) and where it came from."""

    operations: list[Mapping[str, Any]]
    path: str = "<workload>"
    params: dict[str, int] = field(default_factory=dict)


def _error(path: str, index: int | None, message: str, key: str | None = None) -> InputError:
    where = None if index is None else f"workloadTemplate[{index}]"
    return InputError(message, file=path, obj=where, field=key)


def load_workload(path: str) -> WorkloadSpec:
    """Read a workload YAML file; raises InputError naming the file, the operation and the key."""
    return parse_workload(read_yaml(path), path)


def parse_workload(raw: Any, path: str = "<workload>") -> WorkloadSpec:
    """A workload from its parsed YAML (a mapping with `workloadTemplate` and optional `params`)."""
    if not isinstance(raw, Mapping):
        raise _error(path, None, f"a workload is a mapping with workloadTemplate, got {type(raw).__name__}")
    unknown = sorted(set(raw) - {"name", "params", "workloadTemplate"})
    if unknown:
        raise _error(path, None, f"unknown key(s) {', '.join(unknown)}: a workload has name, params and "
                                 "workloadTemplate")
    params_raw = raw.get("params") or {}
    if not isinstance(params_raw, Mapping):
        raise _error(path, None, "must be a mapping of names to integers", "params")
    params: dict[str, int] = {}
    for key, value in params_raw.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise _error(path, None, f"must be a non-negative integer, got {value!r}", f"params.{key}")
        params[str(key)] = value
    ops = raw.get("workloadTemplate")
    if not isinstance(ops, list) or not ops:
        raise _error(path, None, "must be a non-empty list of operations", "workloadTemplate")
    for i, op in enumerate(ops):
        if not isinstance(op, Mapping):
            raise _error(path, i, f"an operation is a mapping, got {type(op).__name__}")
        opcode = op.get("opcode")
        if opcode not in OPCODES:
            raise _error(path, i, f"unsupported opcode {opcode!r}: one of {', '.join(OPCODES)}", "opcode")
        extra = sorted(set(op) - _OP_KEYS[opcode] - {"opcode"})
        if extra:
            raise _error(path, i, f"unknown key(s) for {opcode}: {', '.join(extra)}")
    return WorkloadSpec(operations=list(ops), path=path, params=params)


class _Generator:
    def __init__(self, workload: WorkloadSpec) -> None:
        self.workload = workload
        self.now = 0.0
        self.counters: dict[str, int] = {}
        self.made = 0

    def reserve(self, index: int, op: Mapping[str, Any], count: int, each: int = 1) -> None:
        """Count `count` × `each` more objects against MAX_OBJECTS before any is made."""
        self.made += count * each
        if self.made > MAX_OBJECTS:
            raise self.error(index, f"the workload would create more than {MAX_OBJECTS} objects",
                             "countParam" if "countParam" in op else "count")

    def arrivals(self, index: int, count: int, interval: float) -> None:
        """The last of `count` arrivals `interval` apart from now stays within Go's longest duration."""
        if count and self.now + (count - 1) * interval > MAX_DURATION_SECONDS:
            raise self.error(index, "puts arrivals past Go's longest duration (about 292 years)",
                             "interval" if interval else "duration")

    def error(self, index: int, message: str, key: str | None = None) -> InputError:
        return _error(self.workload.path, index, message, key)

    def count(self, index: int, op: Mapping[str, Any]) -> int:
        if "countParam" in op:
            ref = op["countParam"]
            name = ref[1:] if isinstance(ref, str) and ref.startswith("$") else ref
            if name not in self.workload.params:
                raise self.error(index, f"no param named {ref!r} in params", "countParam")
            return self.workload.params[name]
        value = op.get("count")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.error(index, f"must be a non-negative integer, got {value!r}", "count")
        return value

    def seconds(self, index: int, op: Mapping[str, Any], key: str) -> float | None:
        if op.get(key) is None:
            return None
        try:
            return parse_duration(op[key])
        except ValueError as exc:
            raise self.error(index, str(exc), key) from None

    def template(self, index: int, op: Mapping[str, Any], prefix: str, default: Manifest) -> Manifest:
        inline, path_key = op.get(f"{prefix}Template"), f"{prefix}TemplatePath"
        if inline is not None and op.get(path_key) is not None:
            raise self.error(index, f"give {prefix}Template or {path_key}, not both")
        if op.get(path_key) is not None:
            file = os.path.join(os.path.dirname(self.workload.path), str(op[path_key]))
            try:
                inline = read_yaml(file)
            except InputError as exc:
                raise self.error(index, f"cannot read {file}: {exc.detail}", path_key) from None
        if inline is None:
            return copy.deepcopy(default)
        if not isinstance(inline, Mapping):
            raise self.error(index, f"must be a manifest (a mapping), got {type(inline).__name__}",
                             f"{prefix}Template")
        merged = _merge(default, inline)
        status = inline.get("status")
        if isinstance(status, Mapping) and "allocatable" in status and "capacity" not in status:
            merged["status"]["capacity"] = copy.deepcopy(merged["status"]["allocatable"])
        return merged

    def name(self, prefix: str) -> str:
        n = self.counters.get(prefix, 0)
        self.counters[prefix] = n + 1
        return f"{prefix}-{n:05d}"

    def stamp(self, template: Manifest, name: str, namespace: str | None, arrival: float,
              duration: float | None) -> Manifest:
        doc = copy.deepcopy(template)
        meta = doc.setdefault("metadata", {})
        meta.pop("generateName", None)
        meta["name"] = name
        if namespace is not None:
            meta["namespace"] = namespace
        annotations = meta.setdefault("annotations", {})
        if arrival > 0:
            annotations[ARRIVAL_ANNOTATION] = format_seconds(arrival)
        if duration is not None:
            annotations[DURATION_ANNOTATION] = format_seconds(duration)
        if not annotations:
            del meta["annotations"]
        return doc

    def run(self) -> Iterator[Manifest]:
        for index, op in enumerate(self.workload.operations):
            opcode = op["opcode"]
            if opcode == "sleep":
                step = self.seconds(index, op, "duration")
                if step is None:
                    raise self.error(index, "is required", "duration")
                self.now += step
                self.arrivals(index, 1, 0.0)
            elif opcode == "createNodes":
                template = self.template(index, op, "node", DEFAULT_NODE)
                prefix = str(op.get("namePrefix") or "node")
                count = self.count(index, op)
                self.reserve(index, op, count)
                for _ in range(count):
                    yield self.stamp(template, self.name(prefix), None, self.now, None)
            elif opcode == "createPods":
                yield from self.pods(index, op)
            else:
                yield from self.groups(index, op)

    def pods(self, index: int, op: Mapping[str, Any]) -> Iterator[Manifest]:
        template = self.template(index, op, "pod", DEFAULT_POD)
        namespace = str(op.get("namespace") or DEFAULT_NAMESPACE)
        interval = self.seconds(index, op, "interval") or 0.0
        duration = self.seconds(index, op, "duration")
        prefix = str(op.get("namePrefix") or "pod")
        count = self.count(index, op)
        self.reserve(index, op, count)
        self.arrivals(index, count, interval)
        for i in range(count):
            yield self.stamp(template, self.name(prefix), namespace, self.now + i * interval, duration)

    def groups(self, index: int, op: Mapping[str, Any]) -> Iterator[Manifest]:
        template = self.template(index, op, "pod", DEFAULT_POD)
        namespace = str(op.get("namespace") or DEFAULT_NAMESPACE)
        interval = self.seconds(index, op, "interval") or 0.0
        duration = self.seconds(index, op, "duration")
        prefix = str(op.get("namePrefix") or "group")
        policy = op.get("policy", "gang")
        if policy not in ("gang", "basic"):
            raise self.error(index, f"unsupported value {policy!r}: gang or basic", "policy")
        min_count = op.get("minCount")
        size = op.get("podsPerGroup", min_count)
        checks = [("minCount", min_count)] if policy == "gang" else []
        for key, value in [*checks, ("podsPerGroup", size)]:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise self.error(index, f"must be a positive integer, got {value!r}", key)
        assert isinstance(size, int)
        if policy == "gang" and isinstance(min_count, int) and min_count > size:
            raise self.error(index, f"podsPerGroup ({size}) is less than minCount ({min_count})", "podsPerGroup")
        count = self.count(index, op)
        self.reserve(index, op, count, size + 1)
        self.arrivals(index, count, interval)
        for g in range(count):
            arrival = self.now + g * interval
            name = self.name(prefix)
            spec: Manifest = {"schedulingPolicy": {"gang": {"minCount": min_count}} if policy == "gang"
                              else {"basic": {}}}
            if op.get("priorityClassName"):
                spec["priorityClassName"] = str(op["priorityClassName"])
            group: Manifest = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                               "metadata": {"name": name, "namespace": namespace}, "spec": spec}
            if arrival > 0:
                group["metadata"]["annotations"] = {ARRIVAL_ANNOTATION: format_seconds(arrival)}
            yield group
            for m in range(size):
                pod = self.stamp(template, f"{name}-{m}", namespace, arrival, duration)
                pod.setdefault("spec", {})["schedulingGroup"] = {"podGroupName": name}
                yield pod


def _merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> Manifest:
    """`override` on top of `base`, merging nested mappings (lists and scalars replace)."""
    out: Manifest = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def format_seconds(seconds: float) -> str:
    """A duration annotation value: `90s`, `1h30m`; fractions of a second as plain seconds (`1.5`)."""
    return format_duration(seconds) if float(seconds).is_integer() else repr(float(seconds))


def generate(workload: WorkloadSpec) -> list[Manifest]:
    """Every manifest the workload creates, in order (nodes, groups before their pods)."""
    return list(_Generator(workload).run())


def to_inputs(manifests: Sequence[Mapping[str, Any]], source: str = "synthetic") -> Inputs:
    """Parse generated manifests straight into simulation Inputs (no YAML text in between)."""
    inputs = Inputs()
    buckets: dict[type, list[Any]] = {Node: inputs.nodes, Pod: inputs.pods, PriorityClass: inputs.priority_classes,
                                      Workload: inputs.workloads, PodGroup: inputs.pod_groups, Job: inputs.jobs,
                                      PodDisruptionBudget: inputs.pdbs}
    for index, doc in enumerate(manifests, start=1):
        kind = doc.get("kind")
        if not isinstance(kind, str) or kind not in KINDS:
            inputs.skipped[str(kind)] += 1
            continue
        parser = KINDS[kind].parse
        try:
            obj = parser(doc, Source(source, index))
        except InputError as exc:
            raise exc.at(file=source, obj=object_name(doc)) from None
        if obj is not None:
            buckets[type(obj)].append(obj)
    resolve(inputs)
    return inputs
