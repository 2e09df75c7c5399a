"""Default durations for real manifests (no `phalanx.dev/duration`): batch pods run 1h by default, per owner kind
overridable with `--default-duration`; services and bare pods run for the whole horizon; one stderr line says
how many pods got a default; bad specs are one-line errors naming the flag."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.sim.durations import BATCH_KINDS, DEFAULT_DURATIONS, parse_default_durations
from tests.test_cli_errors import fails_with
from tests.test_cli_errors import run as cli


def test_specs() -> None:
    assert dict(DEFAULT_DURATIONS) == {kind: 3600.0 for kind in BATCH_KINDS}
    assert parse_default_durations("none") == ()
    assert dict(parse_default_durations("30m")) == {kind: 1800.0 for kind in BATCH_KINDS}
    chosen = dict(parse_default_durations("Job=2h, Pod=10m, MPIJob=none"))
    assert chosen == {"Job": 7200.0, "PyTorchJob": 3600.0, "TFJob": 3600.0, "Pod": 600.0}


@pytest.mark.parametrize(("spec", "detail"), [
    ("Widget=1h", "'Widget=1h': want KIND=DURATION with KIND one of Job"),
    ("Job=soon", "invalid duration 'soon'"),
    ("0s", "must be above 0, got '0s'"),
    ("Job", "invalid duration 'Job'"),
])
def test_bad_specs_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, detail: str) -> None:
    path = _inputs(tmp_path)
    fails_with(capsys, ["simulate", str(path), "--default-duration", spec], "--default-duration", detail)


def _inputs(tmp_path: Path) -> Path:
    template: dict[str, Any] = {"spec": {"restartPolicy": "Never", "containers": [
        {"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]}}
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
         "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}}},
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": "ml"},
         "spec": {"parallelism": 2, "completions": 4, "template": template}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "ml"},
         "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                  "template": {"metadata": {"labels": {"app": "web"}},
                               "spec": {**template["spec"], "restartPolicy": "Always"}}}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "debug", "namespace": "ml"}, **template}]
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return path


def _run(capsys: pytest.CaptureFixture[str], path: Path, *flags: str) -> tuple[dict[str, Any], str]:
    status, out, err = cli(capsys, "simulate", str(path), "-o", "json", *flags)
    assert status == 0, err
    return json.loads(out), err


def test_batch_pods_run_an_hour_and_services_the_whole_horizon(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    report, err = _run(capsys, _inputs(tmp_path))
    assert report["endTime"] == 7200.0  # two waves of the Job's 2 pods, an hour each
    pods = report["summary"]["pods"]
    assert (pods["succeeded"], pods["running"]) == (4, 3)  # the Deployment's 2 pods and the bare pod run on
    assert report["defaultDurations"] == {"Job": {"seconds": 3600.0, "pods": 4}}
    assert "4 pod(s) without phalanx.dev/duration ran for a default: Job 1h (4); --default-duration changes it" in err


def test_per_kind_and_none(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _inputs(tmp_path)
    report, _ = _run(capsys, path, "--default-duration", "Job=10m,Pod=5m")
    assert report["endTime"] == 1200.0
    assert report["defaultDurations"] == {"Job": {"seconds": 600.0, "pods": 4}, "Pod": {"seconds": 300.0, "pods": 1}}
    report, err = _run(capsys, path, "--default-duration", "none")
    assert report["endTime"] == 0.0 and "defaultDurations" not in report and "default" not in err
    assert report["summary"]["makespan"] == {"seconds": None, "unfinishedPods": 5}


def test_a_written_duration_wins(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _inputs(tmp_path)
    docs = list(yaml.safe_load_all(path.read_text()))
    docs[1]["metadata"]["annotations"] = {"phalanx.dev/duration": "15m"}
    path.write_text(yaml.safe_dump_all(docs))
    report, _ = _run(capsys, path)
    assert report["endTime"] == 1800.0 and "defaultDurations" not in report


def test_compare_and_sweep_use_the_same_defaults(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _inputs(tmp_path)
    status, out, err = cli(capsys, "compare", str(path), "--profiles", "default,gang", "-o", "json")
    assert status == 0, err
    assert [r["endTime"] for r in json.loads(out)["results"]] == [7200.0, 7200.0]
    status, out, err = cli(capsys, "sweep", "--manifests", str(path), "--profiles", "gang", "--workers", "1",
                           "-o", "json")
    assert status == 0, err
    assert json.loads(out)["results"][0]["summary"]["pods"]["succeeded"] == 4
