"""Admission in the simulator: workloads held back from the scheduler until an admission policy
(phalanx/admission: Kueue-style, Volcano-style; by name in phalanx.admission.registry) admits them, released
with their flavor's node labels and tolerations, evicted whole when the policy preempts or reclaims them
(their pods wait again), and handed back to the policy when they end.

What counts as one workload, as the peers see it:
- a Job (Kueue suspends it until admitted: no pod exists before; Volcano queues its PodGroup);
- under `kueue`, a JobSet (a pod set per replicated job) and a PyTorchJob, TFJob or MPIJob (a pod set per
  replica type), suspended until admitted as Kueue's integrations do, and each group of a LeaderWorkerSet
  (Kueue makes a workload per group);
- a PodGroup with its members (Kueue's pod groups, Volcano's PodGroups), offered once `minCount` members
  (all of them for a basic group: 1) have arrived;
- a bare pod.
Under `kueue` only objects that name a LocalQueue (label `kueue.x-k8s.io/queue-name`) are queued, as Kueue
manages nothing else by default (`manageJobsWithoutQueueName: false`); under `volcano` everything the
scheduler would place is, in the Queue its annotation `scheduling.volcano.sh/queue-name` names, or `default`.
Pods already bound in a snapshot are the cluster's running load and are never queued.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from phalanx.admission.base import (
    WAITING_FOR_ADMISSION,
    AdmissionPolicy,
    Admit,
    EvictWorkload,
    PodSet,
    PolicyFactory,
    QueuedWorkload,
    Reservations,
)
from phalanx.admission.kueue_config import KueueConfig
from phalanx.admission.kueue_factory import kueue_config
from phalanx.admission.registry import POLICIES
from phalanx.api.apps import StatefulSet
from phalanx.api.documents import raw_documents
from phalanx.api.fields import Manifest, object_name
from phalanx.api.kinds import is_queueing_object
from phalanx.api.objects import Job, Pod, PodGroup, Queueing, Source, Toleration
from phalanx.api.sets import JOBSET_NAME_LABEL, JobSet, LeaderWorkerSet
from phalanx.api.tolerations import parse_toleration
from phalanx.api.training import TrainingJob
from phalanx.errors import InputError
from phalanx.scheduler.profiles import Profile
from phalanx.sim.report_schema import AdmissionWorkload, Queue

# objects Kueue's integrations queue as their own workloads
Whole = JobSet | LeaderWorkerSet | TrainingJob | StatefulSet
T = TypeVar("T")


@dataclass(slots=True)
class _Workload:
    key: str  # "Job ns/name", "PodGroup ns/name" or "Pod ns/name"
    queue: str
    priority_class: str | None  # what the workload's own label names (Kueue's or KAI's), for the policy
    job: Job | None = None  # a Job not started yet (it starts when first admitted), or as it runs now
    full: Job | None = None  # the Job as written, once an admission changed its counts
    resized: bool = False  # a started Job admitted again with other counts: its controller resizes it
    owner: JobSet | TrainingJob | StatefulSet | None = None  # admitted whole: its controller starts it then
    group: PodGroup | None = None
    min_members: int = 1  # members that must have arrived before a group is offered
    application: str = ""  # a per-pod policy's application (YuniKorn's applicationId)
    held: dict[str, Pod] = field(default_factory=dict)  # pods waiting for admission, as created
    created: dict[str, Pod] = field(default_factory=dict)  # each pod as its owner made it (no flavor)
    started: bool = False  # a Job: its controller has started it
    pods: set[str] = field(default_factory=set)  # every pod of the workload seen so far
    admission: Admit | None = None
    offered: bool = False
    submitted_at: float | None = None
    waits: list[float] = field(default_factory=list)
    evictions: int = 0
    done: bool = False
    total: dict[str, int] = field(default_factory=dict)  # what it asks of its queue (every pod set)



class AdmissionGate:
    """Holds and releases workloads for one admission policy. The simulator asks it, for each Job and pending
    pod, whether the policy holds it, and runs `cycle` after each batch of events."""

    def __init__(self, policy: AdmissionPolicy, factory: PolicyFactory) -> None:
        self.policy = policy
        self.factory = factory
        self.which = factory.name  # "kueue" | "volcano"
        self.workloads: dict[str, _Workload] = {}
        self.of_pod: dict[str, str] = {}  # pod key -> workload key
        self.changed = False
        self.admitted = 0
        self.evicted = 0
        self.policy_requeues = factory.requeues
        self.notes: list[str] = []  # what the inputs ask of the queues that the gate does not model
        self.owned_jobs: dict[str, str] = {}  # a queued JobSet's child Job -> the JobSet's workload key
        # LeaderWorkerSets whose groups are queued (key "LeaderWorkerSet ns/name"): their queue and priority class
        self.group_owners: dict[str, Queueing] = {}
        # placeholder pods reserve for a gang application before its pods are scheduled (YuniKorn's task groups)
        self.reservations: Reservations | None = factory.reservations(policy)
        self.replacing: dict[str, str] = {}  # a pod bound in a placeholder's place -> the placeholder
        self.requeued: list[str] = []  # pods a reservation released to wait for admission as any pod

    def not_queued(self, kind: str, key: str, queueing: Queueing | None) -> None:
        """A JobSet, LeaderWorkerSet or Kubeflow job arrived: the peers admit these whole, which the gate does
        not model; name it when the object names a queue, so the report does not pass over it."""
        note = self.factory.not_queued(kind, key, queueing) if queueing is not None else None
        if note is not None:
            self.notes.append(note)

    def hold_whole(self, obj: Whole, now: float) -> bool:
        """A JobSet, Kubeflow job or StatefulSet arrives: True if the policy queues it whole (its controller starts
        it when admitted, as Kueue unsuspends it; a StatefulSet's pods wait gated until Kueue admits the workload
        its reconciler made of every replica); a LeaderWorkerSet's groups are queued as its pods arrive (False)."""
        q = obj.queueing
        queue = self.factory.queue((q,)) if self.factory.whole and q is not None else None
        if q is None or queue is None:
            self.not_queued(_kind(obj), obj.key, q)
            return False
        if isinstance(obj, LeaderWorkerSet):
            self.group_owners[f"LeaderWorkerSet {obj.key}"] = q
            return False
        key = f"{_kind(obj)} {obj.key}"
        work = self.workloads[key] = _Workload(key, queue, self.factory.priority_class(q), owner=obj)
        templates = _templates(obj)
        named = next((t.priority_class_name for _, _, t in templates if t.priority_class_name), None)
        priority = next((t.priority for _, _, t in templates if t.priority_class_name == named), 0)
        self._offer(work, [PodSet(name, count, dict(t.requests), None, dict(t.placement.node_selector),
                                  t.placement.tolerations, gpu_share_milli(t)) for name, count, t in templates],
                    priority, named, now)
        return True

    def created_at(self, pod: Pod) -> float | None:
        """When the workload a pod belongs to was created, if it was held whole (the pod's wait counts from
        then, as a Job's pods count from the Job's creation)."""
        key = self._owner_workload(pod)
        work = self.workloads.get(key) if key is not None else None
        owner = work.owner if work is not None else None
        return owner.arrival if owner is not None else None

    def jobs_of(self, pod_key: str) -> list[str]:
        """The child Jobs of the workload holding `pod_key` (a JobSet's), whose completions may be still to come."""
        key = self.of_pod.get(pod_key)
        return [job for job, work in self.owned_jobs.items() if work == key] if key is not None else []

    def _owner_workload(self, pod: Pod) -> str | None:
        if pod.owner is None:
            return None
        if pod.controller == "Job":
            return f"Job {pod.owner}" if f"Job {pod.owner}" in self.workloads else self.owned_jobs.get(pod.owner)
        key = f"{pod.controller} {pod.owner}"
        return key if key in self.workloads else None

    def wake_at(self) -> float | None:
        """When the policy's answer changes with time alone, if it does (YuniKorn's preemption delay)."""
        wake = getattr(self.policy, "wake_at", None)
        times = [t for t in (wake() if wake is not None else None,
                             self.reservations.wake_at() if self.reservations is not None else None) if t is not None]
        return min(times) if times else None

    def not_modelled(self) -> list[str]:
        r = self.reservations
        placeholders = ([r.note] if r.used else []) + r.warnings if r is not None else []
        return [*self.policy.not_modelled(), *self.notes, *placeholders]

    # --- YuniKorn's placeholders ----------------------------------------------------------------------------

    def is_placeholder(self, pod_key: str) -> bool:
        return self.reservations is not None and self.reservations.is_placeholder(pod_key)

    def pod_message(self, pod: Pod) -> str:
        """Why a pod the gate holds waits."""
        if self.reservations is not None:
            message = self.reservations.message(pod.key, self.factory.application(pod, pod.queueing), pod.namespace)
            if message is not None:
                return message
        return self.factory.held_message

    def pod_bound(self, pod_key: str, node: str, now: float) -> bool:
        """A pod was bound: True if the gate needs a pass now (a placeholder started its application's timer or
        let the application's pods go)."""
        if self.reservations is None or not self.reservations.bound(pod_key, node, now):
            return False
        self.changed = True
        return True

    def placeholder_work(self) -> tuple[list[Pod], list[tuple[str, str]], list[tuple[str, str]], list[str]]:
        """What the simulator carries out for the placeholders now, and forgets: pods to create, placeholders to
        delete (key, why), pods failed with their application (key, message), and pods released from their
        application's reservation to wait for admission as any pod."""
        r = self.reservations
        if r is None or not (r.create or r.delete or r.failed or self.requeued):
            return [], [], [], []
        out = (r.create, r.delete, r.failed, self.requeued)
        r.create, r.delete, r.failed, self.requeued = [], [], [], []
        return out

    def _replace(self, pod: Pod, placeholder: str, node: str) -> Pod:
        """The pod takes the placeholder's place: it joins the placeholder's admitted workload, bound to its node."""
        work = self.workloads[self.of_pod[placeholder]]
        work.pods.add(pod.key)
        work.created[pod.key] = pod
        self.of_pod[pod.key] = work.key
        self.replacing[pod.key] = placeholder
        return dataclasses.replace(pod, node_name=node)

    # --- what is queued ---------------------------------------------------------------------------------

    def hold_job(self, job: Job, now: float) -> bool:
        """A Job arrives: True if the policy queues it (it starts when admitted)."""
        job_set = f"JobSet {job.namespace}/{job.template.labels.get(JOBSET_NAME_LABEL)}"
        if JOBSET_NAME_LABEL in job.template.labels and job_set in self.workloads:
            self.owned_jobs[job.key] = job_set  # its JobSet was admitted: the Job starts now, in its workload
            return False
        q = job.queueing
        if self.factory.per_pod:
            return False  # the Job starts at once; its pods wait for admission one by one (hold_pod)
        queue = self.factory.queue((q,))
        if queue is None:
            return False
        key = f"Job {job.key}"
        work = self.workloads[key] = _Workload(key, queue, self.factory.priority_class(q) if q else None, job=job)
        self._offer_job(work, now)
        return True

    def _offer_job(self, work: _Workload, now: float) -> None:
        job = work.job
        assert job is not None
        count = min(job.parallelism, job.completions)
        # Kueue's pod set minCount is the Job's partial admission annotation; Volcano's, the gang minimum.
        if self.which == "kueue":
            min_count = job.min_parallelism
        else:
            min_count = job.policy.min_count if job.policy is not None and job.policy.kind == "gang" else None
        self._offer(work, [PodSet("main", count, dict(job.template.requests), min_count,
                                  dict(job.template.placement.node_selector), job.template.placement.tolerations,
                                  gpu_share_milli(job.template))],
                    job.template.priority, job.template.priority_class_name, now)

    def hold_pod(self, pod: Pod, group: PodGroup | None, now: float) -> Pod | None:
        """A pending pod arrives (not a queued Job's): the pod to hand to the scheduler now (with its
        workload's flavor applied), or None while its workload waits for admission."""
        known = self.of_pod.get(pod.key) or self._owner_workload(pod)
        if known is not None:
            work = self.workloads[known]
            work.pods.add(pod.key)
            self.of_pod[pod.key] = known
            return self._through(work, pod, now)
        q = pod.queueing
        gq = group.queueing if group is not None else None
        if pod.group_key is not None and f"{pod.controller} {pod.owner}" in self.group_owners:
            q = self.group_owners[f"{pod.controller} {pod.owner}"]  # a LeaderWorkerSet's group: its set's queue
        queue = self.factory.queue((q, gq))
        if queue is None:
            return pod
        if self.reservations is not None and pod.group_key is None:
            application = self.factory.application(pod, q)
            if self.reservations.arrive(pod, application, now) != "pass":
                self.changed = True
                return None
            swap = self.reservations.replacement(pod, application)
            if swap is not None:
                return self._replace(pod, *swap)
        return self._queue_new(pod, group, q, queue, now)

    def _queue_new(self, pod: Pod, group: PodGroup | None, q: Queueing | None, queue: str, now: float) -> Pod | None:
        if pod.group_key is not None:
            key = f"PodGroup {pod.group_key}"
            if key not in self.workloads:
                min_members = group.min_count if group is not None and group.is_gang else 1
                self.workloads[key] = _Workload(key, queue, self.factory.priority_class(q) if q else None, group=group,
                                                min_members=min_members)
        else:
            key = f"Pod {pod.key}"
            self.workloads[key] = _Workload(key, queue, self.factory.priority_class(q) if q else None)
        if self.factory.per_pod and not self.workloads[key].application:
            self.workloads[key].application = self.factory.application(pod, q)
        work = self.workloads[key]
        work.pods.add(pod.key)
        self.of_pod[pod.key] = key
        return self._through(work, pod, now)

    def queued(self, pod_key: str) -> bool:
        return pod_key in self.of_pod

    def take_back(self, pod: Pod, now: float) -> Pod | None:
        """A pod of a queued workload is pending again (evicted, or its workload was): the pod to hand to the
        scheduler if its workload is admitted, else None (it waits, as created). A pod of an evicted workload
        held again is its eviction completing: the policy is asked again (Kueue requeues the workload then)."""
        released = self._through(self.workloads[self.of_pod[pod.key]], pod, now)
        if released is None:
            self.changed = True
        return released

    def forget(self, pod_key: str) -> None:
        """A user deleted the pod: it no longer waits."""
        key = self.of_pod.get(pod_key)
        if self.reservations is not None:
            self.reservations.gone(pod_key)
        if key is not None:
            work = self.workloads[key]
            work.held.pop(pod_key, None)
            work.created.pop(pod_key, None)
            if key == f"Pod {pod_key}" and work.offered and work.admission is None and not work.done:
                work.done = True  # a pod alone, deleted while it waits: its workload is withdrawn
                self.policy.finished(key, 0.0)
                self.changed = True

    def nodes_changed(self, allocatable: Mapping[str, int]) -> None:
        """Nodes arrived: a policy that shares the cluster's capacity (Volcano's proportion) sees the new total."""
        update = getattr(self.policy, "nodes_changed", None)
        if update is not None:
            update(dict(allocatable))
            self.changed = True

    def _through(self, work: _Workload, pod: Pod, now: float) -> Pod | None:
        created = work.created.setdefault(pod.key, pod)
        if work.admission is not None:
            return _with_flavor(created, work.admission)
        work.held[pod.key] = created
        if not work.offered and work.job is None and len(work.held) >= work.min_members:
            members = list(work.held.values())
            self._offer(work, _pod_sets(members), max(p.priority for p in members),
                        members[0].priority_class_name, now)
        return None

    def _offer(self, work: _Workload, pod_sets: list[PodSet], priority: int, priority_class: str | None,
               now: float) -> None:
        namespace = work.key.split(" ", 1)[1].split("/", 1)[0]
        work.total = {}
        for ps in pod_sets:
            for name, value in ps.requests.items():
                work.total[name] = work.total.get(name, 0) + value * ps.count
        if work.priority_class is not None:
            priority = self.policy.workload_priority(work.priority_class, priority)
        self.policy.submit(QueuedWorkload(key=work.key, namespace=namespace, queue=work.queue, priority=priority,
                                          created=now, pod_sets=tuple(pod_sets), priority_class=priority_class,
                                          application=work.application), now)
        work.offered = True
        work.submitted_at = now
        self.changed = True

    # --- the policy's decisions ---------------------------------------------------------------------------

    def cycle(self, now: float) -> tuple[list[tuple[_Workload, list[Pod]]], list[tuple[_Workload, EvictWorkload]]]:
        """One admission pass: the workloads admitted (with the pods to release now: a Job's start is left to
        the caller), and those evicted (whose pods the caller takes back)."""
        wake = self.wake_at()
        if not self.changed and (wake is None or wake > now):
            return [], []
        self.changed = False
        admitted: list[tuple[_Workload, list[Pod]]] = []
        evicted: list[tuple[_Workload, EvictWorkload]] = []
        if self.reservations is not None:
            self.reservations.tick(now)
            released, self.reservations.released = self.reservations.released, []
            for pod in released:
                application = self.factory.application(pod, pod.queueing)
                swap = self.reservations.replacement(pod, application)
                if swap is not None:
                    pinned = self._replace(pod, *swap)
                    admitted.append((self.workloads[self.of_pod[pod.key]], [pinned]))
                    continue
                queue = self.factory.queue((pod.queueing,))
                if queue is not None and self._queue_new(pod, None, pod.queueing, queue, now) is not None:
                    raise AssertionError(f"{pod.key} admitted before it was offered")
                self.requeued.append(pod.key)
        for decision in self.policy.cycle(now):
            work = self.workloads.get(decision.key)
            if work is None:
                continue
            if isinstance(decision, EvictWorkload):
                if work.admission is None:
                    continue
                work.admission = None
                work.evictions += 1
                self.evicted += 1
                if not self.policy_requeues:
                    work.offered = False
                    if work.job is not None:
                        self._offer_job(work, now)
                evicted.append((work, decision))
                continue
            work.admission = decision
            self.admitted += 1
            if work.job is not None:
                # Kueue restores a Job's counts when it evicts it (RestorePodSetsInfo) and sets those of each
                # admission (RunWithPodSetsInfo): a Job admitted again may run with other counts.
                full = work.full or work.job
                wanted = _partially(full, decision.counts["main"]) if decision.counts and "main" in decision.counts \
                    else full
                if wanted != work.job:
                    work.full = full
                    work.job = wanted
                    work.resized = work.started
                    work.total = {name: value * min(wanted.parallelism, wanted.completions)
                                  for name, value in wanted.template.requests.items()}
            if work.submitted_at is not None:
                work.waits.append(now - work.submitted_at)
            pods = [_with_flavor(pod, decision) for pod in work.held.values()]
            work.held.clear()
            admitted.append((work, pods))
        return admitted, evicted

    def pod_ended(self, pod_key: str, still_running: Callable[[str], bool], more_to_come: bool, now: float) -> None:
        """A pod of a workload ended (succeeded, failed or was deleted): once none of its pods is pending or
        running, and its controller makes no more, its quota goes back to the policy."""
        key = self.of_pod.get(pod_key)
        if self.reservations is not None:
            self.reservations.gone(pod_key)
        if key is None:
            return
        work = self.workloads[key]
        if work.done or work.admission is None or more_to_come:
            return
        if any(still_running(k) for k in work.pods):
            return
        work.done = True
        self.policy.finished(key, now)
        self.changed = True

    # --- report -----------------------------------------------------------------------------------------

    def usage(self) -> dict[str, dict[str, int]]:
        """What the workloads admitted now ask, per queue that admitted them (ClusterQueue or Queue)."""
        out: dict[str, dict[str, int]] = {}
        for work in self.workloads.values():
            if work.admission is None or work.done:
                continue
            held = out.setdefault(work.admission.queue, {})
            for name, value in work.total.items():
                held[name] = held.get(name, 0) + value
        return out

    def workload_rows(self) -> list[AdmissionWorkload]:
        """One row per queued workload: its queue, whether admitted, waits for admission, evictions, and for one
        held at the end why it waits (`reason`, None once admitted)."""
        out: list[AdmissionWorkload] = []
        for work in self.workloads.values():
            admitted = work.admission is not None or work.done
            out.append({"name": work.key, "queue": work.queue,
                        "admitted": admitted, "finished": work.done,
                        "admittedBy": work.admission.queue if work.admission is not None else None,
                        "admissionWaits": [round(w, 6) for w in work.waits], "evictions": work.evictions,
                        "reason": None if work.admission is not None else self._held_reason(work)})
        return out

    def held(self) -> list[tuple[str, int, str]]:
        """The workloads waiting at the end (never admitted, or evicted and not admitted again): key ("Job
        ns/name", …), the pods it never created (a Job, JobSet or Kubeflow job never started), and why it waits."""
        return [(work.key, _not_created(work), self._held_reason(work) or WAITING_FOR_ADMISSION)
                for work in self.workloads.values() if work.admission is None and not work.done]

    def _held_reason(self, work: _Workload) -> str | None:
        if work.done:
            return None
        if not work.offered:
            missing = work.min_members - len(work.held)
            return (f"its pod group waits for {missing} more member(s) of {work.min_members} before it is "
                    "queued")
        return self.policy.pending_reason(work.key) or WAITING_FOR_ADMISSION


