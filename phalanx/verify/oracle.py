"""The real kube-scheduler as an oracle: replay a timeline of manifests on a real API server and record
what the real scheduler decided.

The timeline (which objects appear and which pods finish, at which simulated time) comes from a Phalanx
simulation of the same inputs; the oracle applies each step, waits until the scheduler is quiet, and
records where every pod went. No kubelet runs, so the oracle does what a kubelet would: it
marks bound pods Running with a `status.startTime` on the simulated clock (preemption prefers victims that
started last), finishes pods whose time has come (phase Succeeded, then deleted) and completes graceful
deletions (preemption victims) at once.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import json
import math
import re
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from lightkube import ApiError, Client, KubeConfig
from lightkube.core.resource import NamespacedResource
from lightkube.generic_resource import create_global_resource, create_namespaced_resource
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Event, Namespace, Pod
from lightkube.resources.scheduling_v1beta1 import PodGroup
from lightkube.types import CascadeType, PatchType

from phalanx.api.fields import KUEUE_QUEUE_LABEL, with_generated_name
from phalanx.api.objects import Source
from phalanx.errors import InputError
from phalanx.verify.controller_pods import CONTROLLERS, ControllerPods, top_owner
from phalanx.verify.controlplane import ControlPlane, ControlPlaneError, samples
from phalanx.verify.integrations_plane import RELEASES, Integrations, integrations_on, sets_starting
from phalanx.verify.kueue_oracle import KUEUE_POD_FINALIZER, POD_GROUP_LABEL, RECHECK_SECONDS, Admissions
from phalanx.verify.kueue_plane import JOBS_ONLY, WITH_PODS, kueue_on

# How long a pod naming a PriorityClass created just before is retried while the API server's informer
# catches up.
PRIORITY_CLASS_SECONDS = 10.0
# How long the last look waits for a PodGroup whose members were bound to say so.
GROUP_STATUS_SECONDS = 3.0
INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"
QUIET_POLLS = 3  # consecutive unchanged polls (with empty active and backoff queues) that make "quiet"
POLL_SECONDS = 0.05
ATTEMPT_SECONDS = 3.0  # how long to wait for the real scheduler to try a pod just created
FINALIZER = "phalanx.dev/replay"  # on every pod the oracle creates: it, not the API server, ends a deletion
# Unchanged seconds that make "quiet" while pods or groups keep retrying: longer than a retry round of
# kube-scheduler's queue with a 1 s backoff (up to 1 s backoff, then up to 1 s until the next flush).
STILL_SECONDS = 3.5
# With a group retrying on its error backoff (podMaxBackoff × √size, on whole-second windows), the retry that
# makes quiet can take longer; this bounds the wait if its attempts stop showing: at least this, and at least
# the largest pending group's longest backoff and a poll round (`_group_still`).
GROUP_STILL_SECONDS = 12.0
MAX_BACKOFF_SECONDS = 10.0  # kube-scheduler's podMaxBackoffSeconds
_LABEL = re.compile(r'(\w+)="([^"]*)"')
_PREEMPTED_BY = re.compile(r"Preempted by (\w+) (\S+) on node (\S+)")
CLUSTER_SCOPED = {"Node", "Namespace", "PriorityClass", "ResourceSlice", "DeviceClass", "DeviceTaintRule",
                  "ResourceFlavor", "ClusterQueue", "Cohort", "WorkloadPriorityClass", "Topology"}  # Kueue's too
# The workload kinds a gate decides whether the API server serves: group version path and resource.
GATED_KINDS = {"Workload": ("/apis/scheduling.k8s.io/v1beta1", "workloads"),
               "PodGroup": ("/apis/scheduling.k8s.io/v1beta1", "podgroups"),
               "CompositePodGroup": ("/apis/scheduling.k8s.io/v1alpha3", "compositepodgroups")}
# Kinds created before everything else of their step: admission needs them first.
FIRST = ("Namespace", "PriorityClass", "DeviceClass")
# Kinds whose controller (run by the oracle) makes pods at once: created in their document turn among the pods.
POD_OWNERS = ("Job", *CONTROLLERS)


@dataclass(frozen=True)
class Step:
    """One instant of the timeline: pods that finish, then objects that appear.

    `units` orders the pending pods that appear: each unit (a pod, or the members of a PodGroup) is created
    only after the real scheduler has attempted the one before, in the order Phalanx's queue took them.
    Created all at once, equal-priority pods would reach kube-scheduler's queue in informer order, which is
    not the manifests' order; this removes that source of randomness as the tie hints remove the other.
    `unit_groups` names each unit's queue entry (`group:ns/name`, or "" for a pod): a PodGroup that appears at
    this step is created in its unit's turn, since its creation is what releases members that wait for it.
    """

    time: float
    finish: tuple[str, ...] = ()
    create: tuple[tuple[Source, Mapping[str, Any]], ...] = ()
    units: tuple[tuple[str, ...], ...] = ()
    unit_groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Queues:
    """What kube-scheduler's metrics say is left to try: pods active or backing off (or waiting for their
    group's cycle), groups active or backing off, and how many group cycles it has run."""

    pods: int
    groups: int
    group_attempts: int
    queued: int = 0  # pods in any queue (active, backoff, unschedulable, gated, …): the rest are in a cycle


@dataclass
class RealPod:
    key: str
    node: str | None = None
    bound_at: float | None = None
    message: str | None = None
    preempted: bool = False
    finished: bool = False
    gone_at: float | None = None  # a graceful deletion ends at this simulated time (as Phalanx's clock runs)
    evicted: bool = False  # deleted by a (device) taint eviction controller: a bare pod ends Failed
    group: str | None = None  # its PodGroup (`namespace/name`; a Job controller's PodGroup has a hashed name)
    preempted_on: str | None = None  # as a preemptor: the node whose pods the real scheduler evicted for it
    deleted: str | None = None  # the uid of the pod the oracle deleted at once (another finalizer may keep it)


