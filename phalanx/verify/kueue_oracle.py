"""What the oracle watches when the real Kueue admits (`verify --profile kueue`): each Job's Kueue Workload,
whether and at which step of the timeline it was admitted, by which ClusterQueue, how often evicted, and why it
waits; and waiting, at each step, until Kueue has decided on every queued Job.

Kueue decides asynchronously: a Job created with the queue-name label is suspended by Kueue's webhook, gets a
Workload from Kueue's Job reconciler, and is admitted (QuotaReserved and Admitted True, the Job resumed) or left
pending (QuotaReserved False with a message) by its scheduler, which retries on every change. The step is
settled when every queued Job has a Workload that Kueue has tried, every admitted one's Job runs, no Job is
between states (pods ended that its controller has not counted, a Job complete whose Workload is not finished,
a Job suspended or resumed whose pods are not yet gone or made), and Kueue's own queues are idle: read from its
metrics, no workload waiting for a scheduling cycle (`kueue_pending_workloads{status="active"}`), or cycles
running without changing anything (`kueue_admission_attempts_total`: a StrictFIFO head that does not fit is
retried at once, and the workloads behind it are never tried), and no requeue pending: Kueue requeues its
inadmissible workloads a second after quota is freed (`requeueBatchPeriod`). Without its metrics (or with its
pod integration, whose pods this does not follow), a still spell does: nothing changed for longer than Kueue's
requeue; with a Workload Kueue does not try, for a few seconds.
"""

from __future__ import annotations

import contextlib
import math
import re
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lightkube import ApiError, Client
from lightkube.generic_resource import create_global_resource, create_namespaced_resource
from lightkube.resources.apps_v1 import StatefulSet
from lightkube.resources.core_v1 import Pod
from lightkube.types import CascadeType, PatchType

from phalanx.api.fields import KUEUE_QUEUE_LABEL
from phalanx.verify.controlplane import ControlPlaneError, samples
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
JOBSET_FRAMEWORK = "jobset.x-k8s.io/jobset"
LWS_FRAMEWORK = "leaderworkerset.x-k8s.io/leaderworkerset"
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
LWS_GROUP_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
POLL_SECONDS = 0.1
STILL_SECONDS = 1.5  # Kueue admits 0.25–0.95 s after a change here; a reclaim takes up to 2 s (then it changes)
# With Kueue's queues read from its metrics: unchanged this long (its informers lag by milliseconds), idle queues
# are decided; after quota was freed, Kueue requeues its inadmissible workloads a second later
# (requeueBatchPeriod, pkg/cache/queue/inadmissible_workloads.go).
EVENT_SECONDS = 0.3
REQUEUE_SECONDS = 1.3
SPIN_ATTEMPTS = 3  # scheduling cycles run with nothing changed: Kueue retries the same heads
# A Workload that Kueue never tries stays without QuotaReserved (behind a StrictFIFO head that does not fit):
# unchanged this long, it is left undecided.
UNDECIDED_SECONDS = 4.0
RECHECK_SECONDS = 0.5  # after the scheduler's quiet: binding pods changes nothing Kueue's Job integration reads


_STATUS = re.compile(r'status="(\w+)"')
JOB_ENDED = ("Complete", "Failed", "SuccessCriteriaMet", "FailureTarget")


@dataclass(frozen=True)
class _State:
    decided: bool  # every queued Job (pod, group) has a Workload Kueue has tried, admitted ones running
    moving: bool  # something is between states that Kueue or the Job controller is about to act on
    untried: bool  # a Workload without QuotaReserved (behind a StrictFIFO head, or just made)
    holding: frozenset[str]  # the workloads that hold quota
    fingerprint: tuple[Any, ...]


