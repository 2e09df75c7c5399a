"""Other schedulers' gang objects through `phalanx migrate` (phalanx.migrate.output: migrate_paths, then the YAML
and JSON renderings): Volcano PodGroups and Jobs, scheduler-plugins and KAI PodGroups, Kueue pod groups and
Workloads, v1alpha1/v1alpha2 Workloads and PodGroups and v1.35 pods, with hostile counts (strings, fractions,
2^31, 10^400, 5,000 digits, 10^9 replicas, unicode digits) and fields of the wrong shape."""

from __future__ import annotations

import copy
import os
import random
from typing import Any

import yaml

from phalanx.migrate.output import migrate_paths, render_json, render_yaml
from tests.fuzz.manifests import paths_in
from tests.fuzz.surface import INPUT_ERROR, OK, Surface, read_written, show_text

Doc = dict[str, Any]
_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_COUNTS: list[Any] = [0, 1, 2, 3, 4, -1, -4, 4.0, 4.5, "4", "+4", " 4", "٤", "4.0", "1_000", "", 2**31 - 1, 2**31,
                      2**63, 10**400, 10**9, 100_001, float("nan"), float("inf"), 1e30, True, None, [4], {"n": 4}]
_HOSTILE: list[Any] = [None, "", 7, 1.5, True, [], {}, [1], {"a": 1}, "x" * 300, "Bad_Name", "\ud800", "٣",
                       "x" * 70_000]
_TEMPLATE: Doc = {"spec": {"containers": [{"name": "c", "image": "img", "resources": {"requests": {"cpu": "1"}}}]}}


def _count(rng: random.Random, good: int) -> Any:
    return good if rng.random() < 0.75 else copy.deepcopy(rng.choice(_COUNTS))


def _meta(name: str, **extra: Any) -> Doc:
    return {"name": name, "namespace": "ml", **extra}


def _pod(name: str, rng: random.Random, *, labels: Doc | None = None, annotations: Doc | None = None,
         **spec: Any) -> Doc:
    body: Doc = {"schedulerName": rng.choice(["volcano", "kai-scheduler", "default-scheduler"]),
                 "containers": [{"name": "c", "image": "img", "resources": {"requests": {"cpu": "1"}}}], **spec}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": _meta(name, labels=labels or {}, annotations=annotations or {}), "spec": body}


def _volcano_group(rng: random.Random) -> list[Doc]:
    group = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": _meta("vg"),
             "spec": {"minMember": _count(rng, 2), "queue": rng.choice(["research", "", 7]),
                      "minResources": {"cpu": "2"}}}
    return [group, *(_pod(f"vg-{i}", rng, annotations={"scheduling.k8s.io/group-name": "vg"}) for i in range(2))]


def _plugins_group(rng: random.Random) -> list[Doc]:
    api = rng.choice(["scheduling.x-k8s.io/v1alpha1", "scheduling.sigs.k8s.io/v1alpha1"])
    label = ("scheduling.x-k8s.io/pod-group" if api.startswith("scheduling.x-k8s")
             else "pod-group.scheduling.sigs.k8s.io")
    group = {"apiVersion": api, "kind": "PodGroup", "metadata": _meta("cg"),
             "spec": {"minMember": _count(rng, 2), "scheduleTimeoutSeconds": _count(rng, 60)}}
    return [group, *(_pod(f"cg-{i}", rng, labels={label: "cg"}) for i in range(2))]


def _kai_group(rng: random.Random) -> list[Doc]:
    group = {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup", "metadata": _meta("kg"),
             "spec": {"minMember": _count(rng, 2), "queue": "team",
                      "subGroups": rng.choice([[], [{"name": "a", "minMember": 1}]])}}
    return [group, *(_pod(f"kg-{i}", rng, annotations={"pod-group-name": "kg"}) for i in range(2))]


