"""Other schedulers' gang objects and the pods that point at them, translated into v1beta1.

- Volcano `scheduling.volcano.sh` PodGroup (`minMember`, `minResources`, `queue`, `priorityClassName`);
  a pod joins it by the annotation `scheduling.k8s.io/group-name`.
- Volcano `batch.volcano.sh` Job (`minAvailable`, `tasks[].replicas`, `tasks[].template`); its pods are
  written out, `<job>-<task>-<i>`.
- scheduler-plugins `scheduling.x-k8s.io` PodGroup (`minMember`, `scheduleTimeoutSeconds`, `minResources`);
  a pod joins by the label `scheduling.x-k8s.io/pod-group`.
- KAI `scheduling.run.ai` PodGroup (`minMember`, `queue`, `priorityClassName`); a pod joins by the
  annotation `pod-group-name`.
- Kueue pod groups (pods labelled `kueue.x-k8s.io/pod-group-name`, sized by the annotation
  `kueue.x-k8s.io/pod-group-total-count`) and `kueue.x-k8s.io` Workloads (`podSets[].count`, `minCount`).

What has no native equivalent (queues, quotas, `minResources`, timeouts) is named in a warning.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from phalanx.api.fields import VOLCANO_QUEUE_ANNOTATION
from phalanx.migrate import native

Doc = dict[str, Any]


@dataclass
class Change:
    """What one migration step did: to which object, the changes made, and what could not be carried over."""

    what: str
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _meta(doc: Mapping[str, Any]) -> tuple[str, str]:
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), Mapping) else {}
    assert isinstance(meta, Mapping)
    return str(meta.get("namespace") or "default"), str(meta.get("name") or "")


def _spec(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = doc.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _count(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def _keep_queue(docs: list[Doc], queue: object, change: Change) -> None:
    """A Volcano queue stays on the translated PodGroup as the annotation Volcano itself reads on pods and
    Jobs, so that the volcano profile can queue the gang; v1.37 ignores it."""
    if not isinstance(queue, str) or not queue:
        return
    for doc in docs:
        if doc.get("kind") == "PodGroup":
            meta = doc["metadata"]
            meta["annotations"] = {**(meta.get("annotations") or {}), VOLCANO_QUEUE_ANNOTATION: queue}
    change.notes.append(f"queue {queue} kept as the annotation {VOLCANO_QUEUE_ANNOTATION} on the PodGroup")


def _group(doc: Mapping[str, Any], label: str, min_key: str = "minMember") -> tuple[list[Doc], Change]:
    """A foreign PodGroup with a minimum member count: a Workload and a PodGroup of the same name."""
    namespace, name = _meta(doc)
    spec = _spec(doc)
    min_count = _count(spec.get(min_key), 1)
    priority = spec.get("priorityClassName") if isinstance(spec.get("priorityClassName"), str) else None
    change = Change(f"{label} {namespace}/{name} ({doc.get('apiVersion')})")
    change.notes.append(f"{min_key} {min_count} -> Workload and PodGroup {name} with gang.minCount {min_count}")
    if priority:
        change.notes.append(f"priorityClassName {priority} kept on the PodGroup template")
    if spec.get("queue"):
        change.warnings.append(f"queue {spec['queue']!r} has no native equivalent (admission queues are Kueue's)")
    if spec.get("minResources"):
        change.warnings.append("minResources has no native equivalent (the gang waits for minCount pods instead)")
    if spec.get("scheduleTimeoutSeconds") is not None:
        change.warnings.append("scheduleTimeoutSeconds has no native equivalent (v1.37 gangs retry with backoff)")
    if spec.get("subGroups"):
        change.warnings.append("subGroups have no native equivalent short of CompositePodGroup (alpha); dropped")
    return native.gang(namespace, name, min_count, priority), change


def volcano_group(doc: Mapping[str, Any]) -> tuple[list[Doc], Change]:
    docs, change = _group(doc, "Volcano PodGroup")
    _keep_queue(docs, _spec(doc).get("queue"), change)
    return docs, change


def coscheduling_group(doc: Mapping[str, Any]) -> tuple[list[Doc], Change]:
    return _group(doc, "scheduler-plugins PodGroup")


def kai_group(doc: Mapping[str, Any]) -> tuple[list[Doc], Change]:
    return _group(doc, "KAI PodGroup")


def volcano_job(doc: Mapping[str, Any]) -> tuple[list[Doc], Change]:
    """A Volcano Job: a gang of `minAvailable` (default: every replica) and its pods, `<job>-<task>-<i>`."""
    namespace, name = _meta(doc)
    spec = _spec(doc)
    tasks = [t for t in spec.get("tasks") or [] if isinstance(t, Mapping)]
    total = sum(_count(t.get("replicas"), 1) for t in tasks)
    min_count = _count(spec.get("minAvailable"), total)
    priority = spec.get("priorityClassName") if isinstance(spec.get("priorityClassName"), str) else None
    change = Change(f"Volcano Job {namespace}/{name} ({doc.get('apiVersion')})")
    out = native.gang(namespace, name, min_count, priority)
    change.notes.append(f"minAvailable {min_count} -> Workload and PodGroup {name} with gang.minCount {min_count}")
    for task in tasks:
        task_name = str(task.get("name") or "task")
        template = task.get("template") if isinstance(task.get("template"), Mapping) else {}
        assert isinstance(template, Mapping)
        for i in range(_count(task.get("replicas"), 1)):
            meta = dict(template.get("metadata") or {})
            meta.update(name=f"{name}-{task_name}-{i}", namespace=namespace)
            meta["labels"] = {**(meta.get("labels") or {}), "volcano.sh/job-name": name,
                              "volcano.sh/task-spec": task_name}
            pod_spec = dict(template.get("spec") or {})
            if priority and "priorityClassName" not in pod_spec:
                pod_spec["priorityClassName"] = priority
            pod_spec.pop("schedulerName", None)
            pod: Doc = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec}
            out.append(native.join(pod, name))
        change.notes.append(f"task {task_name}: {_count(task.get('replicas'), 1)} pod(s) written out as Pods "
                            f"{name}-{task_name}-0.. in the group (v1.37 has no multi-task Job)")
    if spec.get("queue"):
        change.warnings.append(f"queue {spec['queue']!r} has no native equivalent (admission queues are Kueue's)")
        _keep_queue(out, spec["queue"], change)
    for key in ("policies", "plugins", "maxRetry"):
        if spec.get(key):
            change.warnings.append(f"{key} has no native equivalent; dropped")
    return out, change


def kueue_workload(doc: Mapping[str, Any]) -> tuple[list[Doc], Change]:
    """A Kueue Workload of a pod group: a gang of every pod set's `minCount` (else `count`) together."""
    namespace, name = _meta(doc)
    spec = _spec(doc)
    sets = [s for s in spec.get("podSets") or [] if isinstance(s, Mapping)]
    min_count = sum(_count(s.get("minCount"), _count(s.get("count"), 1)) for s in sets)
    change = Change(f"Kueue Workload {namespace}/{name} ({doc.get('apiVersion')})")
    change.notes.append(f"podSets ({len(sets)}) -> Workload and PodGroup {name} with gang.minCount {min_count}")
    if spec.get("queueName"):
        change.warnings.append(f"queueName {spec['queueName']!r}: Kueue admission (quotas) has no native "
                               "equivalent")
    priority = spec.get("priorityClassName") if isinstance(spec.get("priorityClassName"), str) else None
    return native.gang(namespace, name, min_count, priority), change


