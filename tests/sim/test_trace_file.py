"""JSON Lines workload traces replayed on top of a snapshot (phalanx.sim.trace_file, `--trace-file`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from phalanx.cli import main
from phalanx.errors import InputError
from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import load_profile
from phalanx.sim.report import build_report
from phalanx.sim.simulation import Simulation
from phalanx.sim.trace_file import load_traces, read_events
from tests.builders import MakeNode, MakePod, MakePodGroup, write_manifests

Event = dict[str, Any]


def _trace(tmp_path: Path, *events: Event | str, name: str = "day.jsonl") -> str:
    path = tmp_path / name
    path.write_text("".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in events), encoding="utf-8")
    return str(path)


def _delete(name: str, namespace: str = "default", kind: str = "Pod") -> Event:
    return {"kind": kind, "metadata": {"namespace": namespace, "name": name}}


def _snapshot(tmp_path: Path) -> str:
    """One 4-CPU node, `big` running on it, `waiting` (4 CPU) pending."""
    return str(write_manifests(tmp_path / "snapshot.yaml",
                               MakeNode("node-a").alloc(cpu="4", memory="16Gi"),
                               MakePod("big").req(cpu="4").node("node-a"),
                               MakePod("waiting").req(cpu="4")))


def _simulate(snapshot: str, trace: str, profile: str = "default", until: float | None = None) -> dict[str, Any]:
    inputs = load_paths([snapshot])
    loaded = load_traces([trace], inputs)
    sim = Simulation(inputs, load_profile(profile), until=until)
    loaded.apply(sim)
    return build_report(sim.run())


def _pod(report: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in report["pods"] if p["name"] == name)


def test_deleting_a_running_pod_frees_its_node(tmp_path: Path) -> None:
    trace = _trace(tmp_path, {"time": "1h", "op": "delete", "object": _delete("big")})
    report = _simulate(_snapshot(tmp_path), trace)
    big, waiting = _pod(report, "default/big"), _pod(report, "default/waiting")
    assert big["phase"] == "Succeeded" and big["finishedAt"] == 3600.0
    assert waiting["phase"] == "Running" and waiting["boundAt"] == 3600.0
    assert report["summary"]["waitSeconds"]["max"] == 3600.0


def test_deleting_a_pending_pod_ends_it(tmp_path: Path) -> None:
    trace = _trace(tmp_path, {"time": 90, "op": "delete", "object": _delete("waiting")})
    report = _simulate(_snapshot(tmp_path), trace)
    waiting = _pod(report, "default/waiting")
    assert waiting["phase"] == "Failed" and waiting["finishedAt"] == 90.0
    assert waiting["message"] == "deleted while pending"
    assert report["summary"]["pods"]["pending"] == 0


def test_create_arrives_at_the_event_time(tmp_path: Path) -> None:
    pod = MakePod("late").req(cpu="1").arrival("5m").manifest()  # the event's time wins over the annotation
    trace = _trace(tmp_path, {"time": "2h", "op": "create", "object": pod},
                   {"time": "3h", "op": "delete", "object": {"kind": "Pod", "namespace": "default", "name": "big"}})
    report = _simulate(_snapshot(tmp_path), trace)
    late = _pod(report, "default/late")
    assert late["createdAt"] == 7200.0
    assert late["phase"] == "Pending"  # node-a is full until `big` leaves at 3h; then `waiting` (older) wins
    assert _pod(report, "default/waiting")["boundAt"] == 10800.0


def test_trace_can_create_nodes_and_groups(tmp_path: Path) -> None:
    events = [{"time": "10m", "op": "create", "object": MakeNode("node-b").alloc(cpu="12").manifest()},
              {"time": "10m", "op": "create", "object": MakePodGroup("pair").gang(2).manifest()}]
    events += [{"time": "10m", "op": "create", "object": MakePod(f"pair-{i}").req(cpu="4").group("pair").manifest()}
               for i in range(2)]
    report = _simulate(_snapshot(tmp_path), _trace(tmp_path, *events), profile="gang")
    group = next(g for g in report["podGroups"] if g["name"] == "default/pair")
    assert group["scheduled"] and group["startedAt"] == 600.0
    assert {_pod(report, f"default/pair-{i}")["node"] for i in range(2)} == {"node-b"}  # `waiting` took 4 of 12


def test_deleting_a_gang_member_strands_the_rest(tmp_path: Path) -> None:
    snapshot = write_manifests(tmp_path / "snapshot.yaml", MakeNode("node-a").alloc(cpu="8"),
                               MakePodGroup("pair").gang(2),
                               *(MakePod(f"pair-{i}").req(cpu="4").group("pair") for i in range(2)))
    trace = _trace(tmp_path, {"time": "1h", "op": "delete", "object": _delete("pair-0")})
    report = _simulate(str(snapshot), trace, profile="gang", until=2 * 3600)
    assert report["summary"]["stranded"]["cpu"] == 0.5  # pair-1 holds 4 of 8 CPUs and cannot make progress
    assert report["summary"]["strandedResourceHours"]["cpu"] == 4.0


def test_events_merge_by_time_across_files(tmp_path: Path) -> None:
    first = _trace(tmp_path, {"time": "2h", "op": "delete", "object": _delete("big")}, name="a.jsonl")
    second = _trace(tmp_path, {"time": "1h", "op": "create", "object": MakePod("big-2").req(cpu="1").manifest()},
                    name="b.jsonl")
    inputs = load_paths([_snapshot(tmp_path)])
    trace = load_traces([first, second], inputs)
    assert trace.created == 1 and trace.deletions == [(7200.0, "default/big")]


def test_blank_lines_are_skipped_and_kinds_phalanx_ignores_are_counted(tmp_path: Path) -> None:
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    path = _trace(tmp_path, "", {"time": 0, "op": "create", "object": config}, "   ",
                  {"time": 5, "op": "delete", "object": {"kind": "ConfigMap", "name": "c"}})
    assert [e.line for e in read_events(path)] == [2, 4]
    trace = load_traces([path], load_paths([_snapshot(tmp_path)]))
    assert trace.skipped["ConfigMap"] == 2


def test_the_bundled_day_on_the_snapshot() -> None:
    reports = {p: _simulate("examples/snapshot/cluster.yaml", "examples/snapshot/day.jsonl", p, until=8 * 3600)
               for p in ("default", "gang")}
    for report in reports.values():  # the fine-tuning gang leaves at 1h; the evaluation gang takes its GPUs
        assert _pod(report, "ml/llm-finetune-trainer-0")["phase"] == "Succeeded"
        assert all(_pod(report, f"ml/eval-sweep-{i}")["boundAt"] == 3600.0 for i in range(3))
    # At 2h a 2-pod gang asks for 4 GPUs where 2 are free: pod-at-a-time binds one member for nothing.
    assert reports["default"]["summary"]["stranded"]["nvidia.com/gpu"] == 0.25
    assert reports["gang"]["summary"]["stranded"]["nvidia.com/gpu"] == 0.0


# --- errors: one line naming the file and the line, exit 2 -------------------------------------------------------

ERRORS = [
    ("not json", "line 1", "invalid JSON"),
    ('["time", 0]', "line 1", "an event must be a JSON object"),
    ('{"time": 0, "op": "create", "object": {}, "extra": 1}', "line 1", "unknown key(s) extra"),
    ('{"op": "create", "object": {}}', "line 1: time", "is required"),
    ('{"time": "soon", "op": "create", "object": {}}', "line 1: time", "invalid duration"),
    ('{"time": -4, "op": "create", "object": {}}', "line 1: time", "invalid duration"),
    ('{"time": 0, "op": "patch", "object": {}}', "line 1: op", "must be one of create, delete"),
    ('{"time": 0, "op": "create", "object": []}', "line 1: object", "must be an object"),
    ('{"time": 0, "op": "create", "object": {"apiVersion": "v1", "metadata": {"name": "x"}}}', "line 1: object.kind",
     "is required"),
    ('{"time": 0, "op": "create", "object": {"apiVersion": "v2", "kind": "Pod", "metadata": {"name": "x"}}}',
     "line 1: Pod x: apiVersion", "not read in apiVersion 'v2'"),
    ('{"time": 0, "op": "create", "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, '
     '"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "4 cores"}}}]}}}',
     "line 1: Pod x: spec.containers[0].resources.requests.cpu", "invalid quantity"),
    ('{"time": 0, "op": "create", "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big"}, '
     '"spec": {"containers": [{"name": "c"}]}}}', "line 1: object.metadata.name", "Pod default/big already exists"),
    ('{"time": 0, "op": "create", "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, '
     '"spec": {"nodeName": "node-z", "containers": [{"name": "c"}]}}}', "line 1: object.spec.nodeName",
     "no Node named 'node-z'"),
    ('{"time": 0, "op": "create", "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, '
     '"spec": {"priorityClassName": "gold", "containers": [{"name": "c"}]}}}',
     "line 1: Pod default/x: spec.priorityClassName", "no PriorityClass named 'gold'"),
    ('{"time": 60, "op": "delete", "object": {"kind": "Pod", "metadata": {"name": "ghost"}}}',
     "line 1: object.metadata.name", "Pod default/ghost does not exist"),
    ('{"time": 60, "op": "delete", "object": {"kind": "Node", "metadata": {"name": "node-a"}}}', "line 1: op",
     "deleting a Node is not simulated"),
    ('{"time": 60, "op": "update", "object": {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"}}}',
     "line 1: op", "changing a Node is not simulated"),
    ('{"time": 60, "op": "update", "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "waiting"}, '
     '"spec": {"schedulingGates": [{"name": "new.example/gate"}], "containers": [{"name": "c"}]}}}',
     "line 1: object.spec.schedulingGates", "only deletion is allowed: 'new.example/gate'"),
    ('{"time": 60, "op": "delete", "object": {"metadata": {"name": "big"}}}', "line 1: object.kind", "is required"),
    ('{"time": 60, "op": "delete", "object": {"kind": "Pod"}}', "line 1: object.metadata.name", "is required"),
]


@pytest.mark.parametrize(("line", "where", "message"), ERRORS, ids=[e[2] for e in ERRORS])
def test_errors_name_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, where: str,
                                   message: str) -> None:
    snapshot = _snapshot(tmp_path)
    trace = _trace(tmp_path, line)
    status = main(["simulate", snapshot, "--trace-file", trace])
    err = capsys.readouterr().err
    assert status == 2
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"phalanx: error: {trace}: {where}: "), err
    assert message in err


def test_time_must_not_go_backwards(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pod = json.dumps(MakePod("x").req(cpu="1").manifest())
    trace = _trace(tmp_path, f'{{"time": "2h", "op": "create", "object": {pod}}}',
                   '{"time": "1h", "op": "delete", "object": {"kind": "Pod", "name": "big"}}')
    assert main(["compare", _snapshot(tmp_path), "--trace-file", trace]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"phalanx: error: {trace}: line 2: time: time 1h is earlier than the line before (2h)")


def test_delete_at_the_creation_time_is_an_error(tmp_path: Path) -> None:
    pod = MakePod("x").req(cpu="1").manifest()
    trace = _trace(tmp_path, {"time": 60, "op": "create", "object": pod},
                   {"time": 60, "op": "delete", "object": _delete("x")})
    with pytest.raises(InputError, match="line 2: time: Pod default/x is deleted at 1m, not after it is created"):
        load_traces([trace], load_paths([_snapshot(tmp_path)]))


def test_missing_trace_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", _snapshot(tmp_path), "--trace-file", str(tmp_path / "none.jsonl")]) == 2
    assert "none.jsonl: No such file or directory" in capsys.readouterr().err


def test_cli_runs_a_trace_without_manifests(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = [{"time": 0, "op": "create", "object": MakeNode("n").alloc(cpu="2").manifest()},
              {"time": "1m", "op": "create", "object": MakePod("p").req(cpu="1").duration("10m").manifest()}]
    assert main(["simulate", "--trace-file", _trace(tmp_path, *events), "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert _pod(report, "default/p")["finishedAt"] == 660.0


# --- updates: a pending pod's schedulingGates lifted, a PodGroup changed or deleted ---------------------------

def _gated(name: str, *gates: str) -> MakePod:
    pod = MakePod(name).req(cpu="1")
    pod.spec["schedulingGates"] = [{"name": gate} for gate in gates]
    return pod


def test_a_gated_pod_waits_until_an_update_lifts_its_last_gate(tmp_path: Path) -> None:
    """SchedulingGates' PreEnqueue: not queued while gates are left (kube-scheduler's status words); an update
    that removes one gate of two changes nothing, the one that removes the last queues it."""
    snapshot = str(write_manifests(tmp_path / "s.yaml", MakeNode("node-a").alloc(cpu="4", memory="16Gi"),
                                   _gated("held", "example.com/quota", "example.com/data")))
    one_left = _gated("held", "example.com/data").manifest()
    none_left = MakePod("held").req(cpu="1").manifest()
    trace = _trace(tmp_path, {"time": "10m", "op": "update", "object": one_left},
                   {"time": "1h", "op": "update", "object": none_left})
    report = _simulate(snapshot, trace, until=1800)
    assert _pod(report, "default/held")["message"] == "waiting for scheduling gates: [example.com/data]"
    report = _simulate(snapshot, trace)
    assert _pod(report, "default/held")["boundAt"] == 3600.0


def test_one_gated_member_holds_its_whole_gang(tmp_path: Path) -> None:
    snapshot = str(write_manifests(tmp_path / "s.yaml", MakeNode("node-a").alloc(cpu="4", memory="16Gi"),
                                   MakePodGroup("train").gang(2), MakePod("w-0").req(cpu="1").group("train"),
                                   _gated("w-1", "example.com/quota").group("train")))
    trace = _trace(tmp_path, {"time": "5m", "op": "update",
                              "object": MakePod("w-1").req(cpu="1").group("train").manifest()})
    report = _simulate(snapshot, trace, profile="gang")
    assert [_pod(report, f"default/w-{i}")["boundAt"] for i in (0, 1)] == [300.0, 300.0]


def test_a_pod_group_update_and_delete_reach_the_scheduler(tmp_path: Path) -> None:
    """minCount lowered from 3 to 2: the two members bind then (upstream's UpdatePodGroup step). A PodGroup
    deleted: a member created after it waits for the PodGroup again."""
    snapshot = str(write_manifests(tmp_path / "s.yaml", MakeNode("node-a").alloc(cpu="4", memory="16Gi"),
                                   MakePodGroup("train").gang(3), *(MakePod(f"w-{i}").req(cpu="1").group("train")
                                                                   for i in range(2))))
    trace = _trace(tmp_path, {"time": "1m", "op": "update", "object": MakePodGroup("train").gang(2).manifest()},
                   {"time": "2m", "op": "delete", "object": _delete("train", kind="PodGroup")},
                   {"time": "3m", "op": "create", "object": MakePod("late").req(cpu="1").group("train").manifest()})
    report = _simulate(snapshot, trace, profile="gang")
    assert [_pod(report, f"default/w-{i}")["boundAt"] for i in (0, 1)] == [60.0, 60.0]
    late = _pod(report, "default/late")
    assert late["boundAt"] is None and late["message"] == "waiting for PodGroup default/train to be created"
