"""KAI's consolidation under the `kai` profile (phalanx/scheduler/consolidation.py), restated from
NVIDIA/KAI-Scheduler `pkg/scheduler/actions/consolidation/consolidation_test.go` TestConsolidation: each case's
running jobs (one pod each, on the node it names, made by a Job), its pending jobs, two nodes of whole GPUs and
queue `queue0` (deserved 2 GPUs). KAI's test runs the consolidation action alone and reads the pipelined
placements; here the whole run goes on, so a moved pod is evicted, made again and scheduled (30 s later), and the
pending pod is bound to the node consolidation freed for it.

Not restated: "verify build job allocation isn't handled by consolidation" (the pending build job fits without
moving anything, so the run's allocation places it: the case checks the action alone), the cases with several
queues' shares, and the subgroup and GPU-memory files. A gang (a KAI PodGroup of several pods) is consolidated
for as one job: the partially allocated elastic case is restated below, and a strict gang is Phalanx's own case."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.report import build_report
from phalanx.sim.scenario import scenario_for
from phalanx.sim.simulation import Simulation
from tests.sim.test_invariants import Watched

Doc = dict[str, Any]
TRAIN, BUILD = "train", "build"


def _node(name: str, gpus: int) -> Doc:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}}}


def _spec(gpus: int, priority: str) -> Doc:
    return {"schedulerName": "kai-scheduler", "restartPolicy": "Never", "priorityClassName": priority,
            "containers": [{"name": "c", "image": "x",
                            "resources": {"limits": {"nvidia.com/gpu": str(gpus)}, "requests": {"cpu": "1"}}}]}


def _running(name: str, gpus: int, node: str, priority: str = TRAIN) -> Doc:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": name, "namespace": "default", "labels": {"kai.scheduler/queue": "queue0"},
        "annotations": {"phalanx.dev/duration": "3600s"},
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": name, "controller": True}]},
        "spec": {**_spec(gpus, priority), "nodeName": node},
        "status": {"phase": "Running", "startTime": "2026-12-01T00:00:00Z"}}


def _pending(name: str, gpus: int, priority: str = TRAIN, arrival: int = 10) -> Doc:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": name, "namespace": "default", "labels": {"kai.scheduler/queue": "queue0"},
        "annotations": {"phalanx.dev/arrival": f"{arrival}s"}},
        "spec": {"parallelism": 1, "completions": 1, "template": {
            "metadata": {"labels": {"kai.scheduler/queue": "queue0"}, "annotations": {"phalanx.dev/duration": "3600s"}},
            "spec": _spec(gpus, priority)}}}


FIXED: list[Doc] = [
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": TRAIN}, "value": 50},
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": BUILD}, "value": 100},
    {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "queue0"}, "spec": {"resources": {
        "gpu": {"quota": 2, "limit": -1, "overQuotaWeight": 1},
        "cpu": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
        "memory": {"quota": -1, "limit": -1, "overQuotaWeight": 1}}}},
]


def _run(tmp_path: Path, gpus: int, docs: list[Doc]) -> dict[str, tuple[str, str | None]]:
    """Pod name (its Job's, for a pending job) -> (phase, node) at the end; a job its queue holds has none."""
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all([_node("node0", gpus), _node("node1", gpus), *FIXED, *docs]))
    sim = Simulation(load_paths([str(path)]), builtin("kai"), scenario=scenario_for("kai"), until=300)
    out: dict[str, tuple[str, str | None]] = {}
    for pod in build_report(sim.run())["pods"]:
        name = pod["name"].split("/", 1)[1]
        out[name.removesuffix("-0") if name.startswith("pending") else name] = (pod["phase"], pod["node"])
    return out


