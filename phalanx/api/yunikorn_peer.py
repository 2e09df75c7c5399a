"""Apache YuniKorn as the readers that are not its own see it (phalanx.api.peers): its queue and application on
pods and owners (a label or an annotation, the `yunikorn.apache.org` key first, as the k8shim reads them), its task
groups, its `queues.yaml` (in the `yunikorn-configs` ConfigMap, or bare) and what `migrate` makes of task groups
(phalanx.migrate.task_groups)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from phalanx.api.objects import Pod
from phalanx.api.peer import Key, Peer

QUEUES_KEY = "queues.yaml"
CONFIG_MAP = "yunikorn-configs"
# apache/yunikorn-core pkg/common/configs SchedulerConfig's keys
_CONF_FIELDS = {"partitions", "checksum"}
TASK_GROUPS_ANNOTATION = "yunikorn.apache.org/task-groups"
APP_KEYS = ("yunikorn.apache.org/app-id", "applicationId")  # the k8shim's order, each an annotation then a label
# Queueing.peer's fields
QUEUE = "yunikorn.queue"
APP = "yunikorn.app"
TASK_GROUPS = "yunikorn.taskGroups"  # the annotation's JSON, as written
TASK_GROUP = "yunikorn.taskGroup"  # yunikorn.apache.org/task-group-name
GANG_POLICY = "yunikorn.gangPolicy"  # yunikorn.apache.org/schedulingPolicyParameters


def is_conf(doc: Mapping[str, Any]) -> bool:
    """YuniKorn's `yunikorn-configs` ConfigMap (its `queues.yaml` key), or a bare `queues.yaml` (a top-level
    `partitions` list and nothing but YuniKorn's other top-level keys)."""
    data = doc.get("data")
    if doc.get("kind") == "ConfigMap" and isinstance(data, Mapping):
        return QUEUES_KEY in data
    return is_bare_conf(doc)


def is_bare_conf(doc: Any) -> bool:
    return (isinstance(doc, Mapping) and "kind" not in doc and "apiVersion" not in doc
            and isinstance(doc.get("partitions"), list) and set(doc) <= _CONF_FIELDS)


def _notice(pods: Sequence[Pod]) -> str | None:
    count = sum(1 for pod in pods if pod.queueing is not None and pod.queueing.value(TASK_GROUPS))
    if not count:
        return None
    return (f"{count} pod(s) and pod template(s) carry YuniKorn task groups ({TASK_GROUPS_ANNOTATION}): only the "
            "yunikorn profile reads them (its placeholders); `phalanx migrate` writes them as native gangs for the "
            "others")


YUNIKORN = Peer(
    name="yunikorn", whose="YuniKorn",
    keys=(Key(QUEUE, ("yunikorn.apache.org/queue", "queue"), "either"), Key(APP, APP_KEYS, "either"),
          Key(TASK_GROUPS, (TASK_GROUPS_ANNOTATION,), "annotations"),
          Key(TASK_GROUP, ("yunikorn.apache.org/task-group-name",), "annotations"),
          Key(GANG_POLICY, ("yunikorn.apache.org/schedulingPolicyParameters",), "annotations")),
    scheduler_names=("yunikorn",),
    conf=is_conf, bare_conf=is_bare_conf, conf_name=QUEUES_KEY, config_maps=(CONFIG_MAP,),
    queue_marks=(("labels", "queue"), ("labels", "yunikorn.apache.org/queue"),
                 ("annotations", "yunikorn.apache.org/queue")),
    annotations={TASK_GROUPS_ANNOTATION: "YuniKorn's gang (placeholders); a v1.37 PodGroup with minCount is the "
                                         "native gang (phalanx migrate writes one per application for the pods "
                                         "that name a task group)"},
    applications="phalanx.migrate.task_groups",
    notice=_notice,
)
