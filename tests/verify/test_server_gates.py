"""The oracle's API server and controller manager follow the profile's gates (issue 24): under `default`
(GenericWorkload off, as v1.37.2 ships it) the server serves no PodGroup, so a gang file is replayed as a cluster
without the gate takes it: the PodGroups left out with a note, the pods scheduled one by one, as Phalanx's
`default` profile schedules them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from phalanx.scheduler.profiles import builtin
from phalanx.verify.compare import server_gates, uses_gated_api, verify
from phalanx.verify.oracle import Oracle
from tests.builders import MakeNode, MakePod, MakePodGroup


def _gang_file(tmp_path: Path) -> Path:
    docs = [MakeNode("n1").alloc(cpu="4", memory="8Gi").manifest(),
            MakePodGroup("g").gang(3).manifest(),
            *(MakePod(f"g-{i}").req(cpu="2").group("g").manifest() for i in range(3))]
    path = tmp_path / "gang.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def test_the_server_gates_follow_the_profile() -> None:
    assert server_gates(builtin("default"))["GenericWorkload"] is False
    assert server_gates(builtin("default"))["WorkloadWithJob"] is False
    gang = server_gates(builtin("gang"))
    assert gang["GenericWorkload"] and gang["WorkloadWithJob"] and not gang["CompositePodGroup"]


def test_only_inputs_that_use_the_workload_api_restart_the_server(tmp_path: Path) -> None:
    pod = MakePod("p").req(cpu="1").manifest()
    grouped = MakePod("m").group("g").manifest()
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
           "spec": {"scheduling": {"gang": {"minCount": 2}}, "template": {"spec": {}}}}
    assert not uses_gated_api([(None, pod)])  # type: ignore[list-item]
    assert uses_gated_api([(None, pod), (None, grouped)])  # type: ignore[list-item]
    assert uses_gated_api([(None, job)])  # type: ignore[list-item]
    assert uses_gated_api([(None, MakePodGroup("g").gang(2).manifest())])  # type: ignore[list-item]


@pytest.mark.kube
def test_a_gang_under_default_is_replayed_on_a_server_without_the_gate(tmp_path: Path, oracle: Oracle) -> None:
    path = _gang_file(tmp_path)
    verdict = verify([str(path)], builtin("default"), oracle)
    assert verdict.agrees, verdict.differences
    assert "not replayed: 1 PodGroup object(s) (the API server does not take them with the profile's gates: " \
           "GenericWorkload off, as on a cluster without it)" in verdict.notes
    # Two of the three 2-cpu pods bind on the 4-cpu node, one by one: no gang.
    assert sum(1 for pod in verdict.pods if pod["kubeScheduler"]["state"] == "bound") == 2
    # and the same file under gang: the server serves PodGroups again, and the gang of 3 cannot be placed.
    verdict = verify([str(path)], builtin("gang"), oracle)
    assert verdict.agrees, verdict.differences
    assert not [note for note in verdict.notes if "PodGroup" in note]
    assert sum(1 for pod in verdict.pods if pod["kubeScheduler"]["state"] == "bound") == 0


@pytest.mark.kube
def test_a_gang_scheduler_gets_the_kinds_it_watches_after_a_run_that_turned_them_off(tmp_path: Path,
                                                                                    oracle: Oracle) -> None:
    """A file with no workload object leaves the server's gates as they are, but a `gang` scheduler lists
    PodGroups: after a `default` run turned GenericWorkload off on the server, the server gets it back, or the
    scheduler is never ready (CI, 2026-12-07: two scenarios under xdist's order)."""
    assert verify([str(_gang_file(tmp_path))], builtin("default"), oracle).agrees
    plain = tmp_path / "plain.yaml"
    plain.write_text(yaml.safe_dump_all([MakeNode("n1").alloc(cpu="4", memory="8Gi").manifest(),
                                         MakePod("p").req(cpu="1").manifest()], sort_keys=False))
    verdict = verify([str(plain)], builtin("gang"), oracle)
    assert verdict.agrees, verdict.differences
    assert oracle.plane.gates["GenericWorkload"]
