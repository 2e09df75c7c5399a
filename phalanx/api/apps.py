"""Workload controllers' objects as scheduling sees them: apps/v1 ReplicaSet, Deployment, StatefulSet and
DaemonSet, batch/v1 CronJob. Each parser takes the manifest and its Source and raises InputError naming
the field, as the API server would reject it (replicas below 0, a selector that does not select the
template's labels, a restartPolicy other than Always, a bad cron schedule)."""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from phalanx.api.cron import CronError, CronSchedule, parse_cron
from phalanx.api.fields import (
    Manifest,
    Meta,
    boolean,
    controller_ref,
    fail,
    integer,
    mapping,
    seconds,
    template_meta,
    text,
)
from phalanx.api.names import shown
from phalanx.api.objects import DURATION_ANNOTATION, Job, LabelSelector, OwnerRef, Pod, PriorityClass, Queueing, Source
from phalanx.api.parse import parse_job, pod_from_spec
from phalanx.api.peers import queueing
from phalanx.api.selectors import parse_selector
from phalanx.errors import InputError

# The wall-clock time simulated time 0 stands for, for cron schedules (a Monday, 00:00 UTC), unless a CronJob
# names its own with this annotation (RFC 3339).
CRON_EPOCH = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)
START_TIME_ANNOTATION = "phalanx.dev/start-time"
# The API server takes any int32; Phalanx simulates every pod, so it holds replicas to the bound it holds an
# Indexed Job's pods to.
MAX_REPLICAS = 100_000
MAX_CRON_JOB_NAME = 52


@dataclass(slots=True)
class ReplicaSet:
    namespace: str
    name: str
    replicas: int
    selector: LabelSelector
    template: Pod
    owner: OwnerRef | None = None  # its controlling ownerReference (a Deployment's ReplicaSet)
    arrival: float = 0.0
    source: Source | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(slots=True)
class Deployment:
    namespace: str
    name: str
    replicas: int
    selector: LabelSelector
    template: Pod
    template_hash: str  # stands in for pod-template-hash: a digest of the template as written
    arrival: float = 0.0
    source: Source | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(slots=True)
class StatefulSet:
    namespace: str
    name: str
    replicas: int
    selector: LabelSelector
    template: Pod
    ordered: bool  # podManagementPolicy OrderedReady (the default); False: Parallel
    arrival: float = 0.0
    source: Source | None = None
    queueing: Queueing | None = None  # the admission queue it names (named as not modelled by the gate)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(slots=True)
class DaemonSet:
    namespace: str
    name: str
    selector: LabelSelector
    template: Pod
    host_network: bool = False
    arrival: float = 0.0
    source: Source | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(slots=True)
class CronJob:
    namespace: str
    name: str
    schedule: CronSchedule
    job: Job  # the Job its jobTemplate describes, renamed for each run
    concurrency_policy: str = "Allow"  # Allow | Forbid | Replace
    suspend: bool = False
    start: datetime.datetime = CRON_EPOCH  # the wall-clock time of simulated time 0
    arrival: float = 0.0
    source: Source | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


WorkloadObject = ReplicaSet | Deployment | StatefulSet | DaemonSet | CronJob


def _template(spec: Mapping[str, Any], meta: Meta, source: Source) -> Pod:
    """The pod template: its metadata (the owner's namespace), its spec; restartPolicy must be Always."""
    field = "spec.template"
    template = mapping(spec.get("template"), field, required=True)
    tmeta = template_meta(template, meta, field)
    pod_spec = mapping(template.get("spec"), f"{field}.spec", required=True)
    policy = text(pod_spec.get("restartPolicy"), f"{field}.spec.restartPolicy") or "Always"
    if policy != "Always":
        raise fail(f"{field}.spec.restartPolicy", f"unsupported value {policy!r}: only Always")
    pod = pod_from_spec(tmeta, pod_spec, f"{field}.spec", source)
    # With restartPolicy Always the kubelet restarts a container that exits inside the same pod: the pod keeps
    # its node and its resources, so `phalanx.dev/duration` on these templates never ends the pod.
    pod.duration = None
    return pod


def _selector(spec: Mapping[str, Any], template: Pod) -> LabelSelector:
    if spec.get("selector") is None:
        raise fail("spec.selector", "is required")
    selector = parse_selector(spec.get("selector"), "spec.selector")
    if not selector.match_labels and not selector.expressions:
        raise fail("spec.selector", "empty selector is invalid for this workload")
    if not selector.matches(template.labels):
        raise fail("spec.template.metadata.labels", "`selector` does not match template `labels`")
    return selector


