"""The real Kueue v0.17.0 (tools/kueue/build.sh) beside a ControlPlane: the oracle of `verify --profile kueue`.

Kueue runs outside the cluster with the plane's kubeconfig, leader election and its own certificate management
off, and its health, metrics and webhook ports on loopback. Started, it installs what a Kueue release does:
the module's CRDs (their conversion webhook by loopback URL), the webhook configurations of the integrations it
runs (by loopback URL), and the webhook Secret and certificate folder filled with a CA and a serving certificate
for 127.0.0.1 (Kueue waits for both at start-up and ignores the first SIGTERM while it waits).
"""

from __future__ import annotations

import base64
import weakref
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from phalanx.verify.controlplane import (
    TOKEN,
    ControlPlane,
    ControlPlaneError,
    _Process,
    forget_connections,
    free_port,
    scrape,
)
from phalanx.verify.webhook_install import (
    CRDS,
    Installer,
    build_folder,
    by_url,
    healthy,
    hook_resources,
    serving_certificates,
)

VERSION = "v0.17.0"
NAMESPACE = "kueue-system"
SECRET = "kueue-webhook-server-cert"
# Kueue's integration name -> the (API group, resource) its webhooks take (the Kueue objects' own always run).
# Kueue's Deployment and StatefulSet integrations admit through its pod integration, so they come with it.
FRAMEWORKS: dict[str, tuple[tuple[str, str], ...]] = {
    "batch/job": (("batch", "jobs"),),
    "pod": (("", "pods"),),
    "deployment": (("apps", "deployments"),),
    "statefulset": (("apps", "statefulsets"),),
    "jobset.x-k8s.io/jobset": (("jobset.x-k8s.io", "jobsets"),),
    "leaderworkerset.x-k8s.io/leaderworkerset": (("leaderworkerset.x-k8s.io", "leaderworkersets"),),
}
JOBS_ONLY = ("batch/job",)
WITH_PODS = ("batch/job", "pod", "deployment", "statefulset")
READY_SECONDS = 60.0
METRICS_CERTS = Path("/etc/kueue/metrics/certs")


_ON: weakref.WeakKeyDictionary[ControlPlane, Kueue] = weakref.WeakKeyDictionary()


def kueue_on(plane: ControlPlane, *, create: bool = True) -> Kueue | None:
    """The one Kueue of a control plane (its webhooks and CRDs name one port and one CA): made on first use
    when `create`."""
    kueue = _ON.get(plane)
    if kueue is None and create:
        kueue = _ON[plane] = Kueue(plane)
        plane.companions.append(kueue)
    return kueue


def default_home() -> Path:
    return build_folder("PHALANX_KUEUE_BIN", "kueue", VERSION)


def find_kueue(home: Path | None = None) -> Path:
    """The folder of tools/kueue/build.sh's output (the binary and the module's config), or ControlPlaneError."""
    folder = home or default_home()
    if not (folder / "kueue").is_file() or not (folder / "config" / "crd").is_dir():
        raise ControlPlaneError(f"Kueue {VERSION} is not built in {folder}: run tools/kueue/build.sh "
                                "(or set PHALANX_KUEUE_BIN)")
    return folder