def held_lines(rows: Sequence[Mapping[str, object]], shown: int = 3) -> list[str]:
    """The report's held workloads (`admission.workloads` rows with a reason) as one line per reason, the most
    held first: `2 workload(s) held: LocalQueue lq doesn't exist (Job ml/a, Job ml/b)`."""
    by_reason: dict[str, list[str]] = {}
    for row in rows:
        reason = row.get("reason")
        if isinstance(reason, str) and reason:
            by_reason.setdefault(reason, []).append(str(row.get("name")))
    lines = []
    for reason, names in sorted(by_reason.items(), key=lambda item: (-len(item[1]), item[0])):
        more = f" and {len(names) - shown} more" if len(names) > shown else ""
        lines.append(f"{len(names)} workload(s) held: {reason} ({', '.join(names[:shown])}{more})")
    return lines


def _kind(obj: Whole) -> str:
    return obj.kind if isinstance(obj, TrainingJob) else type(obj).__name__


def _templates(obj: JobSet | TrainingJob | StatefulSet) -> list[tuple[str, int, Pod]]:
    """A workload's pod sets as Kueue's integrations make them: a JobSet's replicated job (replicas × its Jobs'
    min(parallelism, completions) pods), a Kubeflow job's replica type (its replicas), a StatefulSet's replicas
    (statefulset_reconciler.go constructWorkload: one pod set, `main`)."""
    if isinstance(obj, JobSet):
        return [(rj.name, rj.replicas * min(rj.job.parallelism, rj.job.completions), rj.job.template)
                for rj in obj.replicated_jobs]
    if isinstance(obj, StatefulSet):
        return [("main", obj.replicas, obj.template)]
    return [(spec.type.lower(), spec.replicas, spec.template) for spec in obj.replica_specs]


