"""`phalanx snapshot` without a control plane: bad input is one line and exit 2, the table of kinds agrees with
what Phalanx reads, what is dropped from objects, and a failed write leaves DIR as it was."""

from __future__ import annotations

import errno
import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.admission.kueue_objects import VERSIONS as KUEUE_VERSIONS
from phalanx.api.kinds import KINDS
from phalanx.snapshot import Snapshot, write_snapshot
from phalanx.snapshot.clean import clean
from phalanx.snapshot.kinds import CAPTURED
from tests.test_cli_errors import fails_with


def kubeconfig(tmp_path: Path, server: str) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}), encoding="utf-8")
    return str(path)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def web_page() -> Iterator[str]:
    """An HTTP server on loopback that answers every GET with an HTML page (not an API server)."""

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"<html>hello</html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


# --- bad input ----------------------------------------------------------------------------------------------

def test_a_missing_kubeconfig(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "nope")
    fails_with(capsys, ["snapshot", "--kubeconfig", missing, "-o", str(tmp_path / "out")],
               f"{missing}: cannot load a client configuration")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("text", ["just: [a, list\n", "[1, 2]\n", "clusters: 3\n", "a: b\n", ""])
@pytest.mark.parametrize("command", ["snapshot", "run"])
def test_a_kubeconfig_that_is_not_one(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str,
                                      command: str) -> None:
    """lightkube reads the file unchecked; `run` shares the loading, so it answers the same way."""
    bad = tmp_path / "kubeconfig"
    bad.write_text(text, encoding="utf-8")
    rest = ["-o", str(tmp_path / "out")] if command == "snapshot" else ["--leader-elect", "false"]
    fails_with(capsys, [command, "--kubeconfig", str(bad), *rest], f"{bad}: not a kubeconfig (")
    assert not (tmp_path / "out").exists()


