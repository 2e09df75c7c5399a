"""Other schedulers' gang objects and the pods that point at them, translated into v1beta1.

- Volcano `scheduling.volcano.sh` PodGroup (`minMember`, `minResources`, `queue`, `priorityClassName`);
  a pod joins it by the annotation `scheduling.k8s.io/group-name`.
- Volcano `batch.volcano.sh` Job (`minAvailable`, `tasks[].replicas`, `tasks[].template`): one task is a
  batch/v1 Job with `spec.scheduling` (a gang of `minAvailable`), several are a JobSet, a replicated job per
  task, whose templates name a Workload and PodGroup of the Job's name.
- scheduler-plugins `scheduling.x-k8s.io` PodGroup (`minMember`, `scheduleTimeoutSeconds`, `minResources`);
  a pod joins by the label `scheduling.x-k8s.io/pod-group`.
- KAI `scheduling.run.ai` PodGroup (`minMember`, `queue`, `priorityClassName`); a pod joins by the
  annotation `pod-group-name`.
- Kueue pod groups (pods labelled `kueue.x-k8s.io/pod-group-name`, sized by the annotation
  `kueue.x-k8s.io/pod-group-total-count`) and `kueue.x-k8s.io` Workloads (`podSets[].count`, `minCount`).

What has no native equivalent (queues, quotas, `minResources`, timeouts) is named in a warning.

Counts are read as each project's API server and webhooks read them (phalanx.admission.crd: a JSON integer or
an integral number, within int32), and what they refuse is an InputError naming the object and the field:
- Volcano PodGroup `minMember`: int32, no minimum in its CRD; Volcano's gang plugin requires no member when it
  is 0 or less, so a negative one becomes minCount 1, with a warning.
- scheduler-plugins and KAI PodGroup `minMember`: int32, at least 1 (their CRDs' `Minimum=1`).
- Volcano Job (webhooks/admission/jobs/validate, mutate): at least one task, task names DNS-1123 labels and
  distinct (unnamed ones are `default<i>`), `replicas` int32 ≥ 0 (0 when unset), `minAvailable` ≥ 0 and at
  most the total; 0 or unset means the sum of the tasks' `minAvailable` (each defaulting to its replicas).
  A Job of more than MAX_JOB_PODS pods in all is refused, as the simulator refuses such a batch/v1 Job.
- Kueue Workload `podSets[].count` int32 ≥ 0 (default 1), `minCount` 1..count.
The translated gang's `minCount` is an int32 too (a sum past it is refused).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from phalanx.admission.crd import MAX_INT32, crd_int, shown
from phalanx.api.fields import VOLCANO_QUEUE_ANNOTATION, fail, object_name
from phalanx.api.names import label_problem
from phalanx.api.parse import MAX_JOB_PODS
from phalanx.api.peer import ForeignGang
from phalanx.api.peers import PEERS
from phalanx.errors import InputError
from phalanx.migrate import applications, native

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


def _located(translate: Callable[[Mapping[str, Any]], tuple[list[Doc], Change]],
             ) -> Callable[[Mapping[str, Any]], tuple[list[Doc], Change]]:
    """The translator, its InputErrors naming the object it read."""
    def located(doc: Mapping[str, Any]) -> tuple[list[Doc], Change]:
        try:
            return translate(doc)
        except InputError as exc:
            raise exc.at(obj=object_name(doc)) from None
    located.__doc__ = translate.__doc__
    return located


def _gang_size(total: int, field: str) -> int:
    if total > MAX_INT32:
        raise fail(field, f"adds up to {shown(total)}, more than a v1.37 gang's minCount (an int32) can be")
    return total


def _keep_queue(docs: list[Doc], queue: object, change: Change,
                mark: tuple[str, str] = ("annotations", VOLCANO_QUEUE_ANNOTATION)) -> None:
    """A Volcano queue stays on the translated PodGroup (or the batch/v1 Job that makes one) as the annotation
    Volcano itself reads on pods and Jobs, another peer's queue as the mark that peer reads (`mark`), so that the
    peer's profile can queue the gang; v1.37 ignores them."""
    if not isinstance(queue, str) or not queue:
        return
    where, key = mark
    kinds = []
    for doc in docs:
        if doc.get("kind") in ("PodGroup", "Job"):
            meta = doc["metadata"]
            meta[where] = {**(meta.get(where) or {}), key: queue}
            kinds.append(str(doc["kind"]))
    change.notes.append(f"queue {queue} kept as the {where[:-1]} {key} on the {' and '.join(kinds)}")


