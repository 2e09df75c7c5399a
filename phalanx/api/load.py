"""Read manifests (files, directories, multi-document YAML, `kind: List`) into validated objects."""

from __future__ import annotations

import gc
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from phalanx.api.apps import CronJob, DaemonSet, Deployment, ReplicaSet, StatefulSet, resolve_templates
from phalanx.api.autoscaling import HorizontalPodAutoscaler
from phalanx.api.dra import DeviceClass, DeviceTaintRule, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from phalanx.api.fast_yaml import GiveUp, read_documents
from phalanx.api.fields import Manifest, object_name
from phalanx.api.kinds import PARSERS
from phalanx.api.objects import (
    CompositePodGroup,
    Job,
    Node,
    Pod,
    PodDisruptionBudget,
    PodGroup,
    PriorityClass,
    Source,
    Workload,
)
from phalanx.api.reading import MAX_NESTING, check_nesting, parse_json, read_text
from phalanx.api.sets import JobSet, LeaderWorkerSet
from phalanx.api.training import TrainingJob
from phalanx.autoscale.metrics import MetricsSeries
from phalanx.autoscale.nodegroups import GROUP_ANNOTATIONS, NodeGroup, parse_node_group
from phalanx.errors import InputError
from phalanx.migrate.foreign import Change
from phalanx.migrate.rewrite import Migrator

_YAML_SUFFIXES = (".yaml", ".yml", ".json")
TRANSLATED = "(translated)"  # the file named for objects a migration made up (Kueue pod groups and the like)
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass
class Inputs:
    """Everything one simulation reads, in document order."""

    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    priority_classes: list[PriorityClass] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)
    pod_groups: list[PodGroup] = field(default_factory=list)
    composite_pod_groups: list[CompositePodGroup] = field(default_factory=list)  # v1alpha3 (KEP-6012)
    jobs: list[Job] = field(default_factory=list)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    resource_slices: list[ResourceSlice] = field(default_factory=list)
    device_classes: list[DeviceClass] = field(default_factory=list)
    resource_claims: list[ResourceClaim] = field(default_factory=list)
    claim_templates: list[ResourceClaimTemplate] = field(default_factory=list)
    device_taint_rules: list[DeviceTaintRule] = field(default_factory=list)
    replica_sets: list[ReplicaSet] = field(default_factory=list)
    deployments: list[Deployment] = field(default_factory=list)
    stateful_sets: list[StatefulSet] = field(default_factory=list)
    daemon_sets: list[DaemonSet] = field(default_factory=list)
    cron_jobs: list[CronJob] = field(default_factory=list)
    job_sets: list[JobSet] = field(default_factory=list)
    leader_worker_sets: list[LeaderWorkerSet] = field(default_factory=list)
    training_jobs: list[TrainingJob] = field(default_factory=list)  # PyTorchJob, TFJob, MPIJob
    # Queueing objects for the kueue and volcano profiles (Kueue's ResourceFlavor, ClusterQueue, Cohort,
    # LocalQueue, WorkloadPriorityClass; Volcano's Queue and a ConfigMap holding volcano-scheduler.conf),
    # kept as written: phalanx/admission reads them when a profile queues.
    queue_docs: list[tuple[Manifest, Source]] = field(default_factory=list)
    # Cluster-autoscaler node groups: template Nodes (phalanx.autoscale.nodegroups); their min-size nodes are
    # in `nodes`.
    node_groups: list[NodeGroup] = field(default_factory=list)
    hpas: list[HorizontalPodAutoscaler] = field(default_factory=list)  # autoscaling/v2
    metrics: MetricsSeries | None = None  # `--metrics FILE`: the values HPAs read
    skipped: Counter[str] = field(default_factory=Counter)
    terminated_pods: int = 0
    notices: list[str] = field(default_factory=list)  # one line each, for stderr: what loading left out
    translated: Counter[str] = field(default_factory=Counter)  # foreign or alpha objects read as v1beta1
    migration: list[Change] = field(default_factory=list)  # what each translation did (`phalanx migrate`)

    def objects(self) -> Iterator[Any]:
        """All objects in document order (the order they enter a simulation at equal arrival times)."""
        everything: list[Any] = [*self.nodes, *self.pods, *self.priority_classes, *self.workloads,
                                 *self.composite_pod_groups, *self.pod_groups, *self.jobs, *self.controllers()]
        everything.sort(key=lambda o: (o.source.file, o.source.index) if o.source else ("", 0))
        yield from everything

    def controllers(self) -> list[ReplicaSet | Deployment | StatefulSet | DaemonSet | CronJob | JobSet
                                  | LeaderWorkerSet | TrainingJob]:
        """The workload controllers' objects (apps/v1, CronJob, JobSet, LeaderWorkerSet, Kubeflow training jobs)
        the simulator runs controllers for."""
        return [*self.replica_sets, *self.deployments, *self.stateful_sets, *self.daemon_sets, *self.cron_jobs,
                *self.job_sets, *self.leader_worker_sets, *self.training_jobs]