CASES: dict[str, tuple[int, list[Doc], dict[str, tuple[str, str | None]]]] = {
    "2 jobs of 1 task running on different GPUs, two pending jobs, only first can be consolidated": (4, [
        _running("running-job0", 2, "node0"), _running("running-job1", 2, "node1"),
        _pending("pending-job0", 3), _pending("pending-job1", 2, arrival=11)],
        {"running-job0": ("Running", "node0"), "running-job1": ("Running", "node0"),
         "pending-job0": ("Running", "node1")}),
    "2 jobs of 2 & 1 GPUs running, two pending jobs, only second can be consolidated": (4, [
        _running("running-job0", 2, "node0"), _running("running-job1", 1, "node1"),
        _running("running-job2", 2, "node1"), _pending("pending-job1", 3)],
        {"running-job0": ("Running", "node0"), "running-job1": ("Running", "node1"),
         "running-job2": ("Running", "node0"), "pending-job1": ("Running", "node1")}),
    "2 jobs of 1 task running on different GPUs, 2 pending jobs, only second can be consolidated": (4, [
        _running("running-job0", 2, "node0"), _running("running-job1", 2, "node1"),
        _pending("pending-job0", 5), _pending("pending-job1", 3, arrival=11)],
        {"running-job0": ("Running", "node0"), "running-job1": ("Running", "node0"),
         "pending-job1": ("Running", "node1")}),
    "2 jobs of 1 task running on different GPUs, two pending jobs - can't Consolidate": (4, [
        _running("running-job0", 3, "node0"), _running("running-job1", 3, "node1"),
        _pending("pending-job0", 2), _pending("pending-job1", 2, arrival=11)],
        {"running-job0": ("Running", "node0"), "running-job1": ("Running", "node1"),
         "pending-job0": ("Pending", None)}),
    "2 jobs of 1 task running on different GPUs, 1 job of 3 gpus is pending - can't Consolidate": (4, [
        _running("running-job0", 3, "node0"), _running("running-job1", 3, "node1"), _pending("pending-job0", 3)],
        {"running-job0": ("Running", "node0"), "running-job1": ("Running", "node1"),
         "pending-job0": ("Pending", None)}),
    "3 jobs are running on different GPUs, 1 job pending - Consolidate and verify not all preemptors are evicted as "
    "well": (4, [
        _running("running-job0", 3, "node0"), _running("running-job1", 1, "node1"),
        _running("running-job2", 2, "node1"), _pending("pending-job0", 2)],
        {"running-job0": ("Running", "node0"), "running-job1": ("Running", "node0"),
         "running-job2": ("Running", "node1"), "pending-job0": ("Running", "node1")}),
    "2 build jobs are running on different GPUs - never consoliate": (2, [
        _running("running-job0", 1, "node0", BUILD), _running("running-job1", 1, "node1", BUILD),
        _pending("pending-job0", 2, BUILD)],
        {"running-job0": ("Running", "node0"), "running-job1": ("Running", "node1"),
         "pending-job0": ("Pending", None)}),
}


FIRST = next(iter(CASES))


@pytest.mark.parametrize("case", list(CASES))
def test_consolidation(tmp_path: Path, case: str) -> None:
    gpus, docs, expected = CASES[case]
    outcome = _run(tmp_path, gpus, docs)
    # a pending job the queue holds has no pod yet: pending all the same
    assert {name: outcome.get(name, ("Pending", None)) for name in expected} == expected


def test_a_moved_pod_says_why(tmp_path: Path) -> None:
    gpus, docs, _ = copy.deepcopy(CASES[FIRST])
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all([_node("node0", gpus), _node("node1", gpus), *FIXED, *docs]))
    report = build_report(Simulation(load_paths([str(path)]), builtin("kai"), scenario=scenario_for("kai"),
                                     until=300).run())
    moved = next(p for p in report["pods"] if p["name"] == "default/running-job1")
    assert [e["message"] for e in moved["preemptedBy"]] == [
        "Consolidated for pod default/pending-job0-0 on node node1"]
    assert report["summary"]["evictions"] == 1


def test_bare_pods_are_not_moved(tmp_path: Path) -> None:
    """A bare pod evicted is gone (nothing makes it again): consolidation would kill it, so it does not move it."""
    gpus, docs, _ = copy.deepcopy(CASES[FIRST])
    for doc in docs:
        doc["metadata"].pop("ownerReferences", None)
    outcome = _run(tmp_path, gpus, docs)
    assert outcome["pending-job0"] == ("Pending", None)
    assert outcome["running-job1"] == ("Running", "node1")


def test_other_profiles_do_not_consolidate(tmp_path: Path) -> None:
    gpus, docs, _ = copy.deepcopy(CASES[FIRST])
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all([_node("node0", gpus), _node("node1", gpus), *FIXED, *docs]))
    report = build_report(Simulation(load_paths([str(path)]), builtin("gang"), until=300).run())
    assert {p["name"]: p["node"] for p in report["pods"]}["default/running-job1"] == "node1"
    assert report["summary"]["evictions"] == 0


def _group(name: str, min_member: int) -> Doc:
    return {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup", "metadata": {"name": name,
            "namespace": "default"}, "spec": {"minMember": min_member, "queue": "queue0", "priorityClassName": TRAIN}}


def _member(group: str, index: int, gpus: int) -> Doc:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": f"{group}-{index}", "namespace": "default", "labels": {"kai.scheduler/queue": "queue0"},
        "annotations": {"pod-group-name": group, "phalanx.dev/arrival": "10s", "phalanx.dev/duration": "3600s"}},
        "spec": _spec(gpus, TRAIN)}