class Kueue:
    """Kueue on a running ControlPlane; `start` installs and starts it, `stop` ends the process (the CRDs stay,
    as they would in a cluster). Once started it runs until the plane stops: its webhooks (failurePolicy Fail)
    would refuse every Job, and every change to Kueue's objects, while it is down."""

    def __init__(self, plane: ControlPlane, home: Path | None = None,
                 frameworks: Iterable[str] = ("batch/job",)) -> None:
        self.plane = plane
        self.home = find_kueue(home)
        self.frameworks = tuple(frameworks)
        self.dir = plane.dir / "kueue"
        self.process: _Process | None = None
        self.webhook_port = 0
        self.health_port = 0
        self.metrics_port = 0
        self._installed = False
        self._hooks: tuple[str, ...] | None = None  # the frameworks whose webhooks are installed
        self.settings: dict[str, Any] = {}  # Configuration fields from the inputs (fairSharing)
        self._running_settings: dict[str, Any] | None = None
        self._running_frameworks: tuple[str, ...] | None = None

    def configure(self, settings: Mapping[str, Any], frameworks: Iterable[str] | None = None) -> None:
        """Run with these Configuration fields (the inputs' own, e.g. fairSharing) and, if given, these
        integrations from the next `start`: a running Kueue with other ones restarts then, its webhooks
        installed anew (a webhook of an integration Kueue does not run would refuse every object it takes)."""
        self.settings = dict(settings)
        if frameworks is not None:
            self.frameworks = tuple(frameworks)

    @property
    def version(self) -> str:
        return VERSION

    def start(self) -> None:
        if self.process is not None and self.process.alive():
            if self._running_settings == self.settings and self._running_frameworks == self.frameworks:
                return
            self.stop()
        self.dir.mkdir(parents=True, exist_ok=True)
        if not self._installed:
            self.webhook_port = free_port()
            self._certificates()
            self._install()
            self._installed = True
        if self._hooks != self.frameworks:
            self._install_webhooks()
            self._hooks = self.frameworks
        self.health_port = free_port()
        self.metrics_port = free_port()
        config = {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration", "namespace": NAMESPACE,
            "health": {"healthProbeBindAddress": f"127.0.0.1:{self.health_port}"},
            # On loopback, served with the certificate below to a bearer token the API server accepts (the
            # oracle's admin token): the oracle reads Kueue's queues from it (`metrics`).
            "metrics": {"bindAddress": f"127.0.0.1:{self.metrics_port}"},
            "webhook": {"port": self.webhook_port, "host": "127.0.0.1", "certDir": str(self.dir / "certs")},
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "clientConnection": {"qps": 300, "burst": 500},
            "integrations": {"frameworks": list(self.frameworks)},
            **self.settings,
        }
        self._running_settings = dict(self.settings)
        self._running_frameworks = self.frameworks
        (self.dir / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        self.process = _Process("kueue", [
            str(self.home / "kueue"), "--config", str(self.dir / "config.yaml"),
            "--kubeconfig", str(self.plane.kubeconfig), "--feature-gates", "VisibilityOnDemand=false",
            "--zap-log-level", "2"], self.dir)
        self.plane._wait("kueue", self.process, self._ready, READY_SECONDS)

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()  # it may ignore a first SIGTERM; its state is all in the API server
            self.process = None
            forget_connections(self.metrics_port)

    def metrics(self) -> str:
        """Kueue's Prometheus metrics (its queues: `kueue_pending_workloads`, `kueue_admission_attempts_total`);
        OSError while it is down."""
        if self.process is None or not self.process.alive():
            raise OSError("Kueue is not running")
        return scrape(f"https://127.0.0.1:{self.metrics_port}/metrics", TOKEN)

    def _ready(self) -> bool:
        return healthy(self.health_port)

    # --- installation ---------------------------------------------------------------------------------

    def _certificates(self) -> None:
        """A CA and a serving certificate for 127.0.0.1, in the cert folder."""
        certs = serving_certificates(self.dir, "kueue")
        # With its certificate management off, Kueue reads a metrics certificate from a fixed folder
        # (cmd/kueue/main.go); a certificate already there (another plane's) serves as well.
        if not (METRICS_CERTS / "tls.crt").is_file():
            try:
                METRICS_CERTS.mkdir(parents=True, exist_ok=True)
                for name in ("tls.crt", "tls.key"):
                    (METRICS_CERTS / name).write_bytes((certs / name).read_bytes())
            except OSError as exc:
                raise ControlPlaneError(f"Kueue {VERSION} reads a metrics certificate from {METRICS_CERTS} "
                                        f"(cmd/kueue/main.go), which cannot be written here: {exc}") from None

    def _install(self) -> None:
        certs = self.dir / "certs"
        ca = base64.b64encode((certs / "ca.crt").read_bytes()).decode()
        install = Installer(self.plane, "Kueue")
        install.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        install.create(f"/api/v1/namespaces/{NAMESPACE}/secrets", {
            "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": SECRET, "namespace": NAMESPACE},
            "data": {name: base64.b64encode((certs / name).read_bytes()).decode()
                     for name in ("ca.crt", "tls.crt", "tls.key")}})
        converting = set()
        for patch in sorted((self.home / "config" / "conversion").glob("*.yaml")):
            converting.add(yaml.safe_load(patch.read_text(encoding="utf-8"))["metadata"]["name"])
        for path in sorted((self.home / "config" / "crd").glob("*.yaml")):
            crd = yaml.safe_load(path.read_text(encoding="utf-8"))
            if crd["metadata"]["name"] in converting:
                crd["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {
                    "clientConfig": {"url": f"https://127.0.0.1:{self.webhook_port}/convert", "caBundle": ca},
                    "conversionReviewVersions": ["v1"]}}
            install.create(CRDS, crd)
        install.established(sorted(converting))

    def _install_webhooks(self) -> None:
        """The webhook configurations of Kueue's objects and of the integrations it runs, replacing any there."""
        ca = base64.b64encode((self.dir / "certs" / "ca.crt").read_bytes()).decode()
        taken = {pair for f in self.frameworks for pair in FRAMEWORKS.get(f, ())}
        install = Installer(self.plane, "Kueue")
        for doc in yaml.safe_load_all((self.home / "config" / "webhooks.yaml").read_text(encoding="utf-8")):
            if not doc:
                continue
            doc["metadata"]["name"] = f"kueue-{doc['metadata']['name']}"
            doc["webhooks"] = [by_url(hook, self.webhook_port, ca) for hook in doc.get("webhooks") or ()
                               if all(pair[0] == "kueue.x-k8s.io" or pair in taken
                                      for pair in hook_resources(hook))]
            install.replace_webhooks(doc)
