"""The real kube-scheduler as an oracle: replay a timeline of manifests on a real API server and record
what the real scheduler decided.

The timeline (which objects appear and which pods finish, at which simulated time) comes from a Phalanx
simulation of the same inputs; the oracle applies each step, waits until the scheduler is quiet, and
records where every pod went. No kubelet runs, so the oracle does the two things a kubelet would: it
finishes pods whose time has come (phase Succeeded, then deleted) and completes graceful deletions
(preemption victims) at once.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lightkube import ApiError, Client, KubeConfig, codecs
from lightkube.core.exceptions import LoadResourceError
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace, Pod
from lightkube.resources.scheduling_v1beta1 import PodGroup
from lightkube.types import PatchType

from phalanx.api.objects import Source
from phalanx.errors import InputError
from phalanx.verify.controlplane import ControlPlane, ControlPlaneError

ARRIVAL_ANNOTATION = "phalanx.dev/arrival"
QUIET_POLLS = 3  # consecutive unchanged polls (with empty active and backoff queues) that make "quiet"
POLL_SECONDS = 0.1
CLUSTER_SCOPED = {"Node", "Namespace", "PriorityClass", "ResourceSlice", "DeviceClass", "DeviceTaintRule"}
# Kinds created before everything else of their step: admission needs them first.
FIRST = ("Namespace", "PriorityClass", "DeviceClass")


@dataclass(frozen=True)
class Step:
    """One instant of the timeline: pods that finish, then objects that appear."""

    time: float
    finish: tuple[str, ...] = ()
    create: tuple[tuple[Source, Mapping[str, Any]], ...] = ()


@dataclass
class RealPod:
    key: str
    node: str | None = None
    bound_at: float | None = None
    message: str | None = None
    nominated: str | None = None
    preempted: bool = False
    preempted_at: float | None = None
    finished: bool = False


@dataclass
class RealOutcome:
    pods: dict[str, RealPod] = field(default_factory=dict)
    groups: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)  # key -> type -> condition
    skipped_finishes: list[str] = field(default_factory=list)
    seconds: float = 0.0  # wall time from the scheduler's start to the last quiet


def pod_key(obj: Mapping[str, Any]) -> str:
    """A pod's key as Phalanx names it: Job pods as `<namespace>/<job>-<completion index>`."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") or "default"
    annotations = meta.get("annotations") or {}
    labels = meta.get("labels") or {}
    index = annotations.get("batch.kubernetes.io/job-completion-index") or \
        labels.get("batch.kubernetes.io/job-completion-index")
    for owner in meta.get("ownerReferences") or ():
        if owner.get("kind") == "Job" and index is not None:
            return f"{namespace}/{owner.get('name')}-{index}"
    return f"{namespace}/{meta.get('name')}"


def prepare(doc: Mapping[str, Any], source: Source) -> dict[str, Any]:
    """The manifest as the API server should receive it: no server-set fields; nodes Ready (no kubelet),
    with `pods: 110` allocatable where the manifest leaves it out (as Phalanx assumes)."""
    obj: dict[str, Any] = {k: v for k, v in doc.items() if k != "status" or doc.get("kind") == "Node"}
    meta = dict(obj.get("metadata") or {})
    for noise in ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields",
                  "selfLink", "deletionTimestamp", "ownerReferences"):
        meta.pop(noise, None)
    obj["metadata"] = meta
    if obj.get("kind") == "Node":
        status = dict(obj.get("status") or {})
        allocatable = dict(status.get("allocatable") or {})
        allocatable.setdefault("pods", "110")
        status["allocatable"] = allocatable
        status["capacity"] = {**allocatable, **(status.get("capacity") or {})}
        status["conditions"] = [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                 "message": "kubelet is posting ready status"}]
        obj["status"] = status
    if obj.get("kind") == "Pod":
        spec = dict(obj.get("spec") or {})
        spec.pop("nominatedNodeName", None)
        obj["spec"] = spec
    return obj


