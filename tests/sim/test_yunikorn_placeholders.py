"""YuniKorn's task groups under the `yunikorn` profile (phalanx/admission/yunikorn_placeholders.py): placeholder
pods reserve for a gang application, its pods take their places, the placeholder timer in Soft and Hard style.
Restated from apache/yunikorn-k8shim test/e2e/gang_scheduling/gang_scheduling_test.go (23b6b47f) where a case
names one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.admission.yunikorn_placeholders import placeholder_name
from phalanx.api.yunikorn_peer import TASK_GROUP
from phalanx.cli import main
from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.report import build_report
from phalanx.sim.scenario import scenario_for
from phalanx.sim.simulation import Simulation

Doc = dict[str, Any]
MIN_RESOURCE = {"cpu": "10m", "memory": "10M"}


def _node(name: str, cpu: str = "8", labels: dict[str, str] | None = None) -> Doc:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "status": {"allocatable": {"cpu": cpu, "memory": "32Gi", "pods": "110"}}}


def _job(name: str, app: str, groups: list[Doc], parallelism: int, *, group: str | None = None, policy: str = "",
         requests: dict[str, str] | None = None, arrival: int = 0, duration: int = 300) -> Doc:
    annotations = {"yunikorn.apache.org/task-groups": json.dumps(groups)}
    if policy:
        annotations["yunikorn.apache.org/schedulingPolicyParameters"] = policy
    if group is not None:
        annotations["yunikorn.apache.org/task-group-name"] = group
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "default",
                         "annotations": {"phalanx.dev/duration": f"{duration}s", "phalanx.dev/arrival": f"{arrival}s"}},
            "spec": {"parallelism": parallelism, "completions": parallelism, "template": {
                "metadata": {"labels": {"applicationId": app}, "annotations": annotations},
                "spec": {"schedulerName": "yunikorn", "restartPolicy": "Never", "containers": [
                    {"name": "c", "image": "alpine", "resources": {"requests": requests or MIN_RESOURCE}}]}}}}


def _pod(name: str, cpu: str, arrival: int) -> Doc:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "annotations": {"phalanx.dev/arrival": f"{arrival}s"}},
            "spec": {"schedulerName": "yunikorn", "containers": [
                {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}}


def _simulate(tmp_path: Path, docs: list[Doc], until: float = 1800.0) -> tuple[Simulation, dict[str, Any]]:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    sim = Simulation(load_paths([str(path)]), builtin("yunikorn"), scenario=scenario_for("yunikorn"), until=until)
    return sim, dict(build_report(sim.run()))


def _placeholders(sim: Simulation) -> dict[str, Any]:
    return {k: r for k, r in sim.pods.items() if r.placeholder}


def _pods(report: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    return [p for p in report["pods"] if p["name"].startswith(prefix)]


def test_annotation_task_group_def(tmp_path: Path) -> None:
    """Verify_Annotation_TaskGroup_Def: a Job whose one pod names no task group makes 5 placeholders and runs;
    a second Job of the application with 5 pods of the group replaces all 5, each on its placeholder's node."""
    groups = [{"name": "groupa", "minMember": 5, "minResource": MIN_RESOURCE}]
    sim, report = _simulate(tmp_path, [_node("n0"), _node("n1"), _job("first", "app-tg", groups, 1),
                                       _job("real", "app-tg", groups, 5, group="groupa", arrival=60)], until=200)
    placeholders = _placeholders(sim)
    assert len(placeholders) == 5 and all(r.bound_at == 0 for r in placeholders.values())
    assert all(r.message.startswith("replaced by default/real-") and r.finished_at == 60
               for r in placeholders.values())
    assert [p["boundAt"] for p in _pods(report, "default/first")] == [0]
    real = _pods(report, "default/real")
    assert len(real) == 5 and all(p["boundAt"] == 60 and p["phase"] == "Running" for p in real)
    assert report["admission"]["placeholders"] == {"applications": 1, "placeholders": 5, "replaced": 5,
                                                   "timedOut": 0, "failed": 0, "rejected": 0}
    # placeholders are not the work: the pod counts leave them out
    assert report["summary"]["pods"]["total"] == 6
    assert not any(p["name"].startswith("default/tg-") for p in report["pods"])


