"""The API objects read from manifests, filed by kind, and what reading them left out."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from phalanx.api.autoscaling import HorizontalPodAutoscaler
from phalanx.api.dra import DeviceClass, DeviceTaintRule, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from phalanx.api.fields import Manifest, object_name, with_generated_name
from phalanx.api.kinds import KINDS, group_of, is_bare_conf, is_namespace, is_queueing_object
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
from phalanx.errors import InputError

# (kind, namespace, name) -> the file that defined it: a second object of one kind and name is an error.
Seen = dict[tuple[str, str, str], str]
T = TypeVar("T")


def _by_controlled_type() -> dict[type, list[Any]]:
    """An empty list per type a workload controller takes in, in the kind table's order."""
    return {kind.controlled: [] for kind in KINDS.values() if kind.controlled is not None}


@dataclass
class ApiObjects:
    """Every API object read, filed by kind, in document order."""

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
    # The workload controllers' objects (ReplicaSet, Deployment, …, JobSet, the Kubeflow jobs: the kind table's
    # `controlled` types), by type; `of(ReplicaSet)` reads one list.
    controlled: dict[type, list[Any]] = field(default_factory=_by_controlled_type)
    # Queueing objects for the kueue and volcano profiles (Kueue's ResourceFlavor, ClusterQueue, Cohort,
    # LocalQueue, WorkloadPriorityClass; Volcano's Queue and volcano-scheduler.conf, bare or in a ConfigMap),
    # and the Namespaces whose labels a ClusterQueue's namespaceSelector matches, kept as written:
    # phalanx/admission reads them when a profile queues.
    queue_docs: list[tuple[Manifest, Source]] = field(default_factory=list)
    hpas: list[HorizontalPodAutoscaler] = field(default_factory=list)  # autoscaling/v2
    skipped: Counter[str] = field(default_factory=Counter)
    terminated_pods: int = 0
    notices: list[str] = field(default_factory=list)  # one line each, for stderr: what loading left out

    def objects(self) -> Iterator[Any]:
        """All objects in document order (the order they enter a simulation at equal arrival times)."""
        everything: list[Any] = [*self.nodes, *self.pods, *self.priority_classes, *self.workloads,
                                 *self.composite_pod_groups, *self.pod_groups, *self.jobs, *self.controllers()]
        everything.sort(key=lambda o: o.source.order if o.source else (False, 0, ""))
        yield from everything

    def controllers(self) -> list[Any]:
        """The objects the simulator runs workload controllers for (apps/v1, CronJob, JobSet, LeaderWorkerSet,
        Kubeflow training jobs), by type in the kind table's order."""
        return [obj for objects in self.controlled.values() for obj in objects]

    def of(self, kind: type[T]) -> list[T]:
        """The workload controllers' objects of one type, in document order."""
        return self.controlled[kind]

    def add(self, doc: Manifest, source: Source, seen: Seen) -> None:
        """Parse one document with its kind's parser and file the object; a queueing object is kept as written,
        a kind Phalanx does not read (or another project's kind of the same name) is counted in `skipped`."""
        if is_bare_conf(doc):  # Volcano's conf or YuniKorn's queues.yaml as shipped: no kind, no metadata
            self.queue_docs.append((doc, source))
            return
        kind = doc.get("kind")
        try:
            doc = with_generated_name(doc, f"{source.file}#{source.index}")
        except InputError as exc:
            raise exc.at(file=source.file, obj=object_name(doc)) from None
        name = object_name(doc)
        if not isinstance(kind, str) or not kind:
            raise InputError("is required", file=source.file, obj=name, field="kind")
        if is_queueing_object(doc) or is_namespace(doc):
            self.queue_docs.append((doc, source))
            return
        if kind not in KINDS:
            self.skipped[kind] += 1
            return
        versions, parser, _ = KINDS[kind]
        api_version = doc.get("apiVersion")
        if api_version not in versions and group_of(api_version) not in {group_of(v) for v in versions}:
            self.skipped[f"{kind} ({api_version})"] += 1  # another project's kind of the same name
            return
        if api_version not in versions:
            raise InputError(f"{kind} is not read in apiVersion {api_version!r} (Phalanx reads "
                             f"{', '.join(versions)})", file=source.file, obj=name, field="apiVersion")
        try:
            obj = parser(doc, source)
        except InputError as exc:
            raise exc.at(file=source.file, obj=name) from None
        if obj is None:
            self.terminated_pods += 1
            return
        self.keep(obj, kind, source, seen, name)

    def keep(self, obj: Any, kind: str, source: Source, seen: Seen, name: str) -> None:
        """File the parsed object under its kind; a second object of one kind and name is an error."""
        namespace = getattr(obj, "namespace", "")
        ident = (kind, namespace, getattr(obj, "name", ""))
        if ident in seen:
            raise InputError(f"duplicate {kind} (first defined in {seen[ident]})", file=source.file, obj=name,
                             field="metadata.name")
        seen[ident] = source.file
        bucket = self.controlled.get(type(obj))
        if bucket is None:
            files: dict[type, list[Any]] = {
                Node: self.nodes, Pod: self.pods, PriorityClass: self.priority_classes, Workload: self.workloads,
                PodGroup: self.pod_groups, Job: self.jobs, CompositePodGroup: self.composite_pod_groups,
                PodDisruptionBudget: self.pdbs, ResourceSlice: self.resource_slices,
                DeviceClass: self.device_classes, ResourceClaim: self.resource_claims,
                ResourceClaimTemplate: self.claim_templates, DeviceTaintRule: self.device_taint_rules,
                HorizontalPodAutoscaler: self.hpas}
            bucket = files[type(obj)]
        bucket.append(obj)
