"""The workload controllers together, as the simulator drives them: ReplicaSet (and Deployment above it),
StatefulSet, DaemonSet, CronJob, JobSet, LeaderWorkerSet and the Kubeflow training jobs. Each call says what
happened (an object arrived, a node arrived, a pod was bound, stopped or is gone) and answers with `Actions`
for the simulator to carry out."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from phalanx.api.apps import DaemonSet, Deployment, ReplicaSet, StatefulSet, WorkloadObject
from phalanx.api.objects import Job, Node, Pod, PodGroup
from phalanx.api.sets import JobSet, LeaderWorkerSet
from phalanx.api.training import TrainingJob
from phalanx.controllers import replicaset, statefulset
from phalanx.controllers.cronjob import CronJobController
from phalanx.controllers.daemonset import DaemonSetController
from phalanx.controllers.deployment import HASH_LABEL, replica_set_for
from phalanx.controllers.job import JobController
from phalanx.controllers.jobset import JobSetController
from phalanx.controllers.kubeflow import TrainingJobController
from phalanx.controllers.lws import LeaderWorkerSetController
from phalanx.controllers.replicaset import ReplicaSetController
from phalanx.controllers.statefulset import StatefulSetController

SetObject = JobSet | LeaderWorkerSet | TrainingJob

# Without a simulation horizon (`--until`), CronJobs run for this long after they arrive: a schedule never
# runs out, and the simulation has to end.
CRON_HORIZON = 24 * 3600.0


@dataclass(slots=True)
class Actions:
    pod_groups: list[PodGroup] = field(default_factory=list)  # to create now, before the pods
    pods: list[Pod] = field(default_factory=list)  # to create now
    jobs: list[Job] = field(default_factory=list)  # to start now (the Job controller takes them)
    delete_jobs: list[str] = field(default_factory=list)  # Jobs deleted: their pods go now
    delete_pods: list[str] = field(default_factory=list)  # running pods (not terminating) deleted now
    scale_down: list[str] = field(default_factory=list)  # pending or running pods a scale-down deletes now
    wake: list[tuple[float, str]] = field(default_factory=list)  # (time, CronJob key) of a scheduled run


NOTHING = Actions()  # shared: never changed


@dataclass(slots=True)
class WorkloadControllers:
    jobs: JobController
    existing: list[Pod] = field(default_factory=list)  # the input's pods, adopted by the owners they name
    replica_sets: list[ReplicaSet] = field(default_factory=list)  # the input's, adopted by their Deployments
    seed: int = 0
    until: float | None = None
    rs: ReplicaSetController = field(init=False)
    sts: StatefulSetController = field(init=False)
    ds: DaemonSetController = field(init=False)
    cron: CronJobController = field(init=False)
    js: JobSetController = field(default_factory=JobSetController)
    lws: LeaderWorkerSetController = field(default_factory=LeaderWorkerSetController)
    training: TrainingJobController = field(default_factory=TrainingJobController)
    _horizon: dict[str, float] = field(default_factory=dict)
    # The input's pods by (controller kind, owner key), and its ReplicaSets' Deployments: each controller finds
    # what it adopts without a scan of every pod (a snapshot holds thousands of controllers).
    _by_owner: dict[tuple[str, str], list[Pod]] = field(default_factory=dict)
    _by_deployment: dict[str, list[Pod]] = field(default_factory=dict)
    _managed: set[str] = field(default_factory=set)  # Deployments (namespace/name) whose ReplicaSets are given
    _given: set[str] = field(default_factory=set)  # the input's ReplicaSets (namespace/name)
    _deployment_rs: dict[str, str] = field(default_factory=dict)  # Deployment key -> its ReplicaSet's key
    replicas_version: int = 0  # bumped by whatever may change some `replicas` (an object arrives, a scale)

    def __post_init__(self) -> None:
        for pod in self.existing:
            if pod.controller is not None and pod.owner is not None:
                self._by_owner.setdefault((pod.controller, pod.owner), []).append(pod)
                if pod.controller == replicaset.KIND:
                    self._by_deployment.setdefault(pod.owner.rsplit("-", 1)[0], []).append(pod)
        self._given = {rs.key for rs in self.replica_sets}
        self._managed = {f"{rs.namespace}/{rs.owner.name}" for rs in self.replica_sets
                         if rs.owner is not None and rs.owner.kind == "Deployment"}
        self.rs = ReplicaSetController(seed=self.seed)
        self.sts = StatefulSetController()
        self.ds = DaemonSetController(seed=self.seed)
        self.cron = CronJobController(self.jobs)

    def nodes(self, nodes: Iterable[Node]) -> None:
        """The nodes present at the start (no pods are made for them until a DaemonSet arrives)."""
        for node in nodes:
            self.ds.nodes[node.name] = node

    def arrive(self, obj: WorkloadObject | SetObject, now: float) -> Actions:
        self.replicas_version += 1
        if isinstance(obj, JobSet):
            return Actions(jobs=self.js.start(obj, now))
        if isinstance(obj, LeaderWorkerSet):
            groups, pods = self.lws.start(obj, now)
            return Actions(pod_groups=groups, pods=pods)
        if isinstance(obj, TrainingJob):
            group, pods = self.training.start(obj, self._owned(obj.key, obj.kind), now)
            return Actions(pod_groups=[group] if group is not None else [], pods=pods)
        if isinstance(obj, Deployment):
            if obj.key in self._managed:
                return Actions()
            rs = replica_set_for(obj, now)
            self._deployment_rs[obj.key] = rs.key
            return Actions(pods=self.rs.start(rs, [], now, adopt=self._deployment_pods(obj)))
        if isinstance(obj, ReplicaSet):
            if obj.owner is not None and obj.owner.kind == "Deployment":
                self._deployment_rs[f"{obj.namespace}/{obj.owner.name}"] = obj.key
            return Actions(pods=self.rs.start(obj, self._owned(obj.key, replicaset.KIND), now))
        if isinstance(obj, StatefulSet):
            return Actions(pods=self.sts.start(obj, self._owned(obj.key, statefulset.KIND), now))
        if isinstance(obj, DaemonSet):
            return Actions(pods=self.ds.start(obj, self._owned(obj.key, "DaemonSet"), now))
        self._horizon[obj.key] = self.until if self.until is not None else now + CRON_HORIZON
        return self._wake(obj.key, self.cron.start(obj, now))

    def _scaled(self, kind: str, key: str) -> tuple[str, str] | None:
        if kind == "Deployment":
            rs = self._deployment_rs.get(key)
            return None if rs is None else ("ReplicaSet", rs)
        if kind in ("ReplicaSet", "StatefulSet"):
            return kind, key
        return None

    def scaled_owner(self, kind: str, key: str) -> tuple[str, str] | None:
        """(controller kind, owner key) of the pods a Deployment, ReplicaSet or StatefulSet runs."""
        return self._scaled(kind, key)

    def replicas(self, kind: str, key: str) -> int | None:
        """`spec.replicas` of a Deployment (its ReplicaSet's), ReplicaSet or StatefulSet; None if unknown."""
        found = self._scaled(kind, key)
        if found is None:
            return None
        return self.rs.replicas(found[1]) if found[0] == "ReplicaSet" else self.sts.replicas(found[1])

    def replica_counts(self, targets: Sequence[tuple[str, str]]) -> list[int | None]:
        """`replicas` of many (kind, key) targets at once (an HPA bank's sync)."""
        deployments, replica_sets, stateful_sets = self._deployment_rs, self.rs.sets, self.sts.sets
        out: list[int | None] = []
        for kind, key in targets:
            if kind == "Deployment":
                rs = deployments.get(key)
                record = replica_sets.get(rs) if rs is not None else None
                out.append(None if record is None else record.replica_set.replicas)
            elif kind == "ReplicaSet":
                record = replica_sets.get(key)
                out.append(None if record is None else record.replica_set.replicas)
            elif kind == "StatefulSet":
                stateful = stateful_sets.get(key)
                out.append(None if stateful is None else stateful.stateful_set.replicas)
            else:
                out.append(None)
        return out

    def scale(self, kind: str, key: str, replicas: int, now: float, rank: Callable[[str], Any]) -> Actions:
        """The scale subresource: new pods, or pods to delete (`rank` orders a ReplicaSet's candidates)."""
        self.replicas_version += 1
        found = self._scaled(kind, key)
        if found is None:
            return Actions()
        if found[0] == "ReplicaSet":
            pods, gone = self.rs.scale(found[1], replicas, now, rank)
        else:
            pods, gone = self.sts.scale(found[1], replicas, now)
        return Actions(pods=pods, scale_down=gone)

    def _deployment_pods(self, deployment: Deployment) -> list[Pod]:
        """A snapshot's pods of the Deployment whose ReplicaSet is not in the input: they name a ReplicaSet
        `<deployment>-<their pod-template-hash label>` and match the Deployment's selector."""
        return [p for p in self._by_deployment.get(deployment.key, ())
                if p.owner not in self._given and p.owner == f"{deployment.key}-{p.labels.get(HASH_LABEL)}"
                and deployment.selector.matches(p.labels)]

    def _owned(self, key: str, kind: str) -> list[Pod]:
        return self._by_owner.get((kind, key), [])

    def _wake(self, key: str, time: float | None) -> Actions:
        if time is None or time > self._horizon[key]:
            return Actions()
        return Actions(wake=[(time, key)])

    def cron_run(self, key: str, now: float) -> Actions:
        run = self.cron.run(key, now)
        actions = self._wake(key, run.next_time)
        actions.delete_jobs = run.delete
        if run.job is not None:
            actions.jobs.append(run.job)
        return actions

    def node_removed(self, name: str) -> None:
        """A node was deleted: DaemonSets make no pod for it again."""
        self.ds.nodes.pop(name, None)

    def node_added(self, node: Node, now: float) -> Actions:
        return Actions(pods=self.ds.node_added(node, now))

    def bound(self, pod: Pod, now: float) -> Actions:
        if pod.controller == statefulset.KIND:
            return Actions(pods=self.sts.bound(pod, now))
        if pod.controller == "Job" and self.js.waits_on(pod.owner):
            return Actions(jobs=self.js.bound(pod, now))
        return NOTHING  # every bind lands here: keep the common case cheap

    def replaces(self, pod: Pod) -> bool:
        """Its controller replaces it by a new pod (ReplicaSet, DaemonSet): once deleted it is gone for good."""
        return self.rs.owns(pod) or self.ds.owns(pod)

    def terminating(self, pod: Pod, now: float) -> Actions:
        """The pod was evicted and is terminating: a ReplicaSet replaces it at once; a LeaderWorkerSet deletes
        the rest of its group (which `gone` makes again)."""
        self.sts.stopped(pod)
        return Actions(pods=self.rs.lost(pod, now), delete_pods=self.lws.group_mates(pod))

    def gone(self, pod: Pod, now: float) -> Actions:
        """The pod is gone (deleted, finished, or evicted and its grace over): its controller makes another."""
        return Actions(pods=[*self.rs.lost(pod, now), *self.sts.gone(pod, now), *self.ds.gone(pod, now),
                             *self.lws.gone(pod, now)])
