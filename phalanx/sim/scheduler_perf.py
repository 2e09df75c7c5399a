"""Running one workload of a kube-scheduler scheduler_perf configuration into the manifests Phalanx simulates.

scheduler_perf runs a test case's operations one after another against a real API server, with the
workload's params filled in. Here each operation creates the same objects, in the same order, as manifests;
where scheduler_perf would wait, later objects get a later `phalanx.dev/arrival`:

- `createNodes`: `count` (or `countParam`) nodes from `nodeTemplatePath` (rendered with `.Index`, `.Count` and
  `templateParams`), else scheduler_perf's built-in node (4 cpu, 32Gi, 110 pods, named `node-OP-…`); each
  gets the `kubernetes.io/hostname` label of its name. `labelNodePrepareStrategy` labels them round-robin,
  `uniqueNodeLabelStrategy` with a value unique to the node (a UUID derived from its name, not a random
  one), `nodeAllocatableStrategy` sets allocatable values and makes the CSINode objects it describes.
- `createNamespaces`: Namespaces `PREFIX-0` … (`namespaceTemplatePath` gives their labels).
- `createPods`: `count` pods (times `countMultiplierParam`) in `namespace` (default `namespace-OP`, OP the
  operation's place once `createPodSets` are unrolled) from `podTemplatePath` (default: the test case's
  `defaultPodTemplatePath`, else scheduler_perf's built-in pod of 100m cpu and 500Mi), labelled `signature`
  as scheduler_perf labels them. scheduler_perf then waits until they are scheduled (unless
  `skipWaitToCompletion`): the operations after it start SETTLE_SECONDS later.
- `createPodSets`: that createPods once in each namespace `namespacePrefix-0` … .
- `createPodGroups`: PodGroups in `namespace` from `templatePath` (`.Index` and `templateParams`).
- `createAny`: `count` objects of any kind from `templatePath`, in `namespace` if given.
- `createResourceClaims`: `count` copies of the ResourceClaim in `templatePath` (not a template).
- `churn` with `mode: create`: the objects of `templatePaths` (not templates) once every
  `intervalMilliseconds` (default 500), first one interval after the operation, `number` times or, without
  one, until the workload ends (in the generated timeline: SETTLE_SECONDS after the last operation waited on).
- `barrier`: waits for the pods created with `skipWaitToCompletion` (in `namespaces`, or all): if there are
  any, later operations start SETTLE_SECONDS later.
- `sleep`: later operations start `duration` (or `durationParam`) later.
- `startCollectingMetrics`, `stopCollectingMetrics`, `startCollectingProfile`, `stopCollectingProfile`:
  measurements, which create nothing.

Refused, each with an error naming it: `churn` with `mode: recreate`, `deletePods`, `updateAny` and
`createPods` with `steadyState` delete or change objects while the workload runs, which manifests with arrival
times cannot say; `allocResourceClaims`, when there are claims to allocate (without any it does nothing, as
upstream), allocates them with DRA's allocator on nodes it picks at random, outside any scheduler; `createPods`
with persistent volume templates needs volumes, which Phalanx does not model.

Names: an object with `metadata.generateName` gets that prefix and a five-digit serial number (the API server
adds five random characters), so the output is the same on every run. As in scheduler_perf, an object created
twice is an error. Params no operation reads are reported (`unused_params`) rather than refused: scheduler_perf
fails such a workload unless its Go test code reads them through a hook, which Phalanx does not run.
"""

from __future__ import annotations

import copy
import math
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from phalanx.api.fast_yaml import GiveUp, read_documents
from phalanx.api.objects import ARRIVAL_ANNOTATION
from phalanx.api.quantity import MAX_DURATION_SECONDS, parse_duration
from phalanx.api.reading import check_nesting, read_text
from phalanx.errors import InputError
from phalanx.sim.go_template import Template, parse_template
from phalanx.sim.perf_config import Operation, PerfCase, PerfConfig, PerfWorkload, jsonish, relative_to
from phalanx.sim.perf_funcs import FUNCS
from phalanx.sim.synthetic import MAX_OBJECTS, format_seconds