# (apiVersion group, kind) -> translator
GROUPS: dict[tuple[str, str], Callable[[Mapping[str, Any]], tuple[list[Doc], Change]]] = {
    ("scheduling.volcano.sh", "PodGroup"): volcano_group,
    ("batch.volcano.sh", "Job"): volcano_job,
    ("scheduling.x-k8s.io", "PodGroup"): coscheduling_group,
    ("scheduling.sigs.k8s.io", "PodGroup"): coscheduling_group,
    ("scheduling.run.ai", "PodGroup"): kai_group,
    ("kueue.x-k8s.io", "Workload"): kueue_workload,
}

KUEUE_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
KUEUE_TOTAL = "kueue.x-k8s.io/pod-group-total-count"
# Where a pod names its foreign group: (in labels or annotations, key, whose)
POINTERS: tuple[tuple[str, str, str], ...] = (
    ("annotations", "scheduling.k8s.io/group-name", "Volcano"),
    ("labels", "scheduling.x-k8s.io/pod-group", "scheduler-plugins"),
    ("labels", "pod-group.scheduling.sigs.k8s.io", "scheduler-plugins"),
    ("annotations", "pod-group-name", "KAI"),
    ("labels", KUEUE_GROUP_LABEL, "Kueue"),
)


def translator(doc: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], tuple[list[Doc], Change]] | None:
    api_version = doc.get("apiVersion")
    group = api_version.split("/")[0] if isinstance(api_version, str) and "/" in api_version else ""
    return GROUPS.get((group, str(doc.get("kind"))))


def pointer(pod: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """The foreign group a pod names: (group name, whose, the key it was found under), or None."""
    meta = pod.get("metadata")
    if not isinstance(meta, Mapping):
        return None
    for where, key, whose in POINTERS:
        values = meta.get(where)
        if isinstance(values, Mapping) and isinstance(values.get(key), str) and values[key]:
            return values[key], whose, key
    return None