def _replicas(spec: Mapping[str, Any]) -> int:
    raw = spec.get("replicas")
    return 1 if raw is None else integer(raw, "spec.replicas", minimum=0, maximum=MAX_REPLICAS)


def _digest(value: Any) -> int:
    """A stable 32-bit FNV-1a digest of a manifest value (the same across runs and platforms)."""
    data = json.dumps(value, sort_keys=True, default=str).encode()
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


_SAFE = "bcdfghjklmnpqrstvwxz2456789"  # the alphabet Kubernetes spells generated name suffixes in


def safe_encode(number: int, length: int) -> str:
    out = []
    for _ in range(length):
        number, rest = divmod(number, len(_SAFE))
        out.append(_SAFE[rest])
    return "".join(out)


def parse_replica_set(doc: Manifest, source: Source) -> ReplicaSet:
    meta = Meta(doc, namespaced=True)
    spec = mapping(doc.get("spec"), "spec", required=True)
    template = _template(spec, meta, source)
    return ReplicaSet(namespace=meta.namespace, name=meta.name, replicas=_replicas(spec),
                      selector=_selector(spec, template), template=template, owner=controller_ref(doc),
                      arrival=meta.arrival, source=source)


def parse_deployment(doc: Manifest, source: Source) -> Deployment:
    meta = Meta(doc, namespaced=True)
    spec = mapping(doc.get("spec"), "spec", required=True)
    template = _with_kueue_queue(_template(spec, meta, source), queueing(meta))
    return Deployment(namespace=meta.namespace, name=meta.name, replicas=_replicas(spec),
                      selector=_selector(spec, template), template=template,
                      template_hash=safe_encode(_digest(spec.get("template")), 10), arrival=meta.arrival,
                      source=source)


def _with_kueue_queue(template: Pod, named: Queueing | None) -> Pod:
    """A Deployment's LocalQueue label (and WorkloadPriorityClass) on its pod template, as Kueue's Deployment
    webhook copies them: each pod is then a workload of Kueue's pod integration. Read only under `kueue`."""
    if named is None or named.kueue is None:
        return template
    own = template.queueing or Queueing()
    return dataclasses.replace(template, queueing=dataclasses.replace(
        own, kueue=named.kueue, kueue_priority_class=named.kueue_priority_class or own.kueue_priority_class))


def parse_stateful_set(doc: Manifest, source: Source) -> StatefulSet:
    meta = Meta(doc, namespaced=True)
    spec = mapping(doc.get("spec"), "spec", required=True)
    template = _template(spec, meta, source)
    policy = text(spec.get("podManagementPolicy"), "spec.podManagementPolicy") or "OrderedReady"
    if policy not in ("OrderedReady", "Parallel"):
        raise fail("spec.podManagementPolicy", f"unsupported value {policy!r}: one of OrderedReady, Parallel")
    return StatefulSet(namespace=meta.namespace, name=meta.name, replicas=_replicas(spec),
                       selector=_selector(spec, template), template=template, ordered=policy == "OrderedReady",
                       arrival=meta.arrival, source=source, queueing=queueing(meta))


def parse_daemon_set(doc: Manifest, source: Source) -> DaemonSet:
    meta = Meta(doc, namespaced=True)
    spec = mapping(doc.get("spec"), "spec", required=True)
    template = _template(spec, meta, source)
    pod_spec = mapping(mapping(spec.get("template"), "spec.template").get("spec"), "spec.template.spec")
    return DaemonSet(namespace=meta.namespace, name=meta.name, selector=_selector(spec, template),
                     template=template,
                     host_network=boolean(pod_spec.get("hostNetwork"), "spec.template.spec.hostNetwork"),
                     arrival=meta.arrival, source=source)


