"""A dev cluster's life: the control plane the tests use, kube-scheduler as the default scheduler beside Phalanx,
the workload controllers, the nodes, and a kubeconfig for the user; then waiting for Ctrl-C or SIGTERM and
taking it all down again."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, TextIO, cast

import yaml
from lightkube import Client, KubeConfig
from lightkube.resources.core_v1 import Node

from phalanx.devcluster.nodes import NodeShape, node_documents
from phalanx.errors import InputError
from phalanx.scheduler.profiles import Profile
from phalanx.verify.compare import scheduler_gates
from phalanx.verify.controlplane import KUBE_VERSION, ControlPlane, find_binaries

# What a user's Deployments, StatefulSets, DaemonSets, Jobs and CronJobs need to make pods, and what cleans up
# after them (owner references, deleted namespaces). Never the node lifecycle controller: with no kubelet to
# heartbeat it would taint every node unreachable.
CONTROLLERS = ("deployment-controller", "replicaset-controller", "statefulset-controller", "daemonset-controller",
               "job-controller", "cronjob-controller", "garbage-collector-controller", "namespace-controller",
               "resourceclaim-controller")
GANG_CONTROLLERS = ("podgroup-protection-controller",)  # PodGroup finalizers, with GenericWorkload on
CONTEXT = "phalanx"


class Stopped(BaseException):
    """SIGINT or SIGTERM arrived: stop everything (a BaseException, so that no `except Exception` swallows it)."""


@dataclass(frozen=True)
class Options:
    profile: Profile
    profile_spec: str
    nodes: NodeShape
    kubeconfig_out: Path
    bin_dir: Path | None = None
    kube_scheduler: bool = True
    controller_manager: bool = True


def check_kubeconfig_out(path: Path) -> None:
    """Refuse to overwrite a file that is not a dev cluster's own kubeconfig (one a killed run left is fine)."""
    if not path.parent.is_dir():
        raise InputError(f"{path.parent}: no such directory", field="--kubeconfig-out")
    if path.is_dir():
        raise InputError(f"{path}: is a directory", field="--kubeconfig-out")
    if path.exists() and not _ours(path):
        raise InputError(f"{path}: exists and is not a dev-cluster kubeconfig: remove it or name another file",
                         field="--kubeconfig-out")


def _ours(path: Path) -> bool:
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    if not isinstance(doc, dict) or doc.get("current-context") != CONTEXT:
        return False
    clusters = doc.get("clusters")
    if not isinstance(clusters, list) or len(clusters) != 1 or not isinstance(clusters[0], dict):
        return False
    server = (clusters[0].get("cluster") or {}).get("server", "")
    return isinstance(server, str) and server.startswith("https://127.0.0.1:")


@contextmanager
def _stop_on_signals() -> Iterator[None]:
    """SIGINT and SIGTERM raise Stopped in the main thread, also while the control plane is still starting."""
    def stop(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Stopped(signal.Signals(signum).name)

    before = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def run(options: Options, out: TextIO = sys.stdout) -> int:
    """Start the cluster, print how to use it, wait for Ctrl-C or SIGTERM and stop it: exit 0. Exit 1 when a
    component dies on its own meanwhile."""
    check_kubeconfig_out(options.kubeconfig_out)
    find_binaries(options.bin_dir)  # missing binaries: one line naming tools/kube/build.sh, before anything starts
    plane: ControlPlane | None = None
    written = False
    with _stop_on_signals():
        try:
            plane = ControlPlane(options.bin_dir, gates=scheduler_gates(options.profile))
            _start(plane, options)
            _write_kubeconfig(options.kubeconfig_out, plane.client_config())
            written = True
            _announce(plane, options, out)
            return _watch(plane)
        except Stopped:
            return 0
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):  # stopping takes seconds; a second Ctrl-C must not cut it
                signal.signal(sig, signal.SIG_IGN)
            if written:
                print("phalanx dev-cluster: stopping", file=sys.stderr, flush=True)
            if plane is not None:
                plane.stop()
            if written and _ours(options.kubeconfig_out):  # it names a server that is gone now
                options.kubeconfig_out.unlink(missing_ok=True)
            if written:
                print("phalanx dev-cluster: stopped", file=sys.stderr, flush=True)