Manifest = dict[str, Any]
# How long an operation scheduler_perf waits on (pods until scheduled) is taken to last. Phalanx schedules at the
# instant pods arrive; a minute also covers the longest pod backoff (10s) and a preemption victim's default 30s
# grace period, so what scheduler_perf would have scheduled is bound before the next operation's objects arrive.
SETTLE_SECONDS = 60.0
HOSTNAME_LABEL = "kubernetes.io/hostname"
MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_REFUSED = {
    "deletePods": "it deletes pods while the workload runs, which manifests with arrival times cannot say",
    "updateAny": "it changes objects while the workload runs, which manifests with arrival times cannot say",
    "allocResourceClaims": "it allocates the ResourceClaims created before it with DRA's allocator on nodes it "
                           "picks at random, outside any scheduler",
}
_NO_OBJECTS = {"startCollectingMetrics", "stopCollectingMetrics", "startCollectingProfile", "stopCollectingProfile"}
# Kinds the API server keeps outside namespaces (the rest that templates create live in one).
_CLUSTER_SCOPED = {"Node", "Namespace", "PriorityClass", "DeviceClass", "ResourceSlice", "DeviceTaintRule",
                   "PersistentVolume", "StorageClass", "CSINode", "CSIDriver", "VolumeAttachment", "RuntimeClass",
                   "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "IngressClass",
                   "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy",
                   "MutatingAdmissionPolicyBinding", "ValidatingWebhookConfiguration",
                   "MutatingWebhookConfiguration", "APIService", "CertificateSigningRequest", "ClusterTrustBundle"}
_NAMESPACED = {"Pod", "Service", "ResourceClaim", "ResourceClaimTemplate", "PodGroup", "Workload", "ConfigMap",
               "Secret", "PersistentVolumeClaim", "Job", "CronJob", "Deployment", "ReplicaSet", "StatefulSet",
               "DaemonSet", "PodDisruptionBudget", "Endpoints", "EndpointSlice", "ServiceAccount", "LimitRange",
               "ResourceQuota", "Role", "RoleBinding", "Lease", "Event", "HorizontalPodAutoscaler",
               "CompositePodGroup"}


def _default_node(prefix: str) -> Manifest:
    """scheduler_perf's built-in node (makeBaseNode), named PREFIX + five characters."""
    resources = {"pods": "110", "cpu": "4", "memory": "32Gi"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"generateName": prefix},
            "status": {"capacity": dict(resources), "allocatable": dict(resources), "phase": "Running",
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def _default_pod() -> Manifest:
    """scheduler_perf's built-in pod (makeBasePod): one pause container of 100m cpu and 500Mi."""
    resources = {"cpu": "100m", "memory": "500Mi"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "pod-"},
            "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10.2",
                                     "ports": [{"containerPort": 80}],
                                     "resources": {"limits": dict(resources), "requests": dict(resources)}}]}}


@dataclass(frozen=True)
class PerfWorkloadManifests:
    """What one workload of a scheduler_perf configuration creates, and how scheduler_perf runs it."""

    selector: str  # TESTCASE/WORKLOAD
    manifests: list[Manifest]
    feature_gates: dict[str, bool]  # the test case's, overridden by the workload's
    scheduler_config: str | None  # the scheduler configuration file, relative to the working directory
    unused_params: tuple[str, ...]  # params no operation reads (scheduler_perf's Go hooks may read them)


@dataclass
class _Churn:
    op: Operation
    start: float
    interval: int  # milliseconds
    rounds: int  # 0: until the workload ends
    namespace: str
    objects: list[Manifest]


