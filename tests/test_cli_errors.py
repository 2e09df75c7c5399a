"""Bad input ends with one line naming the file, the object and the field, exit status 2, no traceback."""

import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest

from phalanx.cli import main
from tests.builders import MakeNode, MakePod, MakePodGroup, write_manifests

NODE = MakeNode("node-a").alloc(cpu="16", memory="64Gi")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def fails_with(capsys: pytest.CaptureFixture[str], argv: list[str], *parts: str) -> str:
    """Exit 2 and exactly one stderr line `phalanx: error: …` holding every part, in order."""
    status, out, err = run(capsys, *argv)
    assert status == 2, (out, err)
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith("phalanx: error: ")
    at = 0
    for part in parts:
        found = line.find(part, at)
        assert found >= 0, f"{part!r} not found (in order) in {line!r}"
        at = found + len(part)
    return line


def file_with(tmp_path: Path, text: str, name: str = "input.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# --- broken files ---

def test_broken_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = file_with(tmp_path, "apiVersion: v1\nkind: Pod\nmetadata: {name: web\nspec: {}\n")
    fails_with(capsys, ["validate", path], path, "line ", "invalid YAML")


def test_broken_yaml_in_a_later_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = file_with(tmp_path, "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\nkind: [Pod\n")
    fails_with(capsys, ["simulate", path], path, "invalid YAML")


@pytest.mark.parametrize("text", ["- just\n- a list\n", "hello\n", "42\n"])
def test_a_document_that_is_not_an_object(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> None:
    path = file_with(tmp_path, "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\n" + text)
    fails_with(capsys, ["validate", path], path, "document 2 is not an object")


def test_a_list_item_that_is_not_an_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = file_with(tmp_path, "apiVersion: v1\nkind: List\nitems:\n- 3\n")
    fails_with(capsys, ["validate", path], path, "document 1", "items[0]", "not an object")


def test_a_file_that_does_not_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "nodes.yaml")
    fails_with(capsys, ["simulate", missing], missing, "no such file or directory")


def test_a_manifest_without_kind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = file_with(tmp_path, "apiVersion: v1\nmetadata: {name: a}\n")
    fails_with(capsys, ["validate", path], path, "kind", "is required")


# --- API versions ---

@pytest.mark.parametrize(("kind", "api_version"), [  # (v1alpha1/v1alpha2 Workloads are migrated: tests/migrate)
    ("PodGroup", "scheduling.k8s.io/v1alpha3"),
    ("Workload", "scheduling.k8s.io/v2"),
    ("Node", "v2"),
    ("Job", "batch/v1beta1"),
])
def test_a_known_kind_in_an_api_version_phalanx_does_not_read(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             kind: str, api_version: str) -> None:
    path = file_with(tmp_path, f"apiVersion: {api_version}\nkind: {kind}\nmetadata: {{name: x, namespace: batch}}\n"
                               "spec: {}\n")
    line = fails_with(capsys, ["validate", path], path, f"{kind} ", "apiVersion", api_version)
    assert "reads" in line  # says which version it does read


# --- fields ---

def test_negative_quantity(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(write_manifests(tmp_path / "pods.yaml", MakePod("worker-0", "batch").req(cpu="-4")))
    fails_with(capsys, ["validate", path], path, "Pod batch/worker-0", "spec.containers[0].resources.requests.cpu",
               "negative quantity")


def test_malformed_quantity(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(write_manifests(tmp_path / "pods.yaml", MakePod("worker-0", "batch").req(cpu="4 cores")))
    line = fails_with(capsys, ["validate", path], path, "Pod batch/worker-0",
                      "spec.containers[0].resources.requests.cpu", "invalid quantity '4 cores'")
    # The README's example line, word for word apart from the path.
    assert line == (f"phalanx: error: {path}: Pod batch/worker-0: spec.containers[0].resources.requests.cpu: "
                    "invalid quantity '4 cores'")


@pytest.mark.parametrize(("limits", "field", "detail"), [
    (None, "spec.containers[0].resources.limits",
     "Required value: Limit must be set for non overcommitable resources"),
    ({"nvidia.com/gpu": "1"}, "spec.containers[0].resources.requests[nvidia.com/gpu]",
     "Invalid value: 2: must be equal to nvidia.com/gpu limit of 1"),
])
def test_a_gpu_request_needs_its_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       limits: dict[str, str] | None, field: str, detail: str) -> None:
    """As the API server says (tests/verify/test_resource_validation.py checks it against the real one)."""
    made = MakePod("trainer", "ml").container(requests={"cpu": "1", "nvidia.com/gpu": "2"}, limits=limits)
    if limits is None:
        del made.spec["containers"][0]["resources"]["limits"]
    path = str(write_manifests(tmp_path / "pods.yaml", made))
    fails_with(capsys, ["simulate", path], path, "Pod ml/trainer", field, detail)


def test_malformed_node_allocatable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(write_manifests(tmp_path / "nodes.yaml", MakeNode("n").alloc(memory="64GB")))
    fails_with(capsys, ["validate", path], path, "Node n", "status.allocatable.memory", "invalid quantity")


def test_a_quantity_too_large_to_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(write_manifests(tmp_path / "nodes.yaml", MakeNode("n").alloc(cpu="1e30")))
    fails_with(capsys, ["simulate", path], path, "Node n", "status.allocatable.cpu", "too large")


def test_min_count_below_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(write_manifests(tmp_path / "groups.yaml", MakePodGroup("workers", "batch").gang(0)))
    fails_with(capsys, ["validate", path], path, "PodGroup batch/workers", "spec.schedulingPolicy.gang.minCount",
               "at least 1")


@pytest.mark.parametrize(("annotations", "completion_mode", "field", "detail"), [
    ({"kueue.x-k8s.io/job-min-parallelism": "many"}, None, "metadata.annotations[kueue.x-k8s.io/job-min-parallelism]",
     "not an integer"),
    ({"kueue.x-k8s.io/job-min-parallelism": "4"}, None, "metadata.annotations[kueue.x-k8s.io/job-min-parallelism]",
     "should be between 0 and 3"),
    ({"kueue.x-k8s.io/job-min-parallelism": "0"}, None, "metadata.annotations[kueue.x-k8s.io/job-min-parallelism]",
     "should be between 0 and 3"),
    ({"kueue.x-k8s.io/job-completions-equal-parallelism": "yes"}, "Indexed",
     "metadata.annotations[kueue.x-k8s.io/job-completions-equal-parallelism]", "not a boolean"),
    ({"kueue.x-k8s.io/job-completions-equal-parallelism": "true"}, None,
     "metadata.annotations[kueue.x-k8s.io/job-completions-equal-parallelism]", "should not be enabled for NonIndexed"),
])
def test_kueue_partial_admission_annotations_checked_as_kueues_webhook_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], annotations: dict[str, str], completion_mode: str | None,
        field: str, detail: str) -> None:
    spec: dict[str, Any] = {"parallelism": 4, "completions": 4, "template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}
    if completion_mode:
        spec["completionMode"] = completion_mode
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": "train", "labels": {"kueue.x-k8s.io/queue-name": "q"}, "annotations": annotations}, "spec": spec}
    path = file_with(tmp_path, json.dumps(job))
    fails_with(capsys, ["validate", path], path, "Job train", field, detail)


def test_duplicate_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(write_manifests(tmp_path / "pods.yaml", MakePod("web", "shop").req(cpu="1"),
                               MakePod("web", "shop").req(cpu="2")))
    fails_with(capsys, ["validate", path], path, "Pod shop/web", "metadata.name", "duplicate Pod")


def test_unknown_priority_class_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(write_manifests(tmp_path / "pods.yaml", MakePod("web", "shop").req(cpu="1").priority_class("gold")))
    fails_with(capsys, ["validate", path], path, "Pod shop/web", "spec.priorityClassName", "'gold'")


def test_pods_bound_to_nodes_missing_from_a_partial_snapshot_are_skipped_with_one_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pods = [MakePod(f"db-{i}", "shop").req(cpu="1").node(f"node-{i}") for i in range(5)]
    path = str(write_manifests(tmp_path / "pods.yaml", NODE, MakePod("web", "shop").req(cpu="1").node("node-a"),
                               *pods))
    status, out, err = run(capsys, "simulate", path, "-o", "json")
    assert status == 0, err
    assert json.loads(out)["summary"]["pods"]["total"] == 1
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "skipped 5 pod(s) bound to nodes not in the input" in lines[0]
    assert "shop/db-0 on node-0" in lines[0] and "and 2 more" in lines[0]


def test_node_name_naming_a_node_that_arrives_later(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(write_manifests(tmp_path / "x.yaml", MakeNode("late").alloc(cpu="4").arrival("1h"),
                               MakePod("db", "shop").req(cpu="1").node("late")))
    fails_with(capsys, ["simulate", path, "-o", "json"], "Pod shop/db", "spec.nodeName",
               "Node 'late' arrives at 3600s, after this pod (0s)")


# --- flags ---

@pytest.mark.parametrize("until", ["2x", "soon", "-1h", ""])
def test_bad_until(tmp_path: Path, capsys: pytest.CaptureFixture[str], until: str) -> None:
    path = str(write_manifests(tmp_path / "n.yaml", NODE))
    fails_with(capsys, ["simulate", path, f"--until={until}"], "--until", "invalid duration")
    fails_with(capsys, ["compare", path, f"--until={until}"], "--until", "invalid duration")


def test_unknown_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(write_manifests(tmp_path / "n.yaml", NODE))
    fails_with(capsys, ["simulate", path, "--profile", "fastest"], "--profile", "unknown profile 'fastest'")
    fails_with(capsys, ["compare", path, "--profiles", "default,fastest"], "unknown profile 'fastest'")


@pytest.mark.parametrize(("gates", "why"), [
    ("GenericWorkload", "invalid feature gate"),
    ("GenericWorkload=yes", "invalid feature gate"),
    ("GangScheduling=true", "unrecognized feature gate 'GangScheduling'"),
])
def test_bad_feature_gates(tmp_path: Path, capsys: pytest.CaptureFixture[str], gates: str, why: str) -> None:
    path = str(write_manifests(tmp_path / "n.yaml", NODE))
    fails_with(capsys, ["simulate", path, f"--feature-gates={gates}"], "--feature-gates", why)


def test_a_broken_profile_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(write_manifests(tmp_path / "n.yaml", NODE))
    profile = file_with(tmp_path, "profiles: [{plugins: {score: {enabled: [{name: Telepathy}]}}}]\n", "p.yaml")
    fails_with(capsys, ["simulate", path, "--config", profile], profile, "Telepathy")


# --- not errors ---

def test_unrelated_kinds_are_skipped_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(write_manifests(tmp_path / "snapshot.yaml", NODE,
                               {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}},
                               {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}},
                               {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}},
                               MakePod("web").req(cpu="1")))
    for argv in (["validate", path], ["simulate", path, "-o", "json"], ["compare", path, "-o", "json"]):
        status, out, err = run(capsys, *argv)
        assert status == 0
        assert err.splitlines() == [
            "phalanx: skipped 3 object(s) of kinds that do not affect scheduling (ConfigMap: 2, Service: 1)"]
        assert out


