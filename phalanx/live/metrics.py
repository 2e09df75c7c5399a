"""Prometheus metrics of `phalanx run`, named as kube-scheduler names them, and the HTTP server that exposes
them with the health and readiness probes.

The scheduler metrics keep kube-scheduler v1.37's names, labels and buckets (`pkg/scheduler/metrics/
metrics.go`), so its dashboards and alerts work unchanged; those without a counterpart there are prefixed
`phalanx_`. They live on a registry of their own, not prometheus_client's global one, so that several
`Metrics` (tests, or two schedulers in one process) never collide.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
QUEUES = ("active", "backoff", "unschedulable", "gated")
RESULTS = ("scheduled", "unschedulable", "error")
BIND_FAILURES = ("conflict", "error")
POLL_SECONDS = 0.05  # how soon the server notices `close`
SCRAPE_TIMEOUT = 10.0  # seconds a client may take to send its request or read the answer


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """component-base's `metrics.ExponentialBuckets`: `count` upper bounds from `start`, each `factor` times
    the one before (+Inf is added by the histogram)."""
    buckets = []
    for _ in range(count):
        buckets.append(start)
        start *= factor
    return tuple(buckets)


ATTEMPT_BUCKETS = exponential_buckets(0.001, 2, 15)  # 1 ms … ~16 s
SLI_BUCKETS = exponential_buckets(0.01, 2, 20)  # 10 ms … ~88 min
VICTIM_BUCKETS = exponential_buckets(1, 2, 7)  # 1 … 64


class Metrics:
    """The metrics of one scheduler, on `registry`; the record methods are safe to call from any thread."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.pending_pods = Gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' "
            "means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulableEntities "
            "that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods "
            "that the scheduler never attempted to schedule because they are gated.",
            ["queue"], registry=r)
        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts_total",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
            "scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"], registry=r)
        self.scheduling_attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"], buckets=ATTEMPT_BUCKETS, registry=r)
        self.pod_scheduling_sli_duration = Histogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and might "
            "involve multiple scheduling attempts.",
            ["attempts"], buckets=SLI_BUCKETS, registry=r)
        self.preemption_attempts = Counter(
            "scheduler_preemption_attempts_total",
            "Total preemption attempts in the cluster till now", registry=r)
        self.preemption_victims = Histogram(
            "scheduler_preemption_victims",
            "Number of selected preemption victims for preemption initiated by a single pod",
            buckets=VICTIM_BUCKETS, registry=r)
        self.podgroup_schedule_attempts = Counter(
            "scheduler_podgroup_schedule_attempts_total",
            "Number of attempts to schedule pod group, by the result. 'unschedulable' means a pod group could "
            "not be scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"], registry=r)
        self.podgroup_scheduling_attempt_duration = Histogram(
            "scheduler_podgroup_scheduling_attempt_duration_seconds",
            "Pod group scheduling attempt latency in seconds",
            ["result", "profile"], buckets=ATTEMPT_BUCKETS, registry=r)
        self.bind_failures = Counter(
            "phalanx_bind_failures_total",
            "Number of failed bindings, by the reason: 'conflict' means the API server refused the binding (the "
            "pod was bound or changed meanwhile), 'error' any other failure.",
            ["reason"], registry=r)
        self.leader = Gauge(
            "phalanx_leader", "1 while this replica holds the leader Lease and schedules, else 0.", registry=r)
        for queue in QUEUES:
            self.pending_pods.labels(queue=queue).set(0)
        for reason in BIND_FAILURES:
            self.bind_failures.labels(reason=reason)

    def attempt(self, result: str, profile: str, seconds: float) -> None:
        """One scheduling attempt of a pod: its result, its profile, and how long it took."""
        _check("result", result, RESULTS)
        self.schedule_attempts.labels(result=result, profile=profile).inc()
        self.scheduling_attempt_duration.labels(result=result, profile=profile).observe(seconds)

    def group_attempt(self, result: str, profile: str, seconds: float) -> None:
        """One scheduling attempt of a pod group (the whole gang at once)."""
        _check("result", result, RESULTS)
        self.podgroup_schedule_attempts.labels(result=result, profile=profile).inc()
        self.podgroup_scheduling_attempt_duration.labels(result=result, profile=profile).observe(seconds)

    def scheduled(self, attempts: int, seconds: float) -> None:
        """A pod scheduled after `attempts` attempts, `seconds` after it first entered the queue."""
        self.pod_scheduling_sli_duration.labels(attempts=str(attempts)).observe(seconds)

    def preemption(self, victims: int) -> None:
        """One preemption attempt and the number of victims it chose."""
        self.preemption_attempts.inc()
        self.preemption_victims.observe(victims)

    def pending(self, counts: Mapping[str, int]) -> None:
        """The queue sizes now; a queue not named is empty."""
        for queue in counts:
            _check("queue", queue, QUEUES)
        for queue in QUEUES:
            self.pending_pods.labels(queue=queue).set(counts.get(queue, 0))

    def bind_failure(self, reason: str) -> None:
        """A binding that failed: 'conflict' (409) or 'error'."""
        _check("reason", reason, BIND_FAILURES)
        self.bind_failures.labels(reason=reason).inc()

    def set_leader(self, leading: bool) -> None:
        self.leader.set(1 if leading else 0)

    def exposition(self) -> bytes:
        """The registry in Prometheus' text format (version 0.0.4), without prometheus_client's `_created`
        series, which kube-scheduler does not export."""
        return generate_latest(_WithoutCreated(self.registry))


