"""Devices in the simulator: the gpu-fleet example, NoExecute evictions (at once and after tolerationSeconds),
deallocation, evictions of every pod sharing a claim, and gangs placed with devices in the cycle's snapshot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from phalanx import build_report, builtin, load_paths
from phalanx.sim.simulation import Simulation
from tests import dra_builders as b

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gpu-fleet"


def simulate(tmp_path: Path, *docs: dict[str, Any], profile: str = "default") -> tuple[Simulation, dict[str, Any]]:
    sim = Simulation(b.load(tmp_path, *docs), builtin(profile)).run()
    return sim, build_report(sim)


def pods(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["name"].split("/")[1]: p for p in report["pods"]}


def test_gpu_fleet_example() -> None:
    sim = Simulation(load_paths([str(EXAMPLE)]), builtin("gang")).run()
    report = build_report(sim)
    by_name = pods(report)
    # the gang avoids gpu-node-0 (one GPU quarantined) and runs on the three healthy nodes
    assert sorted(by_name[f"train-{i}"]["node"] for i in range(3)) == ["gpu-node-1", "gpu-node-2", "gpu-node-3"]
    assert all(by_name[f"train-{i}"]["phase"] == "Running" for i in range(3))
    # the diagnostic pod lands on the tainted GPU
    assert by_name["gpu-diagnostics"]["devices"] == ["gpu.example.com/gpu-node-0/gpu-3"]
    # NoExecute at 02:00: inference-a goes at once, inference-b after its 600 s toleration
    a, b_ = by_name["inference-a"], by_name["inference-b"]
    assert a["phase"] == b_["phase"] == "Failed"
    assert a["deviceTaintEvictions"][0]["time"] == 7200.0
    assert b_["deviceTaintEvictions"][0]["time"] == 7800.0
    assert "gpu.example.com/xid-79: NoExecute" in a["message"] and "600s" in b_["message"]
    assert report["summary"]["evictions"] == 2
    assert by_name["train-extra"]["message"] == "0/5 nodes are available: 5 cannot allocate all claims."
    devices = sim.scheduler.devices
    assert devices is not None and not devices.overallocated()
    failed_gpu = devices.index[("gpu.example.com", "gpu-node-4", "gpu-0")]
    assert devices.allocations[failed_gpu] == 0  # deallocated once its pods were gone


def test_no_execute_evicts_every_pod_sharing_the_claim_and_deallocates(tmp_path: Path) -> None:
    sim, report = simulate(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 2),
                           b.claim("shared", b.claim_spec(b.request("gpu", b.exactly(1)))),
                           b.pod("p", claim_name="shared"), b.pod("q", claim_name="shared"),
                           b.taint_rule("fail", "gpu.example.com/xid", "NoExecute", device="gpu-0", arrival="1h"))
    by_name = pods(report)
    assert by_name["p"]["phase"] == by_name["q"]["phase"] == "Failed"
    assert by_name["p"]["deviceTaintEvictions"][0]["claim"] == "default/shared"
    assert report["summary"]["evictions"] == 2
    devices = sim.scheduler.devices
    assert devices is not None
    assert devices.claims["default/shared"].allocation is None
    assert int(devices.allocations.sum()) == 0


def test_recreated_pod_moves_to_a_healthy_device(tmp_path: Path) -> None:
    _, report = simulate(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 2),
                         b.template("t", b.claim_spec(b.request("gpu", b.exactly(1)))),
                         b.pod("p", template_name="t", controller=True),
                         b.taint_rule("fail", "gpu.example.com/xid", "NoExecute", device="gpu-0", arrival="1h"))
    p = pods(report)["p"]
    assert p["phase"] == "Running" and p["devices"] == ["gpu.example.com/n0/gpu-1"]
    assert p["deviceTaintEvictions"][0]["time"] == 3600.0 and p["preemptedCount"] == 0


def test_toleration_without_seconds_keeps_the_pod(tmp_path: Path) -> None:
    forever = b.exactly(1, tolerations=[{"key": "gpu.example.com/xid", "operator": "Exists", "effect": "NoExecute"}])
    _, report = simulate(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 1),
                         b.template("t", b.claim_spec(b.request("gpu", forever))), b.pod("p", template_name="t"),
                         b.taint_rule("fail", "gpu.example.com/xid", "NoExecute", arrival="1h"))
    assert pods(report)["p"]["phase"] == "Running" and report["summary"]["evictions"] == 0


def test_gang_rolls_back_devices_when_it_cannot_reach_min_count(tmp_path: Path) -> None:
    sim, report = simulate(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 2),
                           b.template("t", b.claim_spec(b.request("gpu", b.exactly(1)))), b.pod_group("g", 3),
                           *(b.pod(f"m{i}", template_name="t", group="g") for i in range(3)), profile="gang")
    assert report["summary"]["pods"]["pending"] == 3
    devices = sim.scheduler.devices
    assert devices is not None and int(devices.allocations.sum()) == 0


def test_claim_status_in_the_report(tmp_path: Path) -> None:
    slice_ = b.gpu_slice("n0", [b.gpu("nic-0", network={"interfaceName": "eth1", "ips": ["10.1.0.5/24"]})])
    _, report = simulate(tmp_path, b.device_class(), b.node("n0"), slice_,
                         b.template("t", b.claim_spec(b.request("nic", b.exactly(1)))), b.pod("p", template_name="t"))
    (claim,) = report["resourceClaims"]
    assert claim["name"] == "default/p-gpus"
    status = claim["status"]
    assert status["reservedFor"] == ["default/p"]
    assert status["allocation"]["devices"]["results"] == [
        {"request": "nic", "driver": "gpu.example.com", "pool": "n0", "device": "nic-0"}]
    assert status["devices"][0]["networkData"] == {"interfaceName": "eth1", "ips": ["10.1.0.5/24"]}


def test_deterministic(tmp_path: Path) -> None:
    first = build_report(Simulation(load_paths([str(EXAMPLE)]), builtin("gang")).run())
    again = build_report(Simulation(load_paths([str(EXAMPLE)]), builtin("gang")).run())
    for report in (first, again):
        report.pop("stats")
    assert first == again