def _group(doc: Mapping[str, Any], label: str, minimum: int | None) -> tuple[list[Doc], Change]:
    """A foreign PodGroup with a minimum member count: a Workload and a PodGroup of the same name."""
    namespace, name = _meta(doc)
    spec = _spec(doc)
    raw = spec.get("minMember")
    min_count = 0 if raw is None else crd_int(raw, "spec.minMember", minimum=minimum)
    priority = spec.get("priorityClassName") if isinstance(spec.get("priorityClassName"), str) else None
    change = Change(f"{label} {namespace}/{name} ({doc.get('apiVersion')})")
    gang = max(1, min_count)
    change.notes.append(f"minMember {min_count} -> Workload and PodGroup {name} with gang.minCount {gang}")
    if min_count < 0:
        change.warnings.append(f"minMember {min_count}: Volcano's gang plugin then waits for no minimum, so any "
                               "member may run alone (gang.minCount 1)")
    if priority:
        change.notes.append(f"priorityClassName {priority} kept on the PodGroup template")
    if spec.get("queue"):
        change.warnings.append(f"queue {shown(spec['queue'])} has no native equivalent (admission queues are "
                               "Kueue's)")
    if spec.get("minResources"):
        change.warnings.append("minResources has no native equivalent (the gang waits for minCount pods instead)")
    if spec.get("scheduleTimeoutSeconds") is not None:
        change.warnings.append("scheduleTimeoutSeconds has no native equivalent (v1.37 gangs retry with backoff)")
    if spec.get("minTaskMember"):
        change.warnings.append("minTaskMember has no native equivalent (per-task minimums); dropped: the gang "
                               "counts minCount pods of any task")
    if spec.get("subGroups"):
        change.warnings.append("subGroups have no native equivalent short of CompositePodGroup (alpha); dropped")
    return native.gang(namespace, name, gang, priority), change


@_located
def volcano_group(doc: Mapping[str, Any]) -> tuple[list[Doc], Change]:
    docs, change = _group(doc, "Volcano PodGroup", None)
    _keep_queue(docs, _spec(doc).get("queue"), change)
    return docs, change


@_located
def coscheduling_group(doc: Mapping[str, Any]) -> tuple[list[Doc], Change]:
    return _group(doc, "scheduler-plugins PodGroup", 1)


def peer_group(gang: ForeignGang) -> Callable[[Mapping[str, Any]], tuple[list[Doc], Change]]:
    """The translator of a later peer's gang object (phalanx.api.peers)."""
    @_located
    def translate(doc: Mapping[str, Any]) -> tuple[list[Doc], Change]:
        docs, change = _group(doc, gang.label, gang.minimum)
        if gang.queue is not None:
            _keep_queue(docs, _spec(doc).get("queue"), change, gang.queue)
        return docs, change
    return translate


@dataclass(frozen=True)
class _Task:
    name: str
    replicas: int
    min_available: int  # its own minAvailable, defaulting to its replicas
    template: Mapping[str, Any]


def _tasks(spec: Mapping[str, Any]) -> list[_Task]:
    """A Volcano Job's tasks, checked as its validating webhook checks them (and defaulted as its mutating
    webhook defaults them); more than MAX_JOB_PODS pods in all is refused."""
    raw = spec.get("tasks")
    if not isinstance(raw, list) or not raw:
        raise fail("spec.tasks", "No task specified in job spec (a Volcano Job needs at least one task)")
    tasks: list[_Task] = []
    seen: set[str] = set()
    total = 0
    for i, item in enumerate(raw):
        where = f"spec.tasks[{i}]"
        if not isinstance(item, Mapping):
            raise fail(where, f"must be an object, got {type(item).__name__}")
        name = item.get("name") or f"default{i}"
        if not isinstance(name, str) or label_problem(name):
            raise fail(f"{where}.name", f"must be a DNS-1123 label, got {shown(name)}")
        if name in seen:
            raise fail(f"{where}.name", f"duplicated task name {name}")
        seen.add(name)
        replicas = 0 if item.get("replicas") is None else crd_int(item["replicas"], f"{where}.replicas", minimum=0)
        own = replicas if item.get("minAvailable") is None else crd_int(
            item["minAvailable"], f"{where}.minAvailable", minimum=0, maximum=replicas)
        total += replicas
        if total > MAX_JOB_PODS:
            raise fail(f"{where}.replicas", f"the Job's tasks ask for {total} pods by here, more than the "
                                            f"simulator's cap of {MAX_JOB_PODS} for one Job")
        template = item.get("template") if isinstance(item.get("template"), Mapping) else {}
        assert isinstance(template, Mapping)
        tasks.append(_Task(name, replicas, own, template))
    return tasks


