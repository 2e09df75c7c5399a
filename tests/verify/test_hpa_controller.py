"""The real v1.37.2 HPA controller as the oracle for Phalanx's `HpaController` on scale to zero.

kube-controller-manager runs its horizontal-pod-autoscaler, deployment and replicaset controllers (HPAScaleToZero
is beta and on by default in v1.37) with a 1 s sync period, against an External metric that this test serves
through a small external metrics API (a stand-in for a metrics adapter, registered as the APIService
`v1beta1.external.metrics.k8s.io`; kube-apiserver reaches it through a selector-less Service whose EndpointSlice
points at this machine's address). A Deployment (no kubelet: its pods stay Pending, which the HPA does not mind:
External AverageValue divides by the scale's replica count, `GetExternalPerPodMetricReplicas`) is scaled by an
autoscaling/v2 HPA with `minReplicas: 0`, one External AverageValue metric and short stabilization windows.

Each step sets the metric (or, once, scales the Deployment to 0 as a user would) and waits until the real HPA
settles: its status unchanged for two syncs, the Deployment at the desired count, no stabilization holding it,
and the new value read. The same manifest, parsed by Phalanx, gets the same values through `HpaController.sync`
at 1 s steps until it settles too. Compared per step: the settled replica count, the status' current and desired
replicas, each condition's status, reason and message (`AbleToScale`, `ScalingActive`, `ScalingLimited`,
`ScaledToZero`; the metric named as Phalanx names it, `_plain`), and the path of replica counts the target went
through (the 1 → 0 transition, the 0 → N wake-up).

Settled states, not each sync, are compared: the real controller's syncs are not aligned with the test's steps
(a window of 2 s over 1 s syncs holds one or two recommendations depending on where the step fell), and the
replica count its AverageValue division uses is the Deployment's status, which trails the spec by a moment after
each rescale; neither changes where a step settles.
"""

from __future__ import annotations

import copy
import json
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client, KubeConfig
from lightkube.resources.apiregistration_v1 import APIService
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.autoscaling_v2 import HorizontalPodAutoscaler
from lightkube.resources.core_v1 import Service
from lightkube.resources.discovery_v1 import EndpointSlice

from phalanx.api.autoscaling import parse_hpa
from phalanx.autoscale.hpa import HpaController, HpaDecision
from phalanx.verify.controlplane import ControlPlane
from tests.builders import kube_object
from tests.kube import control_plane_session, until

pytestmark = pytest.mark.kube

NAMESPACE = "default"
METRIC = "queue_depth"
GROUP_VERSION = "external.metrics.k8s.io/v1beta1"
SYNC = 1.0  # --horizontal-pod-autoscaler-sync-period
DOWN_WINDOW = 2  # behavior.scaleDown.stabilizationWindowSeconds
MAX_REPLICAS = 6
CONDITIONS = ("AbleToScale", "ScalingActive", "ScalingLimited", "ScaledToZero")
HOLDING = {"ScaleDownStabilized", "ScaleUpStabilized"}  # AbleToScale reasons of a sync that a window held back

HPA: dict[str, Any] = {
    "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
    "metadata": {"name": "web", "namespace": NAMESPACE},
    "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 0, "maxReplicas": MAX_REPLICAS,
        "metrics": [{"type": "External", "external": {
            "metric": {"name": METRIC}, "target": {"type": "AverageValue", "averageValue": "10"}}}],
        # A scale-up policy wide enough that no step is rate-limited: rate limits count scale events over
        # periods, which unaligned syncs would make a matter of timing.
        "behavior": {"scaleUp": {"stabilizationWindowSeconds": 0,
                                 "policies": [{"type": "Pods", "value": 10, "periodSeconds": 15}]},
                     "scaleDown": {"stabilizationWindowSeconds": DOWN_WINDOW}},
    },
}
DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": NAMESPACE},
    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
             "template": {"metadata": {"labels": {"app": "web"}},
                          "spec": {"containers": [{"name": "web", "image": "registry.k8s.io/pause:3.10"}]}}},
}


@dataclass(frozen=True)
class Step:
    """Set the metric to `value`, or (`manual_zero`) scale the Deployment to 0 as a user would."""

    name: str
    value: int
    manual_zero: bool = False


STEPS = (
    Step("scale up 1 -> 3", 30),
    Step("scale down 3 -> 1", 8),
    Step("scale to zero 1 -> 0", 0),
    Step("wake up 0 -> 5", 45),
    Step("limited at maxReplicas", 90),
    Step("a user scales to 0: paused", 90, manual_zero=True),
    Step("paused stays paused", 45),
)


@dataclass(frozen=True)
class State:
    """One side's settled state of a step."""

    replicas: int
    current: int
    desired: int
    conditions: dict[str, tuple[str, str]]
    path: tuple[int, ...] = field(compare=False)
    messages: dict[str, str] = field(compare=False, default_factory=dict)