def test_multiple_task_groups_nodes(tmp_path: Path) -> None:
    """Verify_Multiple_TaskGroups_Nodes: three task groups (3, 5 and 7 members); each group's pods end up on the
    nodes its placeholders held, as many on each."""
    sizes = {"a": 3, "b": 5, "c": 7}
    groups: list[Doc] = [{"name": n, "minMember": m, "minResource": {"cpu": "1"}} for n, m in sizes.items()]
    docs: list[Doc] = [_node(f"n{i}", cpu="4") for i in range(4)]
    docs.append(_job("origin", "app-m", groups, 1, requests={"cpu": "100m"}))
    docs += [_job(f"real-{name}", "app-m", groups, members, group=name, requests={"cpu": "1"}, arrival=30)
             for name, members in sizes.items()]
    sim, _ = _simulate(tmp_path, docs)
    held: dict[str, dict[str, int]] = {}
    taken: dict[str, dict[str, int]] = {}
    for record in _placeholders(sim).values():
        group = record.pod.queueing.value(TASK_GROUP)
        held.setdefault(group, {}).setdefault(record.node or "?", 0)
        held[group][record.node or "?"] += 1
    for key, record in sim.pods.items():
        if key.startswith("default/real-"):
            group = key.split("-")[1]
            taken.setdefault(group, {}).setdefault(record.node or "?", 0)
            taken[group][record.node or "?"] += 1
    assert sum(sum(v.values()) for v in held.values()) == 15
    assert taken == held


def test_more_pods_than_min_members(tmp_path: Path) -> None:
    """Verify_TG_with_More_Than_minMembers: 6 pods of a group of 3: 3 take the placeholders' places, 3 are
    scheduled as ordinary pods; all 6 run."""
    groups = [{"name": "groupa", "minMember": 3, "minResource": MIN_RESOURCE}]
    _, report = _simulate(tmp_path, [_node("n0"), _job("gang", "app-more", groups, 6, group="groupa")], until=200)
    assert all(p["phase"] == "Running" and p["boundAt"] == 0 for p in _pods(report, "default/gang"))
    assert len(_pods(report, "default/gang")) == 6
    assert report["admission"]["placeholders"]["replaced"] == 3


def test_pods_wait_while_the_application_reserves(tmp_path: Path) -> None:
    """A gang that does not fit yet: its placeholders take what is free, the pods wait (none runs alone), and
    when the pod holding the rest ends the last placeholders bind and the pods take their places."""
    groups = [{"name": "w", "minMember": 4, "minResource": {"cpu": "2"}}]
    docs = [_node("n0", cpu="8"), _pod("blocker", "4", 0),
            _job("gang", "app-wait", groups, 4, group="w", requests={"cpu": "2"}, arrival=10)]
    docs[1]["metadata"]["annotations"]["phalanx.dev/duration"] = "100s"
    sim, report = _simulate(tmp_path, docs, until=600)
    gang = _pods(report, "default/gang")
    assert [p["boundAt"] for p in gang] == [100, 100, 100, 100]
    placeholders = _placeholders(sim)
    assert sorted(r.bound_at for r in placeholders.values()) == [10, 10, 100, 100]


def test_waiting_pods_say_why(tmp_path: Path) -> None:
    groups = [{"name": "w", "minMember": 2, "minResource": {"cpu": "6"}}]
    _, report = _simulate(tmp_path, [_node("n0", cpu="8"), _job("gang", "app-why", groups, 2, group="w",
                                                                requests={"cpu": "6"})], until=60)
    messages = {p["message"] for p in _pods(report, "default/gang")}
    assert messages == {"application app-why is reserving resources for its gang: 2 placeholder(s)"}
    assert report["summary"]["pods"] == {"total": 2, "running": 0, "pending": 2, "succeeded": 0, "failed": 0}


