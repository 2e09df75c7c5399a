"""`phalanx run`: the live driver with leader election, metrics and probes, until SIGTERM.

Start-up: connect (a kubeconfig file, else in-cluster, else `$KUBECONFIG` or `~/.kube/config`), serve
`/metrics`, `/healthz` and `/readyz`, start the informers (the view stays warm on a standby replica), then take
part in leader election on a `coordination.k8s.io` Lease; only the leader runs scheduling cycles. SIGTERM or
SIGINT finishes the cycle in flight, releases the Lease and exits 0. A leader that loses its Lease stops
scheduling at once and exits 1, so that its Deployment restarts it as a follower (kube-scheduler exits too).
Every API write of the driver is fenced by the Lease (`LeaderElector.holds`): a leader that was paused past its
renew deadline writes nothing more, even before its election loop notices.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import uuid
from dataclasses import dataclass
from types import FrameType
from typing import Any

import yaml
from lightkube import Client, KubeConfig
from lightkube.core.exceptions import ConfigError

from phalanx.errors import InputError
from phalanx.live.api_writer import ApiWriter
from phalanx.live.driver import Driver
from phalanx.live.fence import fenced_client
from phalanx.live.leader import LeaderElector
from phalanx.live.metrics import Metrics, serve
from phalanx.scheduler.profiles import Profile

log = logging.getLogger("phalanx.live")


@dataclass(frozen=True)
class Options:
    profile: Profile
    kubeconfig: str | None = None
    scheduler_name: str = "phalanx"
    namespaces: frozenset[str] | None = None
    leader_elect: bool = True
    lease_namespace: str = "default"
    lease_name: str = "phalanx-scheduler"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    metrics_host: str = "127.0.0.1"
    metrics_port: int = 10351
    seed: int = 0


def parse_address(raw: str) -> tuple[str, int]:
    """`host:port` (`:port` listens on every address)."""
    host, sep, port = raw.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise InputError(f"must be host:port, not {raw!r}", field="--metrics-bind-address")
    return host or "0.0.0.0", int(port)


def client_config(kubeconfig: str | None) -> KubeConfig:
    """The kubeconfig file, or the in-cluster service account, or `$KUBECONFIG`/`~/.kube/config`."""
    try:
        return KubeConfig.from_file(kubeconfig) if kubeconfig else KubeConfig.from_env()
    except (ConfigError, OSError) as exc:
        raise InputError(f"cannot load a client configuration: {exc}", file=kubeconfig) from None
    except (yaml.YAMLError, AttributeError, KeyError, TypeError, ValueError) as exc:
        # lightkube reads the file with no checks of its own: YAML that is not a kubeconfig fails in it
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"not a kubeconfig ({type(exc).__name__}: {detail})", file=kubeconfig) from None



def default_lease_namespace() -> str:
    """The pod's own namespace in-cluster (POD_NAMESPACE, else the service account's), else `default`."""
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    try:
        with open("/var/run/secrets/kubernetes.io/serviceaccount/namespace", encoding="utf-8") as f:
            return f.read().strip() or "default"
    except OSError:
        return "default"


def run(options: Options, stop: threading.Event | None = None) -> int:
    """Run the live scheduler until `stop` is set or a signal comes; the exit status."""
    stop = stop or threading.Event()
    config = client_config(options.kubeconfig)
    client = Client(config, field_manager="phalanx")
    metrics = Metrics()
    identity = f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"
    elector = LeaderElector(client, namespace=options.lease_namespace, name=options.lease_name,
                            identity=identity, lease_duration=options.lease_duration,
                            renew_deadline=options.renew_deadline, retry_period=options.retry_period) \
        if options.leader_elect else None
    # Every write goes through a client fenced by the Lease; reads, watches and the Lease itself do not.
    api_writer = ApiWriter(fenced_client(config, elector.holds) if elector is not None else client,
                        options.scheduler_name, fence=elector.holds if elector is not None else None)
    driver = Driver(client, options.profile, scheduler_name=options.scheduler_name, seed=options.seed,
                    metrics=metrics, namespaces=set(options.namespaces) if options.namespaces else None,
                    api_writer=api_writer)
    leading = threading.Event()
    try:
        server = serve(metrics, options.metrics_host, options.metrics_port, ready=driver.ready.is_set)
    except OSError as exc:
        raise InputError(f"cannot listen on {options.metrics_host}:{options.metrics_port}: {exc.strerror or exc}",
                         field="--metrics-bind-address") from None
    log.info("metrics on http://%s:%d/metrics", server.host, server.port)
    lost = threading.Event()
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        def on_signal(signum: int, frame: FrameType | None) -> None:
            log.info("signal %d: finishing the cycle in flight, then stopping", signum)
            stop.set()
        for wanted in (signal.SIGTERM, signal.SIGINT):
            previous[wanted] = signal.signal(wanted, on_signal)
    failed = threading.Event()

    def schedule() -> None:
        # An engine error ends the process (as a panic ends kube-scheduler): a leader that stopped scheduling
        # must not keep renewing its Lease while a standby waits.
        try:
            driver.run(stop, leading)
        except Exception:
            log.exception("the scheduling loop failed: stopping")
            failed.set()
            stop.set()

    try:
        driver.start_informers(stop)
        loop = threading.Thread(target=schedule, name="scheduling-loop", daemon=True)
        loop.start()
        if elector is None:
            leading.set()
            metrics.set_leader(True)
            stop.wait()
        else:
            def started() -> None:
                log.info("%s leads (Lease %s/%s): scheduling", identity, options.lease_namespace, options.lease_name)
                leading.set()
                metrics.set_leader(True)

            def stopped() -> None:
                leading.clear()
                with driver.lock:  # the cycle in flight, if any, has ended
                    metrics.set_leader(False)
                if not stop.is_set():
                    log.error("leader election lost: stopping")
                    lost.set()
                    stop.set()

            elector.run(stop, started, stopped)
        stop.set()
        loop.join(timeout=30)
    finally:
        server.close()
        for number, handler in previous.items():
            signal.signal(number, handler)
    return 1 if lost.is_set() or failed.is_set() else 0