def _task_template(job: str, task: _Task, priority: str | None) -> tuple[Doc, list[str]]:
    """The task's pod template as a batch/v1 Job takes it: Volcano's job and task labels added, the Job's
    priority class when the task has none, no foreign schedulerName, and a restartPolicy a Job accepts."""
    notes: list[str] = []
    raw_meta = task.template.get("metadata")
    meta = dict(raw_meta) if isinstance(raw_meta, Mapping) else {}
    meta.pop("name", None)
    raw_labels = meta.get("labels")
    labels: Mapping[str, Any] = raw_labels if isinstance(raw_labels, Mapping) else {}
    meta["labels"] = {**labels, "volcano.sh/job-name": job, "volcano.sh/task-spec": task.name}
    raw_spec = task.template.get("spec")
    pod_spec = dict(raw_spec) if isinstance(raw_spec, Mapping) else {}
    if priority and "priorityClassName" not in pod_spec:
        pod_spec["priorityClassName"] = priority
    pod_spec.pop("schedulerName", None)
    restart = pod_spec.get("restartPolicy")
    if restart not in ("Never", "OnFailure"):
        pod_spec["restartPolicy"] = "Never"
        notes.append(f"task {task.name}: restartPolicy {restart or 'Always (unset)'} -> Never (a Job's pods "
                     "take Never or OnFailure)")
    return {"metadata": meta, "spec": pod_spec}, notes


def _job_meta(doc: Mapping[str, Any], namespace: str, name: str) -> Doc:
    """The Volcano Job's name, namespace, labels and annotations, for the object that replaces it."""
    raw = doc.get("metadata")
    meta: Doc = {"name": name, "namespace": namespace}
    for key in ("labels", "annotations"):
        value = raw.get(key) if isinstance(raw, Mapping) else None
        if isinstance(value, Mapping) and value:
            meta[key] = dict(value)
    return meta


def _batch_job(meta: Doc, task: _Task, template: Doc, min_count: int) -> Doc:
    """A batch/v1 Job running the task's replicas at once, gang-scheduled by its own PodGroup (v1.37
    `spec.scheduling`: the Job controller makes the PodGroup, named after the Job)."""
    # Indexed: the pods are `<job>-<index>`, as the simulator names them and as the Job controller's gang
    # scheduling (WorkloadWithJob) takes them.
    spec: Doc = {"parallelism": task.replicas, "completions": task.replicas, "completionMode": "Indexed"}
    if task.replicas > 0:
        spec["scheduling"] = {"schedulingPolicy": native.policy(min_count)}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": {**spec, "template": template}}


def _job_set(meta: Doc, tasks: list[_Task], templates: list[Doc], group: str) -> Doc:
    """A JobSet with one replicated job (one Job) per task, every pod template naming the gang's PodGroup
    (JobSet's documented way to gang a JobSet)."""
    replicated = []
    for task, template in zip(tasks, templates, strict=True):
        linked = native.join(template, group)
        replicated.append({"name": task.name, "replicas": 1, "template": {"spec": {
            "parallelism": task.replicas, "completions": task.replicas, "template": linked}}})
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": meta,
            "spec": {"replicatedJobs": replicated}}


@_located
def volcano_job(doc: Mapping[str, Any]) -> tuple[list[Doc], Change]:
    """A Volcano Job, as one would deploy it on v1.37: one task is a batch/v1 Job with `spec.scheduling` (a gang
    of `minAvailable`, default the tasks' minimums); several are a JobSet (a replicated job per task) whose
    templates name a Workload and PodGroup of the Job's name."""
    namespace, name = _meta(doc)
    spec = _spec(doc)
    tasks = _tasks(spec)
    total = sum(t.replicas for t in tasks)
    raw = spec.get("minAvailable")
    min_count = 0 if raw is None else crd_int(raw, "spec.minAvailable", minimum=0)
    if min_count > total:
        raise fail("spec.minAvailable", f"job 'minAvailable' ({min_count}) should not be greater than total "
                                        f"replicas in tasks ({total})")
    if min_count == 0:
        min_count = _gang_size(sum(t.min_available for t in tasks), "spec.tasks[*].minAvailable")
    gang = max(1, min_count)
    priority = spec.get("priorityClassName") if isinstance(spec.get("priorityClassName"), str) else None
    change = Change(f"Volcano Job {namespace}/{name} ({doc.get('apiVersion')})")
    meta = _job_meta(doc, namespace, name)
    templates: list[Doc] = []
    for task in tasks:
        template, notes = _task_template(name, task, priority)
        templates.append(template)
        change.notes.extend(notes)
    out: list[Doc]
    if len(tasks) == 1:
        out = [_batch_job(meta, tasks[0], templates[0], gang)]
        change.notes.append(f"task {tasks[0].name}: {tasks[0].replicas} pod(s) -> batch/v1 Job {name}, "
                            f"spec.scheduling gang.minCount {gang} (minAvailable {min_count}); its pods are "
                            f"{name}-<index>")
    else:
        out = [*native.gang(namespace, name, gang, priority), _job_set(meta, tasks, templates, name)]
        change.notes.append(f"minAvailable {min_count} -> Workload and PodGroup {name} with gang.minCount {gang}")
        change.notes.append(f"tasks {', '.join(t.name for t in tasks)} -> JobSet {name}, a replicated job per task "
                            f"(its pods {name}-<task>-0-<index>), every template in PodGroup {name}")
    if spec.get("schedulerName"):
        change.notes.append(f"schedulerName {spec['schedulerName']} dropped (the default scheduler places native "
                            "gangs)")
    if spec.get("queue"):
        change.warnings.append(f"queue {shown(spec['queue'])} has no native equivalent (admission queues are "
                               "Kueue's)")
        _keep_queue(out, spec["queue"], change)
    for key in ("policies", "plugins", "maxRetry"):
        if spec.get(key):
            change.warnings.append(f"{key} has no native equivalent; dropped")
    return out, change