@dataclass(frozen=True)
class _Queues:
    active: int  # workloads waiting for a scheduling cycle, or in one
    inadmissible: int
    attempts: int  # scheduling cycles run


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
        self._holding: frozenset[str] = frozenset()
        self._freed_at = -math.inf  # when quota was last seen freed (monotonic)
        self._succeeded: Counter[str] = Counter()  # Job key -> its pods the replay ended as succeeded

    def start(self) -> None:
        self.workloads.clear()
        self._evicted.clear()
        self._holding = frozenset()
        self._freed_at = -math.inf
        self._succeeded.clear()
        self.kueue.start()

    def succeeded(self, pod: Mapping[str, Any]) -> None:
        """The replay ended `pod` as succeeded: its Job is between states until its controller has counted it."""
        meta = pod["metadata"]
        for owner in meta.get("ownerReferences") or ():
            if owner.get("kind") == "Job":
                self._succeeded[f"Job {meta.get('namespace', 'default')}/{owner.get('name')}"] += 1

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
            for obj in self.kueue.plane.items(f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/workloads",
                                              "Workload", f"{GROUP}/{VERSION}"):
                if any(o.get("kind") == kind and o.get("name") == name
                       for o in obj["metadata"].get("ownerReferences") or ()):
                    return
            time.sleep(POLL_SECONDS / 2)

    def settle(self, now: float, timeout: float = 90.0, still: float = STILL_SECONDS) -> bool:
        """Wait until Kueue has decided on every queued Job and its queues are idle (or, without its metrics,
        nothing changed for `still` seconds); note the admissions seen. True when anything changed meanwhile."""
        deadline = time.monotonic() + timeout
        last: _State | None = None
        first: tuple[Any, ...] | None = None
        since = time.monotonic()
        attempts_at: int | None = None  # Kueue's cycles when the state was first seen still long enough
        while time.monotonic() < deadline:
            state = self._observe(now)
            clock = time.monotonic()
            if first is None:
                first = state.fingerprint
            if state != last:
                last, since, attempts_at = state, clock, None
            else:
                unchanged = clock - since
                if not state.moving and unchanged >= EVENT_SECONDS and not self.pods:
                    queues = self._queues()
                    if queues is not None:
                        if attempts_at is None:
                            attempts_at = queues.attempts
                        requeue_due = queues.inadmissible > 0 and clock - self._freed_at < REQUEUE_SECONDS
                        idle = queues.active == 0 and not state.untried
                        if not requeue_due and (idle or queues.attempts - attempts_at >= SPIN_ATTEMPTS):
                            return state.fingerprint != first
                        if requeue_due:  # Kueue does nothing until then
                            time.sleep(max(0.0, self._freed_at + REQUEUE_SECONDS - POLL_SECONDS - clock))
                if unchanged >= (still if state.decided else UNDECIDED_SECONDS):
                    return state.fingerprint != first
            time.sleep(POLL_SECONDS)
        raise ControlPlaneError(f"Kueue did not settle within {timeout:g}s at simulated time {now:g}s")

    def _queues(self) -> _Queues | None:
        """Kueue's queues from its metrics, or None when they cannot be read."""
        try:
            text = self.kueue.metrics()
        except OSError:
            return None
        totals = {"active": 0.0, "inadmissible": 0.0, "attempts": 0.0}
        for name, labels, value in samples(text, "kueue_pending_workloads", "kueue_admission_attempts_total"):
            if name == "kueue_admission_attempts_total":
                totals["attempts"] += value
            else:
                status = _STATUS.search(labels)
                if status is not None and status.group(1) in totals:
                    totals[status.group(1)] += value
        return _Queues(int(totals["active"]), int(totals["inadmissible"]), int(totals["attempts"]))

    def _observe(self, now: float) -> _State:
        """Whether every queued Job is decided, whether anything is between states, and a fingerprint of the
        decisions."""
        jobs: dict[str, bool] = {}  # queued Job (or plain pod, or complete pod group) -> held (suspended, gated)
        moving = False
        bodies: dict[str, dict[str, Any]] = {}
        plane = self.kueue.plane
        for body in plane.items("/apis/batch/v1/jobs", "Job", "batch/v1"):
            if (body["metadata"].get("labels") or {}).get(KUEUE_QUEUE_LABEL):
                name = f"Job {body['metadata']['namespace']}/{body['metadata']['name']}"
                jobs[name] = bool((body.get("spec") or {}).get("suspend"))
                bodies[name] = body
        if bodies and not self.pods:
            moving |= _jobs_moving(bodies, self._succeeded)
        if JOBSET_FRAMEWORK in self.kueue.frameworks:
            for body in plane.items("/apis/jobset.x-k8s.io/v1alpha2/jobsets", "JobSet", "jobset.x-k8s.io/v1alpha2"):
                if (body["metadata"].get("labels") or {}).get(KUEUE_QUEUE_LABEL):
                    name = f"JobSet {body['metadata']['namespace']}/{body['metadata']['name']}"
                    jobs[name] = bool((body.get("spec") or {}).get("suspend"))
        of_pod = self._queued_pods(jobs) if self.pods else {}
        sets: dict[str, str] = {}  # a queued LeaderWorkerSet (`namespace/name`) -> its workloads' name prefix
        if LWS_FRAMEWORK in self.kueue.frameworks:
            sets = self._queued_groups(jobs)
        if self.pods:
            for sts in self.client.list(StatefulSet, namespace="*"):
                meta = sts.metadata
                if meta is not None and (meta.labels or {}).get(KUEUE_QUEUE_LABEL):
                    jobs[f"StatefulSet {meta.namespace}/{meta.name}"] = False
        decided = True
        untried = False
        seen: set[str] = set()
        holding: set[str] = set()
        fingerprint = []
        for obj in plane.items(f"/apis/{GROUP}/{VERSION}/workloads", "Workload", f"{GROUP}/{VERSION}"):
            meta = obj["metadata"]
            key = _workload_key(meta, of_pod, sets)
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
                mark = (str(meta.get("uid")), str(evicted.get("lastTransitionTime")))
                if mark not in self._evicted:
                    self._evicted.add(mark)
                    record.evictions += 1
            reserved = conditions.get("QuotaReserved")
            record.message = reserved.get("message") if reserved is not None and not admitted and not finished \
                else None
            if _true(conditions, "QuotaReserved") and not finished:
                holding.add(key)
            of_job = bodies.get(key)
            if of_job is not None and not finished:
                ended = any(c.get("type") in JOB_ENDED and c.get("status") == "True"
                            for c in (of_job.get("status") or {}).get("conditions") or ())
                # A Job that ended, its Workload not finished yet; an evicted one not yet suspended
                moving |= ended or (_true(conditions, "Evicted") and not jobs[key])
            if not finished and reserved is None:
                decided, untried = False, True
            if not finished and admitted and jobs.get(key, False):
                decided, moving = False, True
            fingerprint.append((key, admitted, finished, record.message, record.evictions))
        if set(jobs) - seen:
            decided, moving = False, True  # a queued Job whose Workload Kueue has not made yet
        if self._holding - holding:
            self._freed_at = time.monotonic()
        self._holding = frozenset(holding)
        return _State(decided, moving, untried, self._holding, tuple(sorted(fingerprint, key=str)))

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

    def _queued_groups(self, held: dict[str, bool]) -> dict[str, str]:
        """The LeaderWorkerSets Kueue queues, each to the name prefix of its groups' Workloads; `held` gains a
        workload per group ("PodGroup ns/<lws>-<group>"), with whether a pod of the group is still gated."""
        prefixes: dict[str, str] = {}
        for body in self.kueue.plane.items("/apis/leaderworkerset.x-k8s.io/v1/leaderworkersets", "LeaderWorkerSet",
                                           "leaderworkerset.x-k8s.io/v1"):
            meta = body["metadata"]
            if not (meta.get("labels") or {}).get(KUEUE_QUEUE_LABEL):
                continue
            prefixes[f"{meta['namespace']}/{meta['name']}"] = f"leaderworkerset-{meta['name']}-"
            replicas = (body.get("spec") or {}).get("replicas")
            for index in range(1 if replicas is None else int(replicas)):
                held.setdefault(f"PodGroup {meta['namespace']}/{meta['name']}-{index}", False)
        for pod in self.kueue.plane.items("/api/v1/pods", "Pod", "v1"):
            meta = pod["metadata"]
            labels = meta.get("labels") or {}
            name, group = labels.get(LWS_NAME_LABEL), labels.get(LWS_GROUP_LABEL)
            key = f"PodGroup {meta.get('namespace')}/{name}-{group}"
            if name is not None and key in held:
                gates = (pod.get("spec") or {}).get("schedulingGates") or ()
                held[key] = held[key] or any(g.get("name") == ADMISSION_GATE for g in gates)
        return prefixes

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