def _not_created(work: _Workload) -> int:
    if work.started:
        return 0
    if work.job is not None:
        return work.job.completions
    if isinstance(work.owner, JobSet):
        return sum(rj.replicas * rj.job.completions for rj in work.owner.replicated_jobs)
    if isinstance(work.owner, StatefulSet):
        return work.owner.replicas
    return work.owner.pods if isinstance(work.owner, TrainingJob) else 0


def _pod_sets(members: list[Pod]) -> list[PodSet]:
    """Members grouped by what each requests (a pod set per shape, in arrival order)."""
    shapes: dict[tuple[tuple[tuple[str, int], ...], int], list[Pod]] = {}
    for pod in members:
        shapes.setdefault((tuple(sorted(pod.requests.items())), gpu_share_milli(pod)), []).append(pod)
    return [PodSet(f"set-{i}", len(pods), dict(shape), None, dict(pods[0].placement.node_selector),
                   pods[0].placement.tolerations, share) for i, ((shape, share), pods) in enumerate(shapes.items())]


def gpu_share_milli(pod: Pod) -> int:
    """Thousandths of a GPU a pod's gpu-fraction share asks for over all its devices (0 for none, for whole
    GPUs, which its requests carry, and for a gpu-memory ask, whose share depends on the node)."""
    gpu = pod.gpu
    if gpu is None or gpu.memory > 0 or gpu.milli >= 1000:
        return 0
    return gpu.count * gpu.milli


