"""`phalanx dev-cluster`'s bad input: one line `phalanx: error: FLAG: what`, exit 2, before anything starts (no
process, no temporary folder, no kubeconfig)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import yaml

from phalanx.devcluster.cluster import check_kubeconfig_out, controllers
from phalanx.devcluster.nodes import GPU_RESOURCE, NODE_LABEL, NodeShape, node_documents
from phalanx.errors import InputError
from phalanx.scheduler.profiles import builtin
from tests.test_cli_errors import fails_with


@pytest.fixture
def nowhere(tmp_path: Path) -> list[str]:
    """Flags that would start nothing even if the input were good: binaries that are not there."""
    return ["--kube-bin", str(tmp_path / "no-bin"), "--kubeconfig-out", str(tmp_path / "dev.kubeconfig")]


@pytest.mark.parametrize(("flags", "parts"), [
    (["--nodes", "0"], ["--nodes: want a whole number of nodes from 1 to 1000, got 0"]),
    (["--nodes", "-2"], ["--nodes: want a whole number of nodes from 1 to 1000, got -2"]),
    (["--nodes", "1001"], ["--nodes: want a whole number of nodes from 1 to 1000"]),
    (["--nodes", "three"], ["--nodes: invalid int value: 'three'"]),
    (["--node-cpu", "4 cores"], ["--node-cpu: invalid quantity '4 cores'"]),
    (["--node-cpu", "0"], ["--node-cpu: must be above 0, got '0'"]),
    (["--node-memory=-1Gi"], ["--node-memory: negative quantity '-1Gi'"]),
    (["--node-memory", "lots"], ["--node-memory: invalid quantity 'lots'"]),
    (["--gpus", "-1"], ["--gpus: want a whole number of GPUs per node from 0 to 1024, got -1"]),
    (["--gpus", "1.5"], ["--gpus: invalid int value: '1.5'"]),
    (["--profile", "nosuch"], ["--profile: unknown profile 'nosuch'"]),
    (["--profile", "kueue"], ["--profile: 'kueue' queues workloads as Kueue does, which only the simulator models"]),
    (["--profile", "volcano"], ["--profile: 'volcano' queues workloads as Volcano does"]),
])
def test_bad_flags(capsys: pytest.CaptureFixture[str], nowhere: list[str], flags: list[str], parts: list[str]) -> None:
    fails_with(capsys, ["dev-cluster", *nowhere, *flags], *parts)


def test_missing_binaries_name_the_build_command(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    before = set(Path(tempfile.gettempdir()).glob("phalanx-kube-*"))
    out = tmp_path / "dev.kubeconfig"
    fails_with(capsys, ["dev-cluster", "--kube-bin", str(tmp_path / "bin"), "--kubeconfig-out", str(out)],
               f"{tmp_path / 'bin'}: missing etcd, kube-apiserver, kube-scheduler, kube-controller-manager",
               "tools/kube/build.sh")
    assert not out.exists()
    assert set(Path(tempfile.gettempdir()).glob("phalanx-kube-*")) <= before  # no control plane folder made


def test_an_existing_file_that_is_not_a_dev_kubeconfig_is_kept(capsys: pytest.CaptureFixture[str],
                                                                tmp_path: Path) -> None:
    mine = tmp_path / "config"
    mine.write_text("apiVersion: v1\nkind: Config\ncurrent-context: prod\n")
    fails_with(capsys, ["dev-cluster", "--kube-bin", str(tmp_path / "bin"), "--kubeconfig-out", str(mine)],
               f"--kubeconfig-out: {mine}: exists and is not a dev-cluster kubeconfig: remove it or name another file")
    assert mine.read_text().endswith("current-context: prod\n")


@pytest.mark.parametrize(("name", "parts"), [
    ("missing/dev.kubeconfig", ["--kubeconfig-out: ", "missing: no such directory"]),
    (".", ["--kubeconfig-out: ", ": is a directory"]),
])
def test_kubeconfig_out_where_it_cannot_go(capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str,
                                           parts: list[str]) -> None:
    fails_with(capsys, ["dev-cluster", "--kube-bin", str(tmp_path / "bin"), "--kubeconfig-out",
                        str(tmp_path / name)], *parts)


def test_a_kubeconfig_a_killed_dev_cluster_left_may_be_overwritten(tmp_path: Path) -> None:
    stale = tmp_path / "phalanx-dev.kubeconfig"
    stale.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "phalanx",
        "clusters": [{"name": "phalanx", "cluster": {"server": "https://127.0.0.1:40000"}}]}))
    check_kubeconfig_out(stale)  # no error
    stale.write_text(stale.read_text().replace("127.0.0.1", "10.0.0.1"))
    with pytest.raises(InputError, match="exists and is not a dev-cluster kubeconfig"):
        check_kubeconfig_out(stale)


def test_nodes_are_ready_api_objects_of_the_shape() -> None:
    docs = node_documents(NodeShape(2, "16", "64Gi", gpus=4))
    assert [d["metadata"]["name"] for d in docs] == ["dev-node-0", "dev-node-1"]
    for doc in docs:
        assert doc["metadata"]["labels"][NODE_LABEL] == "true"
        assert doc["status"]["allocatable"] == {"cpu": "16", "memory": "64Gi", "pods": "110", GPU_RESOURCE: "4"}
        assert doc["status"]["capacity"] == doc["status"]["allocatable"]
        assert [(c["type"], c["status"]) for c in doc["status"]["conditions"]] == [("Ready", "True")]
    assert GPU_RESOURCE not in node_documents(NodeShape(1, "8", "32Gi"))[0]["status"]["allocatable"]


def test_podgroup_protection_runs_only_with_gang_scheduling() -> None:
    assert "podgroup-protection-controller" not in controllers(builtin("default"))
    assert "podgroup-protection-controller" in controllers(builtin("gang"))
    assert "node-lifecycle-controller" not in controllers(builtin("gang"))  # it would taint every node unreachable