@dataclass
class RealOutcome:
    pods: dict[str, RealPod] = field(default_factory=dict)
    groups: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)  # key -> type -> condition
    skipped_finishes: list[str] = field(default_factory=list)
    seconds: float = 0.0  # wall time from the scheduler's start to the last quiet
    # (kind, the gate that is off) -> objects the API server refuses or does not serve with the profile's gates
    left_out: dict[tuple[str, str], int] = field(default_factory=dict)


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
    """The manifest as the API server should receive it: named as Phalanx named it (`generateName`), no
    server-set fields; nodes Ready (no kubelet),
    with `pods: 110` allocatable where the manifest leaves it out (as Phalanx assumes)."""
    named = with_generated_name(doc, f"{source.file}#{source.index}")  # the name Phalanx gave it
    obj: dict[str, Any] = {k: v for k, v in named.items() if k != "status" or doc.get("kind") == "Node"}
    meta = dict(obj.get("metadata") or {})
    if meta.get("name"):
        meta.pop("generateName", None)
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
        # A deleted pod stays, terminating, until the oracle lets it go (there is no kubelet to): a victim of
        # preemption too, even with no grace period, so that it goes when the replay says and not while the
        # oracle is still creating the pods of its instant.
        meta["finalizers"] = [*(f for f in meta.get("finalizers") or () if f != FINALIZER), FINALIZER]
    return obj