def _partially(job: Job, count: int) -> Job:
    """The Job as Kueue starts it when admitted with `count` pods (RunWithPodSetsInfo): parallelism set to it,
    and completions too with `kueue.x-k8s.io/job-completions-equal-parallelism`."""
    return dataclasses.replace(job, parallelism=count,
                               completions=count if job.completions_follow else job.completions)


def _with_flavor(pod: Pod, admission: Admit) -> Pod:
    """The pod with its flavor's node labels added to its nodeSelector and the flavor's tolerations added."""
    if not admission.node_selector and not admission.tolerations:
        return pod
    selector = dict(pod.placement.node_selector)
    selector.update(admission.node_selector)
    tolerations: list[Toleration] = list(pod.placement.tolerations)
    for i, raw in enumerate(admission.tolerations):
        try:
            tolerations.append(parse_toleration(raw, f"spec.tolerations[{i}]", ()))
        except InputError as exc:
            raise exc.at(obj=f"ResourceFlavor of {admission.queue}") from None
    placement = dataclasses.replace(pod.placement, node_selector=tuple(sorted(selector.items())),
                                    tolerations=tuple(tolerations))
    return dataclasses.replace(pod, placement=placement)



def build_gate(queue_docs: list[tuple[Manifest, Source]], which: str, capacity: Mapping[str, int]) -> AdmissionGate:
    """The gate for the admission policy named `which` (a profile's `admission`) over the input's queueing
    objects. Bad objects fail here, before the run, with the file, the object and the field."""
    factory = POLICIES[which]
    return AdmissionGate(factory.load(queue_docs, capacity), factory)