def parse_cron_job(doc: Manifest, source: Source) -> CronJob:
    meta = Meta(doc, namespaced=True)
    if len(meta.name) > MAX_CRON_JOB_NAME:  # ValidateCronJob: its Jobs are named <name>-<11-character suffix>
        raise fail("metadata.name", f"Invalid value: {shown(meta.name)}: must be no more than {MAX_CRON_JOB_NAME} "
                                    "characters")
    spec = mapping(doc.get("spec"), "spec", required=True)
    raw_schedule = text(spec.get("schedule"), "spec.schedule", required=True)
    try:
        schedule = parse_cron(raw_schedule)
    except CronError as exc:
        raise fail("spec.schedule", f"invalid schedule {raw_schedule!r}: {exc}") from None
    zone = text(spec.get("timeZone"), "spec.timeZone")
    if zone not in ("", "UTC", "Etc/UTC"):
        raise fail("spec.timeZone", f"{zone!r} is not simulated: schedules run in UTC (leave it out or write UTC)")
    policy = text(spec.get("concurrencyPolicy"), "spec.concurrencyPolicy") or "Allow"
    if policy not in ("Allow", "Forbid", "Replace"):
        raise fail("spec.concurrencyPolicy", f"unsupported value {policy!r}: one of Allow, Forbid, Replace")
    job_template = mapping(spec.get("jobTemplate"), "spec.jobTemplate", required=True)
    job_meta = dict(mapping(job_template.get("metadata"), "spec.jobTemplate.metadata"))
    job_meta.update(name=meta.name, namespace=meta.namespace)
    try:
        job = parse_job({"metadata": job_meta, "spec": job_template.get("spec")}, source)
    except InputError as exc:
        raise fail(f"spec.jobTemplate.{exc.field}", exc.detail) from None
    if job.template.duration is None:
        job.template.duration = seconds(meta.annotations, DURATION_ANNOTATION, "metadata.annotations")
    start = CRON_EPOCH
    if START_TIME_ANNOTATION in meta.annotations:
        raw = meta.annotations[START_TIME_ANNOTATION]
        try:
            start = datetime.datetime.fromisoformat(raw.replace("Z", "+00:00"))
        except ValueError:
            raise fail(f"metadata.annotations[{START_TIME_ANNOTATION}]", f"invalid RFC 3339 time {raw!r}") from None
        if start.tzinfo is None:
            start = start.replace(tzinfo=datetime.UTC)
    return CronJob(namespace=meta.namespace, name=meta.name, schedule=schedule, job=job, concurrency_policy=policy,
                   suspend=boolean(spec.get("suspend"), "spec.suspend"), start=start, arrival=meta.arrival,
                   source=source)


class TemplatedObject(Protocol):
    """A controller's object that stamps pods from one or more templates (JobSet, LeaderWorkerSet, …)."""

    @property
    def key(self) -> str: ...

    @property
    def source(self) -> Source | None: ...

    def pod_templates(self) -> list[tuple[Pod, str]]: ...


def _templates(obj: WorkloadObject | TemplatedObject) -> list[tuple[Pod, str]]:
    """The object's pod templates, each with the field it is at (for messages)."""
    if isinstance(obj, CronJob):
        return [(obj.job.template, "spec.jobTemplate.spec.template.spec")]
    if isinstance(obj, ReplicaSet | Deployment | StatefulSet | DaemonSet):
        return [(obj.template, "spec.template.spec")]
    return obj.pod_templates()


def resolve_templates(objects: Iterable[WorkloadObject | TemplatedObject], classes: Iterable[PriorityClass]) -> None:
    """Priority admission for the pods the controllers will create: the template's priorityClassName (an
    InputError if no such class and no spec.priority), else the global default class, else 0."""
    by_name = {pc.name: pc for pc in classes}
    defaults = [pc for pc in by_name.values() if pc.global_default]
    for obj in objects:
        kind = getattr(obj, "kind", None) or type(obj).__name__
        for pod, field in _templates(obj):
            pod.source = obj.source
            if pod.priority_class_name is not None:
                pc = by_name.get(pod.priority_class_name)
                if pc is None and pod.explicit_priority is not None:
                    pod.priority = pod.explicit_priority
                elif pc is None:
                    raise InputError(f"no PriorityClass named {pod.priority_class_name!r}",
                                     file=obj.source.file if obj.source else None, obj=f"{kind} {obj.key}",
                                     field=f"{field}.priorityClassName")
                else:
                    pod.priority = pc.value if pod.explicit_priority is None else pod.explicit_priority
                    if pod.preemption_policy == "PreemptLowerPriority":
                        pod.preemption_policy = pc.preemption_policy
            elif pod.explicit_priority is None:
                pod.priority = defaults[0].value if defaults else 0