def test_validate_counts_what_it_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(write_manifests(tmp_path / "x.yaml", NODE, MakePod("a").req(cpu="1"), MakePodGroup("g").gang(1)))
    status, out, err = run(capsys, "validate", path)
    assert status == 0 and err == ""
    assert out.startswith("valid: 1 node(s), 1 pod(s), 1 pod group(s)")


def _simulate(capsys: pytest.CaptureFixture[str], path: str, *flags: str) -> dict[str, Any]:
    status, out, err = run(capsys, "simulate", path, "-o", "json", *flags)
    assert status == 0, err
    report: dict[str, Any] = json.loads(out)
    return report


def test_a_pod_naming_a_pod_group_that_never_arrives(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(write_manifests(tmp_path / "x.yaml", NODE, MakePod("w", "batch").req(cpu="1").group("ghost")))
    # GenericWorkload on: the pod waits in PreEnqueue for its PodGroup, with that reason.
    gang = _simulate(capsys, path, "--profile", "gang")
    [pod] = gang["pods"]
    assert pod["phase"] == "Pending"
    assert pod["message"] == "waiting for PodGroup batch/ghost to be created"
    assert gang["summary"]["pods"]["pending"] == 1
    # GenericWorkload off (the v1.37 default): the scheduler ignores the group link and places the pod alone.
    default = _simulate(capsys, path, "--profile", "default")
    [pod] = default["pods"]
    assert pod["phase"] == "Running" and pod["node"] == "node-a"


def test_feature_gates_pick_the_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(write_manifests(tmp_path / "x.yaml", NODE, MakePod("w", "batch").req(cpu="1").group("ghost")))
    assert _simulate(capsys, path)["profile"] == "default"
    gated = _simulate(capsys, path, "--feature-gates=GenericWorkload=true")
    assert gated["profile"] == "gang" and gated["featureGates"]["GenericWorkload"] is True
    assert gated["pods"][0]["phase"] == "Pending"


def test_verify_without_the_control_plane_names_the_build_script(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = write_manifests(tmp_path / "c.yaml", MakeNode("n").alloc(cpu="1"))
    code, out, err = run(capsys, "verify", str(path), "--kube-bin", str(tmp_path / "bin"))
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0
    assert "missing etcd, kube-apiserver, kube-scheduler, kube-controller-manager" in err
    assert "tools/kube/build.sh" in err


def test_verify_checks_its_input_before_starting_anything(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = write_manifests(tmp_path / "c.yaml", MakePod("p").req(cpu="4 cores"))
    code, _, err = run(capsys, "verify", str(path), "--kube-bin", str(tmp_path / "bin"))
    assert code == 2
    assert "spec.containers[0].resources.requests.cpu" in err and "Traceback" not in err


# --- phalanx run ---

def unreachable_kubeconfig(tmp_path: Path) -> str:
    return file_with(tmp_path, "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                               "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
                               "users: [{name: u, user: {token: t}}]\n"
                               "contexts: [{name: c, context: {cluster: c, user: u}}]\n", "kubeconfig")


def test_run_with_a_missing_kubeconfig(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fails_with(capsys, ["run", "--kubeconfig", str(tmp_path / "nope")], "nope", "cannot load a client configuration")


@pytest.mark.parametrize("policy", ["kueue", "volcano"])
def test_run_refuses_a_queueing_profile_it_cannot_honour(policy: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """The queueing of `--profile kueue|volcano` is the simulator's; live, queue-labelled pods would bind at once."""
    fails_with(capsys, ["run", "--profile", policy, "--kubeconfig", str(tmp_path / "nope")], "--profile",
               f"{policy!r} queues workloads as {policy.capitalize()} does, which only the simulator models")


@pytest.mark.parametrize(("verbose", "level"), [([], logging.WARNING), (["-v"], logging.NOTSET)])
def test_run_logs_requests_only_when_verbose(verbose: list[str], level: int, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """At info, `run` logs start, leadership and decisions, not the client's line per request (~100 a minute idle)."""
    import lightkube.core.generic_client  # noqa: F401  (its HTTP client's loggers wrote a line per request)

    assert "httpx2" in sys.modules  # the client lightkube speaks through: httpx2 over httpcore2
    clients = [logging.getLogger(name) for name in ("httpx2", "httpcore2")]
    try:
        for client in clients:
            client.setLevel(logging.NOTSET)
        fails_with(capsys, ["run", *verbose, "--kubeconfig", str(tmp_path / "nope")], "cannot load")
        assert [client.level for client in clients] == [level, level]
    finally:
        for client in clients:
            client.setLevel(logging.NOTSET)


def test_run_with_a_bad_metrics_address(capsys: pytest.CaptureFixture[str]) -> None:
    fails_with(capsys, ["run", "--metrics-bind-address", "10351"], "--metrics-bind-address", "must be host:port")


def test_run_with_lease_timings_client_go_refuses(capsys: pytest.CaptureFixture[str]) -> None:
    fails_with(capsys, ["run", "--leader-elect-renew-deadline", "20"], "--leader-elect-lease-duration",
               "renew deadline")


def test_run_on_a_metrics_port_already_taken(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        fails_with(capsys, ["run", "--kubeconfig", unreachable_kubeconfig(tmp_path),
                            "--metrics-bind-address", f"127.0.0.1:{port}"],
                   "--metrics-bind-address", f"cannot listen on 127.0.0.1:{port}")


# --- input past what Kubernetes takes, and report directories (the fuzz campaign's findings) ---

def test_a_quantity_with_a_huge_exponent_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = file_with(tmp_path, "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n"
                               "status: {allocatable: {cpu: '1e" + "9" * 5000 + "'}}\n")
    line = fails_with(capsys, ["validate", path], path, "Node a", "status.allocatable.cpu", "out of range")
    assert len(line) < 300


@pytest.mark.parametrize("special", ["/dev/zero", "fifo"])
def test_a_file_that_is_not_a_regular_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], special: str) -> None:
    import os

    path = special
    if special == "fifo":
        path = str(tmp_path / "pods.yaml")
        os.mkfifo(path)
    fails_with(capsys, ["validate", path], path, "not a regular file")


def test_the_report_directory_is_checked_before_the_simulation(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    import os

    path = str(write_manifests(tmp_path / "in.yaml", NODE, MakePod("p").req(cpu="1")))
    fails_with(capsys, ["simulate", path, "--report", ""], "--report", "must name a directory")
    a_file = file_with(tmp_path, "x", "taken")
    fails_with(capsys, ["simulate", path, "--report", a_file], a_file, "--report", "not a directory")
    fails_with(capsys, ["simulate", path, "--report", str(tmp_path / "taken" / "sub")], "--report",
               "is not a directory")
    out = tmp_path / "out"
    (out / "index.html").mkdir(parents=True)
    fails_with(capsys, ["compare", path, "--report", str(out)], "--report", "index.html is a directory")
    assert os.listdir(out) == ["index.html"]  # nothing written, nothing half-written
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        fails_with(capsys, ["simulate", path, "--report", str(locked / "r")], "--report", "is not writable")


def test_a_failed_report_write_keeps_the_previous_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from phalanx.sim.output import write_files

    out = tmp_path / "out"
    write_files(str(out), {"report.json": b"old", "series.csv": b"old"})
    (out / "b.png").mkdir()
    with pytest.raises(Exception, match=r"cannot write the report|b.png is a directory"):
        write_files(str(out), {"report.json": b"new", "series.csv": b"new", "b.png": b"new"})
    assert (out / "report.json").read_bytes() == b"old" and (out / "series.csv").read_bytes() == b"old"
    assert sorted(p.name for p in out.iterdir()) == ["b.png", "report.json", "series.csv"]


def test_json_output_is_strict_json(capsys: pytest.CaptureFixture[str]) -> None:
    from phalanx.cli import _emit

    _emit({"a": float("inf"), "b": [float("nan"), 1.5], "c": {"d": -float("inf")}}, "json")
    out = capsys.readouterr().out
    assert json.loads(out, parse_constant=lambda name: pytest.fail(f"{name} in JSON output")) == {
        "a": None, "b": [None, 1.5], "c": {"d": None}}
    _emit({"a": float("inf")}, "yaml")
    assert capsys.readouterr().out == "a: null\n"


def test_series_csv_neutralises_spreadsheet_formulas(tmp_path: Path) -> None:
    from phalanx.sim.output import series_csv

    series = {"time": [0.0], "allocated": {"=cmd|'/c calc'!A1": [0.5]}, "podsRunning": [1]}
    text = series_csv([{"profile": "=HYPERLINK(\"x\")", "series": series},
                       {"profile": "+1", "series": series}, {"profile": "@sum", "series": series},
                       {"profile": "-2", "series": series}, {"profile": "gang", "series": series}])
    import csv

    rows = list(csv.reader(text.splitlines()))[1:]
    assert all(row[0].startswith(("'", "gang")) for row in rows), rows
    assert {row[3] for row in rows if row[2] == "allocated"} == {"'=cmd|'/c calc'!A1"}
    assert "'=cmd" in text and "gang,0.0,podsRunning,,1" in text