# --- the external metrics API ---------------------------------------------------------------------------------


class MetricsServer:
    """Serves `METRIC` in every namespace as an ExternalMetricValueList with the value the test sets, over HTTPS
    with a self-signed certificate, and counts how often each value was read."""

    def __init__(self, host: str, work_dir: Path) -> None:
        self.value = 0
        self.reads: list[tuple[float, int]] = []
        key, cert = work_dir / "metrics.key", work_dir / "metrics.crt"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=metrics", "-keyout", str(key), "-out", str(cert)],
                       check=True, capture_output=True)
        self.httpd = ThreadingHTTPServer((host, 0), self._handler())
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port: int = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def reads_of(self, value: int, since: float) -> int:
        return sum(1 for at, read in self.reads if at >= since and read == value)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self
        prefix = f"/apis/{GROUP_VERSION}"

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0].rstrip("/")
                parts = path[len(prefix):].strip("/").split("/") if path.startswith(prefix) else None
                if parts == [""]:
                    self._send({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": GROUP_VERSION,
                                "resources": [{"name": "*", "singularName": "", "namespaced": True,
                                               "kind": "ExternalMetricValueList", "verbs": ["get"]}]})
                elif parts is not None and len(parts) == 3 and parts[0] == "namespaces" and parts[2] == METRIC:
                    value = server.value
                    server.reads.append((time.monotonic(), value))
                    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                    self._send({"kind": "ExternalMetricValueList", "apiVersion": GROUP_VERSION, "metadata": {},
                                "items": [{"metricName": METRIC, "metricLabels": {}, "timestamp": stamp,
                                           "value": str(value)}]})
                else:
                    self._send({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404,
                                "reason": "NotFound", "message": f"{path} not found"}, 404)

            def _send(self, body: dict[str, Any], code: int = 200) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def host_address() -> str:
    """This machine's non-loopback IPv4 address (the API server rejects loopback endpoint addresses): the
    source address of a route out, found by connecting a UDP socket, which sends nothing."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect(("192.0.2.254", 9))
        address: str = sock.getsockname()[0]
    if address.startswith("127."):
        pytest.skip("no non-loopback address for the API server to reach the metrics server at")
    return address


# --- fixtures -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    """A control plane of its own, with API aggregation (the session one starts without it)."""
    yield from control_plane_session(aggregation=True)


@pytest.fixture(scope="module")
def client(plane: ControlPlane) -> Client:
    return Client(KubeConfig.from_file(str(plane.kubeconfig)), field_manager="phalanx-tests")


@pytest.fixture(scope="module")
def metrics(plane: ControlPlane, client: Client) -> Iterator[MetricsServer]:
    """The metrics server, registered as an APIService and available through kube-apiserver."""
    address = host_address()
    server = MetricsServer(address, plane.dir)
    try:
        client.create(kube_object(Service, {
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "metrics", "namespace": NAMESPACE},
            "spec": {"ports": [{"name": "https", "port": 443, "targetPort": server.port}]}}))
        client.create(kube_object(EndpointSlice, {
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
            "metadata": {"name": "metrics", "namespace": NAMESPACE,
                         "labels": {"kubernetes.io/service-name": "metrics"}},
            "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
            "ports": [{"name": "https", "port": server.port, "protocol": "TCP"}]}))
        client.create(kube_object(APIService, {
            "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": "v1beta1.external.metrics.k8s.io"},
            "spec": {"group": "external.metrics.k8s.io", "version": "v1beta1", "insecureSkipTLSVerify": True,
                     "groupPriorityMinimum": 100, "versionPriority": 100,
                     "service": {"name": "metrics", "namespace": NAMESPACE, "port": 443}}}))
        path = f"/apis/{GROUP_VERSION}/namespaces/{NAMESPACE}/{METRIC}"
        until(lambda: _get_ok(plane, path), 30, "the external metrics API through kube-apiserver")
        yield server
    finally:
        server.close()


def _get_ok(plane: ControlPlane, path: str) -> bool:
    try:
        return "ExternalMetricValueList" in plane.get(path)
    except OSError:
        return False


# --- the two sides --------------------------------------------------------------------------------------------


class Real:
    """The HPA and its Deployment on the control plane, read as `State`s."""

    def __init__(self, client: Client, plane: ControlPlane, server: MetricsServer) -> None:
        self.client, self.plane, self.server = client, plane, server
        self.replicas = DEPLOYMENT["spec"]["replicas"]

    def read(self) -> State:
        deployment = self.client.get(Deployment, "web", namespace=NAMESPACE)
        hpa = self.client.get(HorizontalPodAutoscaler, "web", namespace=NAMESPACE)
        status = hpa.status
        listed = (status.conditions or []) if status else []
        assert deployment.spec is not None
        return State(replicas=deployment.spec.replicas or 0, current=(status.currentReplicas or 0) if status else -1,
                     desired=status.desiredReplicas if status else -1,
                     conditions={c.type: (c.status, c.reason or "") for c in listed}, path=(),
                     messages={c.type: c.message or "" for c in listed})

    def settle(self, step: Step, started: float, timeout: float = 25.0) -> State:
        """Poll until the step settled: the same state for two syncs, the Deployment at the desired count, no
        stabilization window holding it back, and (unless the target is paused) the new value read twice."""
        path = [self.replicas]
        last, since = self.read(), time.monotonic()
        deadline = started + timeout
        while time.monotonic() < deadline:
            time.sleep(0.2)
            state = self.read()
            if state.replicas != path[-1]:
                path.append(state.replicas)
            if state != last:
                last, since = state, time.monotonic()
                continue
            paused = state.conditions.get("ScalingActive", ("", ""))[1] == "ScalingDisabled"
            if (time.monotonic() - since >= 2 * SYNC + 0.2 and state.replicas == state.desired == state.current
                    and state.conditions.get("AbleToScale", ("", ""))[1] not in HOLDING
                    and (paused or self.server.reads_of(step.value, started) >= 2)):
                self.replicas = state.replicas
                return State(state.replicas, state.current, state.desired, state.conditions, tuple(path),
                             state.messages)
        raise AssertionError(f"{step.name}: the real HPA did not settle in {timeout:g}s; last state {last}, "
                             f"path {path}; kube-controller-manager: {self._log()}")

    def _log(self) -> str:
        proc = self.plane.controller_manager
        return proc.tail(10) if proc is not None else "not running"


class Ours:
    """Phalanx's HpaController on the same manifest, synced every SYNC seconds of its own clock."""

    def __init__(self) -> None:
        self.controller = HpaController(parse_hpa(copy.deepcopy(HPA)))
        self.now = 0.0
        self.replicas = DEPLOYMENT["spec"]["replicas"]

    def settle(self, step: Step) -> State:
        """Sync until two syncs in a row change nothing and no window holds the target back."""
        path = [self.replicas]
        quiet = 0
        decision: HpaDecision | None = None
        for _ in range(30):
            self.now += SYNC
            decision = self.controller.sync(self.now, self.replicas, lambda spec, now: float(step.value))
            if decision.desired != self.replicas:
                self.replicas = decision.desired
                path.append(self.replicas)
                quiet = 0
                continue
            held = (decision.condition("AbleToScale") or {}).get("reason") in HOLDING
            quiet = 0 if held else quiet + 1
            if quiet >= 2:
                break
        assert decision is not None
        conditions = {c["type"]: (c["status"], c["reason"]) for c in decision.conditions}
        return State(self.replicas, decision.current, decision.desired, conditions, tuple(path),
                     {c["type"]: c["message"] for c in decision.conditions})


