"""Work that never ran counts in every headline: a Job a queueing policy never admits, or one that stays
suspended, made no pod, so it never showed as pending; now the summary counts it beside pending
(`notAdmitted`), its completions stay unfinished (the makespan stays open), its workload row says why, the
terminal table and the sweep's columns show it, and stderr names it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.sim.tables import summary_rows
from tests.sim.test_admission_gate import cluster_queue, flavor, job, local_queue, node, run, volcano_queue
from tests.test_cli_errors import run as cli

UPSTREAM = Path(__file__).resolve().parents[1] / "upstream"


def _suspended(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for doc in docs:
        if doc["kind"] == "Job":
            doc["spec"]["suspend"] = True
    return docs


def test_a_suspended_job_never_runs_and_counts_as_not_admitted(tmp_path: Path) -> None:
    """A suspended Job with nothing to resume it: the Job controller creates no pod (kube-controller-manager's
    syncJob deletes active pods and creates none while spec.suspend is true)."""
    report = run(tmp_path, [node("n1"), *_suspended([job("ml", "idle", cpu="1", pods=3)]),
                            job("ml", "busy", cpu="1", pods=2, duration="10m")], "default")
    summary = report["summary"]
    assert summary["pods"]["total"] == 2 and summary["pods"]["pending"] == 0
    assert summary["notAdmitted"] == {"workloads": 1, "podsNotCreated": 3}
    assert summary["makespan"] == {"seconds": None, "unfinishedPods": 3}
    [idle] = [w for w in report["workloads"] if w["name"] == "ml/idle"]
    assert idle["pods"] == 0 and idle["podsNotCreated"] == 3 and idle["held"].startswith("suspended")
    [busy] = [w for w in report["workloads"] if w["name"] == "ml/busy"]
    assert "held" not in busy and busy["succeeded"] == 2


def test_kueue_resumes_a_suspended_job_it_admits(tmp_path: Path) -> None:
    """Kueue's own samples are suspended Jobs: admission unsuspends them, so they run under `kueue` and stay
    idle under `gang`, where no Kueue runs."""
    docs = [node("n1"), flavor("default"), cluster_queue("cq", {"default": "9"}), local_queue("default", "lq", "cq"),
            *_suspended([job("default", "sample", cpu="1", pods=3, queue="lq", duration="5m")])]
    kueue, gang = run(tmp_path, docs, "kueue"), run(tmp_path, docs, "gang")
    assert kueue["summary"]["pods"]["succeeded"] == 3 and kueue["summary"]["notAdmitted"]["workloads"] == 0
    assert gang["summary"]["pods"]["total"] == 0
    assert gang["summary"]["notAdmitted"] == {"workloads": 1, "podsNotCreated": 3}


def test_a_job_kueue_never_admits_counts_with_its_reason(tmp_path: Path) -> None:
    docs = [node("n1", "16"), flavor("default"), cluster_queue("small", {"default": "1"}),
            local_queue("ml", "small", "small"), job("ml", "too-big", cpu="2", pods=4, queue="small"),
            job("ml", "fine", cpu="1", pods=1, queue="small", duration="10m")]
    report = run(tmp_path, docs, "kueue")
    assert report["summary"]["notAdmitted"] == {"workloads": 1, "podsNotCreated": 4}
    assert report["summary"]["makespan"]["seconds"] is None
    [big] = [w for w in report["workloads"] if w["name"] == "ml/too-big"]
    assert big["held"] == "pod set main: no flavor of cpu fits" and big["podsNotCreated"] == 4


def test_a_volcano_job_held_in_its_queue_counts(tmp_path: Path) -> None:
    docs = [node("n1", "4"), volcano_queue("a"), job("ml", "first", cpu="4", pods=1, volcano="a", duration="2h"),
            job("ml", "second", cpu="8", pods=1, volcano="a")]
    report = run(tmp_path, docs, "volcano")
    assert report["summary"]["notAdmitted"]["workloads"] == 1
    assert report["summary"]["makespan"]["seconds"] is None


def test_the_table_and_stderr_show_held_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Kueue's sample-job.yaml, unchanged: suspended and labelled for a LocalQueue that is not there."""
    (tmp_path / "node.yaml").write_text(yaml.safe_dump(node("n1")))
    sample = str(UPSTREAM / "kueue" / "sample-job.yaml")
    status, out, err = cli(capsys, "compare", str(tmp_path / "node.yaml"), sample, "--profiles", "gang,kueue")
    assert status == 0, err
    row = next(line for line in out.splitlines() if "workloads not admitted" in line)
    assert row.count("1 (3)") == 2
    status, out, err = cli(capsys, "compare", str(tmp_path / "node.yaml"), sample, "--profiles", "gang,kueue",
                           "-o", "json")
    rows = {label: [cell(result) for result in json.loads(out)["results"]] for label, cell in summary_rows([])}
    assert rows["makespan"] == ["not finished (3 pods; 1 workload(s) not admitted)"] * 2
    assert "gang: 1 workload(s) held: suspended (spec.suspend: true)" in err
    assert "kueue: 1 workload(s) held: LocalQueue user-queue doesn't exist" in err


def test_a_sweep_shows_held_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all([node("n1"), *_suspended([job("ml", "idle", cpu="1", pods=3)])]))
    status, out, err = cli(capsys, "sweep", "--manifests", str(path), "--profiles", "gang", "--workers", "1",
                           "-o", "json")
    assert status == 0, err
    [result] = json.loads(out)["results"]
    assert result["summary"]["notAdmitted"] == {"workloads": 1.0, "podsNotCreated": 3.0}
    status, out, err = cli(capsys, "sweep", "--manifests", str(path), "--profiles", "gang", "--workers", "1")
    assert "admitted" in out and "created" in out  # the two columns' headers (wrapped in a narrow table)
