"""Random queueing objects of both peers, read as `--queues` reads them and simulated briefly: Kueue
ResourceFlavors, ClusterQueues, Cohorts (chains, rarely a thousand long, loops, missing parents), LocalQueues
and WorkloadPriorityClasses; Volcano Queues (parent chains and cycles) and a volcano-scheduler.conf, as a
ConfigMap or as raw text; with hostile quotas, weights and quantities, missing references and a few Jobs naming
queues (some missing). What loads runs five simulated minutes under `kueue` or `volcano`."""

from __future__ import annotations

import os
import random
from typing import Any

import yaml

from phalanx.admission.volcano_conf import parse_volcano_conf, placement_scoring
from phalanx.errors import InputError
from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.admission_gate import check_queue_objects, held_lines, load_queue_files
from phalanx.sim.report import build_report
from phalanx.sim.scenario import scenario_for
from phalanx.sim.simulation import Simulation
from tests.fuzz.surface import INPUT_ERROR, OK, Surface

Doc = dict[str, Any]
KUEUE = "kueue.x-k8s.io/v1beta2"
VOLCANO = "scheduling.volcano.sh/v1beta1"
HORIZON = 300.0
_QUANTITIES = ["0", "1", "4", "500m", "16", "1Gi", "8Ei", "-1", "1e400", "9" * 5000, "0.0000001m", "٣", "", "1_0",
               2**63, -(2**31), 1.5, float("nan"), float("inf"), True, None, [], {}]
_WEIGHTS = [0, 1, 2, 10, 65535, 65536, -1, 2**31, 2**63, 10**400, 1e30, float("nan"), float("inf"), "3", 2.5,
            3.0, True, None, [1]]
_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_NAMES = ["a", "b", "c", "team", "missing", "", "Bad_Name", "x" * 300, "\ud800", 7]


def _hostile(rng: random.Random) -> Any:
    return rng.choice([*_QUANTITIES, *_WEIGHTS, *_NAMES, "x" * 70_000, {"a": {"b": [1, {"c": None}]}}])


def _parents(names: list[str], rng: random.Random) -> dict[str, str]:
    """Each name's parent: a chain, a chain closed into a loop, one root, or at random ("" is none)."""
    shape = rng.choice(["chain", "chain", "loop", "wide", "random"])
    if shape in ("chain", "loop"):
        parents = {n: names[i + 1] if i + 1 < len(names) else "" for i, n in enumerate(names)}
        if shape == "loop" and names:
            parents[names[-1]] = names[rng.randrange(len(names) - 1)] if len(names) > 1 else ""
        return parents
    if shape == "wide":
        return {n: "" if i == 0 else names[0] for i, n in enumerate(names)}
    return {n: rng.choice(["", "missing", *(m for m in names if m != n or rng.random() < 0.05)]) for n in names}


def _quota(rng: random.Random, limits: bool) -> Doc:
    """One cpu quota; borrowing and lending limits only where a cohort or parent is set (else Kueue refuses
    them), but now and then anyway."""
    limits = limits or rng.random() < 0.05
    item: Doc = {"name": "cpu", "nominalQuota": rng.choice(["4", "8", "2"]) if rng.random() < 0.97
                 else rng.choice(_QUANTITIES)}
    odd = _QUANTITIES[:8] if rng.random() < 0.2 else []
    if limits and rng.random() < 0.3:
        item["borrowingLimit"] = rng.choice(["0", "2", "2", "1", "1", "0", *odd])
    if limits and rng.random() < 0.3:
        item["lendingLimit"] = rng.choice(["0", "1", "1", "0", *odd])
    return item


