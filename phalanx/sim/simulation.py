"""The simulator driver: replays objects on a virtual clock through the Scheduler and keeps the books.

It owns what a cluster would do around the scheduler: objects arrive (`phalanx.dev/arrival`), the Job
controller stamps pods, bound pods run, a gang member makes progress only while its group has
`minCount` members running (or done), pods finish after `phalanx.dev/duration` of progress. Every
scheduling decision comes from the Scheduler; the driver only carries it out and records it.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from phalanx.api.jobs import job_pod, job_pod_group
from phalanx.api.load import Inputs
from phalanx.api.objects import Job, Node, Pod, PodGroup
from phalanx.scheduler.profiles import Profile
from phalanx.scheduler.scheduler import GROUP, Bind, GroupCondition, Scheduler, Unschedulable
from phalanx.sim.accounting import Accounting
from phalanx.sim.engine import ARRIVAL, COMPLETION, EventQueue


@dataclass(slots=True)
class PodRecord:
    pod: Pod
    phase: str = "Pending"
    node: str | None = None
    bound_at: float | None = None
    finished_at: float | None = None
    message: str | None = None
    progress: float = 0.0
    since: float | None = None  # making progress since this time
    token: int = 0


@dataclass(slots=True)
class GroupRecord:
    group: PodGroup
    started_at: float | None = None  # first time minCount members ran together
    conditions: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(slots=True)
class JobRecord:
    job: Job
    created: int = 0
    succeeded: int = 0


@dataclass(slots=True)
class _Completion:
    pod_key: str
    token: int


Event = Node | Pod | PodGroup | Job | _Completion


class Simulation:
    def __init__(self, inputs: Inputs, profile: Profile, *, seed: int = 0, until: float | None = None) -> None:
        self.profile = profile
        self.until = until
        initial = [n for n in inputs.nodes if n.arrival <= 0]
        self.scheduler = Scheduler(profile, initial, seed=seed)
        self.events: EventQueue[Event] = EventQueue()
        for obj in inputs.objects():
            if isinstance(obj, Node) and obj.arrival <= 0:
                continue
            if isinstance(obj, Node | Pod | PodGroup | Job):
                self.events.push(obj.arrival, ARRIVAL, obj)
        self.allocatable: dict[str, int] = defaultdict(int)
        for node in initial:
            self._count_node(node)
        self.pods: dict[str, PodRecord] = {}
        self.groups: dict[str, GroupRecord] = {}
        self.members: dict[str, set[str]] = defaultdict(set)
        self.jobs: dict[str, JobRecord] = {}
        self.books = Accounting()
        self.now = 0.0
        self.end_time = 0.0
        self.binds = 0
        self.scheduling_seconds = 0.0

    def _count_node(self, node: Node) -> None:
        for name, value in node.allocatable.items():
            self.allocatable[name] += value

    # --- main loop ------------------------------------------------------------------------------------

    def run(self) -> Simulation:
        while True:
            due = [t for t in (self.events.peek_time(), self.scheduler.next_retry()) if t is not None]
            if not due:
                break
            t = min(due)
            if self.until is not None and t > self.until:
                break
            self.books.advance(t)
            self.now = t
            for event in self.events.pop_until(t):
                self._apply(event)
            started = time.perf_counter()
            decisions = self.scheduler.schedule(t)
            self.scheduling_seconds += time.perf_counter() - started
            for decision in decisions:
                if isinstance(decision, Bind):
                    self.binds += 1
                    self._bind(decision.pod, decision.node)
                elif isinstance(decision, Unschedulable):
                    self.pods[decision.pod.key].message = decision.message
                elif isinstance(decision, GroupCondition):
                    self._condition(decision)
        self.end_time = self.until if self.until is not None else self.now
        self.books.advance(self.end_time)
        return self

    def _apply(self, event: Event) -> None:
        if isinstance(event, _Completion):
            self._complete(event)
        elif isinstance(event, Node):
            self.scheduler.add_nodes([event], self.now)
            self._count_node(event)
        elif isinstance(event, PodGroup):
            self.groups[event.key] = GroupRecord(event)
            self.scheduler.add_pod_group(event, self.now)
        elif isinstance(event, Job):
            self._start_job(event)
        else:
            self._arrive(event)

    # --- pods -----------------------------------------------------------------------------------------

    def _arrive(self, pod: Pod) -> None:
        record = PodRecord(pod)
        self.pods[pod.key] = record
        if pod.group_key is not None:
            self.members[pod.group_key].add(pod.key)
        if pod.node_name is None:
            self.scheduler.add_pod(pod, self.now)
            record.message = self.scheduler.messages.get(pod.key)
            return
        cluster = self.scheduler.cluster
        node = cluster.index[pod.node_name]
        if not cluster.fits(pod, node):
            short = [r for r in pod.requests if cluster.requested[node, cluster.column[r]] + pod.requests[r]
                     > cluster.allocatable[node, cluster.column[r]]] or ["pods"]
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
        record.bound_at = self.now if at is None else at
        record.message = None
        self.books.hold(pod.requests)
        self._refresh(pod)

    def _can_progress(self, group_key: str | None) -> bool:
        if group_key is None:
            return True
        record = self.groups.get(group_key)
        if record is None or not record.group.is_gang:
            return True
        done = sum(1 for k in self.members[group_key] if self.pods[k].phase in ("Running", "Succeeded"))
        return done >= record.group.min_count

    def _refresh(self, pod: Pod) -> None:
        """Start or stop progress for the pod, or for its whole group when the group's state changed."""
        group_key = pod.group_key
        keys = self.members[group_key] if group_key is not None else {pod.key}
        ok = self._can_progress(group_key)
        if group_key is not None and ok and group_key in self.groups:
            group = self.groups[group_key]
            if group.started_at is None and any(self.pods[k].phase == "Running" for k in keys):
                group.started_at = self.now
        for key in sorted(keys):
            record = self.pods[key]
            if record.phase != "Running":
                continue
            if ok and record.since is None:
                record.since = self.now
                self.books.work(record.pod.requests)
                if record.pod.duration is not None:
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
        if record.pod.owner in self.jobs:
            job = self.jobs[record.pod.owner]
            job.succeeded += 1
            self._fill_job(job)

    # --- the Job controller ---------------------------------------------------------------------------

    def _start_job(self, job: Job) -> None:
        record = JobRecord(job)
        self.jobs[job.key] = record
        group = job_pod_group(job)
        if group is not None:
            self.groups[group.key] = GroupRecord(group)
            self.scheduler.add_pod_group(group, self.now)
        self._fill_job(record)

    def _fill_job(self, record: JobRecord) -> None:
        job = record.job
        while record.created < job.completions and record.created - record.succeeded < job.parallelism:
            pod = job_pod(job, record.created, self.now)
            record.created += 1
            self._arrive(pod)

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
        return self.scheduler.messages.get(GROUP + group_key)
