"""The simulator driver: replays objects on a virtual clock through the Scheduler and keeps the books.

It owns what a cluster would do around the scheduler: objects arrive (`phalanx.dev/arrival`), the Job
and workload controllers (phalanx/controllers: ReplicaSet, Deployment, StatefulSet, DaemonSet, CronJob,
JobSet, LeaderWorkerSet, Kubeflow training jobs) stamp pods, bound pods run, a gang member makes progress
only while its group has `minCount` members running (or done), pods finish after `phalanx.dev/duration` of
progress. Every scheduling decision comes from the Scheduler; the driver only carries it out and records it.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import assert_never

from phalanx.api.apps import ReplicaSet, StatefulSet
from phalanx.api.autoscaling import HorizontalPodAutoscaler
from phalanx.api.dra import DeviceTaintRule, ResourceSlice
from phalanx.api.objects import CompositePodGroup, Job, Node, Pod, PodGroup
from phalanx.api.sets import JobSet, LeaderWorkerSet
from phalanx.api.training import TrainingJob
from phalanx.controllers.job import JobController
from phalanx.controllers.protocol import Actions
from phalanx.controllers.workloads import WorkloadControllers
from phalanx.inputs.load import Inputs
from phalanx.scheduler.decisions import (
    Bind,
    Decision,
    DeviceTaintEviction,
    Evict,
    GroupCondition,
    Nominate,
    Preemption,
    Unschedulable,
)
from phalanx.scheduler.hints import Hints
from phalanx.scheduler.loop import VirtualClock, run_engine
from phalanx.scheduler.port import EnginePort
from phalanx.scheduler.profiles import Profile
from phalanx.scheduler.queue import SchedulingQueue
from phalanx.scheduler.scheduler import Scheduler
from phalanx.sim.accounting import Accounting
from phalanx.sim.admission_gate import AdmissionGate, build_gate, policy_profile
from phalanx.sim.autoscaling import AutoscalerScan, NodeAutoscaling
from phalanx.sim.event_queue import ARRIVAL, COMPLETION, EventQueue
from phalanx.sim.hpa import Autoscalers, HpaBankSync, HpaSync
from phalanx.sim.interleavings import AS_LISTED, Interleaving
from phalanx.sim.records import GroupRecord, PodRecord
from phalanx.sim.scenario import Scenario


@dataclass(slots=True)
class _Completion:
    pod_key: str
    token: int


@dataclass(slots=True)
class _Deletion:
    """An evicted pod is gone once its termination grace period has passed."""

    pod_key: str
    token: int


@dataclass(slots=True)
class ObjectUpdate:
    """A user changes an object (a trace's `update`): a pending Pod's schedulingGates, a PodGroup's spec."""

    obj: Pod | PodGroup


@dataclass(slots=True)
class GroupDeletion:
    """A user deletes a PodGroup (a trace's `delete`): its pending members wait behind PreEnqueue again."""

    key: str


@dataclass(slots=True)
class PodDeletion:
    """A user deletes a pod (a trace's `delete`): it leaves at once, freeing what it held; nothing recreates it."""

    pod_key: str
    # A controller's deletion (a LeaderWorkerSet restarting a group): a pod already terminating keeps its grace.
    unless_terminating: bool = False
    # A replayed end (`Simulation.replay_ends`): a pod that is not running then is left alone.
    only_running: bool = False


@dataclass(slots=True)
class _Wake:
    """A time a workload controller asked for (a CronJob's scheduled run) has come."""

    key: str


@dataclass(slots=True)
class _AdmissionWake:
    """A time the admission policy asked for (its answer changes with time alone: a preemption delay ends)."""


@dataclass(slots=True)
class _Controlled:
    """An object some workload controller takes in (phalanx.controllers.registry) arrives."""

    obj: object


Event = (Node | Pod | PodGroup | CompositePodGroup | Job | _Completion | _Deletion | PodDeletion | ObjectUpdate
         | GroupDeletion | DeviceTaintRule | ResourceSlice | _Controlled | _Wake | _AdmissionWake | AutoscalerScan
         | HorizontalPodAutoscaler | HpaSync | HpaBankSync)


# What a user or controller creates: with `cycle-between-creations` the scheduler may run between two of them.
_CREATIONS = (Pod, PodGroup, CompositePodGroup, Job, _Controlled)
# A pod that ends or goes: with `ends-one-at-a-time` the scheduler retries waiting pods after each.
_ENDS = (_Completion, _Deletion, PodDeletion)


class Simulation:
    def __init__(self, inputs: Inputs, profile: Profile, *, scenario: Scenario | None = None, seed: int = 0,
                 until: float | None = None, hints: Hints | None = None, queue: SchedulingQueue | None = None,
                 interleaving: Interleaving = AS_LISTED) -> None:
        """`hints` and `queue` go to the Scheduler (verification's: the real scheduler's choices, a recording
        queue); `interleaving` is the order of an instant's events (phalanx/sim/interleavings.py)."""
        scenario = scenario or Scenario()
        self.scenario = scenario
        scoring_notes: list[str] = []
        if scenario.admission is not None:
            profile, scoring_notes = policy_profile(profile, scenario.admission, inputs.queue_docs)
        self.profile = profile
        self.until = until
        initial = [n for n in inputs.nodes if n.arrival <= 0]
        self.interleaving = interleaving
        if queue is None and (interleaving.reverse_queue or interleaving.shuffle):
            queue = SchedulingQueue(reverse_ties=interleaving.reverse_queue, shuffle_ties=interleaving.shuffle)
        self.scheduler: EnginePort = Scheduler(profile, initial, seed=seed, hints=hints, queue=queue)
        for pdb in inputs.pdbs:
            self.scheduler.add_pdb(pdb)
        self.scheduler.add_device_objects(0.0, slices=[s for s in inputs.resource_slices if s.arrival <= 0],
                                          classes=inputs.device_classes, claims=inputs.resource_claims,
                                          templates=inputs.claim_templates)
        self.events: EventQueue[Event] = EventQueue(reverse_ties=interleaving.reverse_events,
                                                     shuffle_ties=interleaving.shuffle)
        later: list[ResourceSlice | DeviceTaintRule] = [s for s in inputs.resource_slices if s.arrival > 0]
        for extra in (*later, *inputs.device_taint_rules):
            self.events.push(extra.arrival, ARRIVAL, extra)
        for obj in inputs.objects():
            if isinstance(obj, Node) and obj.arrival <= 0:
                continue
            if isinstance(obj, Node | Pod | PodGroup | CompositePodGroup | Job):
                # Nodes and pods already bound are the cluster's state: no order of events reaches them.
                present = isinstance(obj, Node) or (isinstance(obj, Pod) and obj.node_name is not None)
                self.events.push(obj.arrival, ARRIVAL, obj, listed=present)
            elif type(obj) in inputs.controlled:
                self.events.push(obj.arrival, ARRIVAL, _Controlled(obj))
        self.allocatable: dict[str, int] = defaultdict(int)
        for node in initial:
            self._count_node(node)
        self.pods: dict[str, PodRecord] = {}
        self.groups: dict[str, GroupRecord] = {}
        self.members: dict[str, set[str]] = defaultdict(set)
        self.group_counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # [live, live or done]
        self.progressing: dict[str, bool] = {}  # a group's members may make progress (as last computed)
        self.jobs = JobController()
        self.durations = dict(scenario.durations)
        self.defaulted: Counter[str] = Counter()  # pods given a default duration, by owner kind
        self.suspended: dict[str, Job] = {}  # Jobs with spec.suspend that no admission policy takes: never started
        self.workloads = WorkloadControllers(self.jobs, existing=list(inputs.pods),
                                             replica_sets=list(inputs.of(ReplicaSet)), nodes=initial, seed=seed,
                                             until=until)
        self.gate: AdmissionGate | None = None
        self._admission_wakes: set[float] = set()  # times an _AdmissionWake is queued for
        self._running_load: dict[str, int] = defaultdict(int)
        if scenario.admission is not None:
            for pod in inputs.pods:  # a snapshot's running pods: capacity the queues cannot share
                if pod.node_name is not None:
                    for name, value in pod.requests.items():
                        self._running_load[name] += value
            self.gate = build_gate(inputs.queue_docs, scenario.admission, self._queue_capacity())
            self.gate.notes.extend(scoring_notes)
        self.hpas = Autoscalers(inputs.hpas, inputs.metrics, until) if inputs.hpas else None
        for hpa in inputs.hpas:
            self.events.push(hpa.arrival, ARRIVAL, hpa)
        self.autoscaling = NodeAutoscaling(inputs.node_groups, initial, scenario.scale_up, profile.filters,
                                           profile.plugin_args) if inputs.node_groups else None
        self.books = Accounting()
        self.books.capacity = self.allocatable
        self.now = 0.0
        self.end_time = 0.0
        self.binds = 0
        self.preemptions = 0
        self.evictions = 0
        self.lost_hours: dict[str, float] = defaultdict(float)
        self.scheduling_seconds = 0.0
        # Called after each event batch's decisions are carried out (series sampling, progress display).
        self.observers: list[Callable[[Simulation], None]] = []
        # An evicted bare pod of a PodGroup (no owner) comes back, as the workload controller behind a gang
        # would make it; off where only what the manifests name runs (verify's real cluster has no such one).
        self.recreate_bare_members = True
        self.timed_only: frozenset[str] | None = None  # `replay_ends`: the only pods that end after their duration

    def update_at(self, time: float, obj: Pod | PodGroup) -> None:
        """Schedule a user's update (before `run`): a pending Pod's schedulingGates, or a PodGroup's spec."""
        self.events.push(time, ARRIVAL, ObjectUpdate(obj))

    def delete_group_at(self, time: float, key: str) -> None:
        """Schedule a user's deletion of a PodGroup (before `run`)."""
        self.events.push(time, ARRIVAL, GroupDeletion(key))

    def delete_pod_at(self, time: float, pod_key: str) -> None:
        """Schedule a user's deletion of a pod (before `run`): at `time` it leaves and frees what it held."""
        self.events.push(time, COMPLETION, PodDeletion(pod_key))

    def replay_ends(self, ends: Mapping[str, float], timed: Iterable[str]) -> None:
        """End pods as a replay ended them (before `run`; verify's other interleavings): each pod of `ends` at its
        time if it runs then, each of `timed` after its own duration, every other pod never."""
        self.timed_only = frozenset(timed)
        for key, time in ends.items():
            self.events.push(time, COMPLETION, PodDeletion(key, only_running=True))

    def _queue_capacity(self) -> dict[str, int]:
        return {name: value - self._running_load.get(name, 0) for name, value in self.allocatable.items()}

    def _count_node(self, node: Node) -> None:
        for name, value in node.allocatable.items():
            self.allocatable[name] += value

    # --- main loop ------------------------------------------------------------------------------------

    def run(self) -> Simulation:
        clock = VirtualClock(self.events.peek_time, self.until)
        run_engine(self.scheduler, clock, self)
        self.end_time = self.until if self.until is not None else self.now
        self.books.advance(self.end_time)
        return self

    def extend_to(self, time: float) -> None:
        """Carry a run that ended because nothing more could change on to `time` (the books keep counting:
        pods hold what they hold, pending pods keep waiting), so that profiles compare over one horizon."""
        if time > self.end_time:
            self.books.advance(time)
            self.end_time = time

    # The engine loop's ends (phalanx.scheduler.loop.Ends).

    def feed(self, now: float) -> None:
        self.books.advance(now)
        self.now = now
        order = self.interleaving
        if order.between_creations or order.between_ends:
            # One creation (or end) per round: the rest of the instant waits for the next round, at the same time.
            while (event := self.events.pop_one(now)) is not None:
                self._apply(event)
                created = isinstance(event, _CREATIONS) and not (isinstance(event, Pod) and event.node_name is not None)
                if (order.between_creations and created) or (order.between_ends and isinstance(event, _ENDS)):
                    break
        else:
            for event in self.events.pop_until(now):
                self._apply(event)
        if self.gate is not None:
            self._admission()
        if self.autoscaling is not None:
            self.autoscaling.scan(self)

    def turn(self) -> AbstractContextManager[bool]:
        return nullcontext(True)

    def carry_out(self, decisions: list[Decision], now: float, seconds: float) -> None:
        self.scheduling_seconds += seconds
        for decision in decisions:
            match decision:
                case Bind():  # the simulator's binding never fails: confirmed at once
                    self.scheduler.confirm_bind(decision.pod.key)
                    self.binds += 1
                    self._bind(decision.pod, decision.node)
                case Unschedulable():
                    self.pods[decision.pod.key].message = decision.message
                    if self.autoscaling is not None:
                        self.autoscaling.unschedulable_pod(self, decision.pod.key)
                case GroupCondition():
                    self._condition(decision)
                case Evict():
                    self._evict(decision)
                case Nominate():  # an empty node clears the nomination
                    self.pods[decision.pod.key].nominated = decision.node or None
                case Preemption():
                    self._preemption(decision)
                case DeviceTaintEviction():
                    self._evict(decision)
                case _:
                    assert_never(decision)
        for observe in self.observers:
            observe(self)

    def _apply(self, event: Event) -> None:
        """Hand the event to the one who acts on it: the kubelet's books (a pod finished, an evicted pod's
        grace is over, a user deleted a pod), the workload controllers (an object of theirs arrives, a time
        they asked for comes), the HPAs, the cluster autoscaler, or the scheduler (a cluster object arrives)."""
        match event:
            case _Completion():
                self._complete(event)
            case _Deletion():
                self._delete(event)
            case PodDeletion():
                self._user_delete(event)
            case ObjectUpdate():
                self._updated(event.obj)
            case GroupDeletion():
                self.scheduler.delete_pod_group(event.key, self.now)
            case DeviceTaintRule():
                for eviction in self.scheduler.add_device_taint_rule(event, self.now):
                    self._evict(eviction)
            case ResourceSlice():
                self.scheduler.add_device_objects(self.now, slices=[event])
            case Node():
                self._node_arrived(event)
            case PodGroup():
                self._group_arrived(event)
            case CompositePodGroup():
                self.scheduler.add_composite_pod_group(event, self.now)
            case Job():
                if self.gate is not None and self.gate.hold_job(event, self.now):
                    pass  # the policy starts it when it admits it (Kueue resumes a suspended Job)
                elif event.suspend:
                    self.suspended[event.key] = event  # nothing resumes it: the Job controller makes no pod
                else:
                    self._start_job(event)
            case _Controlled():
                self._controlled(event.obj)
            case HorizontalPodAutoscaler() | HpaSync() | HpaBankSync():
                assert self.hpas is not None
                self.hpas.receive(event, self)
            case AutoscalerScan() | _AdmissionWake():
                pass  # the scan and the admission cycle run once the batch's events are in (feed)
            case _Wake():
                self._act(self.workloads.woken(event.key, self.now))
            case Pod():
                self._arrive(event)
            case _:
                assert_never(event)

    def _node_arrived(self, node: Node) -> None:
        self.scheduler.add_nodes([node], self.now)
        self._count_node(node)
        if self.autoscaling is not None:
            self.autoscaling.arrived(node, self.now)
        if self.gate is not None:
            self.gate.nodes_changed(self._queue_capacity())
        self._act(self.workloads.node_added(node, self.now))

    def _group_arrived(self, pod_group: PodGroup) -> None:
        earlier = self.groups.get(pod_group.key)
        group = self.groups[pod_group.key] = GroupRecord(pod_group, waiting_since=self.now
                                                         if self.members[pod_group.key] else None)
        # The status it carries (a snapshot's conditions) stands until the scheduler writes a newer one.
        group.conditions = {**(earlier.conditions if earlier is not None else {}),
                            **{c["type"]: dict(c) for c in pod_group.conditions}}
        self.scheduler.add_pod_group(pod_group, self.now)
        self._adopt_members(group)

    def _controlled(self, obj: object) -> None:
        """An object some workload controller takes in arrives; a JobSet, Kubeflow job or StatefulSet the admission
        policy queues whole waits for admission before its controller sees it (Kueue suspends or gates it)."""
        if (self.gate is not None and isinstance(obj, JobSet | LeaderWorkerSet | TrainingJob | StatefulSet)
                and self.gate.hold_whole(obj, self.now)):
            return
        self._act(self.workloads.arrive(obj, self.now))

    def _adopt_members(self, group: GroupRecord) -> None:
        """Members that arrived before their PodGroup (a snapshot lists pods before podgroups) now count for it:
        a gang whose minCount already runs is scheduled (without a wait: it never waited here), one that falls
        short stops its members' progress."""
        keys = sorted(self.members[group.group.key])
        if not keys:
            return
        self._refresh(self.pods[keys[0]].pod)
        if group.started_at == self.now and all(self.pods[k].pod.node_name is not None for k in keys):
            group.waits.clear()

    # --- pods -----------------------------------------------------------------------------------------

    def _arrive(self, pod: Pod, created: float | None = None) -> None:
        placeholder = self.gate is not None and self.gate.is_placeholder(pod.key)
        if pod.duration is None and self.durations and not placeholder:
            kind = pod.controller or "Pod"
            default = self.durations.get(kind)
            if default is not None:
                pod = dataclasses.replace(pod, duration=default)
                self.defaulted[kind] += 1
        if created is None and self.gate is not None:
            created = self.gate.created_at(pod)
        record = PodRecord(pod, created=pod.arrival if created is None else created, placeholder=placeholder)
        earlier = self.pods.get(pod.key)
        if earlier is not None:  # made again under the name of one deleted before it ran: its evictions stay
            record.preempted_count, record.preempted_by = earlier.preempted_count, earlier.preempted_by
        self.pods[pod.key] = record
        if pod.group_key is not None:
            self.members[pod.group_key].add(pod.key)
            group = self.groups.get(pod.group_key)
            if group is not None and group.waiting_since is None:
                group.waiting_since = self.now
        if pod.node_name is None:
            if self.gate is not None:
                group = self.groups.get(pod.group_key) if pod.group_key is not None else None
                released = self.gate.hold_pod(pod, group.group if group is not None else None, self.now)
                self._placeholder_work()
                if released is None:
                    if record.phase == "Pending":
                        record.message = self.gate.pod_message(pod)
                    return
                if released.node_name is not None:
                    self._take_place(released)
                    return
                pod = record.pod = released
            self.scheduler.add_pod(pod, self.now)
            record.message = self.scheduler.pod_message(pod.key)
            return
        short = self.scheduler.shortfall(pod, pod.node_name)
        if short:
            record.phase = "Failed"
            record.message = f"OutOf{short[0]}: Pod was rejected: Node didn't have enough resource: {short[0]}"
            return
        self.scheduler.add_pod(pod, self.now, node=pod.node_name)
        started = pod.start_time if pod.start_time is not None else self.now
        self._bind(pod, pod.node_name, at=min(started, self.now))

    def _bind(self, pod: Pod, node: str, at: float | None = None) -> None:
        record = self.pods[pod.key]
        record.phase = "Running"
        record.node = node
        if record.bound_at is None:
            record.bound_at = self.now if at is None else at
        record.message = None
        record.nominated = None
        record.devices = self.scheduler.pod_devices(pod.key)
        self.books.hold(record.pod.requests)  # the pod as created (the scheduler's view may move requests to claims)
        self._refresh(pod)
        if self.gate is not None and self.gate.pod_bound(pod.key, node, self.now):
            self.events.push(self.now, ARRIVAL, _AdmissionWake())  # an admission pass before the next round
        self._act(self.workloads.bound(pod, self.now))

    def _can_progress(self, group_key: str | None) -> bool:
        if group_key is None:
            return True
        record = self.groups.get(group_key)
        if record is None or not record.group.is_gang:
            return True
        return self.group_counts[group_key][1] >= record.group.min_count

    def _count(self, record: PodRecord) -> None:
        """Keep the pod's group counters (members live, members live or done) in step with its state."""
        group_key = record.pod.group_key
        if group_key is None:
            return
        member = record.pod.key in self.members[group_key]
        live = member and record.phase == "Running" and not record.terminating
        done = live or (member and record.phase == "Succeeded")
        counts = self.group_counts[group_key]
        counts[0] += int(live) - int(record.counted_live)
        counts[1] += int(done) - int(record.counted_done)
        record.counted_live, record.counted_done = live, done

    def _refresh(self, pod: Pod) -> None:
        """Start or stop progress for the pod, or for its whole group when the group's state changed.

        Counters make this O(1) per pod; only a change of the group's state walks its members.
        """
        group_key = pod.group_key
        self._count(self.pods[pod.key])
        ok = self._can_progress(group_key)
        if group_key is None or self.progressing.get(group_key) == ok:
            keys: Iterable[str] = (pod.key,)
        else:
            keys = sorted(self.members[group_key] | {pod.key})
            self.progressing[group_key] = ok
        if group_key is not None and group_key in self.groups:
            group = self.groups[group_key]
            live = self.group_counts[group_key][0] > 0
            if ok and live and group.running_since is None:
                group.running_since = self.now
                group.waits.append(self.now - (group.waiting_since if group.waiting_since is not None
                                               else group.group.arrival))
                if group.started_at is None:
                    group.started_at = self.now
            elif not ok and group.running_since is not None:
                group.running_since = None
                group.waiting_since = self.now
        for key in keys:
            record = self.pods[key]
            if record.phase != "Running" or record.terminating or record.placeholder:
                continue
            if ok and record.since is None:
                record.since = self.now
                if self.autoscaling is not None and record.node is not None:
                    self.autoscaling.used(record.node)
                self.books.work(record.pod.requests)
                if record.pod.duration is not None and (self.timed_only is None or key in self.timed_only):
                    record.token += 1
                    remaining = max(record.pod.duration - record.progress, 0.0)
                    self.events.push(self.now + remaining, COMPLETION, _Completion(key, record.token))
            elif not ok and record.since is not None:
                record.progress += self.now - record.since
                record.since = None
                record.token += 1
                self.books.work(record.pod.requests, -1)

    def _complete(self, event: _Completion) -> None:
        record = self.pods.get(event.pod_key)
        if record is None or record.token != event.token or record.phase != "Running":
            return
        record.phase = "Succeeded"
        record.finished_at = self.now
        if record.since is not None:
            record.progress += self.now - record.since
            record.since = None
            self.books.work(record.pod.requests, -1)
        self.books.hold(record.pod.requests, -1)
        self.scheduler.delete_pod(record.pod.key, self.now)
        self._refresh(record.pod)
        for pod in self.jobs.succeeded(record.pod.owner if record.pod.controller == "Job" else None, self.now):
            self._arrive(pod)
        self._ended(record.pod)

    # --- preemption -----------------------------------------------------------------------------------

    def _preemption(self, decision: Preemption) -> None:
        self.preemptions += 1
        hit = {self.pods[k].pod.group_key for k in decision.victims if k in self.pods}
        for group_key in hit:
            if group_key in self.groups:
                record = self.groups[group_key]
                record.preempted_count += 1
                record.conditions["DisruptionTarget"] = {
                    "type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                    "message": f"preempted by {decision.preemptor}", "lastTransitionTime": self.now}

    def _evict(self, decision: Evict | DeviceTaintEviction) -> None:
        """The victim stops working now (work since its last checkpoint is lost) and is gone after its grace."""
        record = self.pods[decision.pod.key]
        if record.phase != "Running" or record.terminating:
            return
        self.evictions += 1
        record.terminating = True
        match decision:
            case Evict():
                record.preempted_count += 1
                record.preempted_by.append({"time": self.now, "preemptor": decision.preemptor,
                                            "node": decision.node, "message": decision.message})
            case DeviceTaintEviction():
                record.device_taint_evictions.append({"time": self.now, "node": decision.node,
                                                      "claim": decision.claim, "deviceTaintRule": decision.rule,
                                                      "message": decision.message})
            case _:
                assert_never(decision)
        record.message = decision.message
        if record.since is not None:
            record.progress += self.now - record.since
            record.since = None
            self.books.work(record.pod.requests, -1)
        interval = record.pod.checkpoint_interval
        kept = math.floor(record.progress / interval) * interval if interval else 0.0
        lost = record.progress - kept
        for name, value in record.pod.requests.items():
            self.lost_hours[name] += value * lost / 3600.0
        record.progress = kept
        record.token += 1
        self.events.push(self.now + record.pod.termination_grace, COMPLETION, _Deletion(decision.pod.key,
                                                                                        record.token))
        self._refresh(record.pod)
        self._act(self.workloads.terminating(record.pod, self.now))

    def _delete(self, event: _Deletion) -> None:
        """An evicted pod is gone: its controller (Job, ReplicaSet…) makes it again, and so does a gang's workload
        controller for a bare member of a PodGroup (unless `recreate_bare_members` is off); a bare pod fails."""
        record = self.pods.get(event.pod_key)
        if record is None or record.token != event.token or not record.terminating:
            return
        pod = record.pod
        self.books.hold(pod.requests, -1)
        self.scheduler.delete_pod(pod.key, self.now)
        record.terminating = False
        record.node = None
        replaced = self.workloads.replaces(pod)  # a ReplicaSet's or DaemonSet's pod: another takes its place
        bare = pod.owner is None and pod.controller is None
        if replaced or (bare and (pod.pod_group is None or not self.recreate_bare_members)):
            record.phase = "Failed"
            record.finished_at = self.now
            self._refresh(pod)
            self._ended(pod)
            if replaced:
                self._act(self.workloads.gone(pod, self.now))
            return
        record.phase = "Pending"
        record.pod = dataclasses.replace(pod, arrival=self.now, node_name=None, start_time=None)
        if self.gate is not None and self.gate.queued(pod.key):
            released = self.gate.take_back(record.pod, self.now)
            if released is None:  # its workload was evicted: it waits for admission again
                record.message = self.gate.factory.held_message
                self._refresh(record.pod)
                return
            record.pod = released
        self.scheduler.add_pod(record.pod, self.now)
        self._refresh(record.pod)

    def _updated(self, obj: Pod | PodGroup) -> None:
        if isinstance(obj, PodGroup):
            record = self.groups.get(obj.key)
            if record is None:
                self._group_arrived(obj)
                return
            obj.arrival = record.group.arrival  # created then; its history (waits, starts, conditions) stays
            record.group = obj
            self.scheduler.add_pod_group(obj, self.now)
            return
        pod_record = self.pods.get(obj.key)
        if pod_record is None or pod_record.phase != "Pending" or pod_record.node is not None:
            return  # only a pending pod's gates change what scheduling sees
        pod_record.pod = dataclasses.replace(pod_record.pod, scheduling_gates=obj.scheduling_gates)
        self.scheduler.update_pod(pod_record.pod, self.now)
        pod_record.message = self.scheduler.pod_message(obj.key)

    def _user_delete(self, event: PodDeletion) -> None:
        """A deleted pod leaves now: a running one ends (Succeeded), a pending one never runs (Failed)."""
        record = self.pods.get(event.pod_key)
        if event.only_running:  # its work done, as the replay's kubelet ended it
            if record is not None and record.phase == "Running" and not record.terminating:
                self._complete(_Completion(event.pod_key, record.token))
            return
        if record is None or record.phase in ("Succeeded", "Failed") or (event.unless_terminating
                                                                         and record.terminating):
            return
        pod = record.pod
        if record.phase == "Running":
            if record.since is not None:
                record.progress += self.now - record.since
                record.since = None
                self.books.work(pod.requests, -1)
            self.books.hold(pod.requests, -1)
            record.phase = "Succeeded"
        else:
            record.phase = "Failed"
            record.message = "deleted while pending"
        record.finished_at = self.now
        record.terminating = False
        record.token += 1
        self.scheduler.delete_pod(pod.key, self.now)
        if pod.group_key is not None:
            self.members[pod.group_key].discard(pod.key)
        self._refresh(pod)
        if self.gate is not None:
            self.gate.forget(pod.key)
            self._ended(pod)
        self._act(self.workloads.gone(pod, self.now))

    def drain_node(self, name: str, pods: list[Pod], by: str) -> None:
        """Take a node away (a cluster-autoscaler scale-down): its pods are evicted (DaemonSet pods deleted),
        the node is cordoned with no room left, and its capacity leaves the books."""
        for pod in pods:
            record = self.pods.get(pod.key)
            if record is None or record.phase != "Running" or record.terminating:
                continue
            if pod.controller == "DaemonSet":
                self.events.push(self.now, COMPLETION, PodDeletion(pod.key))
            else:
                self._evict(Evict(record.pod, by, name, f"Pod was evicted by {by} to scale down node {name}"))
        for resource, amount in (self.scheduler.node_allocatable(name) or {}).items():
            self.allocatable[resource] -= amount
        self.scheduler.delete_node(name, self.now)
        self.workloads.node_removed(name)

    # --- admission (kueue and volcano profiles) -------------------------------------------------------

    def _admission(self) -> None:
        """Carry out the admission policy's decisions: admitted workloads' pods go to the scheduler (a Job
        starts), evicted ones' pods stop (running ones as preemption victims do) and wait again."""
        assert self.gate is not None
        admitted, evicted = self.gate.cycle(self.now)
        self._placeholder_work()
        wake = self.gate.wake_at()
        if wake is not None and wake > self.now and wake not in self._admission_wakes:
            self._admission_wakes.add(wake)
            self.events.push(wake, ARRIVAL, _AdmissionWake())
        for work, decision in evicted:
            for key in sorted(work.pods):
                record = self.pods.get(key)
                if record is None or record.phase not in ("Pending", "Running"):
                    continue
                if record.phase == "Running":
                    if not record.terminating and record.node is not None:
                        self._evict(Evict(record.pod, decision.by or "", record.node,
                                          f"Evicted by {self.gate.which}: {decision.reason}"
                                          + (f": {decision.message}" if decision.message else "")))
                    continue
                self.scheduler.delete_pod(key, self.now)
                record.pod = self.gate.take_back(record.pod, self.now) or record.pod
                record.message = self.gate.factory.held_message
        for work, pods in admitted:
            if work.job is not None and not work.started:
                work.started = True
                self._start_job(work.job, created=work.job.arrival)
            if work.job is not None and work.resized:
                work.resized = False
                pods = self._resize_job(work.job, pods)
            if work.owner is not None and not work.started:
                work.started = True
                self._act(self.workloads.arrive(work.owner, self.now))
            for pod in pods:
                record = self.pods[pod.key]
                if record.phase != "Pending":
                    continue
                if pod.node_name is not None and pod.key in self.gate.replacing:
                    self._take_place(pod)
                    continue
                record.pod = pod
                self.scheduler.add_pod(pod, self.now)
                record.message = self.scheduler.pod_message(pod.key)

    def _placeholder_work(self) -> None:
        """YuniKorn's placeholders: create those the gate asks for, delete those released, fail the pods of an
        application that failed (Hard style at the placeholder timeout)."""
        assert self.gate is not None
        create, delete, failed, requeued = self.gate.placeholder_work()
        for key in requeued:
            if self.pods[key].phase == "Pending" and self.pods[key].node is None:
                self.pods[key].message = self.gate.policy.pending_reason(f"Pod {key}") or self.gate.factory.held_message
        for key, why in delete:
            self._drop_placeholder(key, why)
        if delete and self.gate.changed:  # the room they held goes back to their queue: a pass before the next round
            self.events.push(self.now, ARRIVAL, _AdmissionWake())
        for key, message in failed:
            record = self.pods.get(key)
            if record is not None and record.phase == "Pending":
                self.scheduler.delete_pod(key, self.now)
                record.phase = "Failed"
                record.finished_at = self.now
                record.message = message
                self._refresh(record.pod)
        for pod in create:
            self.events.push(self.now, ARRIVAL, pod)

    def _drop_placeholder(self, key: str, why: str) -> None:
        record = self.pods.get(key)
        if record is None or record.phase not in ("Pending", "Running"):
            return
        self._user_delete(PodDeletion(key))
        record.message = why

    def _take_place(self, pod: Pod) -> None:
        """A pod takes a placeholder's place: the placeholder goes, the pod is bound to its node."""
        assert self.gate is not None and pod.node_name is not None
        node = pod.node_name
        self._drop_placeholder(self.gate.replacing.pop(pod.key), f"replaced by {pod.key}")
        plain = dataclasses.replace(pod, node_name=None)
        record = self.pods[pod.key]
        record.pod = plain
        if self.scheduler.shortfall(plain, node):
            self.scheduler.add_pod(plain, self.now)
            record.message = self.scheduler.pod_message(plain.key)
            return
        self.scheduler.add_pod(plain, self.now, node=node)
        self._bind(plain, node)

    def _resize_job(self, job: Job, pods: list[Pod]) -> list[Pod]:
        """A started Job admitted again with other counts: the pods beyond them are deleted before they run, more
        are made when it may run more; answers the waiting pods to release."""
        drop, more = self.jobs.resize(job, [p.key for p in pods], self.now)
        for key in drop:
            self._user_delete(PodDeletion(key))
            self.pods[key].message = (f"deleted: {self.gate.which if self.gate else 'its queue'} admitted Job "
                                      f"{job.key} again with parallelism {job.parallelism}")
        for pod in more:
            self._arrive(pod, created=job.arrival)
        return [p for p in pods if p.key not in drop]

    def _ended(self, pod: Pod) -> None:
        """A pod of a queued workload ended: the workload's quota returns once all its pods have."""
        if self.gate is None:
            return
        more = False
        for owner in ([pod.owner] if pod.controller == "Job" and pod.owner is not None else
                      []) + self.gate.jobs_of(pod.key):
            job = self.jobs.jobs.get(owner)
            more |= job is not None and job.created < job.job.completions
        self.gate.pod_ended(pod.key, lambda k: k in self.pods and self.pods[k].phase in ("Pending", "Running"),
                            more, self.now)

    # --- the workload controllers ---------------------------------------------------------------------

    def _act(self, actions: Actions) -> None:
        """Carry out what a workload controller asks for: new pods and Jobs arrive now (as events, so that a
        controller acting during a scheduling round's decisions is seen by the next round), deleted Jobs'
        pods leave, scheduled CronJob runs wait for their time. PodGroups go before the pods that join them."""
        for group in actions.pod_groups:
            self.events.push(self.now, ARRIVAL, group)
        for key in actions.delete_pods:
            record = self.pods.get(key)
            if record is not None and record.phase == "Running" and not record.terminating:
                self.events.push(self.now, COMPLETION, PodDeletion(key, unless_terminating=True))
        for key in actions.scale_down:
            record = self.pods.get(key)
            if record is not None and record.phase in ("Pending", "Running"):
                self.events.push(self.now, COMPLETION, PodDeletion(key))
        for pod in actions.pods:
            self.events.push(self.now, ARRIVAL, pod)
        for job in actions.jobs:
            self.events.push(self.now, ARRIVAL, job)
        for job_key in actions.delete_jobs:
            for key, record in self.pods.items():
                if (record.pod.controller == "Job" and record.pod.owner == job_key
                        and record.phase in ("Pending", "Running")):
                    self.events.push(self.now, COMPLETION, PodDeletion(key))
        for time, key in actions.wake:
            self.events.push(time, ARRIVAL, _Wake(key))

    def scale(self, kind: str, key: str, replicas: int) -> None:
        """The scale subresource of a Deployment, ReplicaSet or StatefulSet (an HPA's decision): a scale-down
        deletes pending pods first, then the most recently bound, as the ReplicaSet controller ranks them."""
        def rank(pod_key: str) -> tuple[int, float]:
            record = self.pods.get(pod_key)
            if record is None or record.bound_at is None or record.phase != "Running":
                return (0, 0.0)
            return (1, -record.bound_at)

        self._act(self.workloads.scale(kind, key, replicas, self.now, rank))

    # --- the Job controller ---------------------------------------------------------------------------

    def _start_job(self, job: Job, created: float | None = None) -> None:
        """The Job controller starts the Job: its PodGroup and first pods. A Job that waited for admission
        passes its own arrival as `created`, so that its pods' waits count the time it was queued."""
        group, pods = self.jobs.start(job, self.now, adopted=len(self.workloads.given.owned(job.key, "Job")))
        if group is not None:
            self.groups[group.key] = GroupRecord(group)
            self.scheduler.add_pod_group(group, self.now)
        for pod in pods:
            self._arrive(pod, created)

    # --- PodGroup status ------------------------------------------------------------------------------

    def _condition(self, decision: GroupCondition) -> None:
        record = self.groups.get(decision.group.key)
        if record is None:
            return
        record.conditions[decision.type] = {
            "type": decision.type, "status": "True" if decision.status else "False",
            "reason": decision.reason, "message": decision.message, "lastTransitionTime": self.now,
        }

    def group_message(self, group_key: str) -> str | None:
        return self.scheduler.group_message(group_key)