def _kueue(rng: random.Random) -> list[Doc]:
    flavors = ["default", "spot"][:rng.randint(0, 2)]
    docs: list[Doc] = [{"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": f}} for f in flavors]
    size = rng.choice([0, 1, 2, 3, 5]) if rng.random() < 0.97 else rng.choice([300, 1000])
    cohorts = [f"c{i}" for i in range(size)]
    for name, parent in _parents(cohorts, rng).items():
        spec: Doc = {"parentName": parent} if parent else {}
        if rng.random() < 0.2:
            spec["resourceGroups"] = [{"coveredResources": ["cpu"],
                                       "flavors": [{"name": "default", "resources": [_quota(rng, bool(parent))]}]}]
        docs.append({"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": name}, "spec": spec})
    for i in range(rng.randint(1, 3)):
        names = rng.sample(["default", "spot", "gpu"], k=rng.randint(1, 2))
        cohort = rng.choice(cohorts[:3] + cohorts[-2:]) if cohorts and rng.random() < 0.7 else ""
        spec = {"namespaceSelector": {}, "resourceGroups": [{
            "coveredResources": ["cpu"],
            "flavors": [{"name": f, "resources": [_quota(rng, bool(cohort))]} for f in names]}]}
        if cohort:
            spec["cohortName"] = cohort
        if rng.random() < 0.3:
            spec["preemption"] = {"reclaimWithinCohort": rng.choice(["Any", "Never", "LowerPriority"]),
                                  "withinClusterQueue": rng.choice(["Never", "LowerPriority"])}
        docs.append({"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": f"cq{i}"}, "spec": spec})
        docs.append({"apiVersion": KUEUE, "kind": "LocalQueue", "metadata": {"name": f"lq{i}", "namespace": "ml"},
                     "spec": {"clusterQueue": rng.choice([f"cq{i}", f"cq{i}", "missing"])}})
    if rng.random() < 0.3:
        docs.append({"apiVersion": KUEUE, "kind": "WorkloadPriorityClass", "metadata": {"name": "high"},
                     "value": rng.choice([100, 100, -5, 1.0, 1000, 0, 2**31, "7"])})
    return docs


def _conf_text(rng: random.Random) -> str:
    plugins: list[Doc] = [{"name": "gang"}, {"name": "proportion"}]
    if rng.random() < 0.6:
        plugins.append({"name": "binpack", "arguments": {
            key: rng.choice(_WEIGHTS) if rng.random() < 0.1 else rng.randint(0, 10)
            for key in rng.sample(["binpack.weight", "binpack.cpu", "binpack.memory",
                                   "binpack.resources.nvidia.com/gpu"], k=rng.randint(0, 3))}})
        if rng.random() < 0.2:
            plugins[-1]["arguments"]["binpack.resources"] = rng.choice(["nvidia.com/gpu", "nvidia.com/gpu", ["x"], ""])
    if rng.random() < 0.6:
        plugins.append({"name": "nodeorder", "arguments": {
            key: rng.choice(_WEIGHTS) if rng.random() < 0.1 else rng.randint(0, 5)
            for key in rng.sample(["leastrequested.weight", "mostrequested.weight", "balancedresource.weight"],
                                  k=rng.randint(0, 3))}})
    if rng.random() < 0.4:
        plugins.append({"name": "overcommit", "arguments": {"overcommit-factor": rng.choice(
            [1.2, 0.5, 3, 1.0, 2, float("nan"), float("inf"), "2", True])}})
    actions = rng.choice(["enqueue, allocate, backfill", "enqueue, allocate, reclaim", "allocate, preempt",
                          "enqueue, allocate, gangreclaim", "enqueue, allocate, backfill, reclaim",
                          "enqueue, allocate, backfill", "enqueue, alocate"])
    text = yaml.safe_dump({"actions": actions, "tiers": [{"plugins": plugins}]}, allow_unicode=True)
    if rng.random() < 0.05:
        text = rng.choice(["tiers: " + "[" * 3000 + "]" * 3000 + "\n", "actions: " + "9" * 5000 + "\n", "- a\n",
                           "actions: [unclosed\n"])
    return text


def _volcano(rng: random.Random) -> list[Doc]:
    names = [f"q{i}" for i in range(rng.choice([0, 1, 2, 3]) if rng.random() < 0.97 else 1000)]
    parents = _parents(names, rng)
    docs: list[Doc] = []
    for name in names:
        spec: Doc = {"weight": rng.choice([1, 1, 2, 4]) if rng.random() < 0.95 else rng.choice(_WEIGHTS)}
        if parents[name] and rng.random() < 0.5:
            spec["parent"] = parents[name]
        if rng.random() < 0.3:
            choices = ["4", "2", "0", *_QUANTITIES] if rng.random() < 0.3 else ["4", "2"]
            spec["capability"] = {"cpu": rng.choice(choices)}
        docs.append({"apiVersion": VOLCANO, "kind": "Queue", "metadata": {"name": name}, "spec": spec})
    docs.append({"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
                 "data": {"volcano-scheduler.conf": _conf_text(rng)}})
    return docs