class Oracle:
    """Drives the real scheduler through a timeline on a running ControlPlane."""

    def __init__(self, plane: ControlPlane) -> None:
        self.plane = plane
        self.client = Client(KubeConfig.from_file(str(plane.kubeconfig)), field_manager="phalanx-verify")

    def reset(self) -> None:
        """Delete what a previous run created (every namespaced object, nodes, classes), for the next run."""
        self.plane.stop_scheduler()
        self.plane.stop_controller_manager()
        for resource in _resources("namespaced"):
            with contextlib.suppress(ApiError):
                self.client.deletecollection(resource, namespace="*", grace_period=0)
        for resource in _resources("cluster"):
            with contextlib.suppress(ApiError):
                self.client.deletecollection(resource)
        # Pods and groups carry finalizers or graceful deletion; wait until they are gone.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            left = self._pods()
            for pod in left:
                _strip_finalizers(self.client, Pod, pod)
                self._delete_now(pod)
            groups = [g.to_dict() for g in self.client.list(PodGroup, namespace="*")]
            for group in groups:
                _strip_finalizers(self.client, PodGroup, group)
            if not left and not groups:
                return
            time.sleep(POLL_SECONDS)
        raise ControlPlaneError("objects of the previous verify run were not deleted within 30s")

    def run(self, steps: Sequence[Step], scheduler_config: Mapping[str, Any], gates: Mapping[str, bool],
            controllers: Iterable[str] = ()) -> RealOutcome:
        outcome = RealOutcome()
        self._ensure_namespaces(steps)
        started: float | None = None
        for i, step in enumerate(steps):
            self._finish(step, outcome)
            for source, doc in _ordered(step.create):
                self._create(source, doc)
            if i == 0:
                self.plane.start_scheduler(scheduler_config, gates)
                if controllers:
                    self.plane.start_controller_manager(controllers, gates)
                started = time.monotonic()
            self._quiet(step.time, outcome)
        if started is not None:
            outcome.seconds = time.monotonic() - started
        self._collect(outcome, steps[-1].time if steps else 0.0)
        return outcome

    # --- steps ----------------------------------------------------------------------------------------

    def _ensure_namespaces(self, steps: Sequence[Step]) -> None:
        wanted = {"default"}
        declared = set()
        for step in steps:
            for _, doc in step.create:
                meta = doc.get("metadata") or {}
                if doc.get("kind") == "Namespace":
                    declared.add(meta.get("name"))
                elif doc.get("kind") not in CLUSTER_SCOPED:
                    wanted.add(meta.get("namespace") or "default")
        for name in sorted(wanted - declared):
            with contextlib.suppress(ApiError):
                self.client.create(Namespace(metadata=ObjectMeta(name=name)))

    def _create(self, source: Source, doc: Mapping[str, Any]) -> None:
        body = prepare(doc, source)
        if body.get("kind") not in CLUSTER_SCOPED:
            body["metadata"].setdefault("namespace", "default")
        name = f"{body.get('kind')} {body['metadata'].get('name')}"
        try:
            obj = codecs.from_dict(body)
        except (LoadResourceError, ValueError, TypeError) as exc:
            raise InputError(f"cannot be sent to the API server: {exc}", file=source.file, obj=name) from None
        try:
            self.client.create(obj)
        except ApiError as exc:
            if exc.status.code == 409 and body.get("kind") in ("Namespace", "PriorityClass"):
                return
            raise InputError(f"the API server rejected it: {exc.status.message}", file=source.file,
                             obj=name) from None

    def _finish(self, step: Step, outcome: RealOutcome) -> None:
        """Pods whose work is done: phase Succeeded (a controller counts it), then deleted, as a kubelet and
        garbage collection would leave them; a pod the real scheduler never ran cannot finish."""
        if not step.finish:
            return
        live = {pod_key(p): p for p in self._pods()}
        for key in step.finish:
            pod = live.get(key)
            if pod is None or not _node_of(pod):
                outcome.skipped_finishes.append(key)
                continue
            meta = pod["metadata"]
            patch: dict[str, Any] = {"status": {"phase": "Succeeded", "conditions": [
                {"type": "Ready", "status": "False", "reason": "PodCompleted"}]}}
            with contextlib.suppress(ApiError):
                self.client.patch(Pod.Status, meta["name"], patch, namespace=meta["namespace"],
                                  patch_type=PatchType.MERGE)
            outcome.pods.setdefault(key, RealPod(key)).finished = True
            self._delete_now(pod)

    def _quiet(self, now: float, outcome: RealOutcome, timeout: float = 120.0) -> None:
        """Wait until the scheduler has nothing active or backing off and nothing changed for a few polls;
        complete graceful deletions meanwhile and note when each pod was first seen bound."""
        deadline = time.monotonic() + timeout
        last: tuple[Any, ...] | None = None
        still = 0
        while time.monotonic() < deadline:
            pods = self._pods()
            changed_here = False
            for pod in pods:
                key = pod_key(pod)
                record = outcome.pods.setdefault(key, RealPod(key))
                if pod["metadata"].get("deletionTimestamp") is not None:
                    self._terminate(pod, record, now)
                    changed_here = True
                elif _node_of(pod) and record.bound_at is None:
                    record.bound_at = now
                    record.node = _node_of(pod)
            fingerprint = tuple(sorted(
                (p["metadata"]["name"], _node_of(p), (p.get("status") or {}).get("nominatedNodeName") or "",
                 str(p["metadata"].get("deletionTimestamp"))) for p in pods))
            busy = changed_here or self._queues_busy()
            if fingerprint == last and not busy:
                still += 1
                if still >= QUIET_POLLS:
                    return
            else:
                still = 0
            last = fingerprint
            time.sleep(POLL_SECONDS)
        raise ControlPlaneError(f"the real scheduler did not settle within {timeout:g}s at simulated time {now:g}s")

    def _terminate(self, pod: dict[str, Any], record: RealPod, now: float) -> None:
        """A graceful deletion (preemption): the kubelet would stop the containers; here it ends at once."""
        conditions = (pod.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "DisruptionTarget" for c in conditions) and not record.finished:
            record.preempted = True
            record.preempted_at = now
        self._delete_now(pod)

    def _pods(self) -> list[dict[str, Any]]:
        return [p.to_dict() for p in self.client.list(Pod, namespace="*")]

    def _delete_now(self, pod: Mapping[str, Any]) -> None:
        meta = pod["metadata"]
        with contextlib.suppress(ApiError):
            self.client.delete(Pod, meta["name"], namespace=meta["namespace"], grace_period=0)

    def _queues_busy(self) -> bool:
        try:
            text = self.plane.scheduler_metrics()
        except OSError:
            return True
        pending: dict[str, float] = defaultdict(float)
        for match in re.finditer(r'^scheduler_pending_pods\{queue="(\w+)"\} ([0-9.e+]+)$', text, re.M):
            pending[match.group(1)] += float(match.group(2))
        return pending["active"] > 0 or pending["backoff"] > 0

    def _collect(self, outcome: RealOutcome, now: float) -> None:
        for pod in self._pods():
            key = pod_key(pod)
            record = outcome.pods.setdefault(key, RealPod(key))
            record.node = _node_of(pod) or None
            if record.node is not None and record.bound_at is None:
                record.bound_at = now
            status = pod.get("status") or {}
            record.nominated = status.get("nominatedNodeName") or None
            for condition in status.get("conditions") or []:
                if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
                    record.message = condition.get("message")
        for group in self.client.list(PodGroup, namespace="*"):
            body = group.to_dict()
            key = f"{body['metadata']['namespace']}/{body['metadata']['name']}"
            conditions = (body.get("status") or {}).get("conditions") or []
            outcome.groups[key] = {c["type"]: {"status": c.get("status", ""), "reason": c.get("reason", ""),
                                               "message": c.get("message", "")} for c in conditions}


