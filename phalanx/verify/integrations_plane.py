"""The real JobSet v0.11.1 and LeaderWorkerSet v0.8.0 controllers (tools/integrations/build.sh), the versions
Kueue v0.17.0 integrates, beside a ControlPlane: the oracle runs them when the inputs hold their kinds.

Each runs outside the cluster as Kueue does (`phalanx.verify.kueue_plane`): the plane's kubeconfig, leader
election, metrics and its own certificate management off, health and webhook ports on loopback, with a CA and a
serving certificate for 127.0.0.1 made at start. Started, it installs what its release does: its CRD, and its
webhook configurations by loopback URL with the patches its release applies (its pod webhooks see only its own
pods: an objectSelector on its name label). Once started, a controller runs until the plane stops: its webhooks
(failurePolicy Fail) would refuse its objects while it is down.
"""

from __future__ import annotations

import base64
import re
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from phalanx.api.sets import JOBSET_NAME_LABEL, LWS_NAME_LABEL
from phalanx.verify.controlplane import ControlPlane, ControlPlaneError, _Process, free_port
from phalanx.verify.webhook_install import (
    CRDS,
    Installer,
    build_folder,
    by_url,
    healthy,
    serving_certificates,
)

BUILD = "jobset-v0.11.1-lws-v0.8.0"
READY_SECONDS = 60.0
_PATCHED = re.compile(r"^/webhooks/(\d+)$")


@dataclass(frozen=True)
class Release:
    """A controller of a Kueue integration: its binary and config folder in the build, and its Configuration."""

    kind: str
    api_version: str
    name: str  # the binary and the config folder
    title: str
    version: str
    config_api: str
    framework: str  # Kueue's integration name

    def __str__(self) -> str:
        return f"{self.title} {self.version}"


RELEASES: dict[str, Release] = {
    "JobSet": Release("JobSet", "jobset.x-k8s.io/v1alpha2", "jobset", "JobSet", "v0.11.1",
                      "config.jobset.x-k8s.io/v1alpha1", "jobset.x-k8s.io/jobset"),
    "LeaderWorkerSet": Release("LeaderWorkerSet", "leaderworkerset.x-k8s.io/v1", "lws", "LeaderWorkerSet", "v0.8.0",
                               "config.lws.x-k8s.io/v1alpha1", "leaderworkerset.x-k8s.io/leaderworkerset"),
}

_ON: weakref.WeakKeyDictionary[ControlPlane, Integrations] = weakref.WeakKeyDictionary()


def integrations_on(plane: ControlPlane, *, create: bool = True) -> Integrations | None:
    """The integration controllers of a control plane, made on first use when `create`."""
    found = _ON.get(plane)
    if found is None and create:
        found = _ON[plane] = Integrations(plane)
        plane.companions.append(found)
    return found


def default_home() -> Path:
    return build_folder("PHALANX_INTEGRATIONS_BIN", "integrations", BUILD)


def find_integrations(home: Path | None = None) -> Path:
    """The folder of tools/integrations/build.sh's output, or ControlPlaneError."""
    folder = home or default_home()
    if not all((folder / release.name).is_file() and (folder / "config" / release.name / "crd").is_dir()
               for release in RELEASES.values()):
        raise ControlPlaneError(f"JobSet and LeaderWorkerSet ({BUILD}) are not built in {folder}: run "
                                "tools/integrations/build.sh (or set PHALANX_INTEGRATIONS_BIN)")
    return folder


