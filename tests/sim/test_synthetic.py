"""scheduler_perf-style synthetic workloads (phalanx.sim.synthetic, `phalanx generate`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.cli import main
from phalanx.errors import InputError
from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import load_profile
from phalanx.sim.report import build_report
from phalanx.sim.simulation import Simulation
from phalanx.sim.synthetic import generate, load_workload, parse_workload, to_inputs

WORKLOAD: dict[str, Any] = {
    "params": {"nodes": 4, "gangs": 2},
    "workloadTemplate": [
        {"opcode": "createNodes", "countParam": "$nodes",
         "nodeTemplate": {"status": {"allocatable": {"cpu": "16", "memory": "64Gi"}}}},
        {"opcode": "createPods", "count": 3, "interval": "30s", "duration": "1h"},
        {"opcode": "sleep", "duration": "2h"},
        {"opcode": "createPodGroups", "countParam": "$gangs", "minCount": 3, "podsPerGroup": 4,
         "podTemplate": {"spec": {"containers": [{"name": "w", "resources": {"requests": {"cpu": "8"}}}]}}},
    ],
}


def _kinds(manifests: list[dict[str, Any]]) -> list[str]:
    return [m["kind"] for m in manifests]


def test_counts_names_and_order() -> None:
    manifests = generate(parse_workload(WORKLOAD))
    assert _kinds(manifests) == ["Node"] * 4 + ["Pod"] * 3 + (["PodGroup"] + ["Pod"] * 4) * 2
    assert [m["metadata"]["name"] for m in manifests[:5]] == ["node-00000", "node-00001", "node-00002",
                                                              "node-00003", "pod-00000"]
    group, member = manifests[7], manifests[8]
    assert group["metadata"]["name"] == "group-00000"
    assert group["spec"] == {"schedulingPolicy": {"gang": {"minCount": 3}}}
    assert member["metadata"]["name"] == "group-00000-0"
    assert member["spec"]["schedulingGroup"] == {"podGroupName": "group-00000"}


def test_templates_merge_over_scheduler_perf_defaults() -> None:
    manifests = generate(parse_workload(WORKLOAD))
    node = manifests[0]
    assert node["status"]["allocatable"] == {"cpu": "16", "memory": "64Gi", "pods": "110"}
    assert node["status"]["capacity"] == node["status"]["allocatable"]
    assert "generateName" not in node["metadata"]
    pod = manifests[4]  # pod-default.yaml: 100m cpu, 500Mi
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "100m", "memory": "500Mi"}
    assert manifests[8]["spec"]["containers"] == [{"name": "w", "resources": {"requests": {"cpu": "8"}}}]


def test_arrivals_follow_interval_and_sleep() -> None:
    inputs = to_inputs(generate(parse_workload(WORKLOAD)))
    assert [p.arrival for p in inputs.pods[:3]] == [0.0, 30.0, 60.0]
    assert all(p.duration == 3600.0 for p in inputs.pods[:3])
    assert {p.arrival for p in inputs.pods[3:]} == {7200.0}
    assert {g.arrival for g in inputs.pod_groups} == {7200.0}


def test_generated_workload_simulates() -> None:
    sim = Simulation(to_inputs(generate(parse_workload(WORKLOAD))), load_profile("gang")).run()
    report = build_report(sim)
    assert report["summary"]["podGroups"] == {"total": 2, "scheduled": 2, "pending": 0}
    assert report["summary"]["pods"]["succeeded"] == 3
    assert report["summary"]["pods"]["running"] == 8  # 8 gang pods of 8 cpu on 4 × 16 cpu


def test_deterministic() -> None:
    assert generate(parse_workload(WORKLOAD)) == generate(parse_workload(WORKLOAD))


def test_basic_groups_and_template_files(tmp_path: Path) -> None:
    (tmp_path / "pod.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {generateName: w-}\n"
                                       "spec: {containers: [{name: w, resources: {requests: {cpu: '1'}}}]}\n")
    (tmp_path / "w.yaml").write_text(yaml.safe_dump({"workloadTemplate": [
        {"opcode": "createPodGroups", "count": 1, "policy": "basic", "podsPerGroup": 2,
         "podTemplatePath": "pod.yaml", "namespace": "team", "namePrefix": "batch"}]}))
    manifests = generate(load_workload(str(tmp_path / "w.yaml")))
    assert manifests[0]["spec"] == {"schedulingPolicy": {"basic": {}}}
    assert [m["metadata"]["name"] for m in manifests] == ["batch-00000", "batch-00000-0", "batch-00000-1"]
    assert {m["metadata"]["namespace"] for m in manifests} == {"team"}
    assert manifests[1]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1"}


BAD = [
    ([], None, "a workload is a mapping"),
    ({"workloadTemplate": []}, "workloadTemplate", "non-empty list"),
    ({"workloadTemplate": [{"opcode": "barrier"}]}, "opcode", "unsupported opcode 'barrier'"),
    ({"workloadTemplate": [{"opcode": "createPods", "count": 1, "podTemplat": {}}]}, None, "unknown key(s)"),
    ({"workloadTemplate": [{"opcode": "createPods", "count": -1}]}, "count", "non-negative"),
    ({"workloadTemplate": [{"opcode": "createPods", "countParam": "$n"}]}, "countParam", "no param named '$n'"),
    ({"workloadTemplate": [{"opcode": "createPodGroups", "count": 1}]}, "minCount", "positive integer"),
    ({"workloadTemplate": [{"opcode": "createPodGroups", "count": 1, "minCount": 3, "podsPerGroup": 2}]},
     "podsPerGroup", "less than minCount"),
    ({"workloadTemplate": [{"opcode": "sleep", "duration": "later"}]}, "duration", "invalid duration"),
    ({"workloadTemplate": [{"opcode": "sleep"}]}, "duration", "is required"),
    ({"params": {"n": "ten"}, "workloadTemplate": [{"opcode": "sleep", "duration": 1}]}, "params.n",
     "non-negative integer"),
]


@pytest.mark.parametrize(("raw", "field", "message"), BAD, ids=[b[2] for b in BAD])
def test_bad_workloads_name_the_key(raw: Any, field: str | None, message: str) -> None:
    with pytest.raises(InputError) as err:
        generate(parse_workload(raw, "w.yaml"))
    assert err.value.file == "w.yaml"
    assert err.value.field == field
    assert message in err.value.detail


def test_generate_command_prints_loadable_manifests(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text(yaml.safe_dump(WORKLOAD))
    assert main(["generate", str(workload)]) == 0
    (tmp_path / "out.yaml").write_text(capsys.readouterr().out)
    inputs = load_paths([str(tmp_path / "out.yaml")])
    assert (len(inputs.nodes), len(inputs.pods), len(inputs.pod_groups)) == (4, 11, 2)
    assert main(["generate", str(workload), "-o", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["kind"] == "List" and len(listed["items"]) == 17


def test_generate_command_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text("workloadTemplate: [{opcode: createNodes, count: many}]\n")
    assert main(["generate", str(workload)]) == 2
    assert capsys.readouterr().err == (f"phalanx: error: {workload}: workloadTemplate[0]: count: must be a "
                                       "non-negative integer, got 'many'\n")
