"""Outcome metrics: time-averaged allocation, waits with the pods still pending (censored), gang and
workload completion, makespan, and one horizon for every profile of a comparison."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from phalanx.cli import main
from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.report import build_report
from phalanx.sim.simulation import Simulation

ROOT = Path(__file__).resolve().parents[2]


def node(name: str, cpu: str = "4") -> str:
    return f"""
---
apiVersion: v1
kind: Node
metadata: {{name: {name}}}
status: {{allocatable: {{cpu: "{cpu}", memory: 16Gi, pods: "110"}}}}
"""


def pod(name: str, cpu: str, *, duration: str | None = None, arrival: str | None = None,
        group: str | None = None) -> str:
    notes = {k: v for k, v in (("phalanx.dev/duration", duration), ("phalanx.dev/arrival", arrival)) if v}
    link = f"\n  schedulingGroup: {{podGroupName: {group}}}" if group else ""
    return f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default, annotations: {json.dumps(notes)}}}
spec:{link}
  containers: [{{name: c, image: img, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
"""


def report(tmp_path: Path, text: str, profile: str = "default", until: float | None = None) -> dict[str, Any]:
    (tmp_path / "in.yaml").write_text(text, encoding="utf-8")
    sim = Simulation(load_paths([str(tmp_path / "in.yaml")]), builtin(profile), until=until).run()
    return build_report(sim)


def test_time_averaged_allocation_counts_hours_held_over_hours_offered(tmp_path: Path) -> None:
    r = report(tmp_path, node("n0") + pod("a", "2", duration="50s") + pod("late", "1", arrival="100s",
                                                                          duration="100s"))
    # 2 cpu for 50 s, then 1 cpu for 100 s, of 4 cpu for 200 s: (100 + 100) / 800
    assert r["endTime"] == 200.0
    assert r["summary"]["timeAveragedAllocated"]["cpu"] == pytest.approx(0.25)


def test_pods_still_pending_count_as_censored_waits(tmp_path: Path) -> None:
    r = report(tmp_path, node("n0") + pod("fits", "2") + pod("never", "8", arrival="10s"), until=100.0)
    summary = r["summary"]
    assert summary["waitSeconds"]["count"] == 1
    with_pending = summary["waitSecondsIncludingPending"]
    assert with_pending["censored"] == 1 and with_pending["count"] == 2 and with_pending["max"] == 90.0


def test_gang_completion_and_makespan(tmp_path: Path) -> None:
    group = """
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: g, namespace: default}
spec: {schedulingPolicy: {gang: {minCount: 2}}}
"""
    text = node("n0") + group + pod("m0", "2", duration="30s", group="g") + \
        pod("m1", "2", duration="30s", arrival="5s", group="g")
    r = report(tmp_path, text, profile="gang")
    entry = r["podGroups"][0]
    assert entry["completedAt"] == 35.0 and entry["completionSeconds"] == 35.0
    assert r["summary"]["groupCompletionSeconds"]["max"] == 35.0
    assert r["summary"]["makespan"] == {"seconds": 35.0, "unfinishedPods": 0}
    # a pod that runs forever takes the room m1 needed: the gang and the makespan never finish
    unfinished = report(tmp_path, text + pod("forever", "1"), profile="gang")
    assert unfinished["summary"]["makespan"] == {"seconds": None, "unfinishedPods": 3}
    assert unfinished["podGroups"][0]["completionSeconds"] is None


def test_workload_rows_by_owner(tmp_path: Path) -> None:
    job = """
---
apiVersion: batch/v1
kind: Job
metadata: {name: etl, namespace: default, annotations: {phalanx.dev/duration: 20s}}
spec:
  completions: 4
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: img, resources: {requests: {cpu: "2"}}}]
"""
    r = report(tmp_path, node("n0") + job)
    rows = r["workloads"]
    assert [(w["kind"], w["name"], w["pods"], w["succeeded"]) for w in rows] == [("Job", "default/etl", 4, 4)]
    assert rows[0]["completionSeconds"] == 40.0


def test_compare_carries_every_profile_to_one_horizon(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Spreading puts b beside a's neighbour and c waits for b (ends at 21 s); packing puts b beside a and
    # c runs at once (ends at 12 s). Both are reported to 21 s.
    text = node("n0") + node("n1") + pod("a", "2") + pod("b", "2", arrival="1s", duration="10s") + \
        pod("c", "4", arrival="2s", duration="10s")
    (tmp_path / "in.yaml").write_text(text, encoding="utf-8")
    packing = str(ROOT / "examples/profiles/bin-packing.yaml")
    assert main(["compare", str(tmp_path), "--profiles", f"default,{packing}", "-o", "json"]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    assert [r["endTime"] for r in results] == [21.0, 21.0]
    waits = {r["profile"]: r["summary"]["waitSeconds"]["max"] for r in results}
    assert waits == {"default": 9.0, "gang-bin-packing": 0.0}


def test_the_html_report_has_a_row_per_workload(tmp_path: Path) -> None:
    from phalanx.sim.output import index_html
    job = """
---
apiVersion: batch/v1
kind: Job
metadata: {name: etl, namespace: default, annotations: {phalanx.dev/duration: 20s}}
spec:
  completions: 2
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: img, resources: {requests: {cpu: "1"}}}]
"""
    r = report(tmp_path, node("n0") + job)
    page = index_html(["default"], [r], {})
    assert "<h2>Workloads</h2>" in page and "Job default/etl" in page and "2/2 succeeded, 20s" in page
    assert "timeAveragedAllocated.cpu" not in page  # shown by its own row, not as an extra number
