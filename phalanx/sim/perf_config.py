"""Reading kube-scheduler's scheduler_perf configuration files (`performance-config.yaml`) unchanged.

Such a file is a YAML list of test cases. A test case has a `name`, `featureGates`, `labels`, a
`workloadTemplate` (the operations, each with an `opcode`), `workloads` (each with a `name`, `labels`,
`featureGates` and the `params` the operations refer to as `$name`), and optionally `defaultPodTemplatePath`,
`schedulerConfigPath`, and the measurement settings (`metricsCollectorConfig`, thresholds), which are read and
ignored. As scheduler_perf decodes it: keys match the Go field names in any letter case, an unknown key is an
error, and a null value is as good as no key. Params keep JSON's types: every number is a float64 (a Python
float), which matters to the templates (phalanx.sim.go_template).

Only the reading and the checks that need no workload are here; phalanx.sim.scheduler_perf runs a workload.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from phalanx.api.reading import read_yaml
from phalanx.errors import InputError

# The fields of each operation, by the Go struct's field names (scheduler_perf.go, operations.go, dra.go,
# update.go of v1.37.2); phalanx.sim.scheduler_perf says which it runs and which it refuses.
OPERATION_FIELDS: dict[str, tuple[str, ...]] = {
    "allocResourceClaims": ("namespace",),
    "barrier": ("namespaces", "labelSelector", "stageRequirement"),
    "churn": ("mode", "number", "intervalMilliseconds", "namespace", "templatePaths"),
    "createAny": ("namespace", "templatePath", "count", "countParam", "templateParams"),
    "createNamespaces": ("prefix", "count", "countParam", "namespaceTemplatePath"),
    "createNodes": ("count", "countParam", "nodeTemplatePath", "nodeAllocatableStrategy", "labelNodePrepareStrategy",
                    "uniqueNodeLabelStrategy", "templateParams"),
    "createPodGroups": ("namespace", "templatePath", "templateParams", "count", "countParam"),
    "createPodSets": ("count", "countParam", "namespacePrefix", "createPodsOp"),
    "createPods": ("count", "countParam", "countMultiplierParam", "steadyState", "steadyStateParam", "duration",
                   "durationParam", "collectMetrics", "namespace", "podTemplatePath", "skipWaitToCompletion",
                   "persistentVolumeTemplatePath", "persistentVolumeClaimTemplatePath", "templateParams",
                   "signatureBatchSize", "signatureBatchSizeParam"),
    "createResourceClaims": ("count", "countParam", "namespace", "templatePath"),
    "deletePods": ("namespace", "labelSelector", "skipWaitToCompletion", "deletePodsPerSecond"),
    "sleep": ("duration", "durationParam"),
    "startCollectingMetrics": ("name", "namespaces", "labelSelector"),
    "startCollectingProfile": ("type", "filePath"),
    "stopCollectingMetrics": (),
    "stopCollectingProfile": ("type",),
    "updateAny": ("namespace", "templatePath", "count", "countParam", "updatePerSecond", "subresources"),
}
_INTS = {"count", "number", "intervalMilliseconds", "signatureBatchSize", "deletePodsPerSecond", "updatePerSecond"}
_BOOLS = {"steadyState", "collectMetrics", "skipWaitToCompletion"}
_MAPS = {"templateParams", "labelSelector", "nodeAllocatableStrategy", "labelNodePrepareStrategy",
         "uniqueNodeLabelStrategy", "createPodsOp"}
_LISTS = {"namespaces", "templatePaths", "subresources"}
_CASE_FIELDS = ("name", "featureGates", "metricsCollectorConfig", "workloadTemplate", "workloads",
                "schedulerConfigPath", "defaultPodTemplatePath", "labels", "defaultThresholdMetricSelector")
_WORKLOAD_FIELDS = ("name", "params", "labels", "threshold", "thresholdMetricSelector", "featureGates")


@dataclass(frozen=True)
class Operation:
    """One entry of a workloadTemplate: its place in the list, its opcode and its fields by their Go names."""

    index: int
    opcode: str
    fields: Mapping[str, Any]

    @property
    def label(self) -> str:
        return f"workloadTemplate[{self.index}] ({self.opcode})"


@dataclass(frozen=True)
class PerfWorkload:
    name: str
    params: Mapping[str, Any]
    labels: tuple[str, ...]
    feature_gates: Mapping[str, bool]


@dataclass(frozen=True)
class PerfCase:
    name: str
    operations: tuple[Operation, ...]
    workloads: tuple[PerfWorkload, ...]
    labels: tuple[str, ...]
    feature_gates: Mapping[str, bool]
    default_pod_template_path: str | None
    scheduler_config_path: str | None


@dataclass(frozen=True)
class PerfConfig:
    path: str
    cases: tuple[PerfCase, ...]

    def find(self, selector: str) -> tuple[PerfCase, PerfWorkload]:
        """The test case and workload `TESTCASE/WORKLOAD` names."""
        case_name, sep, workload_name = selector.partition("/")
        if not sep or not case_name or not workload_name:
            raise InputError(f"name a workload as TESTCASE/WORKLOAD, got {selector!r}", field="--workload")
        cases = {case.name: case for case in self.cases}
        if case_name not in cases:
            raise InputError(f"no test case named {case_name!r} (it has {_some(cases)}; --list shows them all)",
                             file=self.path, field="--workload")
        case = cases[case_name]
        workloads = {w.name: w for w in case.workloads}
        if workload_name not in workloads:
            raise InputError(f"test case {case_name} has no workload named {workload_name!r} (it has "
                             f"{_some(workloads)})", file=self.path, field="--workload")
        return case, workloads[workload_name]

    def listing(self) -> list[tuple[str, tuple[str, ...]]]:
        """Every `TESTCASE/WORKLOAD` with its labels (the test case's, then the workload's), in file order."""
        return [(f"{case.name}/{w.name}", (*case.labels, *w.labels)) for case in self.cases for w in case.workloads]


def _some(names: Mapping[str, Any]) -> str:
    shown = list(names)[:8]
    return ", ".join(shown) + (f" and {len(names) - len(shown)} more" if len(names) > len(shown) else "")


def is_perf_config(raw: Any) -> bool:
    """A scheduler_perf configuration is a YAML list (of test cases); Phalanx's own workload file a mapping."""
    return isinstance(raw, list)


