"""LeaderWorkerSet: leaders `<lws>-<group>` and workers `<lws>-<group>-<i>`, one gang PodGroup per group, the
whole group made again when one of its pods is evicted (RecreateGroupOnPodRestart), bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import load_profile
from phalanx.sim.report import build_report
from phalanx.sim.simulation import Simulation
from tests.builders import MakeNode, MakePod, write_manifests
from tests.controllers.set_manifests import leader_worker_set
from tests.test_cli_errors import fails_with


def _simulate(tmp_path: Path, *docs: Any, until: float = 600, profile: str = "gang") -> Simulation:
    path = write_manifests(tmp_path / "input.yaml", *docs)
    return Simulation(load_paths([str(path)]), load_profile(profile), until=until).run()


def _node(name: str = "node-a", cpu: str = "8") -> MakeNode:
    return MakeNode(name).alloc(cpu=cpu, memory="32Gi")


def test_leaders_workers_labels_and_one_pod_group_per_group(tmp_path: Path) -> None:
    sim = _simulate(tmp_path, _node(), leader_worker_set("llm", replicas=2, size=3, leader_cpu="2"))
    assert sorted(sim.pods) == ["default/llm-0", "default/llm-0-1", "default/llm-0-2", "default/llm-1",
                                "default/llm-1-1", "default/llm-1-2"]
    leader, worker = sim.pods["default/llm-1"].pod, sim.pods["default/llm-1-2"].pod
    assert leader.requests["cpu"] == 2000 and worker.requests["cpu"] == 1000  # leaderTemplate, workerTemplate
    assert (leader.labels["leaderworkerset.sigs.k8s.io/name"], leader.labels["leaderworkerset.sigs.k8s.io/group-index"],
            leader.labels["leaderworkerset.sigs.k8s.io/worker-index"]) == ("llm", "1", "0")
    assert worker.labels["leaderworkerset.sigs.k8s.io/worker-index"] == "2" and worker.labels["app"] == "llm"
    assert leader.owner == worker.owner == "default/llm" and leader.controller == "LeaderWorkerSet"
    assert {k: g.group.min_count for k, g in sim.groups.items()} == {"default/llm-0": 3, "default/llm-1": 3}
    assert all(r.phase == "Running" for r in sim.pods.values())  # serving pods run until evicted
    rows = [w for w in build_report(sim)["workloads"] if w["kind"] == "LeaderWorkerSet"]
    assert [(w["name"], w["pods"], w["running"]) for w in rows] == [("default/llm", 6, 6)]


def test_a_group_that_does_not_fit_stays_wholly_pending_while_another_runs(tmp_path: Path) -> None:
    # Room for 5 pods of 1 cpu: group 0 (3 pods) runs; group 1 would get 2 of its 3 and so gets none.
    sim = _simulate(tmp_path, _node(cpu="5"), leader_worker_set("llm", replicas=2, size=3))
    phases = {k: r.phase for k, r in sim.pods.items()}
    assert [phases[k] for k in ("default/llm-0", "default/llm-0-1", "default/llm-0-2")] == ["Running"] * 3
    assert [phases[k] for k in ("default/llm-1", "default/llm-1-1", "default/llm-1-2")] == ["Pending"] * 3


def _preempting_pod(cpu: str = "2") -> dict[str, Any]:
    urgent = MakePod("urgent").req(cpu=cpu).arrival("60s").manifest()
    urgent["spec"]["priority"] = 1000
    urgent["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "node-b"}
    return urgent


def _two_nodes() -> list[MakeNode]:
    return [_node("node-a", cpu="2").label("kubernetes.io/hostname", "node-a"),
            _node("node-b", cpu="2").label("kubernetes.io/hostname", "node-b")]


def test_an_evicted_pod_brings_its_whole_group_back(tmp_path: Path) -> None:
    lws = leader_worker_set("llm", replicas=1, size=4)
    sim = _simulate(tmp_path, *_two_nodes(), lws, _preempting_pod(), until=600)
    assert sim.preemptions == 1
    # Two of the group's pods were evicted from node-b; the two on node-a were deleted and made again at once.
    arrived = sorted(r.pod.arrival for k, r in sim.pods.items() if k.startswith("default/llm"))
    assert arrived == [60.0, 60.0, 90.0, 90.0]  # the evicted two came back after their 30s grace
    assert sorted(r.preempted_count for k, r in sim.pods.items() if k.startswith("default/llm")) == [0, 0, 1, 1]
    assert all(r.phase == "Pending" for k, r in sim.pods.items() if k.startswith("default/llm"))
    assert sim.pods["default/urgent"].phase == "Running"


def test_restart_policy_none_brings_back_only_the_evicted_pods(tmp_path: Path) -> None:
    lws = leader_worker_set("llm", replicas=1, size=4, restart_policy="None")
    sim = _simulate(tmp_path, *_two_nodes(), lws, _preempting_pod(), until=600)
    on_a = [r for r in sim.pods.values() if r.node == "node-a"]
    assert len(on_a) == 2 and all(r.phase == "Running" and r.created == 0.0 for r in on_a)
    assert sorted(r.phase for k, r in sim.pods.items() if k.startswith("default/llm")) == [
        "Pending", "Pending", "Running", "Running"]


def _write(tmp_path: Path, doc: dict[str, Any]) -> str:
    return str(write_manifests(tmp_path / "input.yaml", _node(), doc))


def test_a_size_of_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, leader_worker_set("llm", size=0))
    fails_with(capsys, ["simulate", path], path, "LeaderWorkerSet default/llm", "spec.leaderWorkerTemplate.size",
               "at least 1")


def test_a_missing_worker_template(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = leader_worker_set("llm")
    del doc["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    path = _write(tmp_path, doc)
    fails_with(capsys, ["validate", path], path, "LeaderWorkerSet default/llm",
               "spec.leaderWorkerTemplate.workerTemplate", "is required")


def test_a_bad_restart_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, leader_worker_set("llm", restart_policy="Sometimes"))
    fails_with(capsys, ["validate", path], path, "LeaderWorkerSet default/llm",
               "spec.leaderWorkerTemplate.restartPolicy", "'Sometimes'")


def test_a_bad_container_in_the_leader_template(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = leader_worker_set("llm", leader_cpu="1")
    doc["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "x"
    path = _write(tmp_path, doc)
    fails_with(capsys, ["simulate", path], path, "LeaderWorkerSet default/llm",
               "spec.leaderWorkerTemplate.leaderTemplate.spec.containers[0].resources.requests.cpu")
