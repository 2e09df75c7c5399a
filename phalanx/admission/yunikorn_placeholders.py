"""YuniKorn's gang scheduling with placeholders, as the k8shim and the core run it, for the `yunikorn` profile.

Restated from apache/yunikorn-k8shim `pkg/cache/application.go`, `placeholder.go` (23b6b47f) and yunikorn-core
`pkg/scheduler/objects/application.go` (be3bb487):
- An application's task groups are read from its first pod's `yunikorn.apache.org/task-groups` annotation, its
  style and timeout from `yunikorn.apache.org/schedulingPolicyParameters` (Soft, and 15 minutes, by default).
- Reserving: the shim creates `minMember` placeholder pods per task group (the group's `minResource` as
  requests and limits, its nodeSelector, tolerations, affinity and topology spread, the first pod's priority
  class, labels `applicationId` and `queue`); only placeholders are scheduled, each as an ordinary pod of the
  application (they count against its queue). The application's own pods wait.
- Once every task group has `minMember` placeholders bound, the application runs: each pod naming a task group
  takes the place of one of its bound placeholders, on that placeholder's node (the placeholder is deleted); a
  placeholder smaller than the pod is released instead ("resource incompatible") and the next one tried; a pod
  whose group has no placeholder left, or that names none, is scheduled as an ordinary pod.
- The placeholder timer starts when the first placeholder is bound (none bound: it never starts, and the
  application waits). When it fires before the application runs, Hard style fails the application (its waiting
  pods fail: "Scheduling has timed out due to insufficient resources") and Soft style releases every placeholder
  and schedules the pods as a non-gang application; after the application runs, the placeholders not replaced by
  then are released.
- The core refuses an application whose task groups pass its queue's max or whose queue does not sort fifo
  (partition.go AddApplication, through `Reservations.refuse`): its pods fail with the core's words. Task groups
  the shim cannot read (TaskGroupsError) or placeholders the API server would refuse (PlaceholderCreateFailed)
  leave the application without a gang (`warnings`).
Left out (named in not_modelled): predicates of the real pod on the placeholder's node (a replacement fits by
resources, as the core's swap does, but node affinity and taints of the real pod are not checked again), the
core's fallback of trying another node for a real pod whose placeholder's node refuses it, recovery, and the
garbage collection of placeholders when their originator's owner is deleted.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from phalanx.admission.yunikorn import parse_scheduling_policy, parse_task_groups
from phalanx.api.fields import Meta
from phalanx.api.objects import Pod, Source
from phalanx.api.parse import pod_from_spec
from phalanx.api.yunikorn_peer import GANG_POLICY, QUEUE, TASK_GROUP
from phalanx.api.yunikorn_peer import TASK_GROUPS as TASK_GROUPS_FIELD
from phalanx.errors import InputError

TASK_GROUPS = "yunikorn.apache.org/task-groups"
PLACEHOLDER_FLAG = "yunikorn.apache.org/placeholder"
DEFAULT_TIMEOUT = 15 * 60.0  # core: defaultPlaceholderTimeout
TIMED_OUT = "Scheduling has timed out due to insufficient resources"
NOTE = ("yunikorn.apache.org/task-groups: a pod that takes a placeholder's place is bound to its node by resources "
        "alone (its own node affinity, taints and spread are not checked again there); placeholders are not "
        "garbage-collected with their originator's owner (they go when replaced or at the timeout)")


@dataclass(slots=True)
class _Placeholder:
    key: str
    group: str
    requests: dict[str, int]
    node: str | None = None
    released: bool = False


@dataclass(slots=True)
class GangApp:
    """One application with task groups, from its first pod."""

    key: str  # namespace/applicationId
    style: str  # "Soft" | "Hard"
    timeout: float
    minimum: dict[str, int]  # task group -> minMember
    started: float | None = None  # its first placeholder's binding: the timer's start
    state: str = "Reserving"  # then "Running", or "Failed" (Hard style at the timeout, or refused by the core)
    reason: str = TIMED_OUT  # why its pods failed, once it failed
    placeholders: dict[str, _Placeholder] = field(default_factory=dict)
    waiting: list[Pod] = field(default_factory=list)  # its pods held while it reserves
    timed_out: bool = False  # its timer fired
    gave_up: bool = False  # its timer fired before every placeholder was bound
    replaced: int = 0

    def complete(self) -> bool:
        bound: dict[str, int] = {}
        for ph in self.placeholders.values():
            if ph.node is not None and not ph.released:
                bound[ph.group] = bound.get(ph.group, 0) + 1
        return all(bound.get(group, 0) >= count for group, count in self.minimum.items())


@dataclass(slots=True)
class Reservations:
    """Every gang application of a run, and what the simulator must carry out for them: placeholder pods to
    create and to delete, application pods released to scheduling or failed."""

    apps: dict[str, GangApp] = field(default_factory=dict)
    of_placeholder: dict[str, str] = field(default_factory=dict)  # placeholder pod key -> application key
    create: list[Pod] = field(default_factory=list)
    delete: list[tuple[str, str]] = field(default_factory=list)  # (placeholder key, why)
    released: list[Pod] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (pod key, message)
    warnings: list[str] = field(default_factory=list)  # task groups the k8shim would not read, for stderr
    refused: set[str] = field(default_factory=set)  # applications whose task groups could not be read
    # the core's refusal of an application with task groups (queue, namespace, application, groups), if any
    refuse: Callable[[str, str, str, list[tuple[Mapping[str, int], int]]], str | None] | None = None
    used: bool = False

    @property
    def note(self) -> str:
        return NOTE

    def is_placeholder(self, pod_key: str) -> bool:
        return pod_key in self.of_placeholder

    def arrive(self, pod: Pod, application: str, now: float) -> str:
        """A pod of `application` arrives: "pass" (scheduled as usual), "hold" (its application reserves) or
        "fail" (its application failed)."""
        if pod.key in self.of_placeholder:
            return "pass"
        key = f"{pod.namespace}/{application}"
        app = self.apps.get(key)
        q = pod.queueing
        groups = q.value(TASK_GROUPS_FIELD) if q is not None else None
        if app is None and q is not None and groups and key not in self.refused:
            app = self._start(key, pod, application, groups, q.value(GANG_POLICY) or "", now)
        if app is None:
            return "pass"
        if app.state == "Reserving":
            app.waiting.append(pod)
            return "hold"
        if app.state == "Failed":
            self.failed.append((pod.key, app.reason))
            return "fail"
        return "pass"

    def message(self, pod_key: str, application: str, namespace: str) -> str | None:
        app = self.apps.get(f"{namespace}/{application}")
        if app is None or app.state != "Reserving":
            return None
        return (f"application {application} is reserving resources for its gang: {sum(app.minimum.values())} "
                "placeholder(s)")

    def bound(self, pod_key: str, node: str, now: float) -> bool:
        """A pod was bound: True if it was a placeholder that started its application's timer or completed its
        reservation (the application's pods are then in `released`)."""
        app_key = self.of_placeholder.get(pod_key)
        if app_key is None:
            return False
        app = self.apps[app_key]
        app.placeholders[pod_key].node = node
        changed = False
        if app.started is None and app.state == "Reserving":
            app.started = now  # addAllocationInternal: the first placeholder allocated starts the timer
            changed = True
        if app.state == "Reserving" and app.complete():
            app.state = "Running"
            self.released.extend(app.waiting)
            app.waiting.clear()
            changed = True
        return changed

    def gone(self, pod_key: str) -> None:
        """A placeholder ended (deleted, preempted): it holds nothing any more."""
        app_key = self.of_placeholder.get(pod_key)
        if app_key is not None:
            ph = self.apps[app_key].placeholders[pod_key]
            ph.released = True

    def replacement(self, pod: Pod, application: str) -> tuple[str, str] | None:
        """For a pod of a running gang application naming a task group: the (placeholder key, node) it takes the
        place of, releasing on the way placeholders smaller than it; None: it is scheduled as usual."""
        app = self.apps.get(f"{pod.namespace}/{application}")
        group = pod.queueing.value(TASK_GROUP) if pod.queueing is not None else None
        if app is None or app.state != "Running" or not group:
            return None
        for ph in app.placeholders.values():
            if ph.released or ph.node is None or ph.group != group:
                continue
            if any(value > ph.requests.get(name, 0) for name, value in pod.requests.items() if value > 0):
                ph.released = True
                self.delete.append((ph.key, f"placeholder released: {pod.key} asks more than it holds"))
                continue
            ph.released = True
            app.replaced += 1
            return ph.key, ph.node
        return None

    def wake_at(self) -> float | None:
        times = [app.started + app.timeout for app in self.apps.values()
                 if app.started is not None and not app.timed_out and app.state != "Failed"]
        return min(times) if times else None

    def tick(self, now: float) -> bool:
        """Fire the placeholder timers that are due; True if any fired."""
        fired = False
        for app in self.apps.values():
            if app.timed_out or app.state == "Failed" or app.started is None or app.started + app.timeout > now:
                continue
            app.timed_out = fired = True
            app.gave_up = app.state == "Reserving"
            if app.state == "Reserving" and app.style == "Hard":
                app.state = "Failed"
                self.failed.extend((pod.key, TIMED_OUT) for pod in app.waiting)
                app.waiting.clear()
            elif app.state == "Reserving":
                app.state = "Running"
                self.released.extend(app.waiting)
                app.waiting.clear()
            for ph in app.placeholders.values():
                if not ph.released:
                    ph.released = True
                    self.delete.append((ph.key, "placeholder timed out"))
        return fired

    def _start(self, key: str, pod: Pod, application: str, annotation: str, policy: str, now: float) -> GangApp | None:
        """The application's task groups from its first pod, and its placeholders. Task groups the k8shim cannot
        read (GetTaskGroupsFromAnnotation: a TaskGroupsError event) or placeholders the API server would refuse
        (PlaceholderCreateFailed) leave the application without a gang, as the k8shim does; named in `warnings`."""
        self.refused.add(key)  # until its placeholders are made
        try:
            groups = parse_task_groups(annotation)
        except ValueError as exc:
            self.warnings.append(f"Pod {pod.key}: {TASK_GROUPS}: unable to get taskGroups for pod, reason: {exc}; "
                                 "the k8shim schedules its application without a gang, as here")
            return None
        if not groups:
            return None
        params = parse_scheduling_policy(policy)
        queue = pod.queueing.value(QUEUE) if pod.queueing is not None else None
        refusal = self.refuse(queue or "", pod.namespace, application,
                              [(g.min_resource, g.min_member) for g in groups]) if self.refuse is not None else None
        if refusal is not None:  # the shim fails the pods of a rejected application (ApplicationRejected)
            app = GangApp(key, params.style, 0.0, {}, state="Failed", reason=refusal, timed_out=True)
            self.apps[key] = app
            self.refused.discard(key)
            self.used = True
            return app
        made: list[tuple[str, Pod]] = []
        for i, (group, spec) in enumerate(zip(groups, json.loads(annotation), strict=True)):
            for n in range(group.min_member):
                try:
                    made.append((group.name, _placeholder(pod, application, queue, annotation, policy, spec, n, now)))
                except InputError as exc:
                    where = f"[{i}].{exc.field.lstrip('.')}" if exc.field else f"[{i}]"
                    self.warnings.append(f"Pod {pod.key}: {TASK_GROUPS}{where}: {exc.detail}: the placeholder "
                                         "cannot be created, so the k8shim schedules its application without a "
                                         "gang (PlaceholderCreateFailed), as here")
                    return None
        app = GangApp(key, params.style, float(params.placeholder_timeout) or DEFAULT_TIMEOUT,
                      {g.name: g.min_member for g in groups})
        self.apps[key] = app
        self.refused.discard(key)
        self.used = True
        for group_name, ph in made:
            app.placeholders[ph.key] = _Placeholder(ph.key, group_name, dict(ph.requests))
            self.of_placeholder[ph.key] = key
            self.create.append(ph)
        return app

    def counts(self) -> dict[str, int]:
        """For the report: applications with task groups, placeholders made and replaced, applications whose
        timer fired before their placeholders were all bound, and those failed for it (Hard style)."""
        return {"applications": len(self.apps),
                "placeholders": sum(len(a.placeholders) for a in self.apps.values()),
                "replaced": sum(a.replaced for a in self.apps.values()),
                "timedOut": sum(1 for a in self.apps.values() if a.gave_up),
                "failed": sum(1 for a in self.apps.values() if a.state == "Failed"),
                "rejected": sum(1 for a in self.apps.values() if a.state == "Failed" and a.reason != TIMED_OUT)}


def placeholder_name(namespace: str, application: str, group: str, index: int) -> str:
    """The name of a task group's index-th placeholder, as the k8shim's GeneratePlaceholderName shapes it
    (`tg-<application>-<group>-<10 characters>`, both truncated), its tail from a hash rather than random so
    that a run is reproducible."""
    digest = hashlib.sha256(f"{namespace}/{application}/{group}/{index}".encode()).hexdigest()[:10]
    return f"tg-{application[:28]}-{group[:20]}-{digest}".lower()


def _placeholder(origin: Pod, application: str, queue: str | None, annotation: str, policy: str,
                 spec: dict[str, Any], index: int, now: float) -> Pod:
    """The placeholder pod the k8shim makes for task group `spec` (newPlaceholder), parsed as any pod is."""
    group = str(spec["name"])
    name = placeholder_name(origin.namespace, application, group, index)
    for key in ("labels", "annotations"):
        if spec.get(key) is not None and not isinstance(spec[key], dict):
            raise InputError("must be a map of strings", field=key)
    labels = {**{str(k): str(v) for k, v in dict(spec.get("labels") or {}).items()}, "applicationId": application}
    if queue:
        labels["queue"] = queue
    annotations = {**{str(k): str(v) for k, v in dict(spec.get("annotations") or {}).items()},
                   PLACEHOLDER_FLAG: "true", "yunikorn.apache.org/task-group-name": group, TASK_GROUPS: annotation}
    if policy:
        annotations["yunikorn.apache.org/schedulingPolicyParameters"] = policy
    requests = spec.get("minResource") or {}
    pod_spec: dict[str, Any] = {
        "schedulerName": origin.scheduler_name, "restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "pause", "resources": {"requests": requests, "limits": requests}}]}
    for key in ("nodeSelector", "tolerations", "affinity", "topologySpreadConstraints"):
        if spec.get(key):
            pod_spec[key] = spec[key]
    doc = {"metadata": {"name": name, "namespace": origin.namespace, "labels": labels, "annotations": annotations}}
    source = origin.source if origin.source is not None else Source("", 0)
    pod = pod_from_spec(Meta(doc, namespaced=True, template=True), pod_spec, "", source)
    return dataclasses.replace(pod, arrival=now, priority=origin.priority,
                               priority_class_name=origin.priority_class_name, duration=None)
