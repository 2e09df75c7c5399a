"""JobSet's own workload-aware-scheduling example (site/static/examples/workload-aware-scheduling: a v1alpha2
Workload `js-abc` with the template `workers`, its explicit PodGroup `js-abc-workers-def` and a JobSet whose
pod template names that PodGroup), unchanged in tests/upstream/jobset: read as v1beta1 it yields exactly its
own PodGroup, gang of 6, and no second one made up for the Workload's template."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from phalanx.inputs.load import load_paths
from tests.builders import MakeNode, write_manifests
from tests.test_cli_errors import run

EXAMPLE = Path(__file__).resolve().parents[1] / "upstream" / "jobset"


def node(tmp_path: Path, cpu: str) -> Path:
    return write_manifests(tmp_path / "node.yaml", MakeNode("n1").alloc(cpu=cpu, memory="64Gi", pods="110"))


def test_the_example_yields_exactly_its_pod_group(tmp_path: Path) -> None:
    inputs = load_paths([str(node(tmp_path, "32")), str(EXAMPLE)])
    assert [(g.key, g.min_count, g.workload_name, g.template_name) for g in inputs.pod_groups] == [
        ("default/js-abc-workers-def", 6, "js-abc", "workers")]


@pytest.mark.parametrize(("cpu", "ran"), [("32", 6), ("20", 0)])  # 6 pods of 4 cpu: all or none
def test_its_six_pods_are_one_gang(tmp_path: Path, capsys: pytest.CaptureFixture[str], cpu: str,
                                   ran: int) -> None:
    status, out, err = run(capsys, "simulate", "--profile", "gang", str(node(tmp_path, cpu)), str(EXAMPLE),
                           "-o", "json")
    assert status == 0, err
    result = json.loads(out)
    assert result["summary"]["podGroups"]["total"] == 1
    assert result["summary"]["pods"]["total"] == 6
    assert result["summary"]["pods"]["succeeded"] == ran
    assert result["summary"]["pods"]["pending"] == 6 - ran


def test_migrate_writes_one_pod_group(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "migrate", str(EXAMPLE))
    assert status == 0, err
    kinds = [(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(out)]
    assert sorted(kinds) == [("JobSet", "js"), ("PodGroup", "js-abc-workers-def"), ("Workload", "js-abc")]