class _Controller:
    """One release's controller on the plane."""

    def __init__(self, plane: ControlPlane, home: Path, release: Release) -> None:
        self.plane = plane
        self.home = home
        self.release = release
        self.dir = plane.dir / release.name
        self.config = home / "config" / release.name
        self.process: _Process | None = None
        self.webhook_port = 0
        self.health_port = 0
        self.installed = False

    def start(self) -> None:
        if self.process is not None and self.process.alive():
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        if not self.installed:
            self.webhook_port = free_port()
            serving_certificates(self.dir, self.release.name)
            self._install()
            self.installed = True
        self.health_port = free_port()
        config = {
            "apiVersion": self.release.config_api, "kind": "Configuration",
            "health": {"healthProbeBindAddress": f"127.0.0.1:{self.health_port}"},
            "metrics": {"bindAddress": "0"},
            "webhook": {"port": self.webhook_port, "host": "127.0.0.1", "certDir": str(self.dir / "certs")},
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "clientConnection": {"qps": 300, "burst": 500},
        }
        (self.dir / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        self.process = _Process(self.release.name, [
            str(self.home / self.release.name), "--config", str(self.dir / "config.yaml"),
            "--kubeconfig", str(self.plane.kubeconfig), "--zap-log-level", "2"], self.dir)
        self.plane._wait(self.release.name, self.process, self._ready, READY_SECONDS)

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process = None

    def _ready(self) -> bool:
        return healthy(self.health_port)

    def _install(self) -> None:
        install = Installer(self.plane, str(self.release))
        names = []
        for path in sorted((self.config / "crd").glob("*.yaml")):
            crd = yaml.safe_load(path.read_text(encoding="utf-8"))
            names.append(crd["metadata"]["name"])
            install.create(CRDS, crd)
        install.established(names)
        ca = base64.b64encode((self.dir / "certs" / "ca.crt").read_bytes()).decode()
        for doc in yaml.safe_load_all((self.config / "webhooks.yaml").read_text(encoding="utf-8")):
            if not doc:
                continue
            patch = self.config / "patches" / f"{'mutating' if doc['kind'].startswith('Mutating') else 'validating'}" \
                "-patch.yaml"
            if patch.is_file():
                doc = patched(doc, yaml.safe_load(patch.read_text(encoding="utf-8")), patch)
            doc["metadata"]["name"] = f"{self.release.name}-{doc['metadata']['name']}"
            doc["webhooks"] = [by_url(hook, self.webhook_port, ca) for hook in doc.get("webhooks") or ()]
            install.replace_webhooks(doc)


def patched(config: dict[str, Any], ops: Iterable[Mapping[str, Any]], source: Path) -> dict[str, Any]:
    """A webhook configuration with a release's JSON patch applied: the releases replace whole webhooks
    (`replace /webhooks/<n>`); any other operation is a ControlPlaneError, not silently skipped."""
    hooks = list(config.get("webhooks") or ())
    for op in ops:
        found = _PATCHED.match(str(op.get("path")))
        if op.get("op") != "replace" or found is None or int(found.group(1)) >= len(hooks):
            raise ControlPlaneError(f"{source}: a patch the oracle does not apply: {op.get('op')} {op.get('path')}")
        hooks[int(found.group(1))] = op["value"]
    return {**config, "webhooks": hooks}


class Integrations:
    """The JobSet and LWS controllers of a plane: `use` names the kinds the next `start` runs the controllers of;
    a controller once started runs until the plane stops."""

    def __init__(self, plane: ControlPlane, home: Path | None = None) -> None:
        self.plane = plane
        self.home = find_integrations(home)
        self.controllers: dict[str, _Controller] = {}

    def use(self, kinds: Iterable[str]) -> None:
        for kind in kinds:
            if kind not in self.controllers:
                self.controllers[kind] = _Controller(self.plane, self.home, RELEASES[kind])

    @property
    def kinds(self) -> list[str]:
        return list(self.controllers)

    @property
    def installed(self) -> list[tuple[str, str]]:
        """The (apiVersion, kind) whose CRDs are installed on the plane."""
        return [(c.release.api_version, c.release.kind) for c in self.controllers.values() if c.installed]

    def start(self) -> None:
        for controller in self.controllers.values():
            controller.start()

    def stop(self) -> None:
        for controller in self.controllers.values():
            controller.stop()


def jobsets_starting(plane: ControlPlane) -> bool:
    """Whether the JobSet controller or the Job controller is about to make something for a running JobSet,
    which the scheduler's quiet does not wait for: a JobSet with no Jobs yet; under `startupPolicyOrder:
    InOrder`, Jobs made so far all ready (ready and succeeded pods reach min(parallelism, completions), as the
    JobSet controller counts them) while some replicated jobs have none yet; or a Job of it, not suspended,
    with fewer pods than that. Ready pods are counted on the pods: the Job controller writes `status.ready`
    up to a second later (it batches pod updates), and the JobSet controller acts on that."""
    expected: dict[str, tuple[int, bool]] = {}  # running JobSet -> (its Jobs, InOrder)
    for body in plane.items("/apis/jobset.x-k8s.io/v1alpha2/jobsets", "JobSet", "jobset.x-k8s.io/v1alpha2"):
        spec, status = body.get("spec") or {}, body.get("status") or {}
        if spec.get("suspend") or status.get("terminalState") or any(
                c.get("type") in ("Completed", "Failed") and c.get("status") == "True"
                for c in status.get("conditions") or ()):
            continue
        meta = body["metadata"]
        in_order = (spec.get("startupPolicy") or {}).get("startupPolicyOrder") == "InOrder"
        expected[f"{meta['namespace']}/{meta['name']}"] = (
            sum(int(rj.get("replicas", 1)) for rj in spec.get("replicatedJobs") or ()), in_order)
    if not expected:
        return False
    live: dict[str, int] = {}  # Job -> its pods not ended
    up: dict[str, int] = {}  # Job -> its ready or succeeded pods
    for pod in plane.items("/api/v1/pods", "Pod", "v1"):
        meta, status = pod["metadata"], pod.get("status") or {}
        job = (meta.get("labels") or {}).get("batch.kubernetes.io/job-name")
        if not job or meta.get("deletionTimestamp"):
            continue
        key = f"{meta['namespace']}/{job}"
        if status.get("phase") not in ("Succeeded", "Failed"):
            live[key] = live.get(key, 0) + 1
        if status.get("phase") == "Succeeded" or any(
                c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ()):
            up[key] = up.get(key, 0) + 1
    made: dict[str, int] = {}
    ready: dict[str, int] = {}
    for job in plane.items("/apis/batch/v1/jobs", "Job", "batch/v1"):
        meta = job["metadata"]
        key = f"{meta['namespace']}/{(meta.get('labels') or {}).get(JOBSET_NAME_LABEL)}"
        if key not in expected:
            continue
        spec, status = job.get("spec") or {}, job.get("status") or {}
        pods = min(int(spec.get("parallelism", 1)), int(spec.get("completions") or spec.get("parallelism", 1)))
        name = f"{meta['namespace']}/{meta['name']}"
        succeeded = int(status.get("succeeded") or 0)
        ended = any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
                    for c in status.get("conditions") or ())
        if not spec.get("suspend") and not ended and live.get(name, 0) + succeeded < pods:
            return True  # the Job controller has its pods to make
        made[key] = made.get(key, 0) + 1
        if up.get(name, 0) + succeeded >= pods:
            ready[key] = ready.get(key, 0) + 1
    for key, (total, in_order) in expected.items():
        if made.get(key, 0) == 0 or (in_order and made[key] < total and ready.get(key, 0) == made[key]):
            return True
    return False