def test_unreplaced_placeholders_hold_room_until_the_timeout(tmp_path: Path) -> None:
    """After the application runs, placeholders no pod took are released at the timeout (core
    timeoutPlaceholderProcessing): until then their room is held, and a pod that needs it waits."""
    groups = [{"name": "w", "minMember": 3, "minResource": {"cpu": "2"}}]
    docs = [_node("n0", cpu="6"), _job("gang", "app-hold", groups, 1, group="w", requests={"cpu": "2"},
                                       policy="placeholderTimeoutInSeconds=120"), _pod("late", "4", 10)]
    sim, report = _simulate(tmp_path, docs, until=600)
    assert [p["boundAt"] for p in _pods(report, "default/gang")] == [0]
    assert [p["boundAt"] for p in _pods(report, "default/late")] == [120]
    released = [r for r in _placeholders(sim).values() if r.message == "placeholder timed out"]
    assert len(released) == 2 and all(r.finished_at == 120 for r in released)
    # held, not worked: the placeholders' room is stranded while they hold it
    assert report["summary"]["strandedResourceHours"]["cpu"] > 0


def test_default_timeout_is_fifteen_minutes(tmp_path: Path) -> None:
    groups = [{"name": "a", "minMember": 2, "minResource": MIN_RESOURCE},
              {"name": "b", "minMember": 1, "minResource": MIN_RESOURCE,
               "nodeSelector": {"kubernetes.io/hostname": "nowhere"}}]
    _, report = _simulate(tmp_path, [_node("n0"), _job("gang", "app-default", groups, 2, group="a")], until=1800)
    assert [p["boundAt"] for p in _pods(report, "default/gang")] == [900, 900]


def test_real_pod_larger_than_its_placeholder(tmp_path: Path) -> None:
    """core tryPlaceholderAllocate: a placeholder smaller than the pod is released ("resource incompatible") and
    the pod, with no placeholder of its group left, is scheduled as an ordinary pod."""
    groups = [{"name": "w", "minMember": 1, "minResource": {"cpu": "1"}}]
    sim, report = _simulate(tmp_path, [_node("n0"), _job("gang", "app-big", groups, 1, group="w",
                                                         requests={"cpu": "2"})], until=60)
    assert [p["boundAt"] for p in _pods(report, "default/gang")] == [0]
    (record,) = _placeholders(sim).values()
    assert record.message.startswith("placeholder released: default/gang-") and report["admission"][
        "placeholders"]["replaced"] == 0


def _small_queue(properties: dict[str, str] | None = None) -> Doc:
    small: Doc = {"name": "small", "submitacl": "*", "resources": {"max": {"vcore": 3}}}
    if properties:
        small["properties"] = properties
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "yunikorn-configs"}, "data": {
        "queues.yaml": yaml.safe_dump({"partitions": [{"name": "default", "queues": [{"name": "root", "queues": [
            small]}]}]})}}


def _in_small(job: Doc) -> Doc:
    job["spec"]["template"]["metadata"]["labels"]["queue"] = "root.small"
    return job


def test_placeholders_count_against_the_queue(tmp_path: Path) -> None:
    """Placeholders are the application's allocations in its queue: with a 3-vcore max of which another
    application holds 2, a gang of 2 one-vcore placeholders reserves one, and the second (and so the pods) when
    the other application ends."""
    groups = [{"name": "w", "minMember": 2, "minResource": {"cpu": "1"}}]
    other = _in_small(_job("other", "app-other", [], 2, requests={"cpu": "1"}, duration=100))
    del other["spec"]["template"]["metadata"]["annotations"]["yunikorn.apache.org/task-groups"]
    gang = _in_small(_job("gang", "app-q", groups, 2, group="w", requests={"cpu": "1"}, arrival=10))
    sim, report = _simulate(tmp_path, [_node("n0"), _small_queue(), other, gang], until=200)
    assert sorted(r.bound_at for r in _placeholders(sim).values()) == [10, 100]
    assert [p["boundAt"] for p in _pods(report, "default/gang")] == [100, 100]


def test_task_groups_larger_than_the_queue_max_are_rejected(tmp_path: Path) -> None:
    """partition.go AddApplication: task groups whose total passes the queue's max are refused, and the shim
    fails the application's pods (ApplicationRejected); no placeholder is made."""
    groups = [{"name": "w", "minMember": 4, "minResource": {"cpu": "1"}}]
    job = _in_small(_job("gang", "app-big", groups, 2, group="w", requests={"cpu": "1"}))
    sim, report = _simulate(tmp_path, [_node("n0"), _small_queue(), job], until=60)
    assert not _placeholders(sim)
    assert {(p["phase"], p["message"]) for p in _pods(report, "default/gang")} == {
        ("Failed", "queue root.small cannot fit application app-big: task group request map[pods:4 vcore:4000] "
                   "larger than max queue allocation map[vcore:3000]")}
    assert report["admission"]["placeholders"]["rejected"] == 1