def _jobs_moving(jobs: Mapping[str, Mapping[str, Any]], ended_by_job: Mapping[str, int]) -> bool:
    """Whether a queued Job is between states its controller is about to settle: pods the replay ended as
    succeeded (`ended_by_job`) that it has not counted yet, a count not yet written, pods left on a
    suspended Job, or pods not yet made for a resumed one."""
    for key, ended in ended_by_job.items():
        body = jobs.get(key)
        if body is not None and int((body.get("status") or {}).get("succeeded") or 0) < ended:
            return True
    for body in jobs.values():
        spec = body.get("spec") or {}
        status = body.get("status") or {}
        uncounted = status.get("uncountedTerminatedPods") or {}
        if uncounted.get("succeeded") or uncounted.get("failed"):
            return True
        active, succeeded = int(status.get("active") or 0), int(status.get("succeeded") or 0)
        if spec.get("suspend"):
            if active:
                return True
            continue
        ended = any(c.get("type") in JOB_ENDED and c.get("status") == "True" for c in status.get("conditions") or ())
        completions = spec.get("completions")
        if ended:
            continue
        if completions is not None and succeeded >= int(completions):
            return True  # complete, not yet marked so
        raw = spec.get("parallelism")
        parallelism = 1 if raw is None else int(raw)
        # (without completions, a Job makes no new pod once one succeeded)
        wanted = min(parallelism, int(completions) - succeeded) if completions is not None else \
            (parallelism if not succeeded else 0)
        if active < wanted:
            return True
    return False