# Files a folder of manifests often holds beside them that are not Kubernetes objects: Helm's chart and values
# files, kustomize's, package managers'. In a folder they are passed over; named on the command line they fail.
_NOT_MANIFESTS = re.compile(r"Chart\.ya?ml|values(?:[-._][^/]*)?\.ya?ml|values\.schema\.json|kustomization\.ya?ml"
                            r"|package(?:-lock)?\.json|composer\.json|tsconfig\.json|\.pre-commit-config\.ya?ml"
                            r"|(?:docker-)?compose\.ya?ml|\.gitlab-ci\.ya?ml|mkdocs\.ya?ml|renovate\.json")


def _listed(paths: Sequence[str]) -> list[tuple[str, bool]]:
    """The files to read, each with whether it was found in a folder (rather than named)."""
    files: list[tuple[str, bool]] = []
    for path in paths:
        if os.path.isdir(path):
            found = sorted(
                os.path.join(root, name)
                for root, _, names in os.walk(path)
                for name in names
                if name.endswith(_YAML_SUFFIXES)
            )
            files.extend((name, True) for name in found)
        elif os.path.exists(path):
            files.append((path, False))
        else:
            raise InputError("no such file or directory", file=path)
    return files


def _parse(path: str, text: str) -> list[Any]:
    if path.endswith(".json"):
        # `kubectl get -o json` output: one JSON value per file, read by the JSON parser (YAML's is 30× slower).
        return [parse_json(text, file=path)]
    try:
        return read_documents(text)  # it nests no deeper than the bound (or gives up)
    except GiveUp:
        pass
    check_nesting(text, file=path)
    try:
        return list(yaml.load_all(text, Loader=_Loader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "YAML"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"invalid YAML: {problem}", file=path, obj=where) from None
    except ValueError:  # an integer past Python's digit limit
        raise InputError("invalid YAML: a number has too many digits (Kubernetes integers are int64)",
                         file=path) from None
    except RecursionError:
        raise InputError(f"nests deeper than {MAX_NESTING} levels", file=path) from None


def _documents(path: str) -> Iterator[tuple[int, Any]]:
    for number, doc in enumerate(_parse(path, read_text(path)), start=1):
        if doc is not None:
            yield number, doc


def _in_chart_templates(path: str) -> bool:
    """Under a Helm chart's `templates/`: manifests only once Helm renders them, even where they parse as YAML."""
    parts = os.path.normpath(path).split(os.sep)
    return any(part == "templates" and os.path.isfile(os.path.join(os.sep.join(parts[:i]) or ".", "Chart.yaml"))
               for i, part in enumerate(parts[:-1]))


def _looks_like_manifest(doc: Any) -> bool:
    return isinstance(doc, Mapping) and ("apiVersion" in doc or "kind" in doc)


def _folder_documents(path: str) -> list[tuple[int, Any]] | None:
    """The documents of a file found in a folder, or None when it holds no Kubernetes object: a known
    non-manifest name, documents without apiVersion and kind, or a template (Helm's `{{ … }}`) that is not YAML
    until rendered."""
    if _NOT_MANIFESTS.fullmatch(os.path.basename(path)) or _in_chart_templates(path):
        return None
    text = read_text(path)
    try:
        docs = [(number, doc) for number, doc in enumerate(_parse(path, text), start=1) if doc is not None]
    except InputError:
        if "{{" in text:
            return None
        raise
    if docs and not any(_looks_like_manifest(doc) for _, doc in docs):
        return None
    return docs


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


def raw_documents(paths: Sequence[str], skipped_files: list[str] | None = None
                  ) -> Iterator[tuple[Source, Mapping[str, Any]]]:
    """Every object under `paths` as read, `List`s flattened, with the Source that `load_paths` gives it.

    Files in folders that hold no Kubernetes object are passed over (and appended to `skipped_files`)."""
    index = 0
    for path, in_folder in _listed(paths):
        docs = _folder_documents(path) if in_folder else list(_documents(path))
        if docs is None:
            if skipped_files is not None:
                skipped_files.append(path)
            continue
        for number, doc in docs:
            for item in _flatten(doc, path, number):
                index += 1
                yield Source(path, index), item


def _load_paths(paths: Sequence[str]) -> Inputs:
    inputs = Inputs()
    seen: dict[tuple[str, str, str], str] = {}
    migrator = Migrator()  # other schedulers' gang objects and the alpha shapes, read as v1beta1
    foreign: list[str] = []
    for source, item in raw_documents(paths, foreign):
        try:
            fed = migrator.feed(item)
        except InputError as exc:
            raise exc.at(file=source.file) from None
        for doc, _ in fed:
            _load_one(doc, source, inputs, seen)
    for i, (doc, _) in enumerate(migrator.finish(), start=1):
        _load_one(doc, Source(TRANSLATED, i), inputs, seen)
    inputs.translated = migrator.translated
    inputs.migration = migrator.changes
    if foreign:
        inputs.notices.append(f"skipped {len(foreign)} file(s) in folders that hold no Kubernetes objects "
                              f"({first_few(foreign)})")
    resolve(inputs)
    return inputs


def _notice(inputs: Inputs, line: str) -> None:
    if line not in inputs.notices:  # resolve runs again after a trace adds objects
        inputs.notices.append(line)


def first_few(names: Sequence[str], shown: int = 3) -> str:
    """`a, b, c and 4 more`: a few names for a one-line message."""
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _load_one(doc: Mapping[str, Any], source: Source, inputs: Inputs,
              seen: dict[tuple[str, str, str], str]) -> None:
    kind = doc.get("kind")
    name = object_name(doc)
    if not isinstance(kind, str) or not kind:
        raise InputError("is required", file=source.file, obj=name, field="kind")
    if is_queueing_object(doc):
        inputs.queue_docs.append((doc, source))
        return
    if kind == "Node" and _names_node_group(doc):
        group = parse_node_group(doc, source)
        if group is not None:  # a template: the group's min-size nodes exist from the start
            inputs.node_groups.append(group)
            for node in group.initial_nodes():
                _keep(node, "Node", source, inputs, seen, f"Node {node.name}")
            return
    if kind not in PARSERS:
        inputs.skipped[kind] += 1
        return
    versions, parser = PARSERS[kind]
    api_version = doc.get("apiVersion")
    if api_version not in versions and _group_of(api_version) not in {_group_of(v) for v in versions}:
        inputs.skipped[f"{kind} ({api_version})"] += 1  # another project's kind of the same name
        return
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
    _keep(obj, kind, source, inputs, seen, name)


def _names_node_group(doc: Mapping[str, Any]) -> bool:
    meta = doc.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    return isinstance(annotations, Mapping) and any(key in annotations for key in GROUP_ANNOTATIONS)


def _keep(obj: Any, kind: str, source: Source, inputs: Inputs, seen: dict[tuple[str, str, str], str],
          name: str) -> None:
    """File the parsed object under its kind; a second object of one kind and name is an error."""
    namespace = getattr(obj, "namespace", "")
    ident = (kind, namespace, getattr(obj, "name", ""))
    if ident in seen:
        raise InputError(f"duplicate {kind} (first defined in {seen[ident]})", file=source.file, obj=name,
                         field="metadata.name")
    seen[ident] = source.file
    bucket = {Node: inputs.nodes, Pod: inputs.pods, PriorityClass: inputs.priority_classes,
              Workload: inputs.workloads, PodGroup: inputs.pod_groups, Job: inputs.jobs,
              CompositePodGroup: inputs.composite_pod_groups,
              PodDisruptionBudget: inputs.pdbs, ResourceSlice: inputs.resource_slices,
              DeviceClass: inputs.device_classes, ResourceClaim: inputs.resource_claims,
              ResourceClaimTemplate: inputs.claim_templates, DeviceTaintRule: inputs.device_taint_rules,
              ReplicaSet: inputs.replica_sets, Deployment: inputs.deployments, StatefulSet: inputs.stateful_sets,
              DaemonSet: inputs.daemon_sets, CronJob: inputs.cron_jobs, JobSet: inputs.job_sets,
              LeaderWorkerSet: inputs.leader_worker_sets, TrainingJob: inputs.training_jobs,
              HorizontalPodAutoscaler: inputs.hpas}[type(obj)]
    bucket.append(obj)  # type: ignore[attr-defined]


_KUEUE_KINDS = ("ResourceFlavor", "ClusterQueue", "Cohort", "LocalQueue", "WorkloadPriorityClass")
VOLCANO_CONF_KEY = "volcano-scheduler.conf"


def is_queueing_object(doc: Mapping[str, Any]) -> bool:
    """Kueue's queueing kinds, Volcano's Queue, or the ConfigMap holding Volcano's scheduler configuration."""
    group, kind = _group_of(doc.get("apiVersion")), doc.get("kind")
    if group == "kueue.x-k8s.io":
        return kind in _KUEUE_KINDS
    if group == "scheduling.volcano.sh":
        return kind == "Queue"
    data = doc.get("data")
    return kind == "ConfigMap" and isinstance(data, Mapping) and VOLCANO_CONF_KEY in data


def _group_of(api_version: object) -> str:
    return api_version.rsplit("/", 1)[0] if isinstance(api_version, str) and "/" in api_version else ""


def _where(obj: Pod | PodGroup | CompositePodGroup | Job, kind: str) -> dict[str, str]:
    return {"file": obj.source.file if obj.source else "", "obj": f"{kind} {obj.namespace}/{obj.name}"}


# The classes every API server creates at start-up (kube-apiserver's bootstrap PriorityClasses): snapshots
# name them without listing them.
SYSTEM_PRIORITY_CLASSES = (
    PriorityClass(name="system-node-critical", value=2_000_001_000),
    PriorityClass(name="system-cluster-critical", value=2_000_000_000),
)


def resolve(inputs: Inputs) -> None:
    """Cross-object defaults and checks: priorities from PriorityClasses, group policies from Workloads."""
    classes = {pc.name: pc for pc in SYSTEM_PRIORITY_CLASSES}
    classes.update((pc.name, pc) for pc in inputs.priority_classes)
    defaults = [pc for pc in inputs.priority_classes if pc.global_default]
    default_priority = defaults[0].value if defaults else 0
    node_arrival = {n.name: n.arrival for n in inputs.nodes}
    # Classes named but not given, by objects that carry the priority admission already filled in from them.
    missing: set[str] = set()

    def pod_priority(pod: Pod, kind: str, field: str) -> None:
        if pod.priority_class_name is not None:
            pc = classes.get(pod.priority_class_name)
            if pc is None:
                if pod.explicit_priority is None:
                    raise InputError(f"no PriorityClass named {pod.priority_class_name!r}", field=field,
                                     **_where(pod, kind))
                missing.add(pod.priority_class_name)
                pod.priority = pod.explicit_priority
                return
            pod.priority = pc.value if pod.explicit_priority is None else pod.explicit_priority
            if pod.preemption_policy == "PreemptLowerPriority":
                pod.preemption_policy = pc.preemption_policy
        elif pod.explicit_priority is None:
            pod.priority = default_priority

    unplaced = [pod for pod in inputs.pods if pod.node_name is not None and pod.node_name not in node_arrival]
    if unplaced:
        # A partial snapshot (`kubectl get pods -A` with some of the nodes): their pods hold nothing here.
        dropped = {id(pod) for pod in unplaced}
        inputs.pods = [pod for pod in inputs.pods if id(pod) not in dropped]
        _notice(inputs, f"skipped {len(unplaced)} pod(s) bound to nodes not in the input ("
                + first_few([f"{p.namespace}/{p.name} on {p.node_name}" for p in unplaced]) + ")")
    for pod in inputs.pods:
        pod_priority(pod, "Pod", "spec.priorityClassName")
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

    def admit_priority(group: PodGroup | CompositePodGroup, kind: str) -> None:
        """Every field but priority is the group's own: the scheduler reads the (Composite)PodGroup only, and
        the controller that creates one copies the template's fields into it. Priority admission fills
        priority (and preemptionPolicy) from priorityClassName, else from the global default class, else 0."""
        pc = None
        if group.priority_class_name is not None:
            pc = classes.get(group.priority_class_name)
            if pc is None and group.priority is None:
                raise InputError(f"no PriorityClass named {group.priority_class_name!r}",
                                 field="spec.priorityClassName", **_where(group, kind))
            if pc is None:
                missing.add(group.priority_class_name)
        elif defaults:
            pc = defaults[0]
        if group.priority is None:
            group.priority = pc.value if pc is not None else default_priority
        if group.preemption_policy is None:
            group.preemption_policy = pc.preemption_policy if pc is not None else "PreemptLowerPriority"

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
        admit_priority(group, "PodGroup")
    for composite in inputs.composite_pod_groups:
        workload = workloads.get(f"{composite.namespace}/{composite.workload_name}")
        if workload is not None and composite.template_name not in workload.composite_templates:
            raise InputError(f"Workload {workload.key} has no compositePodGroupTemplate {composite.template_name!r}",
                             field="spec.workloadRef.templateName", **_where(composite, "CompositePodGroup"))
        admit_priority(composite, "CompositePodGroup")
    if missing:
        _notice(inputs, f"no PriorityClass named {', '.join(repr(n) for n in sorted(missing))}: the objects naming "
                "it keep their own spec.priority")
    resolve_templates(inputs.controllers(), classes.values())
    ignored = [f"{js.key} ({', '.join(js.ignored_scheduling)})" for js in inputs.job_sets if js.ignored_scheduling]
    if ignored:
        _notice(inputs, "JobSet Job templates' spec.scheduling has no effect (the Job controller makes PodGroups "
                "only for Jobs without a controller; name a PodGroup in the pod template's schedulingGroup "
                f"instead): {first_few(ignored)}")
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
    for group in inputs.pod_groups:  # DRAWorkloadResourceClaims: the claims its pods share
        for i, ref in enumerate(group.resource_claims):
            if ref.claim_name is not None and f"{group.namespace}/{ref.claim_name}" not in claims:
                raise InputError(f"no ResourceClaim named {ref.claim_name!r} in namespace {group.namespace!r}",
                                 field=f"spec.resourceClaims[{i}].resourceClaimName", **_where(group, "PodGroup"))
            if ref.template_name is not None and f"{group.namespace}/{ref.template_name}" not in templates:
                raise InputError(f"no ResourceClaimTemplate named {ref.template_name!r} in namespace "
                                 f"{group.namespace!r}", field=f"spec.resourceClaims[{i}].resourceClaimTemplateName",
                                 **_where(group, "PodGroup"))