class Oracle:
    """Drives the real scheduler through a timeline on a running ControlPlane."""

    def __init__(self, plane: ControlPlane) -> None:
        self.plane = plane
        self.client = Client(KubeConfig.from_file(str(plane.kubeconfig)), field_manager="phalanx-verify")
        self._keys: dict[str, str] = {}  # uid -> key, of every pod this run has seen
        # status.startTime of simulated time 0 (whole seconds, as the API server writes times), and the start
        # of pods created bound, as Phalanx counts it (relative to the latest start in the manifests).
        self._epoch = 0
        self._created_started: dict[str, float] = {}
        self._created_bound: set[str] = set()  # pods created with a node: no scheduler bound them
        self._now = 0.0  # the simulated time of the step being replayed
        self._durations: dict[str, float] = {}  # run times of the pods the oracle ends itself
        self._due: defaultdict[float, set[str]] = defaultdict(set)  # simulated time -> pods that end then
        # The running kube-scheduler's configuration and gates: a run with the same ones reuses it.
        self._scheduler_setup: tuple[dict[str, Any], dict[str, bool]] | None = None
        self.admissions: Admissions | None = None  # the real Kueue, when the profile admits as Kueue does
        self.integrations: Integrations | None = None  # the real JobSet and LWS controllers, when the inputs hold them
        # A Job without completion indexes -> the uid of the pod named <job>-<n>, by n; and the pods that ended
        self._job_pods: defaultdict[str, dict[int, str]] = defaultdict(dict)
        # An Indexed Job -> the keys (`<job>-<index>`) of its pods seen: alike, whichever index went where
        self._indexed: defaultdict[str, set[str]] = defaultdict(set)
        self._ended: set[str] = set()
        self._queued_second = 0  # the wall-clock second in which the last Job Kueue queues was created
        self._spaced: set[str] = set()  # Kueue pod workloads created so far (spaced a second apart)
        self._controller_pods = ControllerPods()  # pods the replayed workload controllers make, as Phalanx names them
        self._unserved: set[str] = set()  # kinds the API server does not serve with its gates: left out
        self._left_out: Counter[tuple[str, str]] = Counter()

    def use_kueue(self, on: bool, settings: Mapping[str, Any] | None = None, *, pods: bool = False,
                  integrations: Iterable[str] = ()) -> None:
        """Replay with the real Kueue in front of the scheduler (started by the next `run`), or without.
        `settings`: fields of Kueue's Configuration from the inputs (fairSharing), restarting it if they change;
        `pods`: with its pod integration (plain pods, pod groups, Deployments and StatefulSets) beside its Job
        one; `integrations`: the kinds (JobSet, LeaderWorkerSet) whose real controllers run beside it, with
        Kueue's integrations of them (LWS's comes with the pod integration). Without Kueue, a Kueue left running
        with its pod integration goes back to Jobs only, so that its pod webhook does not see the pods of a
        replay it is not part of."""
        kueue = kueue_on(self.plane, create=on)
        if kueue is not None and not on and kueue.frameworks != JOBS_ONLY and kueue.process is not None:
            kueue.configure(kueue.settings, JOBS_ONLY)
            kueue.start()
        if not on:
            kueue = None
        kinds = sorted(set(integrations))
        self.integrations = integrations_on(self.plane) if kinds else None
        if self.integrations is not None:
            self.integrations.use(kinds)
        if kueue is not None:
            pods = pods or "LeaderWorkerSet" in kinds
            frameworks = [*(WITH_PODS if pods else JOBS_ONLY), *(RELEASES[kind].framework for kind in kinds)]
            kueue.configure(settings or {}, frameworks)
        self.admissions = Admissions(self.client, kueue) if kueue is not None else None

    def _listed(self, resource: Any) -> list[Any]:
        """Every object of a kind, none when the API server does not serve it (its gate is off)."""
        try:
            return list(self.client.list(resource, namespace="*") if _namespaced(resource) else
                        self.client.list(resource))
        except ApiError as exc:
            if exc.status.code == 404:
                return []
            raise

    def use_gates(self, gates: Mapping[str, bool]) -> None:
        """Run the API server (and the controller manager the next run starts) with `gates`, the profile's: it
        restarts when they change its flag. A workload kind it then does not serve is left out of the replay,
        counted in `RealOutcome.left_out`, as a cluster without the gate would refuse it. Call after `reset`."""
        self.plane.use_gates(gates)
        self._unserved = {kind for kind, (path, plural) in GATED_KINDS.items() if not self._serves(path, plural)}

    def _refused_by_gate(self, doc: Mapping[str, Any]) -> str | None:
        """The gate that is off for which the API server would not take this object: its kind is not served
        (GenericWorkload, or CompositePodGroup for its own kind), or a Workload made only of
        compositePodGroupTemplates, which the server drops with CompositePodGroup off and then refuses the
        Workload ("must specify one of")."""
        kind = doc.get("kind")
        if kind in self._unserved:
            return "CompositePodGroup" if kind == "CompositePodGroup" and "Workload" not in self._unserved \
                else "GenericWorkload"
        spec = doc.get("spec") or {}
        if kind == "Workload" and "CompositePodGroup" in self._unserved and not spec.get("podGroupTemplates"):
            return "CompositePodGroup"
        return None

    def _serves(self, path: str, plural: str) -> bool:
        try:
            resources = json.loads(self.plane.get(path)).get("resources") or []
        except (OSError, ValueError):  # 404: the group version is not served at all
            return False
        return any(resource.get("name") == plural for resource in resources)

    def reset(self, timeout: float = 60.0) -> None:
        """Delete what a previous run created (namespaced objects, nodes, classes, rules), for the next run.
        No garbage collector or finalizer controller runs here, so finalizers are cleared by hand."""
        self._spaced.clear()
        self.plane.stop_controller_manager()  # its controllers would recreate what is deleted
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            left = 0
            integrations = integrations_on(self.plane, create=False)
            for resource in _resources(integrations.installed if integrations is not None else ()):
                for obj in self._listed(resource):
                    meta = obj.metadata
                    if meta is None or not meta.name or meta.name.startswith("system-"):
                        continue
                    left += 1
                    if meta.finalizers:
                        with contextlib.suppress(ApiError):
                            self.client.patch(resource, meta.name, {"metadata": {"finalizers": None}},
                                              namespace=meta.namespace)
                    if meta.deletionTimestamp is None:
                        with contextlib.suppress(ApiError):
                            self.client.delete(resource, meta.name, namespace=meta.namespace, grace_period=0,
                                               cascade=CascadeType.BACKGROUND)
            if not left:
                kueue = kueue_on(self.plane, create=False)
                if kueue is not None:
                    Admissions(self.client, kueue).reset()
                return
            time.sleep(POLL_SECONDS)
        raise ControlPlaneError(f"objects of the previous verify run were not deleted within {timeout:g}s")

    def run(self, steps: Sequence[Step], scheduler_config: Mapping[str, Any], gates: Mapping[str, bool],
            controllers: Iterable[str] = (), durations: Mapping[str, float] | None = None,
            controller_pods: ControllerPods | None = None) -> RealOutcome:
        """Replay `steps`. `durations`: how long pods run once bound; the oracle's kubelet ends each of these
        that long after the real scheduler bound it (at a step of its own where the timeline has none), not
        when Phalanx's run ended it, since the real scheduler may have bound it at another time, or at all.
        `controller_pods`: the pods Phalanx's ReplicaSet, Deployment, StatefulSet and DaemonSet controllers made,
        whose keys the real controllers' pods take (`phalanx.verify.controller_pods`)."""
        outcome = RealOutcome()
        self._controller_pods = controller_pods or ControllerPods()
        self._controller_pods.reset()
        self._left_out.clear()
        self._keys.clear()
        self._epoch = int(time.time())
        self._created_started = _created_starts(steps)
        self._created_bound.clear()
        self._durations = dict(durations or {})
        self._due.clear()
        self._job_pods.clear()
        self._indexed.clear()
        self._ended.clear()
        if self.integrations is not None:
            self.integrations.start()  # before Kueue: its integrations of them wait for their CRDs
        if self.admissions is not None:
            self.admissions.start()
        self._ensure_namespaces(steps)
        started: float | None = None
        for i, step in enumerate(self._with_due(steps)):
            self._now = step.time
            # A step that changes nothing (a time at which only Phalanx's first run acted) needs no wait.
            acted = self._end_graceful(step.time, outcome)
            acted |= self._finish(replace(step, finish=tuple(k for k in step.finish if k not in self._durations)),
                                  outcome, due=sorted(self._due.pop(step.time, ())))
            pending = {pod_key(doc): (source, doc) for source, doc in step.create
                       if doc.get("kind") == "Pod" and not _node_of(doc)}
            deferred = _deferred_groups(step)
            # A Job's pods come from the Job controller the moment it sees the Job: created in its document
            # turn among this step's pending pods, as Phalanx's Job controller makes them in that turn (a JobSet
            # or LeaderWorkerSet in its turn too: Kueue orders workloads by creation). The other
            # workload controllers' pods reach Phalanx's queue after everything else of the instant: their owners
            # are created last, in document order.
            owners = sorted(((source, doc) for source, doc in step.create
                             if doc.get("kind") == "Job" or doc.get("kind") in RELEASES),
                            key=lambda item: _place(item[0]))
            late = sorted(((source, doc) for source, doc in step.create if doc.get("kind") in CONTROLLERS),
                          key=lambda item: _place(item[0]))
            for source, doc in _ordered(step.create):
                if doc.get("kind") == "PodGroup" and pod_key(doc) in deferred:
                    continue
                if doc.get("kind") in POD_OWNERS:
                    continue
                if doc.get("kind") in RELEASES:
                    continue
                if pod_key(doc) not in pending or doc.get("kind") != "Pod":
                    self._create(source, doc)
            if i == 0:
                wanted = (dict(scheduler_config), dict(gates))
                if self.plane.scheduler is None or self._scheduler_setup != wanted:
                    self.plane.start_scheduler(scheduler_config, gates)
                    self._scheduler_setup = wanted
                if controllers:  # with the API server's gates (`use_gates`)
                    self.plane.start_controller_manager(controllers)
                if self.admissions is not None:
                    self.admissions.await_queues()
                started = time.monotonic()
            for j, unit in enumerate(step.units):
                kind, _, name = (step.unit_groups[j] if j < len(step.unit_groups) else "").partition(":")
                group = deferred.pop(name, None) if kind == "group" else None
                keys = [key for key in unit if key in pending]
                if group is not None:
                    self._create(*group)
                    waiting = {self.key(p) for p in self._pods() if not _node_of(p)}
                    keys += [key for key in unit if key in waiting and key not in keys]
                first = min((_place(pending[key][0]) for key in keys if key in pending), default=None)
                while owners and first is not None and _place(owners[0][0]) < first:
                    self._create_owner(*owners.pop(0))
                for key in keys:
                    if key in pending:
                        self._create(*pending.pop(key))
                if keys:
                    self._attempted(keys)
            for item in deferred.values():
                self._create(*item)
            rest = sorted([*pending.values(), *owners], key=lambda item: _place(item[0]))
            for source, doc in [*rest, *late]:
                if doc.get("kind") in POD_OWNERS or doc.get("kind") in RELEASES:
                    self._create_owner(source, doc)
                else:
                    self._create(source, doc)
            if acted or step.create or i == 0:
                self._settle(step.time, outcome)
        if started is not None:
            outcome.seconds = time.monotonic() - started
        self._collect(outcome, self._now)
        outcome.left_out = dict(self._left_out)
        return outcome

    def _settle(self, now: float, outcome: RealOutcome) -> None:
        """The scheduler quiet, and Kueue (when it admits) decided: a decision of Kueue's (an admission, an
        eviction) gives the scheduler more to do, and a pod that ends may free quota."""
        for _ in range(10):
            if self.admissions is not None:
                self.admissions.settle(now)
            self._quiet(now, outcome)
            if self.admissions is None or not self.admissions.settle(now, still=RECHECK_SECONDS):
                return

    def _with_due(self, steps: Sequence[Step]) -> Iterator[Step]:
        """The timeline's steps, and a step for each pod end due between them (`_due` grows as pods bind)."""
        i = 0
        while i < len(steps) or self._due:
            due = min(self._due, default=math.inf)
            if i < len(steps) and steps[i].time <= due:
                i += 1
                yield steps[i - 1]
            else:
                yield Step(due)

    def _seen_bound(self, record: RealPod, node: str, now: float) -> None:
        record.bound_at, record.node = now, node
        run = self._durations.get(record.key)
        if run is not None and not record.finished:
            self._due[now + run].add(record.key)

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
            self.ensure_namespace(name)

    def ensure_namespace(self, name: str) -> None:
        with contextlib.suppress(ApiError):  # 409: it exists
            self.client.create(Namespace(metadata=ObjectMeta(name=name)))

    def create(self, source: Source, doc: Mapping[str, Any]) -> None:
        """Create one manifest as the API server should receive it (see `prepare`). A plain pod Kueue's pod
        integration queues is created a second after the last workload Kueue queued, as a Job is
        (`_create_owner`), and waited for until Kueue has made its Workload; a pod group's first member too."""
        workload = _workload_of(doc) if doc.get("kind") == "Pod" and self.admissions is not None \
            and self.admissions.pods else None
        if workload is None or workload in self._spaced:
            self._create(source, doc)
            return
        self._spaced.add(workload)
        time.sleep(max(0.0, self._queued_second + 1 - time.time()))
        self._create(source, doc)
        if workload.startswith("Pod ") and self.admissions is not None:
            meta = doc.get("metadata") or {}
            self.admissions.await_workload(str(meta.get("namespace") or "default"), str(meta.get("name")), "Pod")
        self._queued_second = math.floor(time.time())

    def _create(self, source: Source, doc: Mapping[str, Any]) -> None:
        gate = self._refused_by_gate(doc)
        if gate is not None:
            self._left_out[str(doc.get("kind")), gate] += 1
            return
        body = prepare(doc, source)
        if body.get("kind") not in CLUSTER_SCOPED:
            body["metadata"].setdefault("namespace", "default")
        name = f"{body.get('kind')} {body['metadata'].get('name')}"
        try:
            created = self._create_admitted(body)
            if body.get("kind") == "Pod" and _node_of(body):
                key = pod_key(body)
                self._created_bound.add(key)
                self._start(body, self._created_started.get(key, self._now))
            status = doc.get("status")
            if body.get("kind") == "PodGroup" and isinstance(status, Mapping) and status:
                # A snapshot's PodGroup keeps its status (PodGroupInitiallyScheduled is final once True).
                meta = created.metadata
                self.client.patch(PodGroup.Status, meta.name, {"status": dict(status)}, namespace=meta.namespace,
                                  patch_type=PatchType.MERGE)
        except ApiError as exc:
            if exc.status.code == 409 and body.get("kind") in ("Namespace", "PriorityClass"):
                return
            raise InputError(f"the API server rejected it: {exc.status.message}", file=source.file,
                             obj=name) from None

    def _create_admitted(self, body: dict[str, Any]) -> Any:
        """Create `body`; a pod refused because the Priority admission plugin's informer has not yet seen a
        PriorityClass created a moment before ("no PriorityClass with name … was found") is sent again for a
        few seconds, as a controller would retry it."""
        deadline = time.monotonic() + PRIORITY_CLASS_SECONDS
        while True:
            try:
                return self.client.create(_generic(body))
            except ApiError as exc:
                unseen = exc.status.code == 403 and "no PriorityClass with name" in (exc.status.message or "")
                if not unseen or time.monotonic() >= deadline:
                    raise
                time.sleep(POLL_SECONDS / 5)

    def _create_set(self, source: Source, doc: Mapping[str, Any]) -> None:
        """A JobSet or LeaderWorkerSet, whose real controller makes its Jobs or pods. One Kueue queues is created a
        second after the workload Kueue queued before it (as a Job is, `_create_owner`), and waited for until
        Kueue has made its Workload."""
        meta = doc.get("metadata") or {}
        queued = self.admissions is not None and (meta.get("labels") or {}).get(KUEUE_QUEUE_LABEL)
        if queued:
            time.sleep(max(0.0, self._queued_second + 1 - time.time()))
        self._create(source, doc)
        if queued and self.admissions is not None:
            name = with_generated_name(doc, f"{source.file}#{source.index}")["metadata"]["name"]
            self.admissions.await_workload(str(meta.get("namespace") or "default"), str(name), str(doc["kind"]))
            self._queued_second = math.floor(time.time())

    def _create_owner(self, source: Source, doc: Mapping[str, Any]) -> None:
        """Create a Job and wait (a few seconds at most) until the Job controller has made the pods it starts
        with, so that the step's later pods reach the queue after them, as in the manifests' order. A Job that
        Kueue queues is created a second after the one before: Kueue orders workloads by creationTimestamp
        (whole seconds), then at random (by UID); a second apart, by creation, as Phalanx orders them.
        A ReplicaSet, Deployment, StatefulSet or DaemonSet: wait for as many pods as Phalanx's controller made
        for it at this instant."""
        if doc.get("kind") in RELEASES:
            self._create_set(source, doc)
            return
        if doc.get("kind") != "Job":
            self._create(source, doc)
            self._await_made(doc)
            return
        spec = doc.get("spec") or {}
        queued = self.admissions is not None and ((doc.get("metadata") or {}).get("labels") or {}).get(
            KUEUE_QUEUE_LABEL)
        if queued:
            time.sleep(max(0.0, self._queued_second + 1 - time.time()))
        self._create(source, doc)
        if queued and self.admissions is not None:
            meta = doc.get("metadata") or {}
            self.admissions.await_workload(str(meta.get("namespace") or "default"), str(meta.get("name")))
            self._queued_second = math.floor(time.time())
        if spec.get("suspend") is True or queued:  # Kueue decides when it starts
            return
        parallelism = _count(spec.get("parallelism"), 1)
        expected = min(parallelism, _count(spec.get("completions"), parallelism))
        name = str((doc.get("metadata") or {}).get("name"))
        namespace = str((doc.get("metadata") or {}).get("namespace") or "default")
        deadline = time.monotonic() + ATTEMPT_SECONDS
        while time.monotonic() < deadline:
            made = self.client.list(Pod, namespace=namespace, labels={"batch.kubernetes.io/job-name": name})
            if sum(1 for _ in made) >= expected:
                return
            time.sleep(POLL_SECONDS / 5)

    def _await_made(self, doc: Mapping[str, Any]) -> None:
        meta = doc.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        labels = ((((doc.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels")) or {}
        owner = top_owner(str(doc.get("kind")), namespace, str(meta.get("name")), labels,
                          self._controller_pods.deployments)
        expected = self._controller_pods.made_at(owner, self._now) if owner is not None else 0
        deadline = time.monotonic() + ATTEMPT_SECONDS
        while expected and time.monotonic() < deadline:
            made = sum(1 for pod in self.client.list(Pod, namespace=namespace)
                       if self._controller_pods.owner(pod.to_dict()) == owner)
            if made >= expected:
                return
            time.sleep(POLL_SECONDS / 5)

    def _finish(self, step: Step, outcome: RealOutcome, due: Sequence[str] = ()) -> bool:
        """Pods whose work is done: phase Succeeded (a controller counts it), then deleted, as a kubelet and
        garbage collection would leave them; a pod the real scheduler never ran cannot finish. `due`: pods
        the oracle saw bound whose run ends now (one preempted meanwhile is gone, and has nothing to end).
        True when a pod ended."""
        if not step.finish and not due:
            return False
        ended = False
        live = {self.key(p): p for p in self._pods()}
        for key in (*step.finish, *due):
            pod = live.get(key)
            if key in due and (pod is None or pod["metadata"].get("deletionTimestamp") is not None):
                continue
            if pod is None or not _node_of(pod):
                outcome.skipped_finishes.append(key)
                continue
            record = outcome.pods.setdefault(key, RealPod(key))
            if record.bound_at is None:  # bound after the last step's quiet: seen first now
                self._seen_bound(record, _node_of(pod), step.time)
            meta = pod["metadata"]
            patch: dict[str, Any] = {"status": {"phase": "Succeeded", "conditions": [
                {"type": "Ready", "status": "False", "reason": "PodCompleted"}]}}
            with contextlib.suppress(ApiError):
                self.client.patch(Pod.Status, meta["name"], patch, namespace=meta["namespace"],
                                  patch_type=PatchType.MERGE)
            outcome.pods.setdefault(key, RealPod(key)).finished = True
            self._ended.add(pod["metadata"]["uid"])
            if self.admissions is not None:
                self.admissions.succeeded(pod)
            self.delete_now(pod)
            ended = True
        return ended

    def _quiet(self, now: float, outcome: RealOutcome, *, timeout: float = 120.0) -> None:
        """Wait until the scheduler has nothing active or backing off and nothing changed for a few polls;
        complete graceful deletions meanwhile and note when each pod was first seen bound.

        A PodGroup waits in the queues as one entity, which `scheduler_pending_pods` does not show:
        `scheduler_queued_entities` does. A group in backoff is retried on its own (v1.37.2 puts a gang whose
        cycle failed back into the error backoff, whatever the events): once every such group has been tried
        again since the last change (`scheduler_podgroup_schedule_attempts_total`), its retries change
        nothing. Failing that, a still spell longer than a retry round makes quiet (longer with a group
        backing off, whose rounds are longer)."""
        deadline = time.monotonic() + timeout
        last: tuple[Any, ...] | None = None
        still = 0
        since = time.monotonic()
        tried_since: int | None = None  # group cycles run when the last change had settled
        while time.monotonic() < deadline:
            pods = self._pods()
            changed_here = False
            for pod in pods:
                key = self.key(pod)
                record = outcome.pods.setdefault(key, RealPod(key))
                group = ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
                if group:
                    record.group = f"{pod['metadata']['namespace']}/{group}"
                if pod["metadata"].get("deletionTimestamp") is not None:
                    if self.admissions is not None and _node_of(pod) and not record.finished \
                            and self.admissions.queued(_workload_of(pod)):
                        record.preempted = True  # Kueue evicted its workload: its pods are deleted
                    changed_here |= self._terminate(pod, record, now)
                elif _node_of(pod) and record.bound_at is None:
                    self._seen_bound(record, _node_of(pod), now)
                    if not (pod.get("status") or {}).get("startTime"):
                        self._start(pod, now)
            fingerprint = tuple(sorted(
                (p["metadata"]["name"], _node_of(p), (p.get("status") or {}).get("nominatedNodeName") or "",
                 str(p["metadata"].get("deletionTimestamp"))) for p in pods))
            if fingerprint == last and not changed_here:
                still += 1
                # Idle queues and a few unchanged polls; or only groups retrying, each tried again unchanged;
                # or, with retries still cycling (a pod backing off after an error), long enough unchanged
                # that a retry (at most 1 s apart) changed nothing.
                if still >= QUIET_POLLS:
                    queues = self._queues()
                    # Counted from a few polls after the change, so that a cycle already running when it came
                    # (which saw the state before it) does not count as a retry.
                    if tried_since is None:
                        tried_since = queues.group_attempts
                    # A pod pending on the API server but in no queue is in a cycle, or waiting at Permit.
                    unbound = sum(1 for p in pods if not _node_of(p) and p["metadata"].get("deletionTimestamp") is None)
                    starting = self.integrations is not None and sets_starting(self.plane, self.integrations.kinds)
                    if not queues.pods and unbound <= queues.queued and not starting and \
                            (not queues.groups or queues.group_attempts - tried_since >= queues.groups):
                        return
                    if not starting and \
                            time.monotonic() - since >= (_group_still(pods) if queues.groups else STILL_SECONDS):
                        return
            else:
                still = 0
                since = time.monotonic()
                tried_since = None
            last = fingerprint
            time.sleep(POLL_SECONDS)
        if self.integrations is not None and sets_starting(self.plane, self.integrations.kinds):
            raise ControlPlaneError(f"a JobSet or LeaderWorkerSet still lacked Jobs or pods after {timeout:g}s at "
                                    f"simulated time {now:g}s: its controller could not make them")
        raise ControlPlaneError(f"the real scheduler did not settle within {timeout:g}s at simulated time {now:g}s")

    def _end_graceful(self, now: float, outcome: RealOutcome) -> bool:
        """End the graceful deletions due by `now`; True when one ended."""
        ended = False
        for pod in self._pods():
            if pod["metadata"].get("deletionTimestamp") is not None:
                key = self.key(pod)
                ended |= self._terminate(pod, outcome.pods.setdefault(key, RealPod(key)), now)
        return ended

    def _attempted(self, keys: Sequence[str]) -> None:
        """Wait until the real scheduler has tried every pod of `keys` (bound, or PodScheduled=False); after a
        few seconds go on (a gated pod may never be tried). Victims of preemption stay terminating meanwhile:
        in Phalanx too, pods evicted in an instant go after every pod arriving then has been tried."""
        wanted = set(keys)
        deadline = time.monotonic() + ATTEMPT_SECONDS
        while time.monotonic() < deadline:
            tried = 0
            for pod in self._pods():
                key = self.key(pod)
                if key not in wanted or pod["metadata"].get("deletionTimestamp") is not None:
                    continue
                conditions = (pod.get("status") or {}).get("conditions") or []
                if _node_of(pod) or any(c.get("type") == "PodScheduled" for c in conditions):
                    tried += 1
            if tried == len(wanted):
                return
            time.sleep(POLL_SECONDS / 5)

    def _terminate(self, pod: dict[str, Any], record: RealPod, now: float) -> bool:
        """A graceful deletion (a preemption): as a kubelet would, end it once its grace period has passed on
        the simulated clock. True when the pod is gone now."""
        if record.gone_at is None:
            conditions = (pod.get("status") or {}).get("conditions") or []
            reasons = {c.get("reason") for c in conditions if c.get("type") == "DisruptionTarget"}
            if "PreemptionByScheduler" in reasons and not record.finished:
                record.preempted = True
            elif reasons and not record.finished:  # a taint eviction controller's DeletionBy… reason
                record.evicted = True
            record.gone_at = now + float(pod["metadata"].get("deletionGracePeriodSeconds") or 0)
        if now < record.gone_at:
            return False
        uid = pod["metadata"].get("uid")
        kept = KUEUE_POD_FINALIZER in (pod["metadata"].get("finalizers") or ())
        if kept and record.deleted == uid:
            return False  # deleted already, kept by Kueue's finalizer (a pod group waiting for replacements)
        self.delete_now(pod, killed=True)
        record.deleted = uid
        return True

    def _start(self, pod: Mapping[str, Any], at: float) -> None:
        """As a kubelet starting the pod: phase Running, status.startTime at simulated time `at`."""
        meta = pod["metadata"]
        started = datetime.datetime.fromtimestamp(self._epoch + round(at), tz=datetime.UTC)
        stamp = started.strftime("%Y-%m-%dT%H:%M:%SZ")
        # Ready too, as a kubelet with no readiness probe reports it: a StatefulSet makes its next pod then.
        status = {"phase": "Running", "startTime": stamp, "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": stamp}]}
        with contextlib.suppress(ApiError):  # gone meanwhile
            self.client.patch(Pod.Status, meta["name"], {"status": status}, namespace=meta.get("namespace", "default"),
                              patch_type=PatchType.STRATEGIC)

    def _pods(self) -> list[dict[str, Any]]:
        pods = self.plane.items("/api/v1/pods", "Pod", "v1")
        # A Job without completion indexes names its pods at random; Phalanx names them <job>-<n> in the order
        # it makes them: the n-th pod of such a Job seen here takes that name, and a pod that replaces one
        # deleted before it ended (evicted, preempted) takes that one's name, as Phalanx makes it again.
        pods.sort(key=lambda p: (str(p["metadata"].get("creationTimestamp")), p["metadata"]["name"]))
        live = {pod["metadata"]["uid"] for pod in pods}
        for pod in pods:
            uid = pod["metadata"]["uid"]
            if uid in self._keys:
                continue
            key = self._controller_pods.key(pod) or pod_key(pod)
            job = _unindexed_job(pod)
            owner = _job_of(pod)
            if owner is not None and job is None:
                self._indexed[owner].add(key)
            if job is not None:
                names = self._job_pods[job]
                free = [i for i, held in names.items() if held not in live and held not in self._ended]
                index = min(free) if free else len(names)
                names[index] = uid
                key = f"{job}-{index}"
            self._keys[uid] = key
        return pods

    def interchangeable(self) -> dict[str, list[str]]:
        """The keys given to the pods of each Job (with completion indexes too: the Job controller creates them
        concurrently, so which index reaches the queue first, and takes which node, is the replay's timing, not a
        scheduling decision), and of each ReplicaSet or Deployment, in the last run (`_pods`): alike, whichever
        name went where."""
        return {**{job: [f"{job}-{i}" for i in sorted(names)] for job, names in self._job_pods.items()},
                **{job: sorted(keys, key=_index_order) for job, keys in self._indexed.items()},
                **self._controller_pods.interchangeable()}

    def key(self, pod: Mapping[str, Any]) -> str:
        """A live pod's key as Phalanx names it (see `_pods`, which must have seen it)."""
        return self._keys.get(pod["metadata"]["uid"]) or pod_key(pod)

    def delete_now(self, pod: Mapping[str, Any], *, killed: bool = False) -> None:
        """End a pod at once, as a kubelet and garbage collection would: the replay's finalizer off, deleted with
        no grace period."""
        meta = pod["metadata"]
        with contextlib.suppress(ApiError):  # gone meanwhile
            others = [f for f in meta.get("finalizers") or () if f != FINALIZER]
            if FINALIZER in (meta.get("finalizers") or ()):
                self.client.patch(Pod, meta["name"], {"metadata": {"finalizers": others or None}},
                                  namespace=meta["namespace"], patch_type=PatchType.MERGE)
            phase = (pod.get("status") or {}).get("phase")
            if killed and KUEUE_POD_FINALIZER in others and phase not in ("Succeeded", "Failed"):
                # Kueue's finalizer on the pods it manages waits for a terminal phase, which a kubelet reports
                # once it has killed the pod's containers.
                self.client.patch(Pod.Status, meta["name"], {"status": {"phase": "Failed"}},
                                  namespace=meta["namespace"], patch_type=PatchType.MERGE)
            self.client.delete(Pod, meta["name"], namespace=meta["namespace"], grace_period=0)

    def _queues(self) -> _Queues:
        try:
            text = self.plane.scheduler_metrics()
        except OSError:
            return _Queues(pods=1, groups=0, group_attempts=0)
        pending: dict[str, float] = defaultdict(float)
        # Entities, not pods: a group's members backing off with it count as one group, not as pods.
        entities: dict[tuple[str, str], float] = defaultdict(float)
        attempts = 0.0
        for name, labels, value in samples(text, "scheduler_pending_pods", "scheduler_queued_entities",
                                           "scheduler_podgroup_schedule_attempts_total"):
            if name == "scheduler_podgroup_schedule_attempts_total":
                attempts += value
                continue
            found = dict(_LABEL.findall(labels))
            if name == "scheduler_pending_pods":
                pending[found.get("queue", "")] += value
            else:
                entities[found.get("queue", ""), found.get("type", "")] += value
        pods = entities["active", "pod"] + entities["backoff", "pod"] if entities else \
            pending["active"] + pending["backoff"]
        groups = entities["active", "podgroup"] + entities["backoff", "podgroup"]
        if entities and not pods and not groups and pending["active"] + pending["backoff"]:
            groups = 1  # pods queued in an entity with no label: a CompositePodGroup tree (EntityToLabel)
        # "pending": members that arrived while their group was in a cycle, waiting for it to requeue.
        return _Queues(pods=int(pods + pending["pending"]), groups=int(groups), group_attempts=int(attempts),
                       queued=int(sum(pending.values())))

    def _collect(self, outcome: RealOutcome, now: float) -> None:
        for pod in self._pods():
            key = self.key(pod)
            record = outcome.pods.setdefault(key, RealPod(key))
            record.node = _node_of(pod) or None
            if record.node is not None and record.bound_at is None:
                record.bound_at = now
            status = pod.get("status") or {}
            for condition in status.get("conditions") or []:
                if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
                    record.message = condition.get("message")
        # A victim with no grace period is deleted at once, before a poll sees it terminating: the
        # scheduler's `Preempted` event names it (and only victims of preemption).
        for event in self.client.list(Event, namespace="*"):
            involved = event.involvedObject
            if event.reason != "Preempted" or involved.kind != "Pod" or not involved.uid:
                continue
            victim = self._keys.get(involved.uid)
            if victim is not None and not outcome.pods.setdefault(victim, RealPod(victim)).finished:
                outcome.pods[victim].preempted = True
            # executor.go: "Preempted by <pod|podgroup> <uid> on node <node>".
            said = _PREEMPTED_BY.match(event.message or "")
            preemptor = self._keys.get(said.group(2)) if said and said.group(1) == "pod" else None
            if said and preemptor is not None:
                outcome.pods.setdefault(preemptor, RealPod(preemptor)).preempted_on = said.group(3)
        groups, overwritten = self._settled_groups()
        for body in groups:
            key = f"{body['metadata']['namespace']}/{body['metadata']['name']}"
            conditions = (body.get("status") or {}).get("conditions") or []
            outcome.groups[key] = {c["type"]: {"status": c.get("status", ""), "reason": c.get("reason", ""),
                                               "message": c.get("message", "")} for c in conditions}
            if key in overwritten:
                outcome.groups[key].setdefault(INITIALLY_SCHEDULED, {"status": ""})["overwritten"] = "True"

    def _settled_groups(self) -> tuple[list[dict[str, Any]], set[str]]:
        """The PodGroups, once each one with a member the scheduler bound says PodGroupInitiallyScheduled True:
        the scheduler patches the condition after its group cycle has sent the members to bind, so on a busy
        machine a poll can see the members bound and the condition of an earlier failed cycle. After a few
        seconds, as they are, with the groups still not True: a group the scheduler placed has had True, and
        ends otherwise only when a retry of its leftover members, reading the group from an informer that had not
        seen the True yet, overwrote it (v1.37.2's `updatePodGroupCondition`; docs/fidelity.md)."""
        deadline = time.monotonic() + GROUP_STATUS_SECONDS
        while True:
            groups = [group.to_dict() for group in self._listed(PodGroup)]
            bound = {(pod["metadata"]["namespace"], name) for pod in self._pods()
                     if _node_of(pod) and self.key(pod) not in self._created_bound
                     for name in [((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")] if name}
            lagging = {f"{g['metadata']['namespace']}/{g['metadata']['name']}" for g in groups
                       if (g["metadata"]["namespace"], g["metadata"]["name"]) in bound
                       and not any(c.get("type") == INITIALLY_SCHEDULED and c.get("status") == "True"
                                   for c in (g.get("status") or {}).get("conditions") or [])}
            if not lagging or time.monotonic() >= deadline:
                return groups, lagging
            time.sleep(POLL_SECONDS * 4)


def _created_starts(steps: Sequence[Step]) -> dict[str, float]:
    """Pods created bound with a status.startTime: their start in seconds, the latest one at 0 (as Phalanx's
    loader counts them)."""
    found: dict[str, float] = {}
    for step in steps:
        for _, doc in step.create:
            raw = (doc.get("status") or {}).get("startTime") if doc.get("kind") == "Pod" else None
            if isinstance(raw, str) and _node_of(doc):
                with contextlib.suppress(ValueError):
                    found[pod_key(doc)] = datetime.datetime.fromisoformat(raw).timestamp()
    latest = max(found.values(), default=0.0)
    return {key: value - latest for key, value in found.items()}


def _job_of(pod: Mapping[str, Any]) -> str | None:
    """`namespace/job` of a Job's pod, else None."""
    meta = pod.get("metadata") or {}
    owner = next((o for o in meta.get("ownerReferences") or () if o.get("kind") == "Job"), None)
    return f"{meta.get('namespace') or 'default'}/{owner['name']}" if owner is not None else None


def _index_order(key: str) -> tuple[int, str]:
    index = key.rpartition("-")[2]
    return (int(index), key) if index.isdigit() else (-1, key)


def _workload_of(pod: Mapping[str, Any]) -> str | None:
    """The key of the Kueue workload a pod belongs to, as Phalanx names it: its Job's, else (a plain pod with the
    queue-name label) its own or its Kueue pod group's; None for any other pod."""
    job = _job_of(pod)
    if job is not None:
        return f"Job {job}"
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    if not labels.get(KUEUE_QUEUE_LABEL) or meta.get("ownerReferences"):
        return None
    group = labels.get(POD_GROUP_LABEL)
    namespace = meta.get("namespace") or "default"
    return f"PodGroup {namespace}/{group}" if group else f"Pod {namespace}/{meta.get('name')}"


def _unindexed_job(pod: Mapping[str, Any]) -> str | None:
    """`namespace/job` for a pod of a Job without completion indexes, else None."""
    meta = pod.get("metadata") or {}
    if pod_key(pod) != f"{meta.get('namespace') or 'default'}/{meta.get('name')}":
        return None  # indexed: named by its index
    return _job_of(pod)


def _count(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def _plural(kind: str) -> str:
    lower = kind.lower()
    if lower.endswith("s"):
        return lower + "es"
    if lower.endswith("y"):
        return lower[:-1] + "ies"
    return lower + "s"


@functools.cache
def _generic_class(api_version: str, kind: str) -> Any:
    group, _, version = api_version.rpartition("/")
    make = create_global_resource if kind in CLUSTER_SCOPED else create_namespaced_resource
    return make(group, version, kind, _plural(kind))


def _generic(body: Mapping[str, Any]) -> Any:
    """The manifest as lightkube sends it: a generic resource, the body unchanged (typed models would drop
    or refuse fields that the API server itself should judge). A Namespace (metadata only) is lightkube's
    own model: lightkube allows one class per kind, and its Namespace is in use."""
    if body.get("kind") == "Namespace" and body.get("apiVersion") == "v1":
        return Namespace.from_dict(dict(body))
    return _generic_class(str(body.get("apiVersion")), str(body.get("kind"))).from_dict(dict(body))


def _deferred_groups(step: Step) -> dict[str, tuple[Source, Mapping[str, Any]]]:
    """The PodGroups of this step whose entry Phalanx's queue tried at this step: created in their unit's
    turn."""
    tried = {g.removeprefix("group:") for g in step.unit_groups if g.startswith("group:")}
    return {pod_key(doc): (source, doc) for source, doc in step.create
            if doc.get("kind") == "PodGroup" and pod_key(doc) in tried}


def _ordered(create: Sequence[tuple[Source, Mapping[str, Any]]]) -> list[tuple[Source, Mapping[str, Any]]]:
    """Namespaces, PriorityClasses and DeviceClasses first; the rest in document order."""
    return sorted(create, key=lambda item: (item[1].get("kind") not in FIRST, _place(item[0])))


def _place(source: Source) -> tuple[bool, int, str]:
    """Where a document was written: the order in which Phalanx takes objects of one instant."""
    return source.order


def _resources(integrated: Iterable[tuple[str, str]] = ()) -> list[Any]:
    """Every kind a verify run creates (or its controllers do), namespaced first; `integrated`: the (apiVersion,
    kind) of the JobSets and LeaderWorkerSets whose CRDs are installed, before all (their controllers would make
    their Jobs and StatefulSets again)."""
    from lightkube.resources.apps_v1 import ControllerRevision, DaemonSet, Deployment, ReplicaSet, StatefulSet
    from lightkube.resources.autoscaling_v2 import HorizontalPodAutoscaler
    from lightkube.resources.batch_v1 import CronJob, Job
    from lightkube.resources.core_v1 import Node
    from lightkube.resources.policy_v1 import PodDisruptionBudget
    from lightkube.resources.resource_v1 import (
        DeviceClass,
        DeviceTaintRule,
        ResourceClaim,
        ResourceClaimTemplate,
        ResourceSlice,
    )
    from lightkube.resources.scheduling_v1 import PriorityClass
    from lightkube.resources.scheduling_v1beta1 import Workload

    return [*(_generic_class(api_version, kind) for api_version, kind in integrated),
            Deployment, ReplicaSet, StatefulSet, DaemonSet, ControllerRevision, CronJob, HorizontalPodAutoscaler,
            Job, Pod, PodGroup, _generic_class("scheduling.k8s.io/v1alpha3", "CompositePodGroup"), Workload,
            PodDisruptionBudget, ResourceClaim, ResourceClaimTemplate, Node, ResourceSlice, DeviceClass,
            DeviceTaintRule, PriorityClass]


def _namespaced(resource: Any) -> bool:
    return issubclass(resource, NamespacedResource)


def _node_of(pod: Mapping[str, Any]) -> str:
    node: str = (pod.get("spec") or {}).get("nodeName") or ""
    return node


def _group_still(pods: Sequence[Mapping[str, Any]]) -> float:
    """How long unchanged makes quiet with groups in the queues: a group of n pending pods retries every
    podMaxBackoff × √n at most (`calculateBackoffDuration`), on whole-second windows, and a wait shorter than that
    would end the step before its retry (a 5-pod gang: 22.4 s)."""
    sizes: dict[str, int] = {}
    for pod in pods:
        group = ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
        if group and not _node_of(pod) and pod["metadata"].get("deletionTimestamp") is None:
            key = f"{pod['metadata'].get('namespace')}/{group}"
            sizes[key] = sizes.get(key, 0) + 1
    largest = max(sizes.values(), default=1)
    return max(GROUP_STILL_SECONDS, MAX_BACKOFF_SECONDS * math.sqrt(largest) + 2.0)