def _ordered(create: Sequence[tuple[Source, Mapping[str, Any]]]) -> list[tuple[Source, Mapping[str, Any]]]:
    """Namespaces, PriorityClasses and DeviceClasses first; the rest in document order."""
    return sorted(create, key=lambda item: (item[1].get("kind") not in FIRST, item[0].index))


def _resources(scope: str) -> list[type]:
    from lightkube.resources.batch_v1 import Job
    from lightkube.resources.core_v1 import Node
    from lightkube.resources.policy_v1 import PodDisruptionBudget
    from lightkube.resources.resource_v1 import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
    from lightkube.resources.scheduling_v1 import PriorityClass
    from lightkube.resources.scheduling_v1beta1 import Workload

    if scope == "namespaced":
        return [Job, Pod, PodGroup, Workload, PodDisruptionBudget, ResourceClaim, ResourceClaimTemplate]
    return [Node, ResourceSlice, DeviceClass, PriorityClass]


def _node_of(pod: Mapping[str, Any]) -> str:
    node: str = (pod.get("spec") or {}).get("nodeName") or ""
    return node


def _strip_finalizers(client: Client, resource: Any, obj: Mapping[str, Any]) -> None:
    meta = obj["metadata"]
    if meta.get("finalizers"):
        with contextlib.suppress(ApiError):
            client.patch(resource, meta["name"], {"metadata": {"finalizers": None}}, namespace=meta["namespace"])