def leaderworkersets_starting(plane: ControlPlane) -> bool:
    """Whether a LeaderWorkerSet has fewer pods than `replicas` × `size`: its controller and the StatefulSet
    controller are still making them (leaders first, then each group's workers)."""
    expected: dict[str, int] = {}
    for body in plane.items("/apis/leaderworkerset.x-k8s.io/v1/leaderworkersets", "LeaderWorkerSet",
                            "leaderworkerset.x-k8s.io/v1"):
        spec, meta = body.get("spec") or {}, body["metadata"]
        size = int((spec.get("leaderWorkerTemplate") or {}).get("size", 1))
        expected[f"{meta['namespace']}/{meta['name']}"] = int(spec.get("replicas", 1)) * size
    if not expected:
        return False
    made: dict[str, int] = {}
    for pod in plane.items("/api/v1/pods", "Pod", "v1"):
        meta = pod["metadata"]
        name = (meta.get("labels") or {}).get(LWS_NAME_LABEL)
        if name and not meta.get("deletionTimestamp"):
            made[f"{meta['namespace']}/{name}"] = made.get(f"{meta['namespace']}/{name}", 0) + 1
    return any(made.get(key, 0) < total for key, total in expected.items())


def sets_starting(plane: ControlPlane, kinds: Iterable[str]) -> bool:
    """Whether the controllers of these kinds (JobSet, LeaderWorkerSet) are still making what they owe."""
    chosen = set(kinds)
    return ("JobSet" in chosen and jobsets_starting(plane)) or \
        ("LeaderWorkerSet" in chosen and leaderworkersets_starting(plane))
