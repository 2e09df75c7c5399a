"""Container resources against the real v1.37.2 kube-apiserver: an extended resource or hugepages are never
overcommitted, so a request needs a limit, equal to it (ValidateResourceRequirements). Each pod below is created
with dryRun=All on the real API server and parsed by Phalanx; both must accept or both reject, and a rejection
must name the field and say what the API server says."""

from __future__ import annotations

from typing import Any

import pytest
from lightkube import ApiError, Client, KubeConfig
from lightkube.resources.core_v1 import Pod

from phalanx.api.objects import Source
from phalanx.api.parse import parse_pod
from phalanx.errors import InputError
from phalanx.verify.controlplane import ControlPlane
from tests.builders import kube_object

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
    doc = CASES[case]
    try:
        client.create(kube_object(Pod, doc), dry_run=True)
        real_error = None
    except ApiError as exc:
        real_error = exc.status
    try:
        parse_pod(doc, Source("pod.yaml", 0))
        ours = None
    except InputError as exc:
        ours = exc
    assert (real_error is None) == (ours is None), f"{case}: API server {real_error}, Phalanx {ours}"
    if real_error is not None and ours is not None:
        causes = [c.field for c in (real_error.details.causes or []) if c.field] if real_error.details else []
        assert any(field in str(ours) for field in causes), f"{case}: API server names {causes}, Phalanx: {ours}"
        assert DETAILS[case] in str(real_error.message) and DETAILS[case] in str(ours)
