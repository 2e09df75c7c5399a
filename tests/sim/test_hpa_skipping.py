"""Skipping the HPA syncs that would change nothing (phalanx.sim.hpa): random HPAs, targets and metrics files
run with and without the skipping must report the same services, pods and end time. And what the skipping is
for: a metrics row 292 years away, or --until of as long, costs a few syncs, not one every 15 s."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.autoscale.metrics import MetricsSeries
from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.hpa import Autoscalers
from phalanx.sim.report import build_report
from phalanx.sim.simulation import Simulation
from tests.sim.rounds import RoundLimit

Doc = dict[str, Any]
NODE: Doc = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0"},
             "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "500"}}}


def deployment(name: str, replicas: int, arrival: int) -> Doc:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default", "annotations": {"phalanx.dev/arrival": str(arrival)}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{
                         "name": "c", "image": "c", "resources": {"requests": {"cpu": "100m"}}}]}}}}


def metric(rng: random.Random, scale_to_zero: bool) -> Doc:
    name = rng.choice(["q0", "q1", "q2"])
    target = rng.choice(["Value", "AverageValue"])
    amount = str(rng.choice([1, 5, 10, 20]))
    kind = rng.choice(["External", "Object"] if scale_to_zero else ["External", "Object", "Pods", "Resource"])
    if kind == "Resource":
        if rng.random() < 0.5:
            return {"type": "Resource", "resource": {"name": "cpu", "target": {
                "type": "Utilization", "averageUtilization": rng.choice([50, 80])}}}
        return {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "AverageValue",
                                                                            "averageValue": amount}}}
    if kind == "Pods":
        return {"type": "Pods", "pods": {"metric": {"name": name}, "target": {"type": "AverageValue",
                                                                            "averageValue": amount}}}
    value = {"value": amount} if target == "Value" else {"averageValue": amount}
    identifier: Doc = {"name": name}
    if rng.random() < 0.3:
        identifier["selector"] = {"matchLabels": {"svc": rng.choice(["a", "b"])}}
    if kind == "Object":
        return {"type": "Object", "object": {"metric": identifier, "target": {"type": target, **value},
                                             "describedObject": {"kind": "Service", "name": "s"}}}
    return {"type": "External", "external": {"metric": identifier, "target": {"type": target, **value}}}


def behavior(rng: random.Random) -> Doc:
    def rules() -> Doc:
        return {"stabilizationWindowSeconds": rng.choice([0, 30, 100, 300]), "selectPolicy": rng.choice(
            ["Max", "Min", "Disabled"]), "policies": [{"type": rng.choice(["Pods", "Percent"]), "value":
                                                       rng.choice([1, 4, 100]), "periodSeconds": rng.choice([15, 60])}]}

    return {"scaleUp": rules(), "scaleDown": rules()}


def hpa(rng: random.Random, index: int, targets: list[str]) -> Doc:
    zero = rng.random() < 0.3
    spec: Doc = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": rng.choice(targets)},
                 "minReplicas": 0 if zero else rng.choice([1, 2]), "maxReplicas": rng.choice([3, 8, 20]),
                 "metrics": [metric(rng, zero) for _ in range(rng.choice([1, 2]))]}
    if zero:
        spec["metrics"][0] = metric(rng, True)
    if rng.random() < 0.4:
        spec["behavior"] = behavior(rng)
    annotations = {"phalanx.dev/arrival": str(rng.choice([0, 0, 40]))}
    if rng.random() < 0.15:  # its metrics named q0 read a model instead (never skipped)
        annotations.update({"phalanx.dev/request-rate-model": "base=1,peak=30,period=1h",
                            "phalanx.dev/request-metric": "q0"})
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": f"h{index}", "namespace": "default", "annotations": annotations}, "spec": spec}


def scenario(rng: random.Random, folder: Path) -> tuple[Path, Path, float | None]:
    names = [f"d{i}" for i in range(rng.randint(1, 3))]
    docs = [NODE, *(deployment(n, rng.randint(0, 3), rng.choice([0, 0, 600])) for n in names)]
    docs += [hpa(rng, i, [*names, "missing"]) for i in range(rng.randint(1, 4))]
    rows = ["time,metric,value,selector"]
    for name in ("q0", "q1", "q2", "cpu"):
        for labels in ("", "svc=a", "svc=b", *(f"deployment={n}" for n in names)):
            if rng.random() < 0.5:
                continue
            time = 0
            for _ in range(rng.randint(1, 5)):
                rows.append(f"{time},{name},{rng.choice([0, 0, 3, 12, 40, 150])},{labels}")
                time += rng.choice([7, 15, 200, 1200, 3600])
    (folder / "in.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    (folder / "m.csv").write_text("\n".join(rows) + "\n")
    return folder / "in.yaml", folder / "m.csv", rng.choice([None, 5400.0, 3 * 3600.0])


def report(manifests: Path, metrics: Path, until: float | None) -> dict[str, Any]:
    inputs = load_paths([str(manifests)])
    inputs.metrics = MetricsSeries.load(str(metrics))
    sim = Simulation(inputs, builtin("gang"), until=until).run()
    assert sim.hpas is not None
    return {**build_report(sim), "hpaSyncs": sim.hpas.syncs}


@pytest.mark.parametrize("seed", range(40))
def test_skipping_quiet_syncs_changes_nothing_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       seed: int) -> None:
    manifests, metrics, until = scenario(random.Random(seed), tmp_path)
    skipped = report(manifests, metrics, until)
    monkeypatch.setattr(Autoscalers, "skip_quiet_syncs", False)
    every = report(manifests, metrics, until)
    assert skipped["services"] == every["services"]
    assert skipped["pods"] == every["pods"]
    assert skipped["endTime"] == every["endTime"]
    assert skipped["hpaSyncs"] == every["hpaSyncs"]



@pytest.mark.parametrize(("rows", "until"), [
    ("0,q0,5,\n9223372036,q0,50,\n", None),  # a row 106,751 days away, no --until: was a hang
    ("0,q0,5,\n", 9.2e9),  # --until 292 years
])
def test_far_times_cost_a_few_syncs(tmp_path: Path, rows: str, until: float | None) -> None:
    docs = [NODE, deployment("d0", 1, 0), hpa(random.Random(1), 0, ["d0"])]
    docs[2]["spec"]["metrics"] = [{"type": "External", "external": {"metric": {"name": "q0"}, "target": {
        "type": "AverageValue", "averageValue": "10"}}}]
    (tmp_path / "in.yaml").write_text(yaml.safe_dump_all(docs))
    (tmp_path / "m.csv").write_text("time,metric,value,selector\n" + rows)
    inputs = load_paths([str(tmp_path / "in.yaml")])
    inputs.metrics = MetricsSeries.load(str(tmp_path / "m.csv"))
    sim = Simulation(inputs, builtin("gang"), until=until)
    sim.observers.append(RoundLimit(400))
    [service] = build_report(sim.run())["services"]
    if until is None:  # the syncs after the far row: 1 → 4 (at most 4 more, without behavior) → 5
        assert [r["replicas"] for r in service["replicas"]] == [1, 4, 5]
        assert 9223372036 <= service["replicas"][1]["time"] < 9223372036 + 15
    assert sim.end_time >= 9.2e9


def test_without_until_an_hpa_on_a_rate_model_stops_after_one_period(tmp_path: Path) -> None:
    """A rate model changes all the time, so its HPA is never skipped: with a metrics row 292 years away and no
    --until it synced every 15 s for ever. It stops after one period of its model; the other HPA, on the file,
    goes on to the far row."""
    modelled = hpa(random.Random(1), 0, ["d0"])
    modelled["metadata"]["annotations"] = {"phalanx.dev/request-rate-model": "base=1,peak=30,period=1h"}
    modelled["spec"].update(minReplicas=1, metrics=[{"type": "External", "external": {
        "metric": {"name": "requests_per_second"}, "target": {"type": "AverageValue", "averageValue": "10"}}}])
    filed = hpa(random.Random(1), 1, ["d1"])
    filed["spec"].update(minReplicas=1, metrics=[{"type": "External", "external": {"metric": {"name": "q0"},
                                                                                  "target": {"type": "Value",
                                                                                             "value": "10"}}}])
    docs = [NODE, deployment("d0", 1, 0), deployment("d1", 1, 0), modelled, filed]
    (tmp_path / "in.yaml").write_text(yaml.safe_dump_all(docs))
    (tmp_path / "m.csv").write_text("time,metric,value,selector\n0,q0,5,\n9223372036,q0,50,\n")
    inputs = load_paths([str(tmp_path / "in.yaml")])
    inputs.metrics = MetricsSeries.load(str(tmp_path / "m.csv"))
    sim = Simulation(inputs, builtin("gang"))
    sim.observers.append(RoundLimit(600))
    on_model, on_file = build_report(sim.run())["services"]
    assert sim.hpas is not None
    bank = sim.hpas.banks[sim.hpas.bank_of["default/h0"]]
    assert bank.pace.last == 3600.0  # the model's period, from its arrival
    assert max(r["replicas"] for r in on_model["replicas"]) == 3  # 30 a second at the peak, 10 a replica
    assert on_file["replicas"][-1]["time"] >= 9223372036
