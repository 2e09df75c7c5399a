"""YuniKorn task groups as a v1.37 native gang, for `phalanx migrate`.

The k8shim makes one gang of an application's task groups: placeholders for every group's `minMember` must all
be bound before any of the application's pods runs. The native equivalent is one Workload and PodGroup per
application (named by its application ID, in its namespace) whose `gang.minCount` is the sum of the groups'
`minMember`, joined by every pod, and every controller's pod template, that names a task group
(`yunikorn.apache.org/task-group-name`) and carries the task groups (`yunikorn.apache.org/task-groups`).
What has no native equivalent is named: the placeholders themselves, their timeout and the Soft or Hard style,
and the per-group minimums and placement (a native gang counts `minCount` pods of any shape).

A pod without both annotations is left as it is (the k8shim's originating pod without a group name is not a gang
member), and so are task groups the k8shim cannot read (it schedules their application without a gang)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from phalanx.admission.yunikorn import parse_task_groups
from phalanx.api.names import subdomain_problem

TASK_GROUPS = "yunikorn.apache.org/task-groups"
TASK_GROUP_NAME = "yunikorn.apache.org/task-group-name"
POLICY = "yunikorn.apache.org/schedulingPolicyParameters"
APP_KEYS = ("yunikorn.apache.org/app-id", "applicationId")  # the k8shim's order: annotation, then label
# as phalanx.migrate.applications reads a peer's application module
KEY = "applicationId"
DESCRIBED = "YuniKorn task groups"
OBJECT = "YuniKorn application"


@dataclass
class Application:
    minimum: int = 0  # the largest sum of minMember among its members' task groups
    groups: dict[str, int] = field(default_factory=dict)
    policy: str = ""


def pointer(meta: Mapping[str, Any]) -> tuple[str, int, dict[str, int], str] | None:
    """(application ID, sum of minMember, minMember per group, scheduling policy) for a pod or pod template that
    joins its application's gang; None when it does not (no group name or task groups, no application ID, task
    groups the k8shim cannot read, or an ID that cannot name a PodGroup)."""
    annotations = meta.get("annotations") if isinstance(meta.get("annotations"), Mapping) else {}
    labels = meta.get("labels") if isinstance(meta.get("labels"), Mapping) else {}
    assert isinstance(annotations, Mapping) and isinstance(labels, Mapping)
    raw, name = annotations.get(TASK_GROUPS), annotations.get(TASK_GROUP_NAME)
    if not isinstance(raw, str) or not isinstance(name, str) or not name:
        return None
    app = next((str(v) for key in APP_KEYS for v in (annotations.get(key), labels.get(key)) if v), None)
    if app is None or subdomain_problem(app) is not None:
        return None
    try:
        groups = parse_task_groups(raw)
    except ValueError:
        return None
    if not groups:
        return None
    policy = annotations.get(POLICY)
    return app, sum(g.min_member for g in groups), {g.name: g.min_member for g in groups}, \
        policy if isinstance(policy, str) else ""


def notes(app: str, seen: Application) -> tuple[list[str], list[str]]:
    """The notes and warnings of one application's translation."""
    listed = ", ".join(f"{name} {count}" for name, count in seen.groups.items())
    gang = max(1, seen.minimum)
    return ([f"task groups of application {app} (minMember {listed}) -> Workload and PodGroup {app} with "
             f"gang.minCount {gang}"],
            ["YuniKorn's placeholders, their timeout and gangSchedulingStyle have no native equivalent (a v1.37 "
             "gang waits for minCount pods, retrying with backoff)",
             "per task group minimums and placement have no native equivalent: the gang counts minCount pods of "
             "any task group"])