class _Run:
    def __init__(self, config: PerfConfig, case: PerfCase, workload: PerfWorkload) -> None:
        self.config, self.case, self.workload = config, case, workload
        self.clock = 0.0
        self.out: list[Manifest] = []
        self.made = 0
        self.created: set[tuple[str, str, str]] = set()  # kind, namespace, name
        self.serials: dict[tuple[str, str, str], int] = {}
        self.namespaces: set[str] = set()
        self.unwaited: dict[str, int] = {}  # namespace -> pods created with skipWaitToCompletion, not waited on
        self.used: set[str] = set()
        self.templates: dict[str, Template] = {}
        self.churns: list[_Churn] = []

    # --- errors, params, counts ---

    def where(self, op: Operation) -> str:
        return f"{self.case.name}/{self.workload.name}: {op.label}"

    def error(self, op: Operation, message: str, key: str | None = None) -> InputError:
        return InputError(message, file=self.config.path, obj=self.where(op), field=key)

    def param(self, op: Operation, key: str) -> tuple[str, Any]:
        ref = op.fields[key]
        if not ref.startswith("$") or len(ref) == 1:
            raise self.error(op, f"must name a param as $NAME, got {ref!r}", key)
        name = ref[1:]
        self.used.add(name)
        if name not in self.workload.params:
            raise self.error(op, f"parameter {name} is undefined: workload {self.workload.name} has no such param "
                                 f"(it has {', '.join(self.workload.params) or 'none'})", key)
        return name, self.workload.params[name]

    def int_param(self, op: Operation, key: str) -> int:
        name, value = self.param(op, key)
        if isinstance(value, bool) or not isinstance(value, float):
            raise self.error(op, f"parameter {name} has the wrong type: {value!r} is not a number", key)
        if not math.isfinite(value) or abs(value) >= 2**63:
            raise self.error(op, f"parameter {name} is not a count: {value!r}", key)
        return math.trunc(value)

    def count(self, op: Operation, default: int = 0) -> int:
        if "countParam" in op.fields:
            count, key = self.int_param(op, "countParam"), "countParam"
        else:
            count, key = op.fields.get("count", default), "count"
        if count < 0:
            raise self.error(op, f"invalid count {count}: must not be negative", key)
        return count

    def reserve(self, op: Operation, count: int, key: str = "count") -> None:
        self.made += count
        if self.made > MAX_OBJECTS:
            raise self.error(op, f"the workload would create more than {MAX_OBJECTS} objects", key)

    def template_params(self, op: Operation) -> dict[str, Any]:
        """`templateParams` with each `$name` (or `$name|default`, the default read as YAML) replaced by the
        workload's param."""
        resolved: dict[str, Any] = {}
        for key, value in (op.fields.get("templateParams") or {}).items():
            resolved[str(key)] = jsonish(value)
            if not (isinstance(value, str) and value.startswith("$")):
                continue
            name, sep, default = value[1:].partition("|")
            if sep and not name:
                name, sep = value[1:], ""
            if name in self.workload.params:
                self.used.add(name)
                resolved[str(key)] = self.workload.params[name]
            elif sep:
                try:
                    resolved[str(key)] = jsonish(yaml.load(default, Loader=_LOADER))
                except yaml.YAMLError:
                    raise self.error(op, f"the default of ${name} is not YAML: {default!r}",
                                     f"templateParams.{key}") from None
            else:
                raise self.error(op, f"parameter {name} not found: workload {self.workload.name} has no such param",
                                 f"templateParams.{key}")
        return resolved

    def advance(self, op: Operation, seconds: float, key: str | None = None) -> None:
        self.clock += seconds
        if self.clock > MAX_DURATION_SECONDS:
            raise self.error(op, "puts arrivals past Go's longest duration (about 292 years)", key)

    # --- templates and objects ---

    def path(self, op: Operation, key: str, value: str | None = None) -> str:
        raw = op.fields[key] if value is None else value
        if not raw:
            raise self.error(op, "must be set", key)
        return relative_to(self.config.path, raw)

    def read(self, op: Operation, key: str, path: str) -> str:
        try:
            return read_text(path)
        except InputError as exc:
            raise self.error(op, f"cannot read {path}: {exc.detail}", key) from None

    def template(self, op: Operation, key: str, path: str) -> Template:
        if path not in self.templates:
            text = self.read(op, key, path)
            try:
                self.templates[path] = parse_template(text, path, FUNCS)
            except InputError as exc:
                raise InputError(f"{exc.detail} (the {key} of {self.where(op)})", file=exc.file, obj=exc.obj,
                                 field=exc.field) from None
        return self.templates[path]

    def document(self, op: Operation, key: str, path: str, text: str, index: int | None) -> Manifest:
        """The one object `text` (read or rendered from `path`) holds."""
        at = "" if index is None else f" (rendered for Index {index} of {self.where(op)})"
        try:
            check_nesting(text, file=path)
            try:
                docs = read_documents(text)
            except GiveUp:
                docs = list(yaml.load_all(text, Loader=_LOADER))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = f"line {mark.line + 1}{' of the rendered text' if index is not None else ''}" if mark else None
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise InputError(f"invalid YAML: {problem}{at}", file=path, obj=line) from None
        except InputError as exc:
            raise InputError(exc.detail + at, file=path, obj=exc.obj, field=exc.field) from None
        docs = [doc for doc in docs if doc is not None]
        if len(docs) != 1 or not isinstance(docs[0], dict):
            raise self.error(op, f"{path} must hold one object, got {len(docs)} document(s)"
                                 f"{'' if index is None else f' for Index {index}'}", key)
        return docs[0]

    def render(self, op: Operation, key: str, path: str, env: dict[str, Any], index: int) -> Manifest:
        template = self.template(op, key, path)
        try:
            text = template.render(env)
        except InputError as exc:
            raise InputError(f"{exc.detail} (rendering Index {index} for {self.where(op)})", file=exc.file,
                             obj=exc.obj, field=exc.field) from None
        return self.document(op, key, path, text, index)

    def plain(self, op: Operation, key: str, path: str) -> Manifest:
        """An object file scheduler_perf reads without rendering it."""
        return self.document(op, key, path, self.read(op, key, path), None)

    def name(self, op: Operation, doc: Manifest, namespace: str) -> str:
        meta = doc.get("metadata")
        if not isinstance(meta, dict):
            raise self.error(op, f"a {doc.get('kind')} needs metadata.name or metadata.generateName")
        name, prefix = meta.get("name"), meta.pop("generateName", None)
        if isinstance(name, str) and name:
            return name
        if not isinstance(prefix, str) or not prefix:
            raise self.error(op, f"a {doc.get('kind')} needs metadata.name or metadata.generateName")
        base = prefix[:58]  # the API server's room for the five characters it adds
        key = (str(doc.get("kind")), namespace, base)
        while True:
            serial = self.serials.get(key, 0)
            self.serials[key] = serial + 1
            candidate = f"{base}{serial:05d}"
            if (key[0], namespace, candidate) not in self.created:
                meta["name"] = candidate
                return candidate

    def emit(self, op: Operation, doc: Manifest, namespace: str | None, arrival: float,
             repeat_ok: bool = False) -> str | None:
        """Add `doc` (in `namespace`, arriving at `arrival`); its name, or None when `repeat_ok` and an object of
        that name exists (scheduler_perf's create then fails and it goes on)."""
        meta = doc.setdefault("metadata", {})
        if namespace is not None:
            given = meta.get("namespace") if isinstance(meta, dict) else None
            if given not in (None, namespace):
                raise self.error(op, f"the {doc.get('kind')} template says namespace {given}, the operation "
                                     f"{namespace}: the API server refuses that")
        name = self.name(op, doc, namespace or "")
        key = (str(doc.get("kind")), namespace or "", name)
        if key in self.created:
            if repeat_ok:
                return None
            shown = f"{namespace}/{name}" if namespace else name
            raise self.error(op, f"creates {doc.get('kind')} {shown}, which already exists: names must be unique")
        self.created.add(key)
        rest = {k: v for k, v in meta.items() if k not in ("name", "namespace")}
        meta.clear()
        meta["name"] = name
        if namespace is not None:
            meta["namespace"] = namespace
        meta.update(rest)
        if arrival > 0:
            annotations = meta.get("annotations")
            if not isinstance(annotations, dict):
                annotations = meta["annotations"] = {}
            annotations[ARRIVAL_ANNOTATION] = format_seconds(arrival)
        self.out.append(doc)
        return name

    def ensure_namespace(self, op: Operation, namespace: str, key: str = "namespace") -> None:
        if not namespace:
            raise self.error(op, "must not be empty", key)
        if namespace not in self.namespaces:
            self.namespaces.add(namespace)
            self.emit(op, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}, None,
                      self.clock, repeat_ok=True)

    # --- operations ---

    def run(self) -> list[Manifest]:
        position = 0  # the operation's place once createPodSets are unrolled (scheduler_perf's opIndex)
        for op in self.case.operations:
            if op.opcode == "createPodSets":
                inner, prefix = op.fields.get("createPodsOp"), op.fields.get("namespacePrefix", "")
                if not isinstance(inner, Operation):
                    raise self.error(op, "must be set", "createPodsOp")
                sets = self.count(op)
                self.reserve(op, sets, "countParam" if "countParam" in op.fields else "count")  # their namespaces
                for i in range(sets):
                    fields = {**inner.fields, "namespace": f"{prefix}-{i}"}
                    self.create_pods(Operation(op.index, "createPods", fields), position)
                    position += 1
                continue
            self.operation(op, position)
            position += 1
        self.expand_churns()
        return self.out

    def operation(self, op: Operation, position: int) -> None:
        if op.opcode == "allocResourceClaims" and not self.unallocated_claims(op.fields.get("namespace", "")):
            return  # nothing to allocate: scheduler_perf's allocator has nothing to do either
        if op.opcode in _REFUSED:
            raise self.error(op, f"{op.opcode} is not supported: {_REFUSED[op.opcode]}", "opcode")
        if op.opcode in _NO_OBJECTS:
            return
        handlers = {"createNodes": self.create_nodes, "createNamespaces": self.create_namespaces,
                    "createPods": self.create_pods, "createPodGroups": self.create_pod_groups,
                    "createAny": self.create_any, "createResourceClaims": self.create_claims,
                    "churn": self.churn, "barrier": self.barrier, "sleep": self.sleep}
        handlers[op.opcode](op, position)

    def unallocated_claims(self, namespace: str) -> int:
        """The ResourceClaims created so far (in `namespace`, or anywhere when empty) without an allocation."""
        return sum(1 for doc in self.out if doc.get("kind") == "ResourceClaim"
                   and (not namespace or doc["metadata"].get("namespace") == namespace)
                   and not (isinstance(doc.get("status"), dict) and doc["status"].get("allocation")))

    def create_nodes(self, op: Operation, position: int) -> None:
        count = self.count(op)
        strategies = [key for key in ("nodeAllocatableStrategy", "labelNodePrepareStrategy", "uniqueNodeLabelStrategy")
                      if key in op.fields]
        strategy = strategies[0] if strategies else None  # scheduler_perf takes the first of them, in this order
        csi = strategy == "nodeAllocatableStrategy" and bool(op.fields[strategy].get("csiNodeAllocatable"))
        self.reserve(op, count * (2 if csi else 1), "countParam" if "countParam" in op.fields else "count")
        params = self.template_params(op)
        path = self.path(op, "nodeTemplatePath") if "nodeTemplatePath" in op.fields else None
        for i in range(count):
            if path is None:
                doc = _default_node(f"node-{position}-")
            else:
                doc = self.render(op, "nodeTemplatePath", path, {**params, "Index": i, "Count": count}, i)
            doc["apiVersion"], doc["kind"] = "v1", "Node"
            name = self.name(op, doc, "")
            labels = doc["metadata"].get("labels")
            if not isinstance(labels, dict):
                labels = doc["metadata"]["labels"] = {}
            labels[HOSTNAME_LABEL] = name
            extra = self.prepare_node(op, strategy, doc, name, i) if strategy else None
            self.emit(op, doc, None, self.clock)
            if extra is not None:
                self.emit(op, extra, None, self.clock)

    def prepare_node(self, op: Operation, strategy: str, node: Manifest, name: str, i: int) -> Manifest | None:
        """Apply a node preparation strategy; the CSINode it makes, if any."""
        spec = op.fields[strategy]
        labels = node["metadata"]["labels"]
        if strategy == "labelNodePrepareStrategy":
            fields = self.strategy_fields(op, strategy, spec, ("labelKey", "labelValues"))
            values = fields.get("labelValues")
            if not isinstance(values, list) or not values or not isinstance(fields.get("labelKey"), str):
                raise self.error(op, "needs a labelKey and a non-empty list of labelValues", strategy)
            labels[fields["labelKey"]] = str(values[i % len(values)])
            return None
        if strategy == "uniqueNodeLabelStrategy":
            fields = self.strategy_fields(op, strategy, spec, ("labelKey",))
            if not isinstance(fields.get("labelKey"), str):
                raise self.error(op, "needs a labelKey", strategy)
            labels[fields["labelKey"]] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"phalanx:node:{name}"))
            return None
        fields = self.strategy_fields(op, strategy, spec, ("nodeAllocatable", "csiNodeAllocatable", "migratedPlugins"))
        for key, kind, what in (("nodeAllocatable", Mapping, "mapping"), ("csiNodeAllocatable", Mapping, "mapping"),
                                ("migratedPlugins", list, "list")):
            if fields.get(key) is not None and not isinstance(fields[key], kind):
                raise self.error(op, f"{key} must be a {what}", strategy)
        status = node.setdefault("status", {})
        allocatable = status.get("allocatable")
        if not isinstance(allocatable, dict):  # the API server defaults allocatable to capacity
            allocatable = status["allocatable"] = dict(status.get("capacity") or {})
        for resource, value in (fields.get("nodeAllocatable") or {}).items():
            allocatable[str(resource)] = str(value)
        drivers = fields.get("csiNodeAllocatable") or {}
        if not drivers:
            return None
        return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                "metadata": {"name": name,
                             "annotations": {MIGRATED_PLUGINS: ",".join(fields.get("migratedPlugins") or [])}},
                "spec": {"drivers": [{"name": str(driver), "allocatable": drivers[driver], "nodeID": name}
                                     for driver in sorted(drivers)]}}

    def strategy_fields(self, op: Operation, strategy: str, spec: Mapping[str, Any],
                        known: tuple[str, ...]) -> dict[str, Any]:
        by_lower = {k.lower(): k for k in known}
        out: dict[str, Any] = {}
        for key, value in spec.items():
            if str(key).lower() not in by_lower:
                raise self.error(op, f"unknown field {key}: it has {', '.join(known)}", strategy)
            out[by_lower[str(key).lower()]] = value
        return out

    def create_namespaces(self, op: Operation, position: int) -> None:
        count = self.count(op)
        self.reserve(op, count)
        base: Manifest = {"apiVersion": "v1", "kind": "Namespace", "metadata": {}}
        if "namespaceTemplatePath" in op.fields:
            base = self.plain(op, "namespaceTemplatePath", self.path(op, "namespaceTemplatePath"))
        prefix = op.fields.get("prefix", "")
        for i in range(count):
            doc = copy.deepcopy(base)
            doc["apiVersion"], doc["kind"] = "v1", "Namespace"
            meta = doc.get("metadata")
            if not isinstance(meta, dict):
                meta = doc["metadata"] = {}
            meta.pop("generateName", None)
            meta["name"] = f"{prefix}-{i}"
            self.namespaces.add(meta["name"])
            self.emit(op, doc, None, self.clock, repeat_ok=True)  # scheduler_perf accepts one that exists

    def create_pods(self, op: Operation, position: int) -> None:
        fields = op.fields
        steady = fields.get("steadyState", False)
        if "steadyStateParam" in fields:
            name, steady = self.param(op, "steadyStateParam")
            if not isinstance(steady, bool):
                raise self.error(op, f"parameter {name} has the wrong type: {steady!r} is not true or false",
                                 "steadyStateParam")
        if steady:
            raise self.error(op, "steadyState is not supported: it deletes each pod once scheduled and creates "
                                 "another for a duration, which manifests with arrival times cannot say",
                             "steadyStateParam" if "steadyStateParam" in fields else "steadyState")
        for key in ("persistentVolumeTemplatePath", "persistentVolumeClaimTemplatePath"):
            if key in fields:
                raise self.error(op, "persistent volumes are not supported: Phalanx does not model volumes", key)
        skip = fields.get("skipWaitToCompletion", False)
        if skip and fields.get("collectMetrics", False):
            raise self.error(op, "collectMetrics and skipWaitToCompletion cannot be true at the same time",
                             "skipWaitToCompletion")
        if "durationParam" in fields:
            name, text = self.param(op, "durationParam")
            try:
                parse_duration(text if isinstance(text, str) else None)
            except ValueError as exc:
                raise self.error(op, f"parameter {name}: {exc}", "durationParam") from None
        count = self.count(op)
        if "countMultiplierParam" in fields:
            count *= self.int_param(op, "countMultiplierParam")
            if count < 0:
                raise self.error(op, f"invalid count {count}: must not be negative", "countMultiplierParam")
        batch = (self.int_param(op, "signatureBatchSizeParam") if "signatureBatchSizeParam" in fields
                 else fields.get("signatureBatchSize", 0))
        if batch < 0:
            raise self.error(op, f"invalid signature batch size {batch}", "signatureBatchSize")
        batch = batch or 1
        self.reserve(op, count, "countParam" if "countParam" in fields else "count")
        namespace = fields.get("namespace", f"namespace-{position}")
        self.ensure_namespace(op, namespace)
        params = self.template_params(op)
        raw_path = fields.get("podTemplatePath", self.case.default_pod_template_path)
        path = self.path(op, "podTemplatePath", raw_path) if raw_path is not None else None
        for i in range(count):
            if path is None:
                doc = _default_pod()
            else:
                doc = self.render(op, "podTemplatePath", path, {**params, "Index": i, "Count": count}, i)
                meta = doc.get("metadata")
                if not isinstance(meta, dict):
                    meta = doc["metadata"] = {}
                labels = meta.get("labels")
                if not isinstance(labels, dict):
                    labels = meta["labels"] = {}
                labels["signature"] = f"signature-label-{i // batch}"
            doc["apiVersion"], doc["kind"] = "v1", "Pod"
            self.emit(op, doc, namespace, self.clock)
        if skip:
            self.unwaited[namespace] = self.unwaited.get(namespace, 0) + count
        elif count:
            self.unwaited.pop(namespace, None)
            self.advance(op, SETTLE_SECONDS)

    def create_pod_groups(self, op: Operation, position: int) -> None:
        if "templatePath" not in op.fields:
            raise self.error(op, "templatePath must be set", "templatePath")
        namespace, path = op.fields.get("namespace", ""), self.path(op, "templatePath")
        if not namespace:
            raise self.error(op, "namespace must be set", "namespace")
        count = self.count(op)
        if count < 1:
            raise self.error(op, f"count must be greater than 0, got {count}",
                             "countParam" if "countParam" in op.fields else "count")
        self.reserve(op, count)
        self.ensure_namespace(op, namespace)
        params = self.template_params(op)
        for i in range(count):
            doc = self.render(op, "templatePath", path, {**params, "Index": i}, i)
            doc["apiVersion"], doc["kind"] = "scheduling.k8s.io/v1beta1", "PodGroup"
            self.emit(op, doc, namespace, self.clock)

    def create_any(self, op: Operation, position: int) -> None:
        if "templatePath" not in op.fields:
            raise self.error(op, "templatePath must be set", "templatePath")
        path = self.path(op, "templatePath")
        count = self.count(op, default=1)
        self.reserve(op, count)
        namespace = op.fields.get("namespace") or None
        if namespace is not None:
            self.ensure_namespace(op, namespace)
        params = self.template_params(op)
        for i in range(count):
            doc = self.render(op, "templatePath", path, {**params, "Index": i, "Count": count}, i)
            self.emit(op, doc, self.scope(op, doc, namespace, path), self.clock)

    def scope(self, op: Operation, doc: Manifest, namespace: str | None, path: str) -> str | None:
        """The namespace `doc` goes in: the operation's, checked against its kind's scope as the API server does."""
        kind, version = doc.get("kind"), doc.get("apiVersion")
        if not isinstance(kind, str) or not kind or not isinstance(version, str) or not version:
            raise self.error(op, f"{path}: an object needs apiVersion and kind")
        if namespace is not None and kind in _CLUSTER_SCOPED:
            raise self.error(op, f"namespace {namespace} set for {path}, but {kind} is cluster-scoped", "namespace")
        if namespace is None and kind in _NAMESPACED:
            raise self.error(op, f"namespace not set for {path}, but {kind} is namespaced", "namespace")
        return namespace

    def create_claims(self, op: Operation, position: int) -> None:
        namespace = op.fields.get("namespace", "")
        if not namespace:
            raise self.error(op, "namespace must be set", "namespace")
        if "templatePath" not in op.fields:
            raise self.error(op, "templatePath must be set", "templatePath")
        count = self.count(op)
        self.reserve(op, count)
        self.ensure_namespace(op, namespace)
        claim = self.plain(op, "templatePath", self.path(op, "templatePath"))
        for _ in range(count):
            doc = copy.deepcopy(claim)
            doc["apiVersion"], doc["kind"] = "resource.k8s.io/v1", "ResourceClaim"
            self.emit(op, doc, namespace, self.clock)

    def churn(self, op: Operation, position: int) -> None:
        mode, number = op.fields.get("mode"), op.fields.get("number", 0)
        if mode not in ("create", "recreate"):
            raise self.error(op, f"invalid mode {mode!r}: create or recreate", "mode")
        if number < 0:
            raise self.error(op, f"number ({number}) cannot be negative", "number")
        if mode == "recreate":
            raise self.error(op, "churn with mode recreate is not supported: it deletes the objects it creates "
                                 "while the workload runs, which manifests with arrival times cannot say "
                                 "(mode create is)", "mode")
        interval = op.fields.get("intervalMilliseconds", 0) or 500
        if interval < 0:
            raise self.error(op, f"must be positive, got {interval}", "intervalMilliseconds")
        paths = op.fields.get("templatePaths") or []
        if not paths:
            raise self.error(op, "at least one template file needs to be given", "templatePaths")
        namespace = op.fields.get("namespace", f"namespace-{position}")
        self.ensure_namespace(op, namespace)
        objects = []
        for raw in paths:
            path = self.path(op, "templatePaths", raw)
            doc = self.plain(op, "templatePaths", path)
            if not isinstance(doc.get("kind"), str) or not isinstance(doc.get("apiVersion"), str):
                raise self.error(op, f"{path}: an object needs apiVersion and kind", "templatePaths")
            objects.append(doc)
        self.churns.append(_Churn(op, self.clock, interval, number, namespace, objects))

    def expand_churns(self) -> None:
        """Each churn's objects, one round per interval until its number of rounds or the end of the workload."""
        end = self.clock
        for churn in self.churns:
            # ticks at start + k × interval for k = 1, 2, … while before the end
            rounds = max(math.ceil(round((end - churn.start) * 1000 / churn.interval, 9)) - 1, 0)
            if churn.rounds:
                rounds = min(rounds, churn.rounds)
            self.reserve(churn.op, rounds * len(churn.objects), "templatePaths")
            for k in range(1, rounds + 1):
                for template in churn.objects:
                    doc = copy.deepcopy(template)
                    namespace = None if doc.get("kind") in _CLUSTER_SCOPED else churn.namespace
                    self.emit(churn.op, doc, namespace, churn.start + k * churn.interval / 1000, repeat_ok=True)

    def barrier(self, op: Operation, position: int) -> None:
        stage = op.fields.get("stageRequirement", "")
        if stage not in ("", "Scheduled", "Attempted"):
            raise self.error(op, f"invalid stageRequirement {stage!r}: Scheduled or Attempted", "stageRequirement")
        namespaces = op.fields.get("namespaces") or []
        for namespace in namespaces:
            if namespace not in self.namespaces:
                raise self.error(op, f"unknown namespace {namespace}: no operation before it creates it",
                                 "namespaces")
        targets = namespaces or list(self.unwaited)
        if any(self.unwaited.get(namespace) for namespace in targets):
            for namespace in targets:
                self.unwaited.pop(namespace, None)
            self.advance(op, SETTLE_SECONDS)

    def sleep(self, op: Operation, position: int) -> None:
        key = "durationParam" if "durationParam" in op.fields else "duration"
        text: Any = op.fields.get("duration", "0s")
        if key == "durationParam":
            text = self.param(op, key)[1]
        try:
            seconds = parse_duration(text if isinstance(text, str) else None)
        except ValueError as exc:
            raise self.error(op, str(exc), key) from None
        self.advance(op, seconds, key)


def generate_perf(config: PerfConfig, selector: str) -> PerfWorkloadManifests:
    """The manifests the workload `TESTCASE/WORKLOAD` of `config` creates (deterministic: the same every time)."""
    case, workload = config.find(selector)
    run = _Run(config, case, workload)
    manifests = run.run()
    scheduler_config = (relative_to(config.path, case.scheduler_config_path)
                        if case.scheduler_config_path else None)
    return PerfWorkloadManifests(f"{case.name}/{workload.name}", manifests,
                                 {**case.feature_gates, **workload.feature_gates}, scheduler_config,
                                 tuple(name for name in workload.params if name not in run.used))