def _true(conditions: dict[str, Any], kind: str) -> bool:
    return bool(conditions.get(kind, {}).get("status") == "True")


def _workload_key(meta: Mapping[str, Any], of_pod: Mapping[str, str], sets: Mapping[str, str]) -> str | None:
    """A Workload's key as Phalanx's report names it, from its owner: "Job ns/name" (StatefulSet, JobSet alike);
    a pod's or pod group's from `of_pod`; a LeaderWorkerSet's group "PodGroup ns/<lws>-<group>" from the
    group index in its name (`sets`: a queued LWS -> its workloads' name prefix); None for another's."""
    namespace = meta.get("namespace")
    owners = meta.get("ownerReferences") or ()
    for owner in owners:
        kind, name = owner.get("kind"), owner.get("name")
        if kind in ("Job", "StatefulSet", "JobSet"):
            return f"{kind} {namespace}/{name}"
        if kind == "LeaderWorkerSet":
            prefix = sets.get(f"{namespace}/{name}")
            group = _group_index(str(meta.get("name")), prefix) if prefix is not None else None
            return f"PodGroup {namespace}/{name}-{group}" if group is not None else None
    return next((of_pod[f"{namespace}/{o.get('name')}"] for o in owners
                 if o.get("kind") == "Pod" and f"{namespace}/{o.get('name')}" in of_pod), None)


def _group_index(workload: str, prefix: str) -> str | None:
    """The group index in the name Kueue gives a LeaderWorkerSet group's Workload, `<prefix><index>-<hash>`
    (jobframework.GetWorkloadNameForOwnerWithGVK of `<lws>-<index>`); None when the prefix was truncated."""
    if not workload.startswith(prefix):
        return None
    index, _, digest = workload[len(prefix):].rpartition("-")
    return index if index.isdigit() and digest else None
