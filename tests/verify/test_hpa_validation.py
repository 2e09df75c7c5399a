"""HorizontalPodAutoscaler validation against the real v1.37.2 kube-apiserver: every manifest below is created
with dryRun=All on the real API server and parsed by Phalanx (phalanx.api.autoscaling); both must accept or both
reject, and a rejection must name the field the API server names."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from lightkube import Client, KubeConfig
from lightkube.resources.autoscaling_v2 import HorizontalPodAutoscaler

from phalanx.api.autoscaling import parse_hpa
from phalanx.verify.controlplane import ControlPlane
from tests.verify.dry_run import judged_alike

pytestmark = pytest.mark.kube

EXTERNAL = {"type": "External", "external": {"metric": {"name": "queue_depth"},
                                             "target": {"type": "AverageValue", "averageValue": "10"}}}
CPU = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}
BASE: dict[str, Any] = {
    "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
             "minReplicas": 1, "maxReplicas": 4, "metrics": [CPU]},
}


def hpa(**spec: Any) -> dict[str, Any]:
    doc = copy.deepcopy(BASE)
    for key, value in spec.items():
        if value is None:
            doc["spec"].pop(key, None)
        else:
            doc["spec"][key] = value
    return doc


CASES = {
    "plain cpu": hpa(),
    "scale to zero on an External metric": hpa(minReplicas=0, metrics=[EXTERNAL]),
    "scale to zero on cpu alone": hpa(minReplicas=0),
    "max below min": hpa(minReplicas=5, maxReplicas=3),
    "max zero": hpa(maxReplicas=0),
    "negative min": hpa(minReplicas=-1),
    "no metrics (defaults to 80% cpu)": hpa(metrics=None),
    "utilization of zero": hpa(metrics=[{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 0}}}]),
    "external without a target value": hpa(metrics=[{"type": "External", "external": {
        "metric": {"name": "q"}, "target": {"type": "Value"}}}]),
    "scale-down window over an hour": hpa(behavior={"scaleDown": {"stabilizationWindowSeconds": 3601}}),
    "policy period of zero": hpa(behavior={"scaleUp": {"policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 0}]}}),
    "select policy unknown": hpa(behavior={"scaleUp": {"selectPolicy": "Sometimes"}}),
    "scale-down disabled": hpa(behavior={"scaleDown": {"selectPolicy": "Disabled"}}),
}


@pytest.fixture(scope="module")
def client(control_plane: ControlPlane) -> Client:
    return Client(KubeConfig.from_file(str(control_plane.kubeconfig)), field_manager="phalanx-tests")


@pytest.mark.parametrize("case", sorted(CASES))
def test_phalanx_accepts_and_rejects_what_the_api_server_does(client: Client, case: str) -> None:
    judged_alike(client, HorizontalPodAutoscaler, CASES[case], parse_hpa, case)