def test_task_groups_need_a_fifo_queue(tmp_path: Path) -> None:
    """SupportTaskGroup: a queue sorting applications fair cannot run task groups."""
    groups = [{"name": "w", "minMember": 1, "minResource": {"cpu": "1"}}]
    job = _in_small(_job("gang", "app-fair", groups, 1, group="w", requests={"cpu": "1"}))
    _, report = _simulate(tmp_path, [_node("n0"), _small_queue({"application.sort.policy": "fair"}), job], until=60)
    (pod,) = _pods(report, "default/gang")
    assert pod["phase"] == "Failed" and pod["message"].endswith("with task group request: unsupported sort type")


def test_task_group_placement_is_the_placeholders(tmp_path: Path) -> None:
    """A task group's nodeSelector and tolerations are its placeholders' (newPlaceholder), so the gang lands on
    the tainted pool its task group tolerates, where the pods follow."""
    pool = _node("gpu-0", labels={"pool": "gpu"})
    pool["spec"] = {"taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]}
    groups = [{"name": "w", "minMember": 2, "minResource": MIN_RESOURCE, "nodeSelector": {"pool": "gpu"},
               "tolerations": [{"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]}]
    sim, report = _simulate(tmp_path, [_node("cpu-0"), pool, _job("gang", "app-pool", groups, 2, group="w")],
                            until=60)
    assert {r.node for r in _placeholders(sim).values()} == {"gpu-0"}
    assert {p["node"] for p in _pods(report, "default/gang")} == {"gpu-0"}


def test_unreadable_task_group_placement_leaves_no_gang(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A placeholder the API server would refuse (a toleration with an unknown effect): the k8shim falls back to
    normal scheduling (PlaceholderCreateFailed); stderr names the task group's field."""
    groups = [{"name": "w", "minMember": 2, "minResource": MIN_RESOURCE,
               "tolerations": [{"key": "k", "operator": "Exists", "effect": "Sometimes"}]}]
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all([_node("n0"), _job("gang", "app-bad", groups, 2, group="w")]))
    assert main(["simulate", str(path), "--profile", "yunikorn", "-o", "json"]) == 0
    out, err = capsys.readouterr()
    assert "yunikorn.apache.org/task-groups[0].tolerations[0].effect" in err and "PlaceholderCreateFailed" in err
    assert err.count("PlaceholderCreateFailed") == 1
    assert [p["boundAt"] for p in json.loads(out)["pods"]] == [0, 0]


def test_timer_starts_with_the_first_placeholder_bound(tmp_path: Path) -> None:
    """addAllocationInternal starts the placeholder timer at the first placeholder allocated: with none bound
    it never fires (the gang-scheduling guide: "If non of the placeholders can be allocated, this timeout won't
    kick-in"), so a Hard-style application waits instead of failing."""
    groups = [{"name": "w", "minMember": 2, "minResource": {"cpu": "16"}}]
    job = _job("gang", "app-never", groups, 2, group="w",
               policy="placeholderTimeoutInSeconds=20 gangSchedulingStyle=Hard")
    _, report = _simulate(tmp_path, [_node("n0"), job], until=300)
    assert {p["phase"] for p in _pods(report, "default/gang")} == {"Pending"}
    assert report["admission"]["placeholders"]["timedOut"] == 0


GANG_DATA = Path(__file__).parents[1] / "admission" / "data" / "yunikorn" / "gang"


def _run_files(tmp_path: Path, nodes: list[Doc], files: list[str], until: float) -> tuple[Simulation, dict[str, Any]]:
    path = tmp_path / "nodes.yaml"
    path.write_text(yaml.safe_dump_all(nodes))
    sim = Simulation(load_paths([str(path), *(str(GANG_DATA / f) for f in files)]), builtin("yunikorn"),
                     scenario=scenario_for("yunikorn"), until=until)
    return sim, dict(build_report(sim.run()))


def test_guide_example_runs_on_its_placeholders(tmp_path: Path) -> None:
    """The gang-scheduling guide's example Job, unchanged: "YuniKorn will create 2 placeholder pods ... When all 2
    placeholders are allocated, the scheduler will bind the real 2 sleep pods using the spot reserved by the
    placeholders"."""
    sim, report = _run_files(tmp_path, [_node("n0"), _node("n1")], ["gang-scheduling-job-example.yaml"], 60)
    placeholders = _placeholders(sim)
    assert len(placeholders) == 2
    assert {(r.pod.requests["cpu"], r.pod.requests["memory"]) for r in placeholders.values()} == {(100, 50_000_000)}
    pods = _pods(report, "default/gang-scheduling-job-example")
    assert sorted(p["node"] for p in pods) == sorted(str(r.node) for r in placeholders.values())
    assert report["admission"]["placeholders"]["replaced"] == 2


def test_guide_hard_style_example_fails_at_its_timeout(tmp_path: Path) -> None:
    """The guide's Hard-style example, unchanged, on a node with room for 3 of its 4 one-cpu placeholders: the
    timer starts with the first placeholder bound, and at 60 s the application fails ("marked as failed, without
    retrying"): its pods fail and its placeholders go."""
    sim, report = _run_files(tmp_path, [_node("n0", cpu="3")], ["gang-app-timeout.yaml"], 300)
    assert sorted(str(r.bound_at) for r in _placeholders(sim).values()) == ["0.0", "0.0", "0.0", "None"]
    assert all(r.finished_at == 60 for r in _placeholders(sim).values())
    pods = _pods(report, "default/gang-app-timeout")
    assert len(pods) == 4 and all(p["phase"] == "Failed" and p["boundAt"] is None for p in pods)
    assert report["admission"]["placeholders"]["failed"] == 1


def _namespace(name: str, annotations: dict[str, str]) -> Doc:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "annotations": annotations}}


def test_gang_app_fifo_order(tmp_path: Path) -> None:
    """Verify_GangApp_FIFO_Order: the namespace's quota (300m, 300M) is its dynamic queue's max; appA (one pod;
    its task group of minMember 0 is refused by the shim, so no gang) runs, appB's gang of 3 reserves 2 of its 3
    placeholders, appC's pod waits; when appA ends, appB's last placeholder binds and its pods run, and appC still
    waits (300m are appB's)."""
    resources = {"cpu": "100m", "memory": "100M"}
    ns = _namespace("default", {"yunikorn.apache.org/namespace.quota": '{"cpu": "300m", "memory": "300M"}'})
    a = _job("job-a", "app-a", [{"name": "groupa", "minMember": 0, "minResource": resources}], 1, group="groupa",
             requests=resources, duration=60)
    b = _job("job-b", "app-b", [{"name": "groupb", "minMember": 3, "minResource": resources}], 3, group="groupb",
             requests=resources, arrival=5)
    c = _job("job-c", "app-c", [{"name": "groupc", "minMember": 0, "minResource": resources}], 1, group="groupc",
             requests=resources, arrival=10)
    sim, report = _simulate(tmp_path, [_node("n0"), ns, a, b, c], until=300)
    assert sorted(str(r.bound_at) for r in _placeholders(sim).values()) == ["5.0", "5.0", "60.0"]
    assert [p["boundAt"] for p in _pods(report, "default/job-a")] == [0]
    assert [p["boundAt"] for p in _pods(report, "default/job-b")] == [60, 60, 60]
    assert [p["phase"] for p in _pods(report, "default/job-c")] == ["Pending"]
    queues = {q["name"]: q for q in report["queues"]}
    assert queues["root.default"]["details"]["max"] == {"memory": 300_000_000, "vcore": 300}


def test_namespace_annotations_the_shim_cannot_read_are_named(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    ns = _namespace("default", {"yunikorn.apache.org/namespace.quota": "300m",
                                "yunikorn.apache.org/namespace.maxApps": "-1"})
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all([_node("n0"), ns]))
    assert main(["simulate", str(path), "--profile", "yunikorn", "-o", "json"]) == 0
    err = capsys.readouterr().err
    assert "Namespace default: annotation yunikorn.apache.org/namespace.quota: is not a JSON map" in err
    assert "Namespace default: annotation yunikorn.apache.org/namespace.maxApps: '-1' is negative" in err


def test_deleted_placeholders(tmp_path: Path) -> None:
    """Verify_Deleted_Placeholders: group A's 3 placeholders run on the node their selector names, group B's one
    cannot; deleting A's placeholders frees their node and their share of the queue, and the application, never
    complete, keeps its pods waiting. Upstream's queue then holds nothing; here it holds group B's placeholder,
    admitted to the queue though no node takes it (the gate counts what it admits, the engine places it)."""
    groups = [{"name": "groupa", "minMember": 3, "minResource": MIN_RESOURCE,
               "nodeSelector": {"kubernetes.io/hostname": "n0"}},
              {"name": "groupb", "minMember": 1, "minResource": MIN_RESOURCE,
               "nodeSelector": {"kubernetes.io/hostname": "unsatisfiable_node"}}]
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all([_node("n0"), _node("n1"), _job("gang", "app-del", groups, 3,
                                                                         policy="placeholderTimeoutInSeconds=600")]))
    sim = Simulation(load_paths([str(path)]), builtin("yunikorn"), scenario=scenario_for("yunikorn"), until=120)
    doomed = [f"default/{placeholder_name('default', 'app-del', 'groupa', i)}" for i in range(3)]
    for key in doomed:
        sim.delete_pod_at(30, key)
    report = dict(build_report(sim.run()))
    assert all(sim.pods[key].bound_at == 0 and sim.pods[key].finished_at == 30 for key in doomed)
    assert not sim.scheduler.cluster.bound.keys() & set(doomed)
    queue = {q["name"]: q for q in report["queues"]}["root.default"]
    assert queue["details"]["allocated"] == {"memory": 10_000_000, "pods": 1, "vcore": 10}  # group B's one
    assert {p["phase"] for p in _pods(report, "default/gang")} == {"Pending"}


@pytest.mark.parametrize(("annotation", "said"), [
    ('[{"name": "g", "minMember": 2, "minResource": ["cpu"]}]', "minResource of taskGroup 'g' is not a map"),
    ('[{"name": 5, "minMember": 2, "minResource": {"cpu": "1"}}]', "taskGroup name 5 is not a string"),
    ('[{"name": "g", "minMember": 2.5, "minResource": {"cpu": "1"}}]', "can't get taskGroup MinMember"),
    ('[{"name": "g", "minMember": 2, "minResource": {"cpu": "1e300"}}]', "minResource 'cpu' in taskGroup 'g'"),
    ('[null]', "can't get taskGroup Name"),
    ('{}', "task-groups must be a JSON list"),
    ('[{"name": "g", "minMember": 2, "minResource": {"cpu": "1"}, "labels": ["x"]}]',
     "task-groups[0].labels: must be a map of strings"),
    ('[{"name": "g", "minMember": 2, "minResource": {"cpu": "1"}, "tolerations": {"a": 1}}]',
     "task-groups[0].tolerations: must be a list"),
    ('[{"name": "g", "minMember": 2, "minResource": {"cpu": "1"}, "topologySpreadConstraints": [1]}]',
     "task-groups[0].topologySpreadConstraints[0]: must be an object"),
])
def test_task_groups_the_shim_would_refuse_leave_no_gang(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         annotation: str, said: str) -> None:
    """Malformed task groups: no traceback, the pod runs as the shim runs it (no gang), stderr names why."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "p", "labels": {"applicationId": "a"},
        "annotations": {"yunikorn.apache.org/task-groups": annotation, "yunikorn.apache.org/task-group-name": "g"}},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all([_node("n0"), pod]))
    assert main(["simulate", str(path), "--profile", "yunikorn", "--until", "60", "-o", "json"]) == 0
    out, err = capsys.readouterr()
    assert said in err and "Traceback" not in err
    report = json.loads(out)
    assert "placeholders" not in report["admission"] and [p["boundAt"] for p in report["pods"]] == [0]