class _WithoutCreated(Collector):
    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry

    def collect(self) -> Iterable[Metric]:
        for metric in self.registry.collect():  # fresh Metric objects on every collect
            metric.samples = [s for s in metric.samples if s.name != metric.name + "_created"]
            yield metric


def _check(label: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{label} {value!r} is not one of {', '.join(allowed)}")


def _always() -> bool:
    return True


class Server:
    """The metrics and probes server, answering in daemon threads until `close`."""

    def __init__(self, httpd: _HTTPServer) -> None:
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, args=(POLL_SECONDS,), name="phalanx-metrics",
                                        daemon=True)
        self._thread.start()

    @property
    def host(self) -> str:
        return str(self._httpd.server_address[0])

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def close(self) -> None:
        """Stop answering and free the port."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve(metrics: Metrics, host: str = DEFAULT_HOST, port: int = 0, ready: Callable[[], bool] = _always,
          healthy: Callable[[], bool] = _always) -> Server:
    """Serve `/metrics`, `/healthz` (200, or 500 when not `healthy()`) and `/readyz` (200, or 503 when not
    `ready()`) on `host:port`; port 0 picks a free one (see `Server.port`). A probe that raises fails."""
    return Server(_HTTPServer((host, port), metrics, ready, healthy))


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: tuple[str, int] | Any) -> None:
        """A scraper that hung up or timed out is one debug line, not a traceback on stderr."""
        error = sys.exc_info()[1]
        if isinstance(error, (ConnectionError, TimeoutError)):
            log.debug("metrics client %s went away: %s", client_address, error)
            return
        log.warning("metrics request from %s failed", client_address, exc_info=error)

    def __init__(self, address: tuple[str, int], metrics: Metrics, ready: Callable[[], bool],
                 healthy: Callable[[], bool]) -> None:
        self.metrics = metrics
        self.ready = ready
        self.healthy = healthy
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    timeout = SCRAPE_TIMEOUT  # a client that stops sending or reading frees its thread

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _answer(self, *, body: bool) -> None:
        path = urlsplit(self.path).path
        if path == "/metrics":
            self._send(200, self.server.metrics.exposition(), CONTENT_TYPE_PLAIN_0_0_4, body)
        elif path == "/healthz":
            ok = _probe(self.server.healthy)
            self._send(200 if ok else 500, b"ok" if ok else b"unhealthy", "text/plain; charset=utf-8", body)
        elif path == "/readyz":
            ok = _probe(self.server.ready)
            self._send(200 if ok else 503, b"ok" if ok else b"not ready", "text/plain; charset=utf-8", body)
        else:
            self._send(404, b"not found", "text/plain; charset=utf-8", body)

    def _send(self, status: int, payload: bytes, content_type: str, body: bool) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if body:
            self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        log.debug("%s " + format, self.address_string(), *args)


def _probe(check: Callable[[], bool]) -> bool:
    try:
        return bool(check())
    except Exception:
        log.exception("probe %s failed", getattr(check, "__name__", check))
        return False