def test_elastic_job_partially_allocated(tmp_path: Path) -> None:
    """"2 jobs of 1 task running on different GPUs, 2 pending jobs with multiple tasks, one job can partially be
    allocated": a job of two 3-GPU tasks that needs one (minMember 1; KAI's pending_job1, a KAI PodGroup here)
    takes node1 once running_job1 moves to node0; its second task and the 4-GPU job stay pending."""
    outcome = _run(tmp_path, 4, [
        _running("running-job0", 2, "node0"), _running("running-job1", 2, "node1"),
        _running("running-job2", 1, "node1"), _pending("pending-job0", 4),
        _group("elastic-job1", 1), _member("elastic-job1", 0, 3), _member("elastic-job1", 1, 3)])
    assert outcome["running-job0"] == ("Running", "node0")
    assert outcome["running-job1"] == ("Running", "node0")
    assert outcome["running-job2"] == ("Running", "node1")
    assert sorted(outcome[f"elastic-job1-{i}"] for i in range(2)) == [("Pending", None), ("Running", "node1")]
    assert outcome.get("pending-job0", ("Pending", None)) == ("Pending", None)


def test_a_gang_is_consolidated_for_as_one_job(tmp_path: Path) -> None:
    """Phalanx's own case: a gang of two 4-GPU pods (minMember 2) on three 4-GPU nodes holding 1, 1 and 2 GPUs:
    no single move makes room for both members; moving the two latest (2 GPUs from node2, 1 from node1) to node0
    does, and the gang takes node1 and node2."""
    nodes = [_node("node0", 4), _node("node1", 4), _node("node2", 4)]
    docs = [_running("running-a", 1, "node0"), _running("running-b", 1, "node1"), _running("running-c", 2, "node2"),
            _group("gang", 2), _member("gang", 0, 4), _member("gang", 1, 4)]
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all([*nodes, *FIXED, *docs]))
    report = build_report(Simulation(load_paths([str(path)]), builtin("kai"), scenario=scenario_for("kai"),
                                     until=300).run())
    where = {p["name"].split("/", 1)[1]: p["node"] for p in report["pods"]}
    assert where == {"running-a": "node0", "running-b": "node0", "running-c": "node0", "gang-0": where["gang-0"],
                     "gang-1": where["gang-1"]}
    assert {where["gang-0"], where["gang-1"]} == {"node1", "node2"}
    assert report["summary"]["evictions"] == 2


@st.composite
def _fleets(draw: st.DrawFn) -> tuple[list[Doc], list[Doc]]:
    """Two or three 4-GPU nodes, each with Job-made pods holding 2 or 3 of its GPUs (one pod or two), and pending
    Jobs of 2 to 4 GPUs: fragments that consolidation can often join, and sometimes cannot."""
    nodes = [_node(f"node{i}", 4) for i in range(draw(st.integers(2, 3)))]
    docs: list[Doc] = []
    for node in nodes:
        name = node["metadata"]["name"]
        used = draw(st.sampled_from([2, 3]))
        split = [used] if draw(st.booleans()) else [1, used - 1]
        for j, gpus in enumerate(split):
            docs.append(_running(f"running-{name}-{j}", gpus, name, draw(st.sampled_from([TRAIN, TRAIN, BUILD]))))
    for i in range(draw(st.integers(1, 3))):
        docs.append(_pending(f"pending-{i}", draw(st.integers(2, 4)), draw(st.sampled_from([TRAIN, TRAIN, BUILD])),
                             arrival=10 + i))
    return nodes, docs


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fleet=_fleets())
def test_consolidation_keeps_the_invariants(tmp_path_factory: pytest.TempPathFactory,
                                            fleet: tuple[list[Doc], list[Doc]]) -> None:
    """No node over-committed around any step (test_invariants' Watched), and a moved pod is never lost: it runs
    again or waits, it does not fail."""
    nodes, docs = fleet
    path = tmp_path_factory.mktemp("fleet") / "in.yaml"
    path.write_text(yaml.safe_dump_all([*nodes, *FIXED, *docs]))
    sim = Simulation(load_paths([str(path)]), builtin("kai"), scenario=scenario_for("kai"), until=600)
    Watched(sim)
    sim.run()
    moved = [r for r in sim.pods.values() if any(e["message"].startswith("Consolidated for") for e in r.preempted_by)]
    event(f"pods moved: {min(len(moved), 2)}+" if moved else "pods moved: 0")
    for record in moved:
        assert record.phase in ("Running", "Pending"), (record.pod.key, record.phase)