def _plain(messages: dict[str, str]) -> dict[str, str]:
    """The real messages with the metric named as Phalanx names it: kube appends the metric's selector as Go
    prints it (`external metric queue_depth(nil)`), Phalanx leaves out an empty one (`describe`)."""
    return {kind: text.replace(f"{METRIC}(nil)", METRIC) for kind, text in messages.items()}


# --- the test -------------------------------------------------------------------------------------------------


def test_phalanx_hpa_settles_where_the_real_controller_does(plane: ControlPlane, client: Client,
                                                            metrics: MetricsServer) -> None:
    client.create(kube_object(Deployment, DEPLOYMENT))
    plane.start_controller_manager(
        controllers=("horizontal-pod-autoscaler-controller", "deployment-controller", "replicaset-controller"),
        flags=(f"--horizontal-pod-autoscaler-sync-period={SYNC:g}s",
               "--horizontal-pod-autoscaler-downscale-stabilization=2s"))
    real, ours = Real(client, plane, metrics), Ours()
    disagreements: list[str] = []
    for number, step in enumerate(STEPS):
        metrics.value = step.value
        started = time.monotonic()
        if step.manual_zero:
            client.patch(Deployment, "web", {"spec": {"replicas": 0}}, namespace=NAMESPACE)
            real.replicas = ours.replicas = 0
        if number == 0:
            client.create(kube_object(HorizontalPodAutoscaler, HPA))
        theirs, mine = real.settle(step, started), ours.settle(step)
        if theirs != mine or theirs.path != mine.path or _plain(theirs.messages) != mine.messages:
            disagreements.append(f"{step.name}:\n  real    {theirs}\n  phalanx {mine}")
    assert not disagreements, "\n".join(disagreements)
