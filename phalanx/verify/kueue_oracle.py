"""What the oracle watches when the real Kueue admits (`verify --profile kueue`): each Job's Kueue Workload,
whether and at which step of the timeline it was admitted, by which ClusterQueue, how often evicted, and why it
waits; and waiting, at each step, until Kueue has decided on every queued Job.

Kueue decides asynchronously: a Job created with the queue-name label is suspended by Kueue's webhook, gets a
Workload from Kueue's Job reconciler, and is admitted (QuotaReserved and Admitted True, the Job resumed) or left
pending (QuotaReserved False with a message) by its scheduler, which retries on every change. The step is
settled when every queued Job has a Workload that Kueue has tried, every admitted one's Job runs, and nothing
changed for a still spell longer than Kueue's requeue after a finished or evicted workload; or, with a Workload
Kueue does not try (one behind a StrictFIFO head that does not fit), when nothing changed for a few seconds.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lightkube import ApiError, Client
from lightkube.generic_resource import create_global_resource, create_namespaced_resource
from lightkube.resources.apps_v1 import StatefulSet
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import Pod
from lightkube.types import CascadeType, PatchType

from phalanx.api.fields import KUEUE_QUEUE_LABEL
from phalanx.verify.controlplane import ControlPlaneError
from phalanx.verify.kueue_plane import Kueue

GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
Workload = create_namespaced_resource(GROUP, VERSION, "Workload", "workloads")
LocalQueue = create_namespaced_resource(GROUP, VERSION, "LocalQueue", "localqueues")
ClusterQueue = create_global_resource(GROUP, VERSION, "ClusterQueue", "clusterqueues")
ResourceFlavor = create_global_resource(GROUP, VERSION, "ResourceFlavor", "resourceflavors")
Cohort = create_global_resource(GROUP, VERSION, "Cohort", "cohorts")
WorkloadPriorityClass = create_global_resource(GROUP, VERSION, "WorkloadPriorityClass", "workloadpriorityclasses")
KINDS: tuple[Any, ...] = (Workload, LocalQueue, ClusterQueue, Cohort, ResourceFlavor, WorkloadPriorityClass)
POD_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
POD_GROUP_TOTAL = "kueue.x-k8s.io/pod-group-total-count"
KUEUE_POD_FINALIZER = "kueue.x-k8s.io/managed"  # on the pods Kueue's pod integration manages
ADMISSION_GATE = "kueue.x-k8s.io/admission"  # the scheduling gate Kueue's pod webhook adds, removed at admission
POLL_SECONDS = 0.1
STILL_SECONDS = 1.5  # Kueue admits 0.25–0.95 s after a change here; a reclaim takes up to 2 s (then it changes)
# A Workload that Kueue never tries stays without QuotaReserved (behind a StrictFIFO head that does not fit):
# unchanged this long, it is left undecided.
UNDECIDED_SECONDS = 4.0
RECHECK_SECONDS = 0.5  # after the scheduler's quiet: binding pods changes nothing Kueue's Job integration reads


@dataclass
class RealWorkload:
    key: str  # "Job namespace/name", as Phalanx's report names the workload
    admitted_at: float | None = None  # the step at which it was first seen admitted
    cluster_queue: str | None = None
    evictions: int = 0
    message: str | None = None  # why it waits (QuotaReserved False), when it does at the end
    admitted: bool = False  # admitted at the end (or finished after an admission)


class Admissions:
    """The real Kueue's decisions during one replay (`workloads` by Phalanx's key)."""

    def __init__(self, client: Client, kueue: Kueue) -> None:
        self.client = client
        self.kueue = kueue
        self.workloads: dict[str, RealWorkload] = {}
        self._evicted: set[tuple[str, str]] = set()  # (workload uid, eviction time) seen

    def start(self) -> None:
        self.workloads.clear()
        self._evicted.clear()
        self.kueue.start()

    def queued(self, key: str | None) -> bool:
        """Whether Kueue holds the Workload of `key` ("Job ns/name", "Pod ns/name" or "PodGroup ns/name")."""
        return key is not None and key in self.workloads

    @property
    def pods(self) -> bool:
        """Whether Kueue runs its pod integration (plain pods and pod groups; Deployments and StatefulSets)."""
        return "pod" in self.kueue.frameworks

    def await_queues(self, timeout: float = 30.0) -> None:
        """Wait until Kueue's controllers run: every ClusterQueue has its Active condition (Kueue's webhook
        answers before its controllers have synced, and Workloads made then would share one second)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            queues = list(self.client.list(ClusterQueue))
            if all(any(c.get("type") == "Active" for c in (q.get("status") or {}).get("conditions") or ())
                   for q in queues):
                return
            time.sleep(POLL_SECONDS)
        raise ControlPlaneError(f"Kueue's ClusterQueues were not reconciled within {timeout:g}s")

    def await_workload(self, namespace: str, name: str, kind: str = "Job", timeout: float = 5.0) -> None:
        """Wait (a few seconds at most) until Kueue has made the Workload of a Job (or Pod) just created."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for obj in self.client.list(Workload, namespace=namespace):
                meta = obj.metadata
                if meta is not None and any(o.kind == kind and o.name == name for o in meta.ownerReferences or ()):
                    return
            time.sleep(POLL_SECONDS / 2)

    def settle(self, now: float, timeout: float = 90.0, still: float = STILL_SECONDS) -> bool:
        """Wait until Kueue has decided on every queued Job and nothing changed for `still` seconds; note the
        admissions seen. True when anything changed meanwhile."""
        deadline = time.monotonic() + timeout
        last: tuple[Any, ...] | None = None
        first: tuple[Any, ...] | None = None
        since = time.monotonic()
        while time.monotonic() < deadline:
            state = self._observe(now)
            if first is None:
                first = state[1]
            if state != last:
                last, since = state, time.monotonic()
            elif time.monotonic() - since >= (still if state[0] else UNDECIDED_SECONDS):
                return state[1] != first
            time.sleep(POLL_SECONDS)
        raise ControlPlaneError(f"Kueue did not settle within {timeout:g}s at simulated time {now:g}s")

    def _observe(self, now: float) -> tuple[bool, tuple[Any, ...]]:
        """Whether every queued Job is decided, and a fingerprint of the decisions."""
        jobs: dict[str, bool] = {}  # queued Job (or plain pod, or complete pod group) -> held (suspended, gated)
        for job in self.client.list(Job, namespace="*"):
            body = job.to_dict()
            if (body["metadata"].get("labels") or {}).get(KUEUE_QUEUE_LABEL):
                jobs[f"Job {body['metadata']['namespace']}/{body['metadata']['name']}"] = bool(
                    (body.get("spec") or {}).get("suspend"))
        of_pod = self._queued_pods(jobs) if self.pods else {}
        if self.pods:
            for sts in self.client.list(StatefulSet, namespace="*"):
                meta = sts.metadata
                if meta is not None and (meta.labels or {}).get(KUEUE_QUEUE_LABEL):
                    jobs[f"StatefulSet {meta.namespace}/{meta.name}"] = False
        decided = True
        seen: set[str] = set()
        fingerprint = []
        for obj in self.client.list(Workload, namespace="*"):
            meta = obj.metadata
            if meta is None:
                continue
            owners = meta.ownerReferences or ()
            owner = next((o for o in owners if o.kind in ("Job", "StatefulSet")), None)
            key = f"{owner.kind} {meta.namespace}/{owner.name}" if owner is not None else next(
                (of_pod[f"{meta.namespace}/{o.name}"] for o in owners
                 if o.kind == "Pod" and f"{meta.namespace}/{o.name}" in of_pod), None)
            if key is None:
                continue
            seen.add(key)
            status: Mapping[str, Any] = obj.get("status") or {}
            conditions = {c["type"]: c for c in status.get("conditions") or ()}
            record = self.workloads.setdefault(key, RealWorkload(key))
            admitted = _true(conditions, "Admitted")
            finished = _true(conditions, "Finished")
            if admitted and record.admitted_at is None:
                record.admitted_at = now
            record.admitted = admitted or (finished and record.admitted_at is not None)
            admission = status.get("admission") or {}
            record.cluster_queue = admission.get("clusterQueue") or record.cluster_queue
            evicted = conditions.get("Evicted")
            if evicted is not None and evicted.get("status") == "True":
                mark = (str(meta.uid), str(evicted.get("lastTransitionTime")))
                if mark not in self._evicted:
                    self._evicted.add(mark)
                    record.evictions += 1
            reserved = conditions.get("QuotaReserved")
            record.message = reserved.get("message") if reserved is not None and not admitted and not finished \
                else None
            if not finished and (reserved is None or (admitted and jobs.get(key, False))):
                decided = False
            fingerprint.append((key, admitted, finished, record.message, record.evictions))
        if set(jobs) - seen:
            decided = False  # a queued Job whose Workload Kueue has not made yet
        return decided, tuple(sorted(fingerprint, key=str))

    def _queued_pods(self, held: dict[str, bool]) -> dict[str, str]:
        """Pods Kueue's pod integration queues (the queue-name label, no owner), each to its workload's key as
        Phalanx names it ("Pod ns/name", or "PodGroup ns/group" for a pod group); `held` gains every workload
        Kueue must decide on, with whether a pod of it is still gated. A pod group counts once it has its
        `kueue.x-k8s.io/pod-group-total-count` pods (Kueue makes its Workload then)."""
        of_pod: dict[str, str] = {}
        members: dict[str, int] = {}
        totals: dict[str, int] = {}
        for pod in self.client.list(Pod, namespace="*"):
            meta = pod.metadata
            if meta is None or not (meta.labels or {}).get(KUEUE_QUEUE_LABEL) or meta.ownerReferences:
                continue
            group = (meta.labels or {}).get(POD_GROUP_LABEL)
            key = f"PodGroup {meta.namespace}/{group}" if group else f"Pod {meta.namespace}/{meta.name}"
            of_pod[f"{meta.namespace}/{meta.name}"] = key
            gated = any(g.name == ADMISSION_GATE for g in (pod.spec.schedulingGates if pod.spec else None) or ())
            held[key] = held.get(key, False) or gated
            if group:
                members[key] = members.get(key, 0) + 1
                raw = (meta.annotations or {}).get(POD_GROUP_TOTAL, "")
                totals[key] = int(raw) if raw.isdigit() else 1
        for key, count in members.items():
            if count < totals[key]:
                del held[key]  # incomplete: Kueue makes no Workload for it yet
        return of_pod

    def reset(self) -> None:
        """Delete Kueue's objects, after the Jobs they belong to (Kueue would make a deleted Workload again for
        a Job still there), with finalizers cleared by hand."""
        for _ in range(100):
            left = 0
            for kind in KINDS:
                namespaced = kind is Workload or kind is LocalQueue
                for obj in self.client.list(kind, namespace="*") if namespaced else self.client.list(kind):
                    meta = obj.metadata
                    left += 1
                    with contextlib.suppress(ApiError):
                        if meta.finalizers:
                            self.client.patch(kind, meta.name, {"metadata": {"finalizers": None}},
                                              namespace=meta.namespace, patch_type=PatchType.MERGE)
                        if meta.deletionTimestamp is None:
                            self.client.delete(kind, meta.name, namespace=meta.namespace,
                                               cascade=CascadeType.BACKGROUND)
            if not left:
                return
            time.sleep(POLL_SECONDS)
        raise ControlPlaneError("Kueue's objects of the previous verify run were not deleted")


def _true(conditions: dict[str, Any], kind: str) -> bool:
    return bool(conditions.get(kind, {}).get("status") == "True")
