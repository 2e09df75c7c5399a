"""A throwaway Kubernetes v1.37.2 control plane on loopback: etcd, kube-apiserver, kube-scheduler and
kube-controller-manager, the real binaries that `tools/kube/build.sh` builds from Go modules.

No kubelet runs: nodes are API objects whose status says Ready, and nothing stands in for the API server.
The API server signs its own serving certificate; clients authenticate with a static admin token.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import yaml

from phalanx.errors import PhalanxError

KUBE_VERSION = "v1.37.2"
BINARIES = ("etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager")
# Histograms by plugin and extension point: seven tenths of the scheduler's metrics page, which the oracle reads
# at every quiet poll for three gauges and a counter. Off, they cost neither side anything; no decision reads them.
UNREAD_SCHEDULER_METRICS = (
    "scheduler_plugin_execution_duration_seconds", "scheduler_framework_extension_point_duration_seconds",
    "scheduler_queueing_hint_execution_duration_seconds", "scheduler_event_handling_duration_seconds",
    "informer_processing_latency_seconds")
TOKEN = "phalanx-admin-token"  # a throwaway cluster's admin: loopback only, torn down with the test

# The v1.37 gates that workload-aware scheduling and DRA need; each is turned on where the binary knows it
# (read from its -h), so a gate that upstream merged or graduated away does not stop the start.
WANTED_GATES = (
    "GenericWorkload", "GangScheduling", "WorkloadAwarePreemption", "PodGroupPreemptionPolicy",
    "TopologyAwareWorkloadScheduling", "CompositePodGroup", "WorkloadWithJob", "DRAWorkloadResourceClaims",
    "DynamicResourceAllocation", "DRADeviceTaints", "DRADeviceTaintRules", "DRAExtendedResource",
    "DRAConsumableCapacity", "DRAPrioritizedList", "DRAAdminAccess", "DRAResourceClaimDeviceStatus",
)


class ControlPlaneError(PhalanxError):
    """The control plane cannot be built, found or started."""


def default_bin_dir() -> Path:
    """Where `tools/kube/build.sh` puts the binaries (PHALANX_KUBE_BIN overrides it)."""
    override = os.environ.get("PHALANX_KUBE_BIN")
    if override:
        return Path(override)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "phalanx" / "kube" / KUBE_VERSION / "bin"


def find_binaries(bin_dir: Path | None = None) -> Path:
    """The folder holding all four binaries, or a one-line error saying how to build them."""
    where = bin_dir or default_bin_dir()
    missing = [b for b in BINARIES if not os.access(where / b, os.X_OK)]
    if missing:
        raise ControlPlaneError(f"{where}: missing {', '.join(missing)}: build the Kubernetes {KUBE_VERSION} "
                                "control plane with tools/kube/build.sh (needs Go and the Go module proxy)")
    return where


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def known_gates(binary: Path) -> set[str]:
    """The feature gates a binary accepts, read from its `-h` (the `--feature-gates` help lists them)."""
    out = subprocess.run([str(binary), "-h"], capture_output=True, text=True, timeout=60, check=False)
    gates: set[str] = set()
    for line in (out.stdout + out.stderr).splitlines():
        # `kube:GenericWorkload=true|false (BETA - default=false)`; older binaries leave out `kube:`.
        word = line.strip().split("=", 1)[0]
        component, _, name = word.rpartition(":")
        if "=true|false" in line and name.isidentifier() and component in ("", "kube"):
            gates.add(name)
    return gates


def gate_flag(gates: Mapping[str, bool], known: set[str]) -> str:
    return ",".join(f"{name}={'true' if on else 'false'}" for name, on in sorted(gates.items()) if name in known)


def _die_with_parent() -> None:
    """In the child, before exec: ask Linux to kill it when the parent dies (PR_SET_PDEATHSIG), so that a
    killed test run or `phalanx verify` leaves no control plane behind (a throwaway one: SIGKILL, since an
    API server whose etcd is gone would drain for a long time on SIGTERM)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG


