"""Random HorizontalPodAutoscalers and their targets, loaded and simulated for a short horizon (or, now and then,
without --until) with a metrics file or a built-in rate model: metric types Resource, ContainerResource, Pods,
Object and External; targets Utilization, AverageValue and Value with hostile quantities; hostile min and max
replicas, behavior windows, policies and tolerances; scale to zero; targets missing, arriving late, or scaled by
two HPAs; hostile service annotations (startup time, rate model, when-at-zero)."""

from __future__ import annotations

import random
from typing import Any

import yaml

from tests.fuzz.surface import Surface
from tests.fuzz.surface_metrics_csv import csv_text, simulate, write

Doc = dict[str, Any]
INTS = [0, 1, 2, 3, 10, -1, 2**31 - 1, 2**31, 2**63, 10**400, 1.5, 3.0, "5", "", True, None, float("nan"),
        float("inf"), 1e308, [], {}]
QUANTITIES = ["1", "10", "500m", "0.0000001m", "1n", "1e-30", "0", "-1", "2k", "8Ei", "9Ei", "1e400",
              "9" * 5000, "nan", "inf", "\u0663", "1_0", "", 0, 5, -5, 2**63, 1e308, float("nan"), True, None, [1]]
DURATIONS = ["30s", "2m", "0s", "-5s", "292y", "2562047h", "2562048h", "9" * 5000, "nan", "1e400", "", "\u0663s",
             15, 1e308, None]
_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def hostile(rng: random.Random, common: list[Any], wild: list[Any], odds: float) -> Any:
    return rng.choice(wild) if rng.random() < odds else rng.choice(common)


def target(rng: random.Random, odds: float, kinds: list[str]) -> Doc:
    kind = hostile(rng, kinds, ["Utilization", "Value", "AverageValue", "Percent", "", None], odds)
    out: Doc = {"type": kind}
    if kind == "Utilization" or rng.random() < odds:
        out["averageUtilization"] = hostile(rng, [50, 80, 100], INTS, odds)
    if kind == "Value" or rng.random() < odds:
        out["value"] = hostile(rng, ["5", "10", "100m"], QUANTITIES, odds)
    if kind == "AverageValue" or rng.random() < odds:
        out["averageValue"] = hostile(rng, ["5", "10", "100m"], QUANTITIES, odds)
    return out


def metric(rng: random.Random, odds: float) -> Doc:
    kind = hostile(rng, ["External", "Object", "Pods", "Resource", "ContainerResource"], ["Custom", "", 7], odds)
    name = hostile(rng, ["q", "rps", "cpu"], ["", "a/b", "..", "\ud800", "x" * 300], odds)
    identifier: Doc = {"name": name}
    if rng.random() < 0.3:
        identifier["selector"] = {"matchLabels": {"service": hostile(rng, ["llm", "web"], ["", "-bad-", 5], odds)}}
    if kind in ("Resource", "ContainerResource"):
        source: Doc = {"name": hostile(rng, ["cpu", "memory"], ["", "gpu"], odds),
                       "target": target(rng, odds, ["Utilization", "AverageValue"])}
        if kind == "ContainerResource":
            source["container"] = hostile(rng, ["c"], ["", "C_1", "x" * 70], odds)
        return {"type": kind, {"Resource": "resource", "ContainerResource": "containerResource"}[kind]: source}
    if kind == "Pods":
        return {"type": kind, "pods": {"metric": identifier, "target": target(rng, odds, ["AverageValue"])}}
    if kind == "Object":
        return {"type": kind, "object": {"metric": identifier, "target": target(rng, odds, ["Value", "AverageValue"]),
                                         "describedObject": {"kind": "Service", "name": "svc", "apiVersion": "v1"}}}
    return {"type": kind, "external": {"metric": identifier, "target": target(rng, odds, ["Value", "AverageValue"])}}


def rules(rng: random.Random, odds: float) -> Doc:
    out: Doc = {}
    if rng.random() < 0.7:
        out["stabilizationWindowSeconds"] = hostile(rng, [0, 15, 60, 300, 3600], INTS, odds)
    if rng.random() < 0.5:
        out["selectPolicy"] = hostile(rng, ["Max", "Min", "Disabled"], ["", "max", 1], odds)
    if rng.random() < 0.7:
        out["policies"] = [{"type": hostile(rng, ["Pods", "Percent"], ["", "pods"], odds),
                            "value": hostile(rng, [1, 4, 100, 900], INTS, odds),
                            "periodSeconds": hostile(rng, [15, 60, 1800], INTS, odds)}
                           for _ in range(1 + (rng.random() < 0.3) - (rng.random() < odds))]
    if rng.random() < 0.2:
        out["tolerance"] = hostile(rng, ["0.1", "0", "50m"], QUANTITIES, odds)
    return out


def hpa(rng: random.Random, index: int, targets: list[str], odds: float) -> Doc:
    spec: Doc = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": hostile(
        rng, ["Deployment", "Deployment", "StatefulSet", "ReplicaSet"], ["Job", "", None], odds),
        "name": rng.choice(targets)}, "maxReplicas": hostile(rng, [4, 10, 50], INTS, odds)}
    if rng.random() < 0.9:
        spec["metrics"] = [metric(rng, odds) for _ in range(rng.choice([0, 1, 1, 2, 3]))]
    if rng.random() < 0.8:  # zero wants an Object or External metric (else the API server refuses it)
        scalable = any(m.get("type") in ("Object", "External") for m in spec.get("metrics", ()))
        spec["minReplicas"] = hostile(rng, [0, 1, 2] if scalable else [1, 2], INTS, odds)
    if rng.random() < 0.4:
        spec["behavior"] = {key: rules(rng, odds) for key in ("scaleUp", "scaleDown") if rng.random() < 0.7}
    annotations: Doc = {"phalanx.dev/arrival": str(rng.choice([0, 0, 0, 20, 3600]))}
    if rng.random() < 0.1:
        annotations["phalanx.dev/request-rate-model"] = rng.choice([
            "base=10,peak=100,night=22h-6h", "base=1,peak=5,period=1h", "base=0,peak=0", "base=10,peak=1e300",
            "base=5,peak=1,period=8d", "base=1,peak=2,period=0s", "peak=3", "base=1,peak=2,night=1h", "", ","])
    if rng.random() < 0.2:
        annotations["phalanx.dev/when-at-zero"] = rng.choice(["queue", "fail", "", "drop"])
    if rng.random() < 0.2:
        annotations["phalanx.dev/request-metric"] = rng.choice(["q", "rps", "nope", ""])
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": f"h{index}", "namespace": "default", "annotations": annotations}, "spec": spec}


