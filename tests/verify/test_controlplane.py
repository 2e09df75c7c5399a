"""The real control plane starts on loopback with the v1.37 workload gates, and serves the v1beta1 APIs."""

from __future__ import annotations

import json

import pytest

from phalanx.verify.controlplane import ControlPlane, ControlPlaneError, find_binaries, gate_flag

pytestmark = pytest.mark.kube


def test_the_api_server_serves_workloads_and_podgroups(control_plane: ControlPlane) -> None:
    resources = {r["name"] for r in json.loads(control_plane.get("/apis/scheduling.k8s.io/v1beta1"))["resources"]}
    assert {"workloads", "podgroups", "podgroups/status"} <= resources
    version = json.loads(control_plane.get("/version"))
    assert version["gitVersion"] == "v1.37.2"


def test_only_gates_the_binary_knows_are_passed(control_plane: ControlPlane) -> None:
    flag = control_plane.gates_for("kube-apiserver")
    assert "GenericWorkload=true" in flag
    assert "NoSuchGate" not in gate_flag({"NoSuchGate": True, "GenericWorkload": True}, {"GenericWorkload"})


def test_missing_binaries_name_the_build_script(tmp_path: object) -> None:
    with pytest.raises(ControlPlaneError, match=r"tools/kube/build.sh"):
        find_binaries(tmp_path)  # type: ignore[arg-type]
