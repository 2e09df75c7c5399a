"""scheduler-plugins' coscheduling README demo (pkg/coscheduling/README.md, "Demo"), unchanged in
tests/upstream: a `scheduling.x-k8s.io/v1alpha1` PodGroup and a ReplicaSet of 6 whose pod template carries the
label `scheduling.x-k8s.io/pod-group`, on a cluster that "can only afford 3 nginx pods". The README shows 3
Running and 3 Pending with minMember 3, and all 6 Pending once minMember is 4. The pods the ReplicaSet makes
join the gang: in `simulate` (the gang profile, as the README's scheduler runs coscheduling) and in `migrate`
(the template linked to the translated PodGroup)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.builders import MakeNode, write_manifests
from tests.test_cli_errors import run

README = Path(__file__).resolve().parents[1] / "upstream" / "scheduler-plugins" / "coscheduling-README.md"


def demo(tmp_path: Path, min_member: int) -> Path:
    """The README's demo manifests, as a user would paste them; minMember set as its second scenario says."""
    [block] = re.findall(r"```yaml\n(.*?)```", README.read_text(), re.S)
    assert "minMember: 3\n" in block
    path = tmp_path / "demo.yaml"
    path.write_text(block.replace("minMember: 3\n", f"minMember: {min_member}\n"))
    return path


def three_nginx(tmp_path: Path) -> Path:
    """A node that affords 3 of the demo's pods (3000m each), and not 4."""
    return write_manifests(tmp_path / "node.yaml", MakeNode("n1").alloc(cpu="10", memory="16Gi", pods="110"))


def simulate(capsys: pytest.CaptureFixture[str], *files: Path) -> dict[str, Any]:
    status, out, err = run(capsys, "simulate", "--profile", "gang", *map(str, files), "-o", "json")
    assert status == 0, err
    result: dict[str, Any] = json.loads(out)
    return result


@pytest.mark.parametrize(("min_member", "running"), [(3, 3), (4, 0)])
def test_the_readme_demo_runs_as_the_readme_shows(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  min_member: int, running: int) -> None:
    summary = simulate(capsys, three_nginx(tmp_path), demo(tmp_path, min_member))["summary"]
    assert summary["pods"]["total"] == 6
    assert summary["pods"]["running"] == running
    assert summary["pods"]["pending"] == 6 - running
    assert summary["gangPodsPending"] == 6 - running  # every pod the ReplicaSet made is a member


def test_migrate_links_the_replicasets_template(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "migrate", str(demo(tmp_path, 4)))
    assert status == 0, err
    docs = list(yaml.safe_load_all(out))
    assert [(d["apiVersion"], d["kind"]) for d in docs] == [
        ("scheduling.k8s.io/v1beta1", "Workload"), ("scheduling.k8s.io/v1beta1", "PodGroup"),
        ("apps/v1", "ReplicaSet")]
    template = docs[2]["spec"]["template"]
    assert template["spec"]["schedulingGroup"] == {"podGroupName": "nginx"}
    assert docs[1]["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}
    assert ("# phalanx migrate: ReplicaSet default/nginx\n#   spec.template: scheduling.x-k8s.io/pod-group: nginx "
            "-> spec.template.spec.schedulingGroup.podGroupName nginx") in out
    # what migrate wrote gives the same answer as the original
    migrated = tmp_path / "migrated.yaml"
    migrated.write_text(out)
    node = three_nginx(tmp_path)
    assert simulate(capsys, node, migrated)["summary"]["pods"] == simulate(capsys, node, demo(tmp_path, 4))[
        "summary"]["pods"]


def test_a_linked_template_is_left_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = list(yaml.safe_load_all(demo(tmp_path, 3).read_text()))
    docs[1]["spec"]["template"]["spec"]["schedulingGroup"] = {"podGroupName": "other"}
    path = tmp_path / "linked.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    status, out, err = run(capsys, "migrate", str(path))
    assert status == 0, err
    assert list(yaml.safe_load_all(out))[2] == docs[1]


def test_a_cronjobs_template_naming_a_volcano_group_is_linked() -> None:
    from phalanx.migrate.templates import linked
    cronjob = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
               "spec": {"jobTemplate": {"spec": {"template": {
                   "metadata": {"annotations": {"scheduling.k8s.io/group-name": "g"}},
                   "spec": {"schedulerName": "volcano", "containers": []}}}}}}
    found = linked(cronjob)
    assert found is not None
    out, notes, whose = found
    assert whose == "Volcano"
    assert out["spec"]["jobTemplate"]["spec"]["template"]["spec"] == {"containers": [],
                                                                      "schedulingGroup": {"podGroupName": "g"}}
    assert cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["schedulerName"] == "volcano"  # unchanged
    assert notes[1] == ("spec.jobTemplate.spec.template.spec.schedulerName volcano dropped (the default scheduler "
                        "places native gangs)")