def _jobs(rng: random.Random) -> list[Doc]:
    docs: list[Doc] = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
                        "status": {"allocatable": {"cpu": rng.choice(["4", "8"]), "memory": "32Gi", "pods": "110"}}}
                       for i in range(rng.randint(1, 2))]
    for i in range(rng.randint(1, 3) if rng.random() < 0.9 else 0):
        meta: Doc = {"name": f"j{i}", "namespace": "ml", "labels": {"kueue.x-k8s.io/queue-name": rng.choice(
            ["lq0", "lq1", "nope"])}, "annotations": {"scheduling.volcano.sh/queue-name": rng.choice(
                ["q0", "q1", "nope"]), "phalanx.dev/duration": f"{rng.randint(10, 200)}s"}}
        pods = rng.randint(1, 3)
        docs.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": {
            "parallelism": pods, "completions": pods, "template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "c", "image": "x", "resources": {"requests": {"cpu": rng.choice(["1", "2", "500m"])}}}]}}}})
    return docs


def _spoil(docs: list[Doc], rng: random.Random) -> None:
    """Now and then a field of the wrong type, out of range, or a reference to nothing."""
    for _ in range(rng.choice([0, 0, 0, 0, 1, 2])):
        target = rng.choice(docs)
        where = target.setdefault("spec", {}) if target.get("kind") != "ConfigMap" else target["metadata"]
        if isinstance(where, dict):
            where[rng.choice([*list(where), "weight", "cohortName", "parentName", "clusterQueue"])] = _hostile(rng)


def _generate(rng: random.Random) -> tuple[str, str, str, str]:
    queues = _kueue(rng) + _volcano(rng)
    _spoil(queues, rng)
    workload = _jobs(rng)
    raw_conf = _conf_text(rng) if rng.random() < 0.1 else ""
    profile = rng.choice(["kueue", "volcano"])
    return yaml.dump_all(workload, Dumper=_DUMPER, sort_keys=False), _dump(queues), raw_conf, profile


def _dump(docs: list[Doc]) -> str:
    try:
        return yaml.dump_all(docs, Dumper=_DUMPER, allow_unicode=True)
    except (yaml.YAMLError, UnicodeError):  # a lone surrogate: the pure dumper writes it
        return yaml.safe_dump_all(docs, allow_unicode=True)


def _write(directory: str, name: str, text: str) -> str:
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8", errors="surrogatepass") as handle:
        handle.write(text)
    return path


def _run(case: tuple[str, str, str, str], directory: str) -> str:
    workload, queues, raw_conf, profile = case
    if raw_conf:
        try:
            placement_scoring(parse_volcano_conf(raw_conf))
        except InputError:
            return INPUT_ERROR
        return OK
    try:
        inputs = load_paths([_write(directory, "in.yaml", workload)])
        inputs.queue_docs.extend(load_queue_files([_write(directory, "queues.yaml", queues)]))
        check_queue_objects(inputs.queue_docs)
        sim = Simulation(inputs, builtin(profile), scenario=scenario_for(profile), until=HORIZON)
    except InputError:
        return INPUT_ERROR
    report = build_report(sim.run())
    held_lines(report["admission"]["workloads"])
    return OK


def _show(case: tuple[str, str, str, str]) -> str:
    workload, queues, raw_conf, profile = case
    return f"profile {profile}\n--- workload\n{workload}\n--- queues\n{queues[:4000]}\n--- raw conf\n{raw_conf[:2000]}"


SURFACE = Surface("queues", _generate, _run, _show,
                  "Kueue and Volcano queueing objects and volcano-scheduler.conf with chains, cycles, missing "
                  "references and hostile quotas and weights; a few Jobs simulated 5 minutes under kueue or volcano")
