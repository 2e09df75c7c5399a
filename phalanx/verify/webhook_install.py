"""Installing a controller that serves admission webhooks (Kueue, JobSet, LWS) on an oracle's control plane, run
outside the cluster: a CA and a serving certificate for 127.0.0.1, CRDs, and webhook configurations that call
it by loopback URL instead of through a Service."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from phalanx.verify.controlplane import TOKEN, ControlPlane, ControlPlaneError

WEBHOOKS = "/apis/admissionregistration.k8s.io/v1"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def build_folder(variable: str, *parts: str) -> Path:
    """Where a tools/*/build.sh puts its output: the folder `variable` names, else under the user's cache."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return Path(os.environ.get(variable) or cache.joinpath("phalanx", *parts))


def healthy(port: int) -> bool:
    """Whether a controller's health endpoint on 127.0.0.1:`port` says it is ready."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
            return bool(answer.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def serving_certificates(folder: Path, name: str) -> Path:
    """A CA (`ca.crt`) and a serving certificate for 127.0.0.1 (`tls.crt`, `tls.key`: PKCS#1, a year) in
    `folder`/certs, which it returns; the CA's key and the request stay in `folder`."""
    certs = folder / "certs"
    certs.mkdir(parents=True, exist_ok=True)
    ext = folder / "san.cnf"
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n", encoding="utf-8")
    _openssl("genrsa", "-traditional", "-out", str(folder / "ca.key"), "2048")
    _openssl("req", "-x509", "-new", "-key", str(folder / "ca.key"), "-days", "365", "-subj", f"/CN={name}-ca",
             "-out", str(certs / "ca.crt"))
    _openssl("genrsa", "-traditional", "-out", str(certs / "tls.key"), "2048")
    _openssl("req", "-new", "-key", str(certs / "tls.key"), "-subj", "/CN=127.0.0.1",
             "-out", str(folder / "tls.csr"))
    _openssl("x509", "-req", "-in", str(folder / "tls.csr"), "-CA", str(certs / "ca.crt"),
             "-CAkey", str(folder / "ca.key"), "-CAcreateserial", "-days", "365", "-extfile", str(ext),
             "-out", str(certs / "tls.crt"))
    return certs


def by_url(hook: Mapping[str, Any], port: int, ca: str) -> dict[str, Any]:
    """A webhook of a release's manifests, calling its Service's path on 127.0.0.1:`port` instead."""
    path = hook["clientConfig"]["service"]["path"]
    return {**hook, "clientConfig": {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca}}


def hook_resources(hook: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The (API group, resource) pairs a webhook's rules take."""
    return [(group, resource) for rule in hook.get("rules") or () for group in rule.get("apiGroups") or ()
            for resource in rule.get("resources") or ()]


def collection_of(config: Mapping[str, Any]) -> str:
    plural = "mutatingwebhookconfigurations" if str(config["kind"]).startswith("Mutating") else \
        "validatingwebhookconfigurations"
    return f"{WEBHOOKS}/{plural}"


class Installer:
    """Requests to a plane's API server as its admin, for what a release installs; `what` names the release in
    errors."""

    def __init__(self, plane: ControlPlane, what: str) -> None:
        self.plane = plane
        self.what = what

    def create(self, collection: str, body: Mapping[str, Any]) -> None:
        """Create an object; one that exists already (a second start on the same plane) is left as it is."""
        self.request("POST", collection, body, ok=409, what=f"{body.get('kind')} {body['metadata'].get('name')}")

    def replace_webhooks(self, config: Mapping[str, Any]) -> None:
        """Create a webhook configuration, replacing one of the same name."""
        collection = collection_of(config)
        self.delete(f"{collection}/{config['metadata']['name']}")
        self.create(collection, config)

    def delete(self, path: str) -> None:
        """Delete an object; one already gone is fine."""
        self.request("DELETE", path, None, ok=404, what=f"deleting {path}")

    def established(self, names: Iterable[str], timeout: float = 30.0) -> None:
        """Wait until these CRDs are served."""
        deadline = time.monotonic() + timeout
        for name in names:
            while time.monotonic() < deadline:
                crd = json.loads(self.plane.get(f"{CRDS}/{name}"))
                conditions = (crd.get("status") or {}).get("conditions") or []
                if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                    break
                time.sleep(0.1)

    def request(self, method: str, path: str, body: Mapping[str, Any] | None, *, ok: int, what: str) -> None:
        """One request to the plane's API server; an HTTP error other than `ok` is a ControlPlaneError."""
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        request = urllib.request.Request(f"{self.plane.server}{path}", method=method, headers=headers,
                                         data=json.dumps(body).encode() if body is not None else None)
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        try:
            with urllib.request.urlopen(request, context=context, timeout=30):
                pass
        except urllib.error.HTTPError as exc:
            if exc.code != ok:
                raise ControlPlaneError(f"installing {self.what}: {what}: {exc.code} "
                                        f"{exc.read().decode(errors='replace')[:300]}") from None


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)
