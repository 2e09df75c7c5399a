"""Container resources against the real v1.37.2 kube-apiserver: an extended resource or hugepages are never
overcommitted, so a request needs a limit, equal to it (ValidateResourceRequirements). Each pod below is created
with dryRun=All on the real API server and parsed by Phalanx; both must accept or both reject, and a rejection
must name the field and say what the API server says."""

from __future__ import annotations

from typing import Any

import pytest
from lightkube import Client, KubeConfig
from lightkube.resources.core_v1 import Pod

from phalanx.api.objects import Source
from phalanx.api.parse import parse_pod
from phalanx.verify.controlplane import ControlPlane
from tests.verify.dry_run import judged_alike

pytestmark = pytest.mark.kube


def pod(requests: dict[str, str], limits: dict[str, str] | None = None) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": requests}
    if limits is not None:
        resources["limits"] = limits
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "i", "resources": resources}]}}


CASES = {
    "cpu and memory without limits": pod({"cpu": "1", "memory": "1Gi"}),
    "a GPU without a limit": pod({"cpu": "1", "nvidia.com/gpu": "1"}),
    "a GPU with its limit": pod({"nvidia.com/gpu": "2"}, {"nvidia.com/gpu": "2"}),
    "a GPU limit below the request": pod({"nvidia.com/gpu": "2"}, {"nvidia.com/gpu": "1"}),
    "a GPU limit alone (the request defaults to it)": pod({"cpu": "1"}, {"nvidia.com/gpu": "1"}),
    "hugepages without a limit": pod({"cpu": "1", "memory": "1Gi", "hugepages-2Mi": "4Mi"}),
    "a kubernetes.io extended resource without a limit": pod({"example.kubernetes.io/thing": "1"}),
}
DETAILS = {"a GPU without a limit": "Limit must be set for non overcommitable resources",
           "hugepages without a limit": "Limit must be set for non overcommitable resources",
           "a GPU limit below the request": "must be equal to nvidia.com/gpu limit of 1"}


@pytest.fixture(scope="module")
def client(control_plane: ControlPlane) -> Client:
    return Client(KubeConfig.from_file(str(control_plane.kubeconfig)), field_manager="phalanx-tests")


@pytest.mark.parametrize("case", sorted(CASES))
def test_phalanx_accepts_and_rejects_what_the_api_server_does(client: Client, case: str) -> None:
    real, ours = judged_alike(client, Pod, CASES[case], lambda doc: parse_pod(doc, Source("pod.yaml", 0)), case)
    if real is not None:
        assert DETAILS[case] in real and DETAILS[case] in str(ours)