def _start(plane: ControlPlane, options: Options) -> None:
    plane.start()
    if options.controller_manager:
        plane.start_controller_manager(controllers(options.profile))
    if options.kube_scheduler:
        plane.start_scheduler()  # the default KubeSchedulerConfiguration: schedulerName default-scheduler
    client = Client(KubeConfig.from_file(str(plane.kubeconfig)), field_manager="phalanx-dev-cluster")
    for doc in node_documents(options.nodes):
        client.create(cast(Node, Node.from_dict(doc)))


def controllers(profile: Profile) -> tuple[str, ...]:
    return CONTROLLERS + (GANG_CONTROLLERS if profile.gang else ())


def _write_kubeconfig(path: Path, config: dict[str, Any]) -> None:
    """Written whole or not at all (a reader waiting for the file never sees half of it), readable by the user only."""
    partial = path.with_name(f".{path.name}.partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(yaml.safe_dump(config, sort_keys=False))
    partial.replace(path)


def _announce(plane: ControlPlane, options: Options, out: TextIO) -> None:
    kubeconfig = options.kubeconfig_out
    parts = ["etcd", "kube-apiserver"]
    if options.kube_scheduler:
        parts.append("kube-scheduler (schedulerName default-scheduler)")
    if options.controller_manager:
        names = ", ".join(c.removesuffix("-controller") for c in controllers(options.profile))
        parts.append(f"kube-controller-manager ({names})")
    gates = ", ".join(f"{k}={'true' if v else 'false'}" for k, v in sorted(scheduler_gates(options.profile).items()))
    profile = options.profile_spec
    lines = [
        f"phalanx dev-cluster: Kubernetes {KUBE_VERSION} on {plane.server}, profile {profile}",
        f"  running: {', '.join(parts)}",
        f"  feature gates: {gates}",
        f"  nodes: {options.nodes.describe()}; API objects only: no kubelet runs, so bound pods stay Pending "
        "(they are never started) and Jobs never finish",
        f"  kubeconfig: {kubeconfig} (removed on exit):",
        "",
        yaml.safe_dump(plane.client_config(), sort_keys=False).rstrip(),
        "",
        "Next, in another terminal:",
        f"  phalanx run --kubeconfig {kubeconfig} --profile {profile} --leader-elect=false",
    ]
    if shutil.which("kubectl"):
        # The gang example's PodGroup is served with GenericWorkload on only.
        example = "examples/dev-cluster/" if options.profile.gang else "examples/dev-cluster/web.yaml"
        lines += [f"  kubectl --kubeconfig {kubeconfig} apply -f {example}",
                  f"  kubectl --kubeconfig {kubeconfig} get pods -o wide"]
        if not options.profile.gang:
            lines.append("  (examples/dev-cluster/gang.yaml, a PodGroup gang, needs "
                         "`phalanx dev-cluster --profile gang`)")
    else:
        lines.append("  (kubectl is not on PATH: create pods with any client that reads the kubeconfig)")
    lines += ["Ctrl-C or SIGTERM stops the cluster and deletes everything it made.", ""]
    out.write("\n".join(lines) + "\n")
    out.flush()


def _watch(plane: ControlPlane) -> int:
    """Until a signal: exit 1 when a component has died on its own."""
    while True:
        for proc in _processes(plane):
            if not proc.alive():
                print(f"phalanx dev-cluster: {proc.name} exited with status {proc.proc.returncode}: {proc.tail()}",
                      file=sys.stderr, flush=True)
                return 1
        time.sleep(1.0)


def _processes(plane: ControlPlane) -> Sequence[Any]:
    return [p for p in (plane.etcd, plane.apiserver, plane.scheduler, plane.controller_manager) if p is not None]


__all__ = ["Options", "Stopped", "check_kubeconfig_out", "controllers", "run"]
