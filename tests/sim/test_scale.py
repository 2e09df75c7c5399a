"""The scale subresource in the simulator (what an HPA calls): Deployments, ReplicaSets and StatefulSets
grow and shrink, a scale-down deleting pending pods first, then the most recently bound; StatefulSets from
the highest ordinal."""

from __future__ import annotations

from pathlib import Path

import yaml

from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.simulation import Simulation
from tests.controllers.apps_manifests import deployment, stateful_set

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def _sim(tmp_path: Path) -> Simulation:
    docs = [NODE, deployment("web", replicas=3, cpu="1"), stateful_set("db", replicas=2, cpu="100m",
                                                                        policy="Parallel")]
    (tmp_path / "in.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return Simulation(load_paths([str(tmp_path / "in.yaml")]), builtin("default"), until=10.0).run()


def _phases(sim: Simulation, prefix: str) -> list[str]:
    return sorted(r.phase for k, r in sim.pods.items() if k.startswith(prefix))


def _advance(sim: Simulation, until: float) -> None:
    sim.until = until
    sim.run()


def test_scaling_up_and_down_keeps_the_count_and_deletes_pending_pods_first(tmp_path: Path) -> None:
    sim = _sim(tmp_path)
    assert _phases(sim, "default/web") == ["Running"] * 3
    sim.scale("Deployment", "default/web", 5)  # only 4 cpu: one new pod stays pending
    _advance(sim, 20.0)
    assert _phases(sim, "default/web") == ["Pending", "Pending", "Running", "Running", "Running"]
    assert sim.workloads.replicas("Deployment", "default/web") == 5
    sim.scale("Deployment", "default/web", 2)
    _advance(sim, 30.0)
    # The two pending pods go first (they never ran), then the newest of the bound ones.
    phases = {k: r for k, r in sim.pods.items() if k.startswith("default/web")}
    assert sorted(r.phase for r in phases.values()) == ["Failed", "Failed", "Running", "Running", "Succeeded"]
    assert all(r.bound_at is None for r in phases.values() if r.phase == "Failed")


def test_a_statefulset_scales_down_from_the_highest_ordinal(tmp_path: Path) -> None:
    sim = _sim(tmp_path)
    sim.scale("StatefulSet", "default/db", 4)
    _advance(sim, 20.0)
    assert [k for k, r in sim.pods.items() if k.startswith("default/db") and r.phase == "Running"] == [
        "default/db-0", "default/db-1", "default/db-2", "default/db-3"]
    sim.scale("StatefulSet", "default/db", 1)
    _advance(sim, 30.0)
    assert [k for k, r in sim.pods.items() if k.startswith("default/db") and r.phase == "Running"] == ["default/db-0"]
    sim.scale("StatefulSet", "default/db", 2)
    _advance(sim, 40.0)
    assert sim.pods["default/db-1"].phase == "Running"  # made again under its name


def test_replica_counts_read_many_targets_as_replicas_reads_one(tmp_path: Path) -> None:
    sim = _sim(tmp_path)
    before = sim.workloads.replicas_version
    sim.scale("StatefulSet", "default/db", 4)
    assert sim.workloads.replicas_version > before  # an HPA bank reads the replicas again
    targets = [("Deployment", "default/web"), ("StatefulSet", "default/db"), ("Deployment", "default/none"),
               ("ReplicaSet", "default/none"), ("CronJob", "default/web")]
    assert sim.workloads.replica_counts(targets) == [sim.workloads.replicas(k, n) for k, n in targets]
    assert sim.workloads.replica_counts(targets)[:3] == [3, 4, None]
