"""Node-group templates with hostile annotations (sizes like `+-5`, 5,000 digits, 1e8 or a superscript digit;
provisioning delays up to and past 292 years; costs of 1e308 or NaN; group names that are no DNS label) and
hostile labels and taints, beside pending pods and gangs that ask for them (node selectors, tolerations, more
than a node holds); simulated briefly under per-pod or gang-aware scale-up, now and then without --until."""

from __future__ import annotations

import random
from typing import Any

import yaml

from tests.fuzz.surface import Surface
from tests.fuzz.surface_metrics_csv import simulate

Doc = dict[str, Any]
GROUP = "phalanx.dev/node-group"
MIN = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"
MAX = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"
DELAY = "phalanx.dev/provisioning-delay"
COST = "phalanx.dev/cost-per-hour"
SIZES = ["0", "1", "3", "+5", "-0", "-1", "+-5", "--5", " 5", "5 ", "1.5", "1e8", "100000000", "5000", "5001",
         "9" * 5000, "0" * 5000 + "2", "\u0665", "\u00b2", "", "0x10", "9223372036854775807", "9223372036854775808"]
DELAYS = ["0s", "10s", "3m", "3601s", "1h", "-5s", "292y", "2562047h", "2562048h", "106751d", "9" * 5000, "nan",
          "inf", "1e400", "", "\u0663m", "1.5", "5"]
COSTS = ["0", "0.75", "32.77", "1e308", "9" * 5000, "nan", "inf", "-1", "", "1,5", "\u0663"]
NAMES = ["pool", "gpu-pool", "", "Pool_A", "-x", "x" * 64, "\ud800", "pool"]
_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def pick(rng: random.Random, common: list[str], hostile: list[str], odds: float) -> str:
    return rng.choice(hostile) if rng.random() < odds else rng.choice(common)


def template(rng: random.Random, index: int, odds: float) -> Doc:
    annotations: Doc = {GROUP: pick(rng, [f"pool{index}"], NAMES, odds),
                        MAX: pick(rng, ["1", "2", "4", "8"], SIZES, odds)}
    if rng.random() < 0.6:
        annotations[MIN] = pick(rng, ["0", "0", "1"], SIZES, odds)
    if rng.random() < 0.7:
        annotations[DELAY] = pick(rng, ["30s", "2m", "3601s"], DELAYS, odds)
    if rng.random() < 0.5:
        annotations[COST] = pick(rng, ["0.5", "32.77"], COSTS, odds)
    labels: Doc = {"pool": pick(rng, ["train", "serve"], ["", "x" * 70, "-bad", "a/b/c"], odds)}
    node: Doc = {"apiVersion": "v1", "kind": "Node",
                 "metadata": {"name": f"tpl-{index}", "labels": labels, "annotations": annotations},
                 "status": {"allocatable": {"cpu": pick(rng, ["8", "32"], ["0", "-1", "1e400", "9" * 5000], odds),
                                            "memory": "64Gi", "pods": pick(rng, ["110"], ["0", "1"], odds)}}}
    if rng.random() < 0.2:
        node["spec"] = {"taints": [{"key": "gpu", "value": "yes", "effect": rng.choice(
            ["NoSchedule", "PreferNoSchedule", "NoExecute", "Bogus"])}]}
    return node


def pods(rng: random.Random) -> list[Doc]:
    docs: list[Doc] = []
    for i in range(rng.randint(0, 4)):
        spec: Doc = {"containers": [{"name": "c", "image": "c", "resources": {"requests": {
            "cpu": rng.choice(["1", "4", "16", "64"])}}}]}
        if rng.random() < 0.5:
            spec["nodeSelector"] = {"pool": rng.choice(["train", "serve", "none"])}
        if rng.random() < 0.2:
            spec["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
        docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "ml",
                                                                      "ownerReferences": [] if rng.random() < 0.5 else
                                                                      [{"kind": "ReplicaSet", "name": "rs"}]},
                     "spec": spec})
    if rng.random() < 0.5:
        size = rng.choice([2, 4, 9])
        docs.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
            "name": "train", "namespace": "ml", "annotations": {"phalanx.dev/duration": rng.choice(["5m", "1h"])}},
            "spec": {"parallelism": size, "completions": size,
                     "scheduling": {"schedulingPolicy": {"gang": {"minCount": size}}},
                     "template": {"spec": {"restartPolicy": "Never", "nodeSelector": {"pool": "train"},
                                           "containers": [{"name": "c", "image": "c", "resources": {
                                               "requests": {"cpu": rng.choice(["4", "8"])}}}]}}}})
    return docs


def _generate(rng: random.Random) -> tuple[str, float | None, str]:
    odds = rng.choice([0.0, 0.0, 0.05, 0.2, 0.5])
    docs = [template(rng, i, odds) for i in range(rng.randint(1, 3))]
    if rng.random() < 0.5:
        docs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "system", "labels": {"pool": "sys"}},
                     "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}}})
    docs += pods(rng)
    try:
        text = yaml.dump_all(docs, Dumper=_DUMPER, allow_unicode=True)
    except (yaml.YAMLError, UnicodeError):  # a lone surrogate: the pure dumper writes it
        text = yaml.safe_dump_all(docs, allow_unicode=True)
    return text, rng.choice([None, 600.0, 3600.0, 6 * 3600.0]), rng.choice(["pod", "gang"])


def _run(case: tuple[str, float | None, str], directory: str) -> str:
    text, until, mode = case
    return simulate(directory, text, None, until, mode)


def _show(case: tuple[str, float | None, str]) -> str:
    text, until, mode = case
    return f"until {until}, scale-up {mode}\n{text[:6000]}"


SURFACE = Surface("nodegroups", _generate, _run, _show,
                  "node-group template Nodes with hostile size, delay and cost annotations, labels and taints, "
                  "beside pending pods and gangs, simulated briefly under per-pod or gang scale-up")
