"""Random CompositePodGroup/PodGroup forests (KEP-6012), loaded and simulated for ten minutes under the gang
profile with the CompositePodGroup gate on: deep chains (rarely hundreds of levels), cycles among parents,
missing parents, wide fan-out, minGroupCount and minCount of 0, huge or negative, trees naming several
Workloads, topology constraints, pods of mismatched priority, and now and then a field of the wrong type."""

from __future__ import annotations

import dataclasses
import os
import random
from typing import Any

import yaml

from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.simulation import Simulation
from tests.fuzz.surface import INPUT_ERROR, OK, Surface, read_written, show_text

Doc = dict[str, Any]
RACK = "topology.kubernetes.io/rack"
GATES = {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True, "CompositePodGroup": True}
HORIZON = 600.0
_COUNTS = [0, 1, 1, 2, 2, 3, 5, -1, -(2**31), 2**31 - 1, 2**31, 10**20]
_HOSTILE = [None, "", "2", "٣", 1.5, float("nan"), [], {}, {"gang": {}}, "\ud800", "x" * 300, True, 10**400]


def _policy(rng: random.Random, key: str) -> Doc:
    if rng.random() < 0.3:
        return {"basic": {}}
    return {"gang": {key: rng.randint(1, 3)}}


def _composite(name: str, parent: str | None, rng: random.Random) -> Doc:
    spec: Doc = {"workloadRef": {"workloadName": rng.choice(["wl", "wl", "other"]), "templateName": name},
                 "schedulingPolicy": _policy(rng, "minGroupCount")}
    if parent is not None:
        spec["parentCompositePodGroupName"] = parent
    if rng.random() < 0.2:
        spec["schedulingConstraints"] = {"topology": [{"key": RACK}]}
    if rng.random() < 0.2:
        spec["priority"] = rng.choice([0, 100, -1])
    return {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
            "metadata": {"name": name, "namespace": "ml"}, "spec": spec}


def _leaf(name: str, parent: str | None, rng: random.Random) -> Doc:
    spec: Doc = {"schedulingPolicy": _policy(rng, "minCount")}
    if parent is not None:
        spec["parentCompositePodGroupName"] = parent
        spec["workloadRef"] = {"workloadName": rng.choice(["wl", "other"]), "templateName": name}
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "ml"}, "spec": spec}


def _pod(name: str, group: str, rng: random.Random) -> Doc:
    spec: Doc = {"schedulingGroup": {"podGroupName": group},
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": rng.choice(["500m", "1", "4"])}}}]}
    if rng.random() < 0.1:
        spec["priority"] = rng.choice([0, 100])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": name, "namespace": "ml", "annotations": {"phalanx.dev/arrival": f"{rng.randint(0, 60)}s",
                                                         "phalanx.dev/duration": f"{rng.randint(1, 300)}s"}},
        "spec": spec}


def _parents(names: list[str], rng: random.Random) -> dict[str, str | None]:
    """Each composite's parent, by shape: a chain, a chain closed into a loop, a wide root, or at random."""
    shape = rng.choice(["chain", "chain", "loop", "wide", "random"])
    if shape in ("chain", "loop"):
        parents: dict[str, str | None] = {n: names[i + 1] if i + 1 < len(names) else None
                                          for i, n in enumerate(names)}
        if shape == "loop":
            parents[names[-1]] = names[rng.randrange(len(names))]
        return parents
    if shape == "wide":
        return {n: None if i == 0 else names[0] for i, n in enumerate(names)}
    return {n: rng.choice([None, "missing", *names]) for n in names}


def forest(rng: random.Random) -> list[Doc]:
    """Nodes, a forest of CompositePodGroups, PodGroups under them (or under none, or a missing one), pods."""
    docs: list[Doc] = [{"apiVersion": "v1", "kind": "Node",
                        "metadata": {"name": f"n{i}", "labels": {RACK: f"r{i % 2}"}},
                        "status": {"allocatable": {"cpu": str(rng.choice([2, 8, 16])), "memory": "64Gi"}}}
                       for i in range(rng.randint(1, 4))]
    size = rng.choice([0, 1, 2, 3, 4, 5, 6, 8, 12, 30]) if rng.random() < 0.96 else rng.choice([120, 600])
    names = [f"c{i}" for i in range(size)]
    parents = _parents(names, rng) if names else {}
    docs += [_composite(n, parents[n], rng) for n in names]
    for g in range(rng.randint(1, 5)):
        group = f"g{g}"
        parent = rng.choice([*names[:3], *names[:3], "missing", None]) if names else None
        docs.append(_leaf(group, parent, rng))
        docs += [_pod(f"{group}-{p}", group, rng) for p in range(rng.randint(0, 4))]
    groups = [d for d in docs if d["kind"] in ("PodGroup", "CompositePodGroup")]
    for target in rng.sample(groups, k=min(len(groups), 2)) if rng.random() < 0.25 else ():  # odd counts
        gang = target["spec"]["schedulingPolicy"].get("gang")
        if gang is not None:
            gang[next(iter(gang))] = rng.choice(_COUNTS)
    if rng.random() < 0.1:  # a field of the wrong type or out of range
        target = rng.choice([d for d in docs if d["kind"] != "Node"] or docs)
        spec = target.setdefault("spec", {})
        spec[rng.choice(list(spec) or ["schedulingPolicy"])] = rng.choice(_HOSTILE)
    return docs


def _generate(rng: random.Random) -> str:
    return yaml.safe_dump_all(forest(rng), allow_unicode=True, sort_keys=False)  # lone surrogates too


def _run(text: str, directory: str) -> str:
    inputs = read_written(text, os.path.join(directory, "trees.yaml"), load_paths)
    if inputs is None:
        return INPUT_ERROR
    profile = builtin("gang")
    profile = dataclasses.replace(profile, feature_gates={**profile.feature_gates, **GATES})
    Simulation(inputs, profile, until=HORIZON).run()
    return OK


SURFACE = Surface("trees", _generate, _run, show_text,
                  "CompositePodGroup/PodGroup forests: deep chains, loops, missing parents, fan-out, odd counts, "
                  "several Workloads; simulated 10 minutes with the CompositePodGroup gate on")
