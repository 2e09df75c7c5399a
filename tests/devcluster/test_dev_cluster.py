"""`phalanx dev-cluster` as a user runs it, on the real v1.37.2 binaries: it writes its kubeconfig once its nodes
exist; examples/dev-cluster applies to it as docs/live.md says; its kube-scheduler binds the Deployment's pods
(made by its kube-controller-manager) and `phalanx run` binds the gang that names Phalanx; SIGTERM exits 0 and
leaves no process, temporary folder or kubeconfig behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client, KubeConfig
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import Node, Pod
from lightkube.resources.scheduling_v1beta1 import PodGroup

from phalanx.verify.controlplane import ControlPlaneError, find_binaries, free_port
from tests.kube import until

pytestmark = pytest.mark.kube

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dev-cluster"


@pytest.fixture(autouse=True)
def binaries() -> None:
    try:
        find_binaries()
    except ControlPlaneError as exc:
        if os.environ.get("PHALANX_REQUIRE_KUBE") == "1":
            pytest.fail(str(exc))
        pytest.skip(str(exc))


def _start(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, "-m", "phalanx", *argv], stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})


@pytest.fixture
def started(tmp_path: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for proc in procs:  # a failed test still takes everything down
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _children(pid: int) -> dict[int, str]:
    """The live processes whose parent is `pid`, with their command lines."""
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found[int(entry.name)] = cmdline
    return found


def _bound(client: Client, name_prefix: str) -> dict[str, str | None]:
    return {p.metadata.name: p.spec.nodeName if p.spec else None for p in client.list(Pod, namespace="default")
            if p.metadata is not None and p.metadata.name is not None and p.metadata.name.startswith(name_prefix)}


# The example files' kinds, as lightkube's typed models. Not through lightkube's codecs: they register these
# classes in its process-wide resource registry, where verify's oracle (in the same test session) registers generic
# classes of the same kinds; a second class for a kind is an error there.
_TYPED: dict[str, Any] = {"Pod": Pod, "Deployment": Deployment, "PodGroup": PodGroup}


def _apply(client: Client, path: Path) -> None:
    for doc in yaml.safe_load_all(path.read_text()):
        client.create(_TYPED[doc["kind"]].from_dict(doc), namespace="default")


def test_a_dev_cluster_runs_both_schedulers_and_stops_clean(tmp_path: Path,
                                                            started: list[subprocess.Popen[bytes]]) -> None:
    kubeconfig = tmp_path / "dev.kubeconfig"
    dev = _start(["dev-cluster", "--profile", "gang", "--nodes", "2", "--node-cpu", "8", "--gpus", "1",
                  "--kubeconfig-out", str(kubeconfig)], tmp_path / "dev.log")
    started.append(dev)
    until(lambda: kubeconfig.exists() or dev.poll() is not None, 180, "the dev cluster's kubeconfig")
    assert dev.poll() is None, (tmp_path / "dev.log").read_text()
    client = Client(KubeConfig.from_file(str(kubeconfig)), field_manager="phalanx-tests")

    nodes = {n.metadata.name: n for n in client.list(Node) if n.metadata is not None and n.metadata.name}
    assert sorted(nodes) == ["dev-node-0", "dev-node-1"]
    for node in nodes.values():
        assert node.status is not None and node.status.allocatable is not None
        assert node.status.allocatable["cpu"] == "8" and node.status.allocatable["nvidia.com/gpu"] == "1"
        assert not (node.spec and node.spec.taints)  # no lifecycle controller marks them unreachable

    printed = (tmp_path / "dev.log").read_text()
    assert f"phalanx run --kubeconfig {kubeconfig} --profile gang --leader-elect=false" in printed
    assert "GenericWorkload=true" in printed and "no kubelet runs" in printed

    _apply(client, EXAMPLE / "web.yaml")  # no schedulerName: the default scheduler's
    until(lambda: len(web := _bound(client, "web-")) == 2 and all(web.values()), 60,
          "the ReplicaSet controller's pods bound by kube-scheduler")
    _apply(client, EXAMPLE / "gang.yaml")
    assert set(_bound(client, "trainer-").values()) == {None}  # kube-scheduler leaves pods naming phalanx alone

    run = _start(["run", "--kubeconfig", str(kubeconfig), "--profile", "gang", "--leader-elect=false",
                  "--metrics-bind-address", f"127.0.0.1:{free_port()}"], tmp_path / "run.log")
    started.append(run)
    until(lambda: len(gang := _bound(client, "trainer-")) == 2 and all(gang.values()), 60,
          "phalanx run to bind the gang")
    run.send_signal(signal.SIGTERM)
    assert run.wait(30) == 0, (tmp_path / "run.log").read_text()

    children = _children(dev.pid)
    names = {Path(cmd.split()[0]).name for cmd in children.values()}
    assert names == {"etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager"}, children
    work_dirs = _work_dirs(children)
    assert len(work_dirs) == 1 and all(d.is_dir() for d in work_dirs), children

    dev.send_signal(signal.SIGTERM)
    assert dev.wait(60) == 0, (tmp_path / "dev.log").read_text()
    assert not _children(dev.pid)
    for pid in children:
        assert not _alive(pid), children[pid]
    assert not any(d.exists() for d in work_dirs)
    assert not kubeconfig.exists()  # it named a server that is gone
    log = (tmp_path / "dev.log").read_text()
    assert "Traceback" not in log, log
    assert log.rstrip().endswith("phalanx dev-cluster: stopped"), log


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"




def _work_dirs(children: dict[int, str]) -> set[Path]:
    """The control plane's temporary folder, read from etcd's --data-dir."""
    return {Path(arg).parent for cmd in children.values() for arg in cmd.split()
            if "/phalanx-kube-" in arg and arg.endswith("/etcd")}


def test_ctrl_c_while_it_starts_stops_what_had_started(tmp_path: Path,
                                                       started: list[subprocess.Popen[bytes]]) -> None:
    kubeconfig = tmp_path / "dev.kubeconfig"
    dev = _start(["dev-cluster", "--kubeconfig-out", str(kubeconfig)], tmp_path / "dev.log")
    started.append(dev)
    seen: dict[int, str] = {}

    def apiserver_started() -> bool:
        seen.update(_children(dev.pid))
        return any("kube-apiserver" in cmd for cmd in seen.values()) or dev.poll() is not None

    until(apiserver_started, 120, "kube-apiserver to be started", poll=0.02)
    assert not kubeconfig.exists()  # not ready yet: its nodes come after the API server
    dev.send_signal(signal.SIGINT)
    assert dev.wait(60) == 0, (tmp_path / "dev.log").read_text()
    assert not any(_alive(pid) for pid in seen), seen
    assert _work_dirs(seen) and not any(d.exists() for d in _work_dirs(seen))
    assert not kubeconfig.exists()
    assert "Traceback" not in (tmp_path / "dev.log").read_text()


def test_a_component_that_dies_stops_the_rest_and_exits_1(tmp_path: Path,
                                                          started: list[subprocess.Popen[bytes]]) -> None:
    kubeconfig = tmp_path / "dev.kubeconfig"
    dev = _start(["dev-cluster", "--nodes", "1", "--kubeconfig-out", str(kubeconfig)], tmp_path / "dev.log")
    started.append(dev)
    until(lambda: kubeconfig.exists() or dev.poll() is not None, 180, "the dev cluster's kubeconfig")
    children = _children(dev.pid)
    scheduler = next(pid for pid, cmd in children.items() if "kube-scheduler" in cmd.split()[0])
    os.kill(scheduler, signal.SIGKILL)
    assert dev.wait(60) == 1
    log = (tmp_path / "dev.log").read_text()
    assert "phalanx dev-cluster: kube-scheduler exited with status -9" in log, log
    assert not any(_alive(pid) for pid in children), children
    assert not any(d.exists() for d in _work_dirs(children))
    assert not kubeconfig.exists()
