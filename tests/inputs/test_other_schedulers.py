"""Pods for a scheduler Phalanx does not run (KAI's `kai-scheduler`, Volcano's `volcano`, any other) were
scheduled by the simulated profile without a word; loading now says so in one line, counting the pending pods
and pod templates by the scheduler they name (snapshot pods already bound are nobody's to schedule)."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.inputs.load import load_paths
from tests.builders import MakeJob, MakeNode, MakePod, write_manifests
from tests.test_cli_errors import run

UPSTREAM = Path(__file__).resolve().parents[1] / "upstream"


def test_kais_own_gpu_pod_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gpus = {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "1"}
    node = write_manifests(tmp_path / "node.yaml", MakeNode("gpu-0").alloc(**gpus))
    status, _, err = run(capsys, "simulate", str(node), str(UPSTREAM / "kai" / "gpu-pod.yaml"))
    assert status == 0, err
    assert ("phalanx: 1 pending pod(s) and pod template(s) name another scheduler (kai-scheduler: 1): the simulated "
            "profile schedules them as its own") in err


def test_counts_pods_and_templates_by_scheduler(tmp_path: Path) -> None:
    path = write_manifests(
        tmp_path / "in.yaml", MakeNode("n1"),
        MakePod("a").req(cpu="1").scheduler("kai-scheduler"), MakePod("b").req(cpu="1").scheduler("volcano"),
        MakePod("bound").req(cpu="1").scheduler("kai-scheduler").node("n1"), MakePod("plain").req(cpu="1"),
        MakeJob("train").req(cpu="1").scheduler("volcano"))
    [notice] = [n for n in load_paths([str(path)]).notices if "another scheduler" in n]
    assert notice.startswith("3 pending pod(s) and pod template(s) name another scheduler "
                             "(kai-scheduler: 1, volcano: 2)")


def test_default_scheduler_pods_say_nothing(tmp_path: Path) -> None:
    path = write_manifests(tmp_path / "in.yaml", MakeNode("n1"), MakePod("plain").req(cpu="1"),
                           MakeJob("train").req(cpu="1"))
    assert not [n for n in load_paths([str(path)]).notices if "another scheduler" in n]