def workload(rng: random.Random, kind: str, name: str, odds: float) -> Doc:
    meta: Doc = {"name": name, "namespace": "default",
                 "annotations": {"phalanx.dev/arrival": str(rng.choice([0, 0, 0, 45, 600]))}}
    pod: Doc = {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{
        "name": "c", "image": "c", "resources": {"requests": {"cpu": rng.choice(["100m", "1", "4"])}}}]}}
    if rng.random() < 0.2:
        pod["metadata"]["annotations"] = {"phalanx.dev/startup-time": hostile(rng, ["30s", "2m"], DURATIONS, odds)}
    spec: Doc = {"replicas": hostile(rng, [0, 1, 2, 3], INTS, odds / 3), "selector": {"matchLabels": {"app": name}},
                 "template": pod}
    if kind == "StatefulSet":
        spec["serviceName"] = name
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": spec}


def manifests(rng: random.Random, odds: float) -> list[Doc]:
    docs: list[Doc] = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
                        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}
                       for i in range(rng.randint(0, 2))]
    names = []
    for i in range(rng.randint(0, 3)):
        kind = rng.choice(["Deployment", "Deployment", "StatefulSet", "ReplicaSet"])
        names.append(f"w{i}")
        docs.append(workload(rng, kind, f"w{i}", odds))
    docs += [hpa(rng, i, [*names, *names, "missing"], odds) for i in range(rng.randint(1, 3))]
    return docs


EXTREME_QUANTITIES = ["0.0000001m", "1n", "1e-30", "7Ei", "9223372036854775807", "1m"]
EXTREME_VALUES = ["7Ei", "1e18", "9223372036854775807", "0.0000001m", "0"]


def extremes(rng: random.Random, docs: list[Doc]) -> None:
    """Values the API server accepts at their edges: targets of 1n or 7Ei, replicas and policies of 2^31-1,
    the longest windows and periods."""
    for doc in docs:
        if doc["kind"] != "HorizontalPodAutoscaler" or rng.random() < 0.3:
            continue
        spec = doc["spec"]
        for item in spec.get("metrics") or ():
            for source in item.values():
                if isinstance(source, dict) and isinstance(source.get("target"), dict):
                    for key in ("value", "averageValue"):
                        if key in source["target"] and rng.random() < 0.5:
                            source["target"][key] = rng.choice(EXTREME_QUANTITIES)
        if rng.random() < 0.5:
            spec["maxReplicas"] = 2**31 - 1
            if rng.random() < 0.2:
                spec["minReplicas"] = 2**31 - 1
        if rng.random() < 0.3:
            spec["behavior"] = {"scaleUp": {"stabilizationWindowSeconds": rng.choice([0, 3600]), "policies": [
                {"type": rng.choice(["Pods", "Percent"]), "value": 2**31 - 1, "periodSeconds": rng.choice([1, 1800])}]},
                "scaleDown": {"stabilizationWindowSeconds": 3600, "policies": [
                    {"type": "Percent", "value": 100, "periodSeconds": 1800}]}}


def _generate(rng: random.Random) -> tuple[str, str | None, float | None]:
    big = rng.random() < 0.3
    docs = manifests(rng, 0.0 if big else rng.choice([0.0, 0.0, 0.03, 0.1, 0.3]))
    if big:
        extremes(rng, docs)
    try:
        text = yaml.dump_all(docs, Dumper=_DUMPER, allow_unicode=True)
    except (yaml.YAMLError, UnicodeError):  # a lone surrogate: the pure dumper writes it
        text = yaml.safe_dump_all(docs, allow_unicode=True)
    metrics = csv_text(rng, hostile=0.0 if big else 0.2) if rng.random() < 0.8 else None
    if big and metrics is not None and metrics.startswith("time,metric,value,selector"):
        metrics = metrics.rstrip("\r\n") + "".join(
            f"\n{rng.choice([1, 2])},{name},{rng.choice(EXTREME_VALUES)},{labels}"
            for name in ("q", "rps", "cpu") for labels in ("", "service=llm")) + "\n"
    until = rng.choice([None, 60.0, 300.0, 900.0, 900.0])
    return text, metrics, until


def _run(case: tuple[str, str | None, float | None], directory: str) -> str:
    text, metrics, until = case
    path = write(directory, "metrics.csv", metrics) if metrics is not None else None
    return simulate(directory, text, path, until)


def _show(case: tuple[str, str | None, float | None]) -> str:
    text, metrics, until = case
    return f"until {until}\n--- manifests\n{text[:6000]}\n--- metrics\n{(metrics or '')[:2000]!r}"


SURFACE = Surface("hpa", _generate, _run, _show,
                  "HPAs of every metric type with hostile targets, replicas, behavior and annotations, on targets "
                  "missing, late or shared, simulated briefly with a metrics file")