def test_a_kubeconfig_without_a_current_context(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = Path(kubeconfig(tmp_path, f"https://127.0.0.1:{closed_port()}"))
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    del config["current-context"]
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    fails_with(capsys, ["snapshot", "--kubeconfig", str(path), "-o", str(tmp_path / "out")],
               f"{path}: cannot build a client from it: No current context set")


def test_a_kubeconfig_naming_certificates_that_are_not_there(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = Path(kubeconfig(tmp_path, f"https://127.0.0.1:{closed_port()}"))
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    config["users"][0]["user"] = {"client-certificate": str(tmp_path / "no.crt"),
                                  "client-key": str(tmp_path / "no.key")}
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    fails_with(capsys, ["snapshot", "--kubeconfig", str(path), "-o", str(tmp_path / "out")],
               f"{path}: cannot build a client from it: ", "No such file or directory")


def test_an_unreachable_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    port = closed_port()
    config = kubeconfig(tmp_path, f"https://127.0.0.1:{port}")
    fails_with(capsys, ["snapshot", "--kubeconfig", config, "-o", str(tmp_path / "out")],
               f"{config}: cannot reach the API server at https://127.0.0.1:{port}: ConnectError")
    assert not (tmp_path / "out").exists()


def test_a_server_that_is_not_an_api_server(tmp_path: Path, web_page: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    config = kubeconfig(tmp_path, web_page)
    fails_with(capsys, ["snapshot", "--kubeconfig", config, "-o", str(tmp_path / "out")],
               f"{config}: GET /apis: the answer is not JSON", f"is {web_page} an API server?")
    assert not (tmp_path / "out").exists()


def test_dir_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Checked before the cluster is read: the server named here is not even reachable."""
    target = tmp_path / "snap.yaml"
    target.write_text("keep me\n", encoding="utf-8")
    config = kubeconfig(tmp_path, f"https://127.0.0.1:{closed_port()}")
    fails_with(capsys, ["snapshot", "--kubeconfig", config, "-o", str(target)],
               f"--output: {target} exists and is not a directory")
    assert target.read_text(encoding="utf-8") == "keep me\n"


def test_dir_in_a_folder_that_does_not_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = kubeconfig(tmp_path, f"https://127.0.0.1:{closed_port()}")
    fails_with(capsys, ["snapshot", "--kubeconfig", config, "-o", str(tmp_path / "a" / "b")],
               f"--output: {tmp_path / 'a'} is not a directory")


def test_dir_is_required(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fails_with(capsys, ["snapshot"], "the following arguments are required: -o/--output")


# --- the table of kinds -------------------------------------------------------------------------------------

def test_the_table_reads_only_versions_phalanx_reads_and_never_secrets() -> None:
    assert len({entry.file for entry in CAPTURED}) == len(CAPTURED)
    assert not [entry for entry in CAPTURED if entry.kind == "Secret" or entry.plural == "secrets"]
    for entry in CAPTURED:
        api_versions = {f"{entry.group}/{v}" if entry.group else v for v in entry.versions}
        if entry.kind in KINDS:
            assert api_versions <= set(KINDS[entry.kind].versions), entry
        elif entry.group == "kueue.x-k8s.io":
            assert set(entry.versions) <= set(KUEUE_VERSIONS), entry
    assert {entry.kind for entry in CAPTURED} >= set(KINDS), "a kind Phalanx reads is not captured"


def test_clean_drops_the_servers_bookkeeping_and_keeps_the_age() -> None:
    item = {"metadata": {
        "name": "p", "namespace": "ml", "uid": "1", "resourceVersion": "7", "generation": 2, "selfLink": "/x",
        "creationTimestamp": "2026-01-01T00:00:00Z", "managedFields": [{"manager": "kubectl"}],
        "ownerReferences": [{"kind": "Job", "name": "j", "uid": "2", "controller": True}],
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "team": "ml"}},
        "spec": {"nodeName": "n"}, "status": {"startTime": "2026-01-01T00:00:01Z"}}
    assert clean(item, "v1", "Pod") == {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ml", "creationTimestamp": "2026-01-01T00:00:00Z",
                     "ownerReferences": [{"kind": "Job", "name": "j", "uid": "2", "controller": True}],
                     "annotations": {"team": "ml"}},
        "spec": {"nodeName": "n"}, "status": {"startTime": "2026-01-01T00:00:01Z"}}
    only = clean({"metadata": {"name": "q", "annotations": {"kubectl.kubernetes.io/last-applied-configuration": ""}}},
                 "v1", "Pod")
    assert only["metadata"] == {"name": "q"}


def test_clean_drops_a_jobs_generated_selector_and_keeps_a_manual_one() -> None:
    """The API server's own shape of a Job it defaulted (selector and labels from the uid): refused on a new Job
    (the kube test replays one through `verify`)."""
    uid = "4a9106e9-30be-435b-8d5e-307d30478d28"
    job = {"metadata": {"name": "train", "uid": uid},
           "spec": {"selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}},
                    "template": {"metadata": {"labels": {"batch.kubernetes.io/controller-uid": uid,
                                                         "batch.kubernetes.io/job-name": "train",
                                                         "controller-uid": uid, "job-name": "train", "app": "a"}},
                                 "spec": {"containers": []}}}}
    cleaned = clean(job, "batch/v1", "Job")
    assert "selector" not in cleaned["spec"]
    assert cleaned["spec"]["template"]["metadata"]["labels"] == {
        "batch.kubernetes.io/job-name": "train", "job-name": "train", "app": "a"}
    assert uid not in str(cleaned)
    manual = {"spec": {"manualSelector": True, "selector": {"matchLabels": {"app": "a"}},
                       "template": {"metadata": {"labels": {"app": "a", "controller-uid": "x"}}}}}
    assert clean(manual, "batch/v1", "Job")["spec"] == manual["spec"]


# --- writing ------------------------------------------------------------------------------------------------

def snapshot_of(*kinds: str) -> Snapshot:
    entries = {entry.kind: entry for entry in CAPTURED}
    return Snapshot(objects={entries[kind]: [{"apiVersion": "v1", "kind": kind, "metadata": {"name": "x"}}]
                             for kind in kinds})


def test_a_failed_write_leaves_dir_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_snapshot(str(tmp_path), snapshot_of("Node"))
    before = (tmp_path / "nodes.yaml").read_text(encoding="utf-8")
    real_dump = yaml.dump
    calls = 0

    def dump_then_fill_the_disk(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / ".pods.yaml.tmp"))
        return real_dump(*args, **kwargs)

    monkeypatch.setattr(yaml, "dump", dump_then_fill_the_disk)  # the module write.py dumps with
    with pytest.raises(Exception, match="No space left on device"):
        write_snapshot(str(tmp_path), snapshot_of("Node", "Pod", "Job"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nodes.yaml"]
    assert (tmp_path / "nodes.yaml").read_text(encoding="utf-8") == before


def test_a_kind_no_longer_served_loses_its_old_file(tmp_path: Path) -> None:
    entries = {entry.kind: entry for entry in CAPTURED}
    write_snapshot(str(tmp_path), snapshot_of("Node", "JobSet"))
    assert (tmp_path / "jobsets.yaml").exists()
    write_snapshot(str(tmp_path), Snapshot(objects=snapshot_of("Node").objects, not_served=[entries["JobSet"]]))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nodes.yaml"]
