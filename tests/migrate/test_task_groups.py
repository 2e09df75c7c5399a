"""YuniKorn task groups written as v1.37 native gangs by `phalanx migrate` (phalanx/migrate/task_groups.py): one
Workload and PodGroup per application, minCount the sum of the groups' minMember, joined by the pods and pod
templates that name a task group; and a simulation reads them only under the yunikorn profile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.cli import main
from phalanx.inputs.load import load_paths

GUIDE = Path(__file__).parents[1] / "admission" / "data" / "yunikorn" / "gang"
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0"},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}


def _job(name: str, app: str, groups: list[dict[str, Any]], parallelism: int, group: str | None) -> dict[str, Any]:
    annotations = {"yunikorn.apache.org/task-groups": json.dumps(groups)}
    if group is not None:
        annotations["yunikorn.apache.org/task-group-name"] = group
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "ml"},
            "spec": {"parallelism": parallelism, "completions": parallelism, "template": {
                "metadata": {"labels": {"applicationId": app}, "annotations": annotations},
                "spec": {"schedulerName": "yunikorn", "restartPolicy": "Never", "containers": [
                    {"name": "c", "image": "img", "resources": {"requests": {"cpu": "1"}}}]}}}}


def _migrate(tmp_path: Path, docs: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
             ) -> tuple[list[dict[str, Any]], str]:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    assert main(["migrate", str(path)]) == 0
    out, err = capsys.readouterr()
    return [d for d in yaml.safe_load_all(out) if d], err


def test_the_guide_example_becomes_a_native_gang_that_schedules(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump(NODE) + "---\n" + (GUIDE / "gang-scheduling-job-example.yaml").read_text())
    assert main(["migrate", str(path)]) == 0
    out, err = capsys.readouterr()
    docs = [d for d in yaml.safe_load_all(out) if d]
    kinds = [(d["kind"], d["metadata"]["name"]) for d in docs]
    assert ("PodGroup", "gang-scheduling-job-example") in kinds and ("Workload", "gang-scheduling-job-example") in kinds
    group = next(d for d in docs if d["kind"] == "PodGroup")
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
    job = next(d for d in docs if d["kind"] == "Job")
    template = job["spec"]["template"]["spec"]
    assert template["schedulingGroup"] == {"podGroupName": "gang-scheduling-job-example"}
    assert "schedulerName" not in template
    assert "placeholders, their timeout and gangSchedulingStyle have no native equivalent" in err
    native = tmp_path / "native.yaml"
    native.write_text(out)
    inputs = load_paths([str(native)])
    assert [(g.key, g.min_count) for g in inputs.pod_groups] == [("default/gang-scheduling-job-example", 2)]
    assert [j.template.pod_group for j in inputs.jobs] == ["gang-scheduling-job-example"]


def test_task_groups_of_several_jobs_are_one_gang_of_their_sum(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The k8shim's application is one gang over its task groups: the originating Job (no group name) is not a
    member; the Jobs of groups a (3) and b (5) join one PodGroup of minCount 8."""
    groups = [{"name": "a", "minMember": 3, "minResource": {"cpu": "1"}},
              {"name": "b", "minMember": 5, "minResource": {"cpu": "1"}}]
    docs, _ = _migrate(tmp_path, [_job("origin", "train", groups, 1, None), _job("ja", "train", groups, 3, "a"),
                                  _job("jb", "train", groups, 5, "b")], capsys)
    links = {d["metadata"]["name"]: d["spec"]["template"]["spec"].get("schedulingGroup")
             for d in docs if d["kind"] == "Job"}
    assert links == {"origin": None, "ja": {"podGroupName": "train"}, "jb": {"podGroupName": "train"}}
    groups_out = [d for d in docs if d["kind"] == "PodGroup"]
    assert [(g["metadata"]["namespace"], g["metadata"]["name"], g["spec"]["schedulingPolicy"]["gang"]["minCount"])
            for g in groups_out] == [("ml", "train", 8)]


@pytest.mark.parametrize(("groups", "app"), [
    ([{"name": "a", "minMember": 0, "minResource": {"cpu": "1"}}], "train"),  # the k8shim refuses minMember 0
    ([{"name": "a", "minMember": 2, "minResource": {"cpu": "1"}}], "Train_1"),  # no PodGroup can be named so
])
def test_task_groups_that_cannot_make_a_gang_are_left_as_they_are(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                  groups: list[dict[str, Any]], app: str) -> None:
    docs, err = _migrate(tmp_path, [_job("ja", app, groups, 2, "a")], capsys)
    assert [d["kind"] for d in docs] == ["Job"]
    assert "schedulingGroup" not in docs[0]["spec"]["template"]["spec"]
    assert "yunikorn.apache.org/task-groups" in err


def test_simulate_reads_task_groups_only_under_yunikorn(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Loading does not turn task groups into a native gang (the yunikorn profile has its placeholders): under
    `gang` the pods run as they are, and stderr says how to get the native gang."""
    groups = [{"name": "a", "minMember": 4, "minResource": {"cpu": "1"}}]
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all([NODE, _job("ja", "train", groups, 2, "a")]))
    assert not load_paths([str(path)]).pod_groups
    assert main(["simulate", str(path), "--profile", "gang", "--until", "60", "-o", "json"]) == 0
    out, err = capsys.readouterr()
    assert "carry YuniKorn task groups" in err and "phalanx migrate" in err
    assert json.loads(out)["summary"]["pods"]["running"] == 2