def _kueue_group(rng: random.Random) -> list[Doc]:
    total = str(_count(rng, 2)) if rng.random() < 0.9 else rng.choice(["9" * 5000, "٢", "+2", "-0", "0x2"])
    annotations = {} if rng.random() < 0.1 else {"kueue.x-k8s.io/pod-group-total-count": total}
    return [_pod(f"kq-{i}", rng, labels={"kueue.x-k8s.io/pod-group-name": "kq", "kueue.x-k8s.io/queue-name": "q"},
                 annotations=annotations) for i in range(2)]


def _kueue_workload(rng: random.Random) -> list[Doc]:
    sets = [{"name": f"s{i}", "count": _count(rng, 2), "template": copy.deepcopy(_TEMPLATE)}
            for i in range(rng.randint(0, 3))]
    if sets and rng.random() < 0.3:
        sets[0]["minCount"] = _count(rng, 1)
    return [{"apiVersion": rng.choice(["kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2"]), "kind": "Workload",
             "metadata": _meta("kw"), "spec": {"queueName": "q", "podSets": sets}}]


def _volcano_job(rng: random.Random) -> list[Doc]:
    tasks = [{"name": rng.choice([f"t{i}", f"t{i}", "", "Bad_Name", "t0"]), "replicas": _count(rng, 2),
              "template": copy.deepcopy(_TEMPLATE)} for i in range(rng.randint(0, 3))]
    for task in tasks:
        if rng.random() < 0.2:
            task["minAvailable"] = _count(rng, 1)
    spec: Doc = {"tasks": tasks, "queue": "research", "schedulerName": "volcano"}
    if rng.random() < 0.6:
        spec["minAvailable"] = _count(rng, 2)
    return [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": _meta("vj"), "spec": spec}]


def _alpha(rng: random.Random) -> list[Doc]:
    workload = {"apiVersion": "scheduling.k8s.io/v1alpha1", "kind": "Workload", "metadata": _meta("aw"),
                "spec": {"podGroups": [{"name": "workers", "policy": {"gang": {"minCount": _count(rng, 2)}}}]}}
    group = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": _meta("ag"),
             "spec": {"podGroupTemplateRef": {"workload": {"workloadName": "aw", "podGroupTemplateName": "workers"}},
                      "disruptionMode": rng.choice(["Pod", "PodGroup", "Other", 3])}}
    pods = [_pod(f"aw-{i}", rng, workloadRef={"name": "aw", "podGroup": "workers",
                                              "podGroupReplicaKey": rng.choice(["", "r1", 5])}) for i in range(2)]
    return [workload, group, *pods]


_MAKERS = [_volcano_group, _plugins_group, _kai_group, _kueue_group, _kueue_workload, _volcano_job, _alpha]



def _spoil(doc: Doc, rng: random.Random) -> None:
    """A field of the wrong type or shape somewhere in the object (metadata, spec, a template, a list)."""
    path = rng.choice([p for p in paths_in(doc) if p])
    parent: Any = doc
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = copy.deepcopy(rng.choice(_HOSTILE + _COUNTS))  # a fresh copy: no cycles


def _generate(rng: random.Random) -> str:
    docs: list[Doc] = []
    for make in rng.sample(_MAKERS, k=rng.randint(1, 3)):
        docs += make(rng)
    for _ in range(rng.choice([0, 0, 1, 2])):
        _spoil(rng.choice(docs), rng)
    try:
        return str(yaml.dump_all(docs, Dumper=_DUMPER, allow_unicode=True, sort_keys=False))
    except (yaml.YAMLError, UnicodeError):  # a lone surrogate: the pure dumper writes it
        return yaml.safe_dump_all(docs, allow_unicode=True, sort_keys=False)


def _run(text: str, directory: str) -> str:
    read = read_written(text, os.path.join(directory, "foreign.yaml"), migrate_paths)
    if read is None:
        return INPUT_ERROR
    pairs, _ = read
    render_yaml(pairs)
    render_json(pairs)
    return OK


SURFACE = Surface("migrate", _generate, _run, show_text,
                  "Volcano PodGroups and Jobs, scheduler-plugins and KAI PodGroups, Kueue pod groups and Workloads, "
                  "v1alpha1/v1alpha2 shapes with hostile counts and fields, migrated and rendered as YAML and JSON")
