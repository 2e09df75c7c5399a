"""The LeaderWorkerSet controller as scheduling sees it: `replicas` groups, each a leader `<lws>-<group>` (from
`leaderTemplate`, else `workerTemplate`) and workers `<lws>-<group>-<1 … size-1>`, labelled with the set's name,
the group index and the worker index (0 for the leader), and one gang PodGroup `<lws>-<group>` per group with
`minCount: size`, created before its pods.

The real controller makes the leaders through a StatefulSet `<lws>` and each group's workers through a
StatefulSet `<lws>-<group>`; here the pods name the LeaderWorkerSet as their controller (so reports count them
under it). With `restartPolicy: RecreateGroupOnPodRestart` (the default), an evicted pod's running group mates
are deleted and made again at once, and the evicted pod comes back under its name after its grace period; with
`None` only the evicted pod comes back. A pod deleted for good (a trace's `delete`) is made again under its
name. `startupPolicy` (LeaderReady), updates, scaling and snapshot adoption are not modelled.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from phalanx.api.objects import GroupPolicy, Pod, PodGroup
from phalanx.api.sets import LWS_GROUP_LABEL, LWS_NAME_LABEL, LWS_WORKER_LABEL, LeaderWorkerSet
from phalanx.controllers.protocol import Actions, Controller, Given

KIND = "LeaderWorkerSet"


def group_pod(lws: LeaderWorkerSet, group: int, worker: int, now: float) -> Pod:
    """Worker `worker` of group `group` (0: the leader), created at `now`."""
    template = lws.leader if worker == 0 else lws.worker
    name = f"{lws.name}-{group}" if worker == 0 else f"{lws.name}-{group}-{worker}"
    labels = {**template.labels, LWS_NAME_LABEL: lws.name, LWS_GROUP_LABEL: str(group),
              LWS_WORKER_LABEL: str(worker)}
    return dataclasses.replace(template, name=name, namespace=lws.namespace, arrival=now, owner=lws.key,
                               controller=KIND, labels=labels, pod_group=f"{lws.name}-{group}", node_name=None,
                               start_time=None, source=lws.source)


def group_pod_group(lws: LeaderWorkerSet, group: int, now: float) -> PodGroup:
    """The group's gang: every pod of the group (`size`) runs together or none does. It takes the leader
    template's priority, which every member must share (v1.37 refuses a gang whose members differ)."""
    leader = lws.leader
    return PodGroup(namespace=lws.namespace, name=f"{lws.name}-{group}",
                    policy=GroupPolicy(kind="gang", min_count=lws.size), arrival=now,
                    priority_class_name=leader.priority_class_name, priority=leader.priority,
                    preemption_policy=leader.preemption_policy, source=lws.source)


@dataclass(slots=True)
class LeaderWorkerSetController(Controller):
    kinds: ClassVar[tuple[type[Any], ...]] = (LeaderWorkerSet,)
    sets: dict[str, LeaderWorkerSet] = field(default_factory=dict)
    where: dict[str, tuple[str, int, int]] = field(default_factory=dict)  # pod key -> (set key, group, worker)

    def arrive(self, obj: LeaderWorkerSet, now: float, given: Given) -> Actions:
        groups, pods = self.start(obj, now)
        return Actions(pod_groups=groups, pods=pods)

    def pod_terminating(self, pod: Pod, now: float) -> Actions:
        return Actions(delete_pods=self.group_mates(pod))

    def pod_gone(self, pod: Pod, now: float) -> Actions:
        return Actions(pods=self.gone(pod, now))

    def start(self, lws: LeaderWorkerSet, now: float) -> tuple[list[PodGroup], list[Pod]]:
        self.sets[lws.key] = lws
        groups = [group_pod_group(lws, g, now) for g in range(lws.replicas)]
        pods = []
        for group in range(lws.replicas):
            for worker in range(lws.size):
                pod = group_pod(lws, group, worker, now)
                self.where[pod.key] = (lws.key, group, worker)
                pods.append(pod)
        return groups, pods

    def owns(self, pod: Pod) -> bool:
        return pod.controller == KIND and pod.key in self.where

    def group_mates(self, pod: Pod) -> list[str]:
        """The pod was evicted: under RecreateGroupOnPodRestart, the keys of the rest of its group (to delete
        and make again); none otherwise."""
        found = self.where.get(pod.key) if pod.controller == KIND else None
        if found is None or not self.sets[found[0]].recreate_group:
            return []
        lws = self.sets[found[0]]
        mates = [f"{lws.namespace}/{lws.name}-{found[1]}"] + [f"{lws.namespace}/{lws.name}-{found[1]}-{w}"
                                                               for w in range(1, lws.size)]
        return [key for key in mates if key != pod.key]

    def gone(self, pod: Pod, now: float) -> list[Pod]:
        """One of its pods is gone (deleted): made again under its name."""
        found = self.where.get(pod.key) if pod.controller == KIND else None
        if found is None:
            return []
        key, group, worker = found
        return [group_pod(self.sets[key], group, worker, now)]
