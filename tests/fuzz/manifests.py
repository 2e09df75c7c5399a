"""Random mutations of valid manifests, for the `manifests` fuzz surface (tests/fuzz/surface_manifests.py):
wrong types, huge numbers, deep nesting, unicode digits, missing
fields, written as YAML or JSON. Every choice comes from one `random.Random`, so a seed replays an input."""

from __future__ import annotations

import copy
import json
import os
import random
from collections.abc import Callable
from typing import Any

import yaml

from phalanx.errors import InputError
from phalanx.inputs.load import load_paths
from tests import dra_builders as dra

Doc = dict[str, Any]


def _pod(name: str, **spec: Any) -> Doc:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ml", "labels": {"app": "train"},
                         "annotations": {"phalanx.dev/duration": "1h", "phalanx.dev/arrival": "30s"}},
            "spec": {"containers": [{"name": "main", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"},
                                                                   "limits": {"nvidia.com/gpu": 1}}}],
                     "priority": 100, "terminationGracePeriodSeconds": 30,
                     "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoExecute",
                                      "tolerationSeconds": 60}],
                     "nodeSelector": {"zone": "a"}, **spec}}


def _node() -> Doc:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "node-a", "labels": {"zone": "a", "kubernetes.io/hostname": "node-a"}},
            "spec": {"unschedulable": False, "taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8"}}}


def _scenarios() -> list[Callable[[], list[Doc]]]:
    priority_class = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
                      "value": 1000, "globalDefault": False, "preemptionPolicy": "PreemptLowerPriority"}
    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "g", "namespace": "ml"},
             "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, "priorityClassName": "high", "priority": 1000,
                      "disruptionMode": {"all": {}}}}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ml"},
           "spec": {"parallelism": 2, "completions": 4,
                    "scheduling": {"schedulingPolicy": {"gang": {"minCount": 2}}},
                    "template": {"metadata": {"labels": {"app": "j"}}, "spec": _pod("x")["spec"]}}}
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "d", "namespace": "ml"},
           "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "train"}}}}
    claim_spec = dra.claim_spec(dra.request("gpu", dra.exactly(1, selectors=["device.attributes['gpu.example.com']"
                                                                             ".index >= 0"])))
    return [
        lambda: [_node(), _pod("p"), priority_class, _pod("q", priorityClassName="high", priority=1000)],
        lambda: [_node(), priority_class, group, _pod("m0", schedulingGroup={"podGroupName": "g"}),
                 _pod("m1", schedulingGroup={"podGroupName": "g"}, nodeName="node-a")],
        lambda: [_node(), priority_class, job, pdb],
        lambda: [dra.node("n"), dra.gpus("n", 2), dra.device_class(), dra.claim("c", claim_spec, namespace="ml"),
                 dra.pod("p", claim_name="c", namespace="ml")],
    ]


SCENARIOS = _scenarios()
_DEEP = "phalanx-fuzz-deep-"
_UNICODE_DIGITS = ["٣", "３", "१०", "1_000", "²", "𝟘", "٣%", "1_0%", "Ⅻ"]