class _Process:
    """A child process whose output goes to a log file, stopped with SIGTERM then SIGKILL."""

    def __init__(self, name: str, argv: list[str], log_dir: Path) -> None:
        self.name = name
        self.log = log_dir / f"{name}.log"
        self._handle = open(self.log, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(argv, stdout=self._handle, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True,
                                     preexec_fn=_die_with_parent if sys.platform == "linux" else None)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def tail(self, lines: int = 5) -> str:
        try:
            text = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return " | ".join(text[-lines:])

    def stop(self, timeout: float = 10.0) -> None:
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._handle.close()

    def kill(self) -> None:
        if self.alive():
            self.proc.kill()
            self.proc.wait()
        self._handle.close()


class ControlPlane:
    """etcd and kube-apiserver on loopback, and kube-scheduler / kube-controller-manager on demand.

    Use as a context manager; `kubeconfig` is a client config with the admin token once it has started.
    `aggregation=True` also gives kube-apiserver what API aggregation needs to proxy to an APIService backed by a
    Service outside the cluster (a front-proxy client certificate, the request-header flags, and routing to the
    Service's endpoints since no kube-proxy runs); off by default, as it costs two certificates at start.
    """

    def __init__(self, bin_dir: Path | None = None, gates: Mapping[str, bool] | None = None,
                 work_dir: Path | None = None, *, aggregation: bool = False) -> None:
        self.bin = find_binaries(bin_dir)
        self.aggregation = aggregation
        self._own_dir = work_dir is None
        self.dir = work_dir or Path(tempfile.mkdtemp(prefix="phalanx-kube-"))
        self.gates = dict(gates) if gates is not None else dict.fromkeys(WANTED_GATES, True)
        self.etcd: _Process | None = None
        self.apiserver: _Process | None = None
        self.scheduler: _Process | None = None
        self.controller_manager: _Process | None = None
        self.companions: list[Any] = []  # processes started beside it (the oracle's Kueue): stopped first
        self.api_port = 0
        self.scheduler_port = 0
        self.kubeconfig = self.dir / "kubeconfig"
        self._known: dict[str, set[str]] = {}

    # --- lifecycle ------------------------------------------------------------------------------------

    def __enter__(self) -> ControlPlane:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.api_port}"

    def gates_for(self, binary: str, extra: Mapping[str, bool] | None = None) -> str:
        if binary not in self._known:
            self._known[binary] = known_gates(self.bin / binary)
        return gate_flag({**self.gates, **(extra or {})}, self._known[binary])

    def start(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self._start_etcd()
        self._start_apiserver()

    def _start_etcd(self) -> None:
        client, peer = free_port(), free_port()
        self.etcd_url = f"http://127.0.0.1:{client}"
        self.etcd = _Process("etcd", [
            str(self.bin / "etcd"), "--name", "phalanx", "--data-dir", str(self.dir / "etcd"),
            "--listen-client-urls", self.etcd_url, "--advertise-client-urls", self.etcd_url,
            "--listen-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-cluster", f"phalanx=http://127.0.0.1:{peer}",
            "--unsafe-no-fsync", "--log-level", "error",
        ], self.dir)
        self._wait("etcd", self.etcd, lambda: _http_ok(f"{self.etcd_url}/health"), 60)

    def _start_apiserver(self) -> None:
        key = self.dir / "sa.key"
        if not key.exists():
            subprocess.run(["openssl", "genrsa", "-out", str(key), "2048"], check=True, capture_output=True)
            subprocess.run(["openssl", "rsa", "-in", str(key), "-pubout", "-out", str(self.dir / "sa.pub")],
                           check=True, capture_output=True)
        (self.dir / "tokens.csv").write_text(f'{TOKEN},admin,admin,"system:masters"\n')
        if not self.api_port:
            self.api_port = free_port()
        self.apiserver = _Process("kube-apiserver", [
            str(self.bin / "kube-apiserver"), "--etcd-servers", self.etcd_url,
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
            "--secure-port", str(self.api_port), "--cert-dir", str(self.dir / "certs"),
            "--token-auth-file", str(self.dir / "tokens.csv"), "--authorization-mode", "RBAC",
            "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
            "--service-account-key-file", str(self.dir / "sa.pub"),
            "--service-account-signing-key-file", str(key),
            "--service-cluster-ip-range", "10.0.0.0/24", "--allow-privileged",
            # No ServiceAccount controller runs, so pods are not given a default ServiceAccount; no node
            # lifecycle controller runs to lift the not-ready taint that TaintNodesByCondition puts on new nodes.
            "--disable-admission-plugins", "ServiceAccount,TaintNodesByCondition",
            "--runtime-config", "api/all=true",
            "--feature-gates", self.gates_for("kube-apiserver"),
            # Loopback addresses cannot be published as the `kubernetes` Service's endpoints.
            "--endpoint-reconciler-type", "none",
            "--enable-priority-and-fairness=false", "--v", "0",
            *(self._aggregation_flags() if self.aggregation else ()),
        ], self.dir)
        self.kubeconfig.write_text(yaml.safe_dump(self.client_config()))
        self._wait("kube-apiserver", self.apiserver, lambda: _http_ok(f"{self.server}/readyz", TOKEN), 120)

    def _aggregation_flags(self) -> list[str]:
        """The front-proxy flags: kube-apiserver proxies requests for aggregated APIs with a client certificate
        signed by a request-header CA, and reaches the APIService's Service through its endpoints."""
        certs = self.dir / "front-proxy"
        ca, client = certs / "ca", certs / "client"
        if not client.with_suffix(".crt").exists():
            certs.mkdir(parents=True, exist_ok=True)
            _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=front-proxy-ca",
                     "-keyout", f"{ca}.key", "-out", f"{ca}.crt")
            _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=front-proxy-client",
                     "-keyout", f"{client}.key", "-out", f"{client}.csr")
            _openssl("x509", "-req", "-days", "2", "-in", f"{client}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
                     "-CAcreateserial", "-out", f"{client}.crt")
        return [
            "--enable-aggregator-routing=true",
            "--requestheader-client-ca-file", f"{ca}.crt", "--requestheader-allowed-names", "front-proxy-client",
            "--requestheader-username-headers", "X-Remote-User", "--requestheader-group-headers", "X-Remote-Group",
            "--requestheader-extra-headers-prefix", "X-Remote-Extra-",
            "--proxy-client-cert-file", f"{client}.crt", "--proxy-client-key-file", f"{client}.key",
        ]

    def get(self, path: str) -> str:
        """GET a path of the API server as the admin (discovery, health)."""
        return _http_get(f"{self.server}{path}", TOKEN)

    def client_config(self, user: str = "admin") -> dict[str, object]:
        return {
            "apiVersion": "v1", "kind": "Config", "current-context": "phalanx",
            "clusters": [{"name": "phalanx", "cluster": {"server": self.server, "insecure-skip-tls-verify": True}}],
            "users": [{"name": user, "user": {"token": TOKEN}}],
            "contexts": [{"name": "phalanx", "context": {"cluster": "phalanx", "user": user}}],
        }

    def use_gates(self, gates: Mapping[str, bool]) -> bool:
        """Run kube-apiserver with `gates` changed (the others kept): restarted on the same port when that changes
        its flag (etcd keeps the objects; delete what the new gates stop serving first). True if it restarted."""
        wanted = {**self.gates, **gates}
        if self.apiserver is not None and self.gates_for("kube-apiserver") == \
                gate_flag(wanted, self._known["kube-apiserver"]):
            self.gates = wanted
            return False
        self.gates = wanted
        if self.apiserver is not None:
            # Kueue: its watches and cache would straddle the restart; started again at once, since its webhooks
            # stay registered and would refuse what they cover meanwhile.
            for companion in self.companions:
                companion.stop()
            self.restart_apiserver()
            self._await_custom_resources()
            for companion in self.companions:
                companion.start()
        return True

    def _await_custom_resources(self, timeout: float = 60.0) -> None:
        """After a restart the API server is ready before the custom resources' storage is ("storage is
        (re)initializing", 429): wait until every CustomResourceDefinition's objects can be listed."""
        crds = json.loads(self.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")).get("items") or []
        paths = [f"/apis/{crd['spec']['group']}/{version['name']}/{crd['spec']['names']['plural']}?limit=1"
                 for crd in crds for version in crd["spec"]["versions"] if version.get("served")]
        deadline = time.monotonic() + timeout
        for path in paths:
            while not _http_ok(f"{self.server}{path}", TOKEN):
                if time.monotonic() > deadline:
                    raise ControlPlaneError(f"kube-apiserver did not serve {path} within {timeout:g}s of a restart")
                time.sleep(0.1)

    def restart_apiserver(self, down_for: float = 0.0) -> None:
        """Kill kube-apiserver and start it again on the same port (etcd keeps the objects)."""
        if self.apiserver is not None:
            self.apiserver.kill()
        time.sleep(down_for)
        self._start_apiserver()

    def start_scheduler(self, config: Mapping[str, object] | None = None,
                        gates: Mapping[str, bool] | None = None) -> None:
        """Start kube-scheduler with a KubeSchedulerConfiguration (its kubeconfig filled in)."""
        self.stop_scheduler()
        document = dict(config or {"apiVersion": "kubescheduler.config.k8s.io/v1",
                                   "kind": "KubeSchedulerConfiguration"})
        document["clientConnection"] = {"kubeconfig": str(self.kubeconfig), "qps": 5000, "burst": 5000}
        document["leaderElection"] = {"leaderElect": False}
        path = self.dir / "scheduler.yaml"
        path.write_text(yaml.safe_dump(document))
        self.scheduler_port = free_port()
        self.scheduler = _Process("kube-scheduler", [
            str(self.bin / "kube-scheduler"), "--config", str(path), "--bind-address", "127.0.0.1",
            "--secure-port", str(self.scheduler_port), "--cert-dir", str(self.dir / "scheduler-certs"),
            "--authorization-always-allow-paths", "/healthz,/readyz,/livez,/metrics",
            "--authentication-skip-lookup", "--feature-gates", self.gates_for("kube-scheduler", gates),
            "--disabled-metrics", ",".join(UNREAD_SCHEDULER_METRICS),
            "--v", os.environ.get("PHALANX_KUBE_SCHEDULER_V", "0"),
        ], self.dir)
        self._wait("kube-scheduler", self.scheduler,
                   lambda: _http_ok(f"https://127.0.0.1:{self.scheduler_port}/readyz"), 60)

    def items(self, path: str, kind: str, api_version: str) -> list[dict[str, Any]]:
        """The objects a LIST of `path` returns, as plain dicts with their kind: for what the oracle polls, the
        parsing of typed models and the generic client's per-request work cost more than the request.
        OSError when the list cannot be read."""
        try:
            listed = json.loads(scrape(f"{self.server}{path}", TOKEN))
        except ValueError as exc:
            raise OSError(f"{path}: {exc}") from exc
        items: list[dict[str, Any]] = listed.get("items") or []
        for item in items:
            item["apiVersion"], item["kind"] = api_version, kind
        return items

    def scheduler_metrics(self) -> str:
        return scrape(f"https://127.0.0.1:{self.scheduler_port}/metrics")

    def stop_scheduler(self) -> None:
        if self.scheduler is not None:
            self.scheduler.stop()
            self.scheduler = None
            forget_connections(self.scheduler_port)

    def start_controller_manager(self, controllers: Iterable[str] = ("job-controller",),
                                 gates: Mapping[str, bool] | None = None, flags: Iterable[str] = ()) -> None:
        """Start kube-controller-manager with only `controllers` (never the node lifecycle controller: no
        kubelet posts heartbeats here, and it would taint every node unreachable), and `flags` added."""
        self.stop_controller_manager()
        port = free_port()
        self.controller_manager = _Process("kube-controller-manager", [
            str(self.bin / "kube-controller-manager"), "--kubeconfig", str(self.kubeconfig),
            "--controllers", ",".join(controllers), "--leader-elect=false", "--use-service-account-credentials=false",
            "--bind-address", "127.0.0.1", "--secure-port", str(port),
            "--cert-dir", str(self.dir / "kcm-certs"), "--authentication-skip-lookup",
            "--authorization-always-allow-paths", "/healthz,/readyz,/livez,/metrics",
            "--feature-gates", self.gates_for("kube-controller-manager", gates), "--v", "0", *flags,
        ], self.dir)
        self._wait("kube-controller-manager", self.controller_manager,
                   lambda: _http_ok(f"https://127.0.0.1:{port}/healthz"), 60)

    def stop_controller_manager(self) -> None:
        if self.controller_manager is not None:
            self.controller_manager.stop()
            self.controller_manager = None

    def stop(self) -> None:
        for companion in self.companions:
            companion.stop()
        for proc in (self.controller_manager, self.scheduler, self.apiserver, self.etcd):
            if proc is not None:
                proc.stop()
        self.controller_manager = self.scheduler = self.apiserver = self.etcd = None
        forget_connections(self.api_port, self.scheduler_port)
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def _wait(self, name: str, proc: _Process, ready: object, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not proc.alive():
                raise ControlPlaneError(f"{name} exited with status {proc.proc.returncode}: {proc.tail()}")
            if callable(ready) and ready():
                return
            time.sleep(0.1)
        raise ControlPlaneError(f"{name} was not ready after {timeout:g}s: {proc.tail()}")


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


_INSECURE = ssl.create_default_context()
_INSECURE.check_hostname = False
_INSECURE.verify_mode = ssl.CERT_NONE


def _http_get(url: str, token: str | None = None, timeout: float = 5.0) -> str:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    with urllib.request.urlopen(request, timeout=timeout, context=_INSECURE) as response:
        body: bytes = response.read()
        return body.decode()


_KEPT = threading.local()  # (host, port) -> a kept-alive connection, per thread


def scrape(url: str, token: str | None = None, timeout: float = 5.0) -> str:
    """GET an HTTPS endpoint that the oracle polls (a metrics page) over a connection kept alive between calls:
    a TLS handshake at every poll costs both sides more than the page. OSError when it cannot be read."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 443
    kept: dict[tuple[str, int], http.client.HTTPSConnection] = _KEPT.__dict__.setdefault("connections", {})
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    for attempt in range(2):
        connection = kept.get((host, port))
        if connection is None:
            connection = kept[(host, port)] = http.client.HTTPSConnection(host, port, timeout=timeout,
                                                                          context=_INSECURE)
        try:
            connection.request("GET", (parts.path or "/") + (f"?{parts.query}" if parts.query else ""),
                               headers=headers)
            response = connection.getresponse()
            body = response.read()
        except (OSError, http.client.HTTPException) as exc:
            connection.close()
            del kept[(host, port)]
            if attempt:
                raise OSError(f"{url}: {exc}") from exc
            continue  # the server closed the kept connection (restarted, or idle too long): once more
        if response.status != 200:
            raise OSError(f"{url}: HTTP {response.status}")
        return body.decode()
    raise OSError(url)


def forget_connections(*ports: int | None) -> None:
    """Close this thread's kept-alive connections to loopback `ports` (a stopped server's)."""
    kept: dict[tuple[str, int], http.client.HTTPSConnection] = _KEPT.__dict__.get("connections", {})
    for (host, port) in [address for address in kept if address[1] in ports]:
        kept.pop((host, port)).close()


def samples(text: str, *names: str) -> Iterator[tuple[str, str, float]]:
    """(name, labels, value) of each sample of the metric families `names` on a Prometheus text page, `labels`
    as written between the braces. Each family is found by searching for its name, not by reading every line: the
    pages are large (the scheduler's holds hundreds of histogram buckets) and are read at every poll."""
    text = f"\n{text}"  # so that a sample on the first line follows a newline too
    for name in names:
        at = text.find(f"\n{name}")
        while at != -1:
            end = text.find("\n", at + 1)
            line = text[at + 1:end] if end != -1 else text[at + 1:]
            at = text.find(f"\n{name}", at + 1)
            if not line.startswith((f"{name}{{", f"{name} ")):
                continue
            head, _, value = line.rpartition(" ")
            family, _, labels = head.partition("{")
            try:
                yield family, labels.rstrip("}"), float(value)
            except ValueError:
                continue


def _http_ok(url: str, token: str | None = None) -> bool:
    try:
        _http_get(url, token, timeout=2.0)
    except (urllib.error.URLError, OSError, ValueError):
        return False
    return True