_COMMON = {"kind", "name", "queue", "admitted", "pending", "running", "borrowed_admissions", "preempted",
           "reclaimed", "wait_mean", "mean_wait"}


def _typed(value: object, kind: type[T]) -> T:
    assert isinstance(value, kind), f"a queue row's counter is {value!r}, not a {kind.__name__}"
    return value


def queue_report(gate: AdmissionGate) -> list[Queue]:
    """The policy's per-queue counters in one shape for both peers (the report's `queues`): kind, name,
    admitted, pending, running, borrowed (admissions that borrowed: Kueue only), preempted, reclaimed, the
    mean wait for admission, and the policy's own counters under `details`."""
    out: list[Queue] = []
    for row in gate.policy.queue_rows():
        wait = row.get("wait_mean", row.get("mean_wait"))
        borrowed = row.get("borrowed_admissions")
        out.append({
            "kind": _typed(row.get("kind", "Queue"), str), "name": _typed(row.get("name", row.get("queue")), str),
            "admitted": _typed(row.get("admitted", 0), int), "pending": _typed(row.get("pending", 0), int),
            "running": _typed(row.get("running", 0), int),
            "borrowed": None if borrowed is None else _typed(borrowed, int),
            "preempted": _typed(row.get("preempted", 0), int), "reclaimed": _typed(row.get("reclaimed", 0), int),
            "meanWaitSeconds": None if wait is None else round(float(str(wait)), 6),
            "details": {k: v for k, v in row.items() if k not in _COMMON},
        })
    return out


