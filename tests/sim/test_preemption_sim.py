"""Preemption in the simulator: what happens to victims (graceful termination, recreation by their
controller, lost work and checkpoints), what the report says (preemptions, evictions, lost resource-hours,
preemptedCount, preemptedBy), the web-vs-batch example, and PodDisruptionBudgets read from YAML."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from phalanx.cli import main
from phalanx.inputs.load import Inputs, load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.report import build_report
from phalanx.sim.simulation import Simulation
from tests.builders import MakeJob, MakeNode, MakePod, MakePodGroup, inputs_of, write_manifests

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "web-vs-batch"
SPIKE_START, SPIKE_END = 3600.0, 3660.0 + 7200.0  # the spike pods arrive at 1h and bind after the victims' grace


def example(mode: str, profile: str, until: float = 12 * 3600.0) -> Simulation:
    inputs = load_paths([str(EXAMPLE / "common"), str(EXAMPLE / mode)])
    return Simulation(inputs, builtin(profile), until=until).run()


def trainers(sim: Simulation) -> list[Any]:
    return [sim.pods[f"batch/trainer-{i}"] for i in range(4)]


# --- the web-vs-batch example -------------------------------------------------------------------------------

def test_example_all_evicts_the_whole_gang_once_and_it_lands_again_after_the_spike() -> None:
    sim = example("all", "gang")
    report = build_report(sim)
    assert (report["summary"]["preemptions"], report["summary"]["evictions"]) == (1, 4)
    assert [t.preempted_count for t in trainers(sim)] == [1, 1, 1, 1]
    assert {t.preempted_by[0]["preemptor"] for t in trainers(sim)} == {"shop/web-spike-1"}
    group = sim.groups["batch/nightly-training-workers"]
    assert group.preempted_count == 1
    assert group.conditions["DisruptionTarget"]["reason"] == "PreemptionByScheduler"
    # Waited as a unit for the spike to end, then for its next retry: a failed group is tried again when its
    # backoff ends (every 21 s by then: 10 s × √4), not when room frees.
    assert SPIKE_END - SPIKE_START < group.waits[-1] <= SPIKE_END - SPIKE_START + 21
    assert all(t.phase == "Succeeded" for t in trainers(sim))
    # 4 workers of 8 cpu lose the 15 minutes since their 45-minute checkpoint: 8 core-hours.
    assert report["summary"]["lostResourceHours"]["cpu"] == pytest.approx(8.0)
    entry = next(g for g in report["podGroups"] if g["name"] == "batch/nightly-training-workers")
    assert entry["preemptedCount"] == 1


def test_example_all_gang_waits_as_one_group_during_the_spike() -> None:
    sim = example("all", "gang", until=2 * 3600.0)
    assert [t.phase for t in trainers(sim)] == ["Pending"] * 4
    assert sim.group_message("batch/nightly-training-workers") is not None
    running = [r for r in sim.pods.values() if r.phase == "Running"]
    assert sorted(r.pod.name for r in running) == ["web-base-a", "web-base-b", "web-base-c", "web-base-d",
                                                    "web-spike-1", "web-spike-2", "web-spike-3"]


def test_example_single_evicts_fewer_pods_one_at_a_time() -> None:
    single, whole = example("single", "gang"), example("all", "gang")
    assert build_report(single)["summary"]["evictions"] < build_report(whole)["summary"]["evictions"]
    assert build_report(single)["summary"]["evictions"] == 2
    assert sorted(t.preempted_count for t in trainers(single)) == [0, 0, 1, 1]
    # the survivors hold their cpus for nothing while their peers wait: stranded capacity
    assert build_report(single)["summary"]["strandedResourceHours"]["cpu"] > 10


def test_example_without_generic_workload_the_gang_is_broken_up() -> None:
    report = build_report(example("all", "default"))
    assert report["summary"]["evictions"] == 2  # disruptionMode: all means nothing with the gate off


# --- victims after eviction ---------------------------------------------------------------------------------

def _victim_case(victim: Any, grace: int = 30) -> Inputs:
    inputs = inputs_of(
        MakeNode("node-a").alloc(cpu="4", memory="16Gi"),
        victim,
        MakePod("p").req(cpu="4").priority(100).arrival("600").duration("1h"),
    )
    for pod in inputs.pods:
        pod.termination_grace = float(grace)
    return inputs


def test_a_bare_pod_ends_failed_naming_its_preemptor() -> None:
    sim = Simulation(_victim_case(MakePod("bare").req(cpu="4").node("node-a")), builtin("default"),
                     until=7200.0).run()
    record = sim.pods["default/bare"]
    assert (record.phase, record.finished_at, record.node) == ("Failed", 630.0, None)
    assert record.message == "Preempted by pod default/p on node node-a"
    assert record.preempted_by == [{"time": 600.0, "preemptor": "default/p", "node": "node-a",
                                    "message": "Preempted by pod default/p on node node-a"}]
    entry = next(p for p in build_report(sim)["pods"] if p["name"] == "default/bare")
    assert entry["message"] == "Preempted by pod default/p on node node-a"
    assert (entry["preemptedCount"], entry["phase"]) == (1, "Failed")


def test_a_job_owned_pod_is_recreated_and_queues_again() -> None:
    job = MakeJob("etl").parallelism(1).completions(1).req(cpu="4").duration("3h")
    job.doc["spec"]["template"]["spec"]["priority"] = 1
    sim = Simulation(_victim_case(job), builtin("default"), until=630.0).run()
    record = sim.pods["default/etl-0"]
    assert (record.phase, record.preempted_count, record.node) == ("Pending", 1, None)
    assert record.preempted_by[0]["preemptor"] == "default/p"
    sim = Simulation(_victim_case(job), builtin("default"), until=20000.0).run()
    record = sim.pods["default/etl-0"]
    assert record.phase == "Succeeded" and record.finished_at == pytest.approx(630.0 + 3600.0 + 3 * 3600.0)


def _bare_member_case() -> Inputs:
    """A bare member of a one-pod gang, running, and a higher-priority pod that preempts it at 600 s."""
    return inputs_of(
        MakeNode("node-a").alloc(cpu="4", memory="16Gi"),
        MakePodGroup("train").gang(1).priority(1),
        MakePod("train-0").req(cpu="4").priority(1).group("train").node("node-a").duration("2h"),
        MakePod("p").req(cpu="4").priority(100).arrival("600").duration("1h"),
    )


def test_a_workload_owned_pod_is_recreated_and_queues_again() -> None:
    sim = Simulation(_bare_member_case(), builtin("gang"), until=20000.0).run()
    record = sim.pods["default/train-0"]
    assert record.preempted_count == 1 and record.phase == "Succeeded"
    # No checkpoint: it starts over, at its group's first retry after p ends (every 11 s by then).
    assert 630.0 + 3600.0 < record.finished_at - 2 * 3600.0 <= 630.0 + 3600.0 + 11
    assert sim.groups["default/train"].preempted_count == 1


def test_a_bare_member_fails_where_nothing_recreates_it() -> None:
    """verify's real cluster runs no workload controller: an evicted bare member is gone, as on the API server."""
    sim = Simulation(_bare_member_case(), builtin("gang"), until=20000.0)
    sim.recreate_bare_members = False
    sim.run()
    record = sim.pods["default/train-0"]
    assert (record.phase, record.finished_at, record.node) == ("Failed", 630.0, None)  # after its grace period
    assert record.message == "Preempted by pod default/p on node node-a"
    assert sim.pods["default/p"].phase == "Succeeded"