def _bad_value(rng: random.Random) -> Any:
    """A value of the wrong type, out of range, deeply nested or in other scripts' digits."""
    kind = rng.randrange(9)
    if kind == 0:
        return rng.choice([None, True, False, "", "true", "false", "yes", [], {}, [1], {"a": 1}, "x" * 300])
    if kind == 1:
        sign = rng.choice([1, -1])
        return sign * rng.choice([2**31, 2**63, 2**64, 10**20, 10**400, 10**4299, 10**11])
    if kind == 2:
        return rng.choice([1e308, -1e308, float("inf"), float("-inf"), float("nan"), 1e-320, 0.5, -0.0])
    if kind == 3:
        return rng.choice(["1e" + "9" * 20, "9" * 5000, "1e400", "8Ei", "7Ei", "9223372036854775807",
                           "0.000000001m", "1e-400", "-1", "1Ki1", "99999999999999999999h", "1e308h"])
    if kind == 4:
        return rng.choice(_UNICODE_DIGITS)
    if kind == 5:
        depth = rng.choice([10, 150, 250, 1200, 60_000])
        if depth > 150:  # too deep for the serializers: `render` writes it into the text
            return f"{_DEEP}{depth}"
        value: Any = rng.choice([1, "x", None])
        for _ in range(depth):
            value = [value] if rng.random() < 0.5 else {"a": value}
        return value
    if kind == 6:
        return rng.choice(["1 / 0 == 1", "[1][5] == 1", "9223372036854775807 + 1 > 0", "(" * 300 + "true" + ")" * 300,
                           "quantity('x') > quantity('1')", "device.driver.matches('(')", "x" * 11_000])
    if kind == 7:
        return rng.choice(["=1+1", "@sum", "-x", "\u0000", "\ud800".encode("utf-8", "surrogatepass").decode(
            "utf-8", "replace"), "a" * 70_000, "system-node-critical", "Never", "NoExecute"])
    return rng.randint(-(2**40), 2**40)


def paths_in(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path (keys and list indexes) into a parsed document, the empty one first."""
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out.extend(paths_in(item, (*prefix, key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out.extend(paths_in(item, (*prefix, i)))
    return out


def _mutate_one(doc: Doc, rng: random.Random) -> None:
    paths = [p for p in paths_in(doc) if p]
    if not paths:
        return
    path = rng.choice(paths)
    parent: Any = doc
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    action = rng.randrange(4)
    if action == 0 and isinstance(parent, dict):
        del parent[last]  # a missing field
    elif action == 1 and isinstance(parent, dict):
        parent[rng.choice(["extra", "apiVersion", "kind", "value", "items"])] = _bad_value(rng)
    else:
        parent[last] = _bad_value(rng)


def manifests(rng: random.Random) -> list[Doc]:
    """One scenario's manifests with one to four random mutations."""
    docs = [copy.deepcopy(d) for d in rng.choice(SCENARIOS)()]
    for _ in range(rng.randint(1, 4)):
        _mutate_one(rng.choice(docs), rng)
    if rng.random() < 0.1:
        docs = [{"apiVersion": "v1", "kind": "List", "items": docs}]
    return docs


def render(docs: list[Doc], rng: random.Random) -> tuple[str, str]:
    """(file name, text): YAML or JSON, sometimes with a raw-text mutation the structures cannot express."""
    if rng.random() < 0.5:
        try:
            name, text = "input.yaml", yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=True)
        except (RecursionError, yaml.YAMLError):
            name, text = "input.json", json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})
    else:
        name, text = "input.json", json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})
    while _DEEP in text:
        start = text.index(_DEEP)
        end = start + len(_DEEP)
        while end < len(text) and text[end].isdigit():
            end += 1
        depth = int(text[start + len(_DEEP):end])
        quoted = start > 0 and text[start - 1] in "'\""
        nested = "[" * depth + "1" + "]" * depth
        text = text[:start - quoted] + nested + text[end + quoted:]
    if rng.random() < 0.1:
        text = rng.choice([
            text + "\n" + "[" * 60_000 + "]" * 60_000,
            text.replace("500m", "1" * 5000, 1),
            text.replace("30", "٣٠", 1),
            "- " * 5000 + "x\n",
            text[: rng.randrange(len(text) + 1)],
        ])
    return name, text


def load_one(directory: str, name: str, text: str, *, simulate: bool = False) -> str:
    """Load the text as a file (and with `simulate`, run what loaded for two simulated hours under the default
    and gang profiles); "ok" or "input-error". Any other exception propagates: that is a finding."""
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8", errors="surrogatepass") as handle:
        handle.write(text)
    try:
        inputs = load_paths([path])
    except InputError:
        return "input-error"
    finally:
        os.unlink(path)
    if simulate:
        from phalanx.scheduler.profiles import builtin
        from phalanx.sim.simulation import Simulation

        for profile in ("default", "gang"):
            Simulation(inputs, builtin(profile), until=7200.0).run()
    return "ok"