def _pod_set_minimum(item: Any, where: str) -> int:
    """What a Kueue pod set needs at least: `minCount` (1..count) when set, else `count` (≥ 0, default 1)."""
    if not isinstance(item, Mapping):
        raise fail(where, f"must be an object, got {type(item).__name__}")
    count = 1 if item.get("count") is None else crd_int(item["count"], f"{where}.count", minimum=0)
    if item.get("minCount") is None:
        return count
    return crd_int(item["minCount"], f"{where}.minCount", minimum=1, maximum=max(count, 1))


@_located
def kueue_workload(doc: Mapping[str, Any]) -> tuple[list[Doc], Change]:
    """A Kueue Workload of a pod group: a gang of every pod set's `minCount` (else `count`) together."""
    namespace, name = _meta(doc)
    spec = _spec(doc)
    raw_sets = spec.get("podSets")
    if raw_sets is not None and not isinstance(raw_sets, list):
        raise fail("spec.podSets", f"must be a list, got {type(raw_sets).__name__}")
    sets = raw_sets or []
    min_count = _gang_size(sum(_pod_set_minimum(s, f"spec.podSets[{i}]") for i, s in enumerate(sets)),
                           "spec.podSets")
    change = Change(f"Kueue Workload {namespace}/{name} ({doc.get('apiVersion')})")
    change.notes.append(f"podSets ({len(sets)}) -> Workload and PodGroup {name} with gang.minCount "
                        f"{max(1, min_count)}")
    if spec.get("queueName"):
        change.warnings.append(f"queueName {shown(spec['queueName'])}: Kueue admission (quotas) has no native "
                               "equivalent")
    priority = spec.get("priorityClassName") if isinstance(spec.get("priorityClassName"), str) else None
    return native.gang(namespace, name, min_count, priority), change


# (apiVersion group, kind) -> translator
GROUPS: dict[tuple[str, str], Callable[[Mapping[str, Any]], tuple[list[Doc], Change]]] = {
    ("scheduling.volcano.sh", "PodGroup"): volcano_group,
    ("batch.volcano.sh", "Job"): volcano_job,
    ("scheduling.x-k8s.io", "PodGroup"): coscheduling_group,
    ("scheduling.sigs.k8s.io", "PodGroup"): coscheduling_group,
    ("kueue.x-k8s.io", "Workload"): kueue_workload,
    **{(gang.group, gang.kind): peer_group(gang) for peer in PEERS for gang in peer.gangs},
}

KUEUE_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
KUEUE_TOTAL = "kueue.x-k8s.io/pod-group-total-count"
# Where a pod names its foreign group: (in labels or annotations, key, whose)
POINTERS: tuple[tuple[str, str, str], ...] = (
    ("annotations", "scheduling.k8s.io/group-name", "Volcano"),
    ("labels", "scheduling.x-k8s.io/pod-group", "scheduler-plugins"),
    ("labels", "pod-group.scheduling.sigs.k8s.io", "scheduler-plugins"),
    ("labels", KUEUE_GROUP_LABEL, "Kueue"),
    *((where, key, peer.whose) for peer in PEERS for where, key in peer.pointers),
)


def translator(doc: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], tuple[list[Doc], Change]] | None:
    api_version = doc.get("apiVersion")
    group = api_version.split("/")[0] if isinstance(api_version, str) and "/" in api_version else ""
    return GROUPS.get((group, str(doc.get("kind"))))


def pointer(pod: Mapping[str, Any], apps: bool = False) -> tuple[str, str, str] | None:
    """The foreign group a pod names: (group name, whose, the key it was found under), or None. With `apps`, a
    member of a peer's application gang names it (phalanx.migrate.applications)."""
    meta = pod.get("metadata")
    if not isinstance(meta, Mapping):
        return None
    for where, key, whose in POINTERS:
        values = meta.get(where)
        if isinstance(values, Mapping) and isinstance(values.get(key), str) and values[key]:
            return values[key], whose, key
    found = applications.pointer(meta) if apps else None
    return (found.app, found.whose, found.key) if found is not None else None