def test_a_replica_set_pod_is_recreated() -> None:
    owned = MakePod("web-1").req(cpu="4").node("node-a")
    owned.doc["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                                                 "uid": "1", "controller": True}]
    sim = Simulation(_victim_case(owned), builtin("default"), until=7200.0).run()
    assert (sim.pods["default/web-1"].phase, sim.pods["default/web-1"].node) == ("Running", "node-a")


# --- lost work ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("checkpoint", "lost_minutes", "finish"), [
    (None, 600 / 60, 630 + 3600 + 7200),        # everything since the start is lost: all 2h again
    ("4m", 2, 630 + 3600 + 7200 - 8 * 60),      # checkpoints at 4m and 8m: 2 minutes lost, 8 kept
])
def test_lost_work_since_the_last_checkpoint_in_resource_hours(checkpoint: str | None, lost_minutes: float,
                                                                finish: float) -> None:
    victim = MakePod("job-0").req(cpu="4", memory="8Gi").node("node-a").duration("2h")
    victim.doc["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "job",
                                                  "uid": "1", "controller": True}]
    if checkpoint is not None:
        victim.annotation("phalanx.dev/checkpoint-interval", checkpoint)
    sim = Simulation(_victim_case(victim), builtin("default"), until=30000.0).run()
    lost = build_report(sim)["summary"]["lostResourceHours"]
    assert lost["cpu"] == pytest.approx(4 * lost_minutes / 60, abs=1e-6)  # the report rounds to 6 places
    assert lost["memory"] == pytest.approx(8 * 2**30 * lost_minutes / 60)
    assert sim.pods["default/job-0"].finished_at == pytest.approx(finish)


def test_nothing_is_lost_without_preemption() -> None:
    inputs = inputs_of(MakeNode("node-a").alloc(cpu="8", memory="16Gi"),
                       MakePod("a").req(cpu="4").node("node-a").duration("1h"),
                       MakePod("p").req(cpu="4").priority(100).arrival("600").duration("1h"))
    report = build_report(Simulation(inputs, builtin("default")).run())
    assert (report["summary"]["preemptions"], report["summary"]["evictions"]) == (0, 0)
    assert report["summary"]["lostResourceHours"] == {}