def kueue_configuration(queue_docs: list[tuple[Manifest, Source]]) -> KueueConfig:
    """Kueue's own Configuration among the queueing objects (the defaults without one), for the real Kueue that
    `verify --profile kueue` runs."""
    return kueue_config(queue_docs)


def check_queue_objects(queue_docs: list[tuple[Manifest, Source]]) -> list[str]:
    """Read the queueing objects as every policy would, so that a bad one fails before any profile runs; answer
    what leaves a queue admitting nothing though every object is valid (a Kueue ClusterQueue inactive for a
    missing ResourceFlavor or a cohort cycle, a LocalQueue naming a missing ClusterQueue), for stderr."""
    out: list[str] = []
    for factory in POLICIES.values():
        warnings = getattr(factory.load(queue_docs, {}), "object_warnings", None)
        out.extend(warnings() if warnings is not None else [])
    return out


def load_queue_files(paths: Sequence[str]) -> list[tuple[Manifest, Source]]:
    """The objects of `--queues` files: each must be a Kueue or Volcano queueing object."""
    docs: list[tuple[Manifest, Source]] = []
    for source, doc in raw_documents(paths):
        if not is_queueing_object(doc):
            raise InputError("is not a Kueue or Volcano queueing object (--queues takes ResourceFlavor, "
                             "ClusterQueue, Cohort, LocalQueue, WorkloadPriorityClass, Kueue's Configuration, "
                             "Queue and the volcano-scheduler.conf, the configurations bare or in their "
                             "ConfigMap)", file=source.file,
                             obj=object_name(doc), field="kind")
        docs.append((doc, source))
    return docs


def policy_profile(profile: Profile, admission: str, queue_docs: list[tuple[Manifest, Source]]
                   ) -> tuple[Profile, list[str]]:
    """The profile with the node scoring the admission policy's configuration implies (Volcano's
    `volcano-scheduler.conf`) in place of its resource scoring, and what that mapping leaves out."""
    scoring = POLICIES[admission].node_scoring(queue_docs)
    if scoring is None:
        return profile, []
    scores = {k: v for k, v in profile.scores.items()
              if k not in ("NodeResourcesFit", "NodeResourcesBalancedAllocation")}
    scores.update(scoring.score_weights())
    plugin_args = {**profile.plugin_args, **scoring.plugin_args()}
    return dataclasses.replace(profile, scores=scores, plugin_args=plugin_args), list(scoring.notes)