def jsonish(value: Any) -> Any:
    """A YAML value as scheduler_perf sees it after YAML → JSON → `any`: numbers are float64, keys strings."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, Mapping):
        return {_key(k): jsonish(v) for k, v in value.items()}
    if isinstance(value, list):
        return [jsonish(v) for v in value]
    if isinstance(value, datetime.date):
        return value.isoformat()
    return str(value)


def _key(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


class _Reader:
    def __init__(self, path: str) -> None:
        self.path = path

    def error(self, where: str | None, message: str, key: str | None = None) -> InputError:
        return InputError(message, file=self.path, obj=where, field=key)

    def fields(self, raw: Any, known: Sequence[str], where: str, what: str) -> dict[str, Any]:
        """`raw`'s keys matched to `known` in any letter case, as Go's JSON decoder matches them; null values
        dropped; an unknown key is an error."""
        if not isinstance(raw, Mapping):
            raise self.error(where, f"{what} is a mapping, got {type(raw).__name__}")
        by_lower = {name.lower(): name for name in known}
        out: dict[str, Any] = {}
        unknown = []
        for key, value in raw.items():
            name = by_lower.get(str(key).lower())
            if name is None:
                unknown.append(str(key))
            elif value is not None:
                out[name] = value
        if unknown:
            raise self.error(where, f"unknown field(s) {', '.join(unknown)}: {what} has "
                                    f"{', '.join(known) if known else 'no other field'}")
        return out

    def typed(self, where: str, key: str, value: Any) -> Any:
        if key in _INTS:
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            if isinstance(value, bool) or not isinstance(value, int):
                raise self.error(where, f"must be an integer, got {value!r}", key)
        elif key in _BOOLS:
            if not isinstance(value, bool):
                raise self.error(where, f"must be true or false, got {value!r}", key)
        elif key in _MAPS:
            if not isinstance(value, Mapping):
                raise self.error(where, f"must be a mapping, got {type(value).__name__}", key)
        elif key in _LISTS:
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise self.error(where, "must be a list of strings", key)
        elif not isinstance(value, str):
            raise self.error(where, f"must be a string, got {value!r}", key)
        return value

    def operation(self, raw: Any, index: int, case: str) -> Operation:
        where = f"{case}: workloadTemplate[{index}]"
        opcode_key = next((k for k in raw if str(k).lower() == "opcode"), None) if isinstance(raw, Mapping) else None
        if opcode_key is None:
            raise self.error(where, "an operation is a mapping with an opcode")
        opcode = raw[opcode_key]
        if opcode not in OPERATION_FIELDS:
            raise self.error(where, f"unknown opcode {opcode!r} (scheduler_perf's are "
                                    f"{', '.join(sorted(OPERATION_FIELDS))})", "opcode")
        where = f"{case}: workloadTemplate[{index}] ({opcode})"
        fields = self.fields(raw, ("opcode", *OPERATION_FIELDS[opcode]), where, f"a {opcode} operation")
        del fields["opcode"]
        for key, value in fields.items():
            fields[key] = self.typed(where, key, value)
        if "createPodsOp" in fields:
            nested = dict(fields["createPodsOp"])
            nested.setdefault("opcode", "createPods")
            inner = self.operation(nested, index, case)
            if inner.opcode != "createPods":
                raise self.error(where, "must be a createPods operation", "createPodsOp.opcode")
            fields["createPodsOp"] = inner
        return Operation(index, opcode, fields)

    def labels(self, raw: Any, where: str) -> tuple[str, ...]:
        if raw is None:
            return ()
        if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
            raise self.error(where, "must be a list of strings", "labels")
        return tuple(raw)

    def gates(self, raw: Any, where: str) -> dict[str, bool]:
        if raw is None:
            return {}
        if not isinstance(raw, Mapping) or not all(isinstance(v, bool) for v in raw.values()):
            raise self.error(where, "must map feature gate names to true or false", "featureGates")
        return {str(k): bool(v) for k, v in raw.items()}

    def workload(self, raw: Any, index: int, case: str) -> PerfWorkload:
        where = f"{case}: workloads[{index}]"
        fields = self.fields(raw, _WORKLOAD_FIELDS, where, "a workload")
        name = fields.get("name")
        if not isinstance(name, str) or not name:
            raise self.error(where, "a workload needs a name", "name")
        where = f"{case}/{name}"
        params = fields.get("params") or {}
        if not isinstance(params, Mapping):
            raise self.error(where, f"must be a mapping of names to values, got {type(params).__name__}", "params")
        return PerfWorkload(name, jsonish(params), self.labels(fields.get("labels"), where),
                            self.gates(fields.get("featureGates"), where))

    def case(self, raw: Any, index: int) -> PerfCase:
        where = f"test case {index}"
        fields = self.fields(raw, _CASE_FIELDS, where, "a test case")
        name = fields.get("name")
        if not isinstance(name, str) or not name:
            raise self.error(where, "a test case needs a name", "name")
        ops, workloads = fields.get("workloadTemplate"), fields.get("workloads")
        if not isinstance(ops, list) or not ops:
            raise self.error(name, "no ops defined: must be a non-empty list of operations", "workloadTemplate")
        if not isinstance(workloads, list) or not workloads:
            raise self.error(name, "no workloads defined: must be a non-empty list", "workloads")
        parsed = tuple(self.workload(w, i, name) for i, w in enumerate(workloads))
        seen: set[str] = set()
        for i, w in enumerate(parsed):
            if w.name in seen:
                raise self.error(f"{name}: workloads[{i}]", f"workload name {w.name} is not unique", "name")
            seen.add(w.name)
        paths = {}
        for key in ("defaultPodTemplatePath", "schedulerConfigPath"):
            value = fields.get(key)
            if value is not None and not isinstance(value, str):
                raise self.error(name, f"must be a path, got {value!r}", key)
            paths[key] = value
        return PerfCase(name, tuple(self.operation(op, i, name) for i, op in enumerate(ops)), parsed,
                        self.labels(fields.get("labels"), name), self.gates(fields.get("featureGates"), name),
                        paths["defaultPodTemplatePath"], paths["schedulerConfigPath"])


def parse_perf_config(raw: Any, path: str) -> PerfConfig:
    """A scheduler_perf configuration from its parsed YAML (a list of test cases) read from `path`."""
    reader = _Reader(path)
    if not isinstance(raw, list) or not raw:
        raise reader.error(None, "no test cases defined: a scheduler_perf configuration is a non-empty list")
    cases = tuple(reader.case(case, i) for i, case in enumerate(raw))
    seen: set[str] = set()
    for case in cases:
        if case.name in seen:
            raise reader.error(case.name, "name is not unique", "name")
        seen.add(case.name)
    return PerfConfig(path, cases)


def load_perf_config(path: str) -> PerfConfig:
    """Read a scheduler_perf `performance-config.yaml`."""
    return parse_perf_config(read_yaml(path), path)


def relative_to(config_path: str, path: str) -> str:
    """A path in the configuration as scheduler_perf opens it: relative to the configuration's folder (its
    tests run there), so `templates/x.yaml` and `../templates/x.yaml` work from anywhere."""
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(os.path.dirname(config_path), path))