def test_every_eviction_names_its_preemptor() -> None:
    sim = example("single", "gang")
    report = build_report(sim)
    evicted = [p for p in report["pods"] if p["preemptedCount"]]
    assert sum(p["preemptedCount"] for p in evicted) == report["summary"]["evictions"] == 2
    names = {p["name"]: p for p in report["pods"]}
    for entry in evicted:
        assert len(entry["preemptedBy"]) == entry["preemptedCount"]
        for event in entry["preemptedBy"]:
            assert names[event["preemptor"]]["priority"] > entry["priority"]
            assert event["node"].startswith("node-")


# --- PodDisruptionBudgets from YAML -------------------------------------------------------------------------

def _pdb(spec: dict[str, Any], api_version: str = "policy/v1") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": "PodDisruptionBudget",
            "metadata": {"name": "db", "namespace": "default"}, "spec": spec}


def _db_cluster(tmp_path: Path, spec: dict[str, Any]) -> Simulation:
    """db-0 and db-1 (priority 1) on node-a and node-b, batch (priority 5) on node-c; p (priority 100) needs
    one whole node. Without a PDB in the way the cheaper db pods go."""
    items: list[Any] = [MakeNode(f"node-{x}").alloc(cpu="4", memory="16Gi") for x in "abc"]
    items += [MakePod(f"db-{i}").req(cpu="4").label("app", "db").priority(1).node(f"node-{'ab'[i]}") for i in (0, 1)]
    items += [MakePod("batch").req(cpu="4").label("app", "batch").priority(5).node("node-c"),
              MakePod("p").req(cpu="4").priority(100).arrival("60"), _pdb(spec)]
    inputs = load_paths([str(write_manifests(tmp_path / "cluster.yaml", *items))])
    assert len(inputs.pdbs) == 1
    return Simulation(inputs, builtin("default"), until=600.0).run()


def _victims(sim: Simulation) -> list[str]:
    return sorted(r.pod.name for r in sim.pods.values() if r.preempted_count)


DB = {"matchLabels": {"app": "db"}}


@pytest.mark.parametrize(("budget", "victims"), [
    ({"minAvailable": 2, "selector": DB}, ["batch"]),
    ({"minAvailable": "100%", "selector": DB}, ["batch"]),
    ({"maxUnavailable": 0, "selector": DB}, ["batch"]),
    ({"maxUnavailable": "0%", "selector": DB}, ["batch"]),
    ({"minAvailable": 2, "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]}},
     ["batch"]),
    ({"minAvailable": 1, "selector": DB}, ["db-?"]),         # one disruption allowed
    ({"maxUnavailable": "50%", "selector": DB}, ["db-?"]),   # 50% of 2, rounded up: one allowed
    ({"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}, ["db-?"]),  # selects nothing here
    ({"minAvailable": 2, "selector": {}}, ["db-?"]),         # kube-scheduler: an empty selector matches nothing
])
def test_pdbs_from_yaml_steer_the_node_choice(tmp_path: Path, budget: dict[str, Any], victims: list[str]) -> None:
    got = _victims(_db_cluster(tmp_path, budget))
    assert [v if not v.startswith("db-") else "db-?" for v in got] == victims


def test_pdbs_are_best_effort(tmp_path: Path) -> None:
    items: list[Any] = [MakeNode("node-a").alloc(cpu="4", memory="16Gi"),
                        MakePod("db-0").req(cpu="4").label("app", "db").priority(1).node("node-a"),
                        MakePod("p").req(cpu="4").priority(100).arrival("60"),
                        _pdb({"minAvailable": 1, "selector": DB})]
    inputs = load_paths([str(write_manifests(tmp_path / "cluster.yaml", *items))])
    sim = Simulation(inputs, builtin("default"), until=600.0).run()
    assert _victims(sim) == ["db-0"]


@pytest.mark.parametrize("spec", [
    {"minAvailable": 1, "maxUnavailable": 1, "selector": DB},
    {"minAvailable": "abc", "selector": DB},
    {"maxUnavailable": -1, "selector": DB},
    {"minAvailable": 1.5, "selector": DB},
    {"minAvailable": 1, "selector": {"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]}},
    {"minAvailable": "150%", "selector": DB},
    {"maxUnavailable": "5", "selector": DB},
])
def test_bad_pdb_input_exits_2(tmp_path: Path, spec: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    path = write_manifests(tmp_path / "pdb.yaml", _pdb(spec))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "PodDisruptionBudget default/db" in err or "PodDisruptionBudget db" in err


def test_a_pdb_in_an_unserved_api_version_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_manifests(tmp_path / "pdb.yaml", _pdb({"minAvailable": 1, "selector": DB}, "policy/v1beta1"))
    assert main(["validate", str(path)]) == 2
    assert "policy/v1" in capsys.readouterr().err
