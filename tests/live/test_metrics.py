"""The metrics server: kube-scheduler's metric names and buckets in the text format, and the probes."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from phalanx.live.metrics import Metrics, Server, exponential_buckets, serve


def fetch(server: Server, path: str) -> tuple[int, str, str]:
    """Status, Content-Type and body of GET `path`."""
    try:
        with urllib.request.urlopen(f"http://{server.host}:{server.port}{path}", timeout=5) as resp:
            return resp.status, resp.headers["Content-Type"], resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read().decode()


def samples(text: str) -> dict[str, float]:
    """`name{labels}` -> value of every sample line of the text format."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            out[key] = float(value)
    return out


@pytest.fixture
def metrics() -> Metrics:
    return Metrics()


@pytest.fixture
def state() -> dict[str, bool]:
    return {"ready": False, "healthy": True}


@pytest.fixture
def server(metrics: Metrics, state: dict[str, bool]) -> Iterator[Server]:
    with serve(metrics, port=0, ready=lambda: state["ready"], healthy=lambda: state["healthy"]) as srv:
        yield srv


def test_listens_on_loopback_on_a_free_port(server: Server) -> None:
    assert server.host == "127.0.0.1"
    assert server.port > 0


def test_metrics_carry_kube_scheduler_names_labels_and_values(metrics: Metrics, server: Server) -> None:
    metrics.attempt("scheduled", "phalanx", 0.003)
    metrics.attempt("scheduled", "phalanx", 0.5)
    metrics.attempt("unschedulable", "phalanx", 0.02)
    metrics.group_attempt("scheduled", "phalanx", 0.25)
    metrics.scheduled(attempts=2, seconds=1.5)
    metrics.pending({"active": 3, "unschedulable": 2})
    metrics.preemption(victims=3)
    metrics.bind_failure("conflict")
    metrics.set_leader(True)

    status, content_type, text = fetch(server, "/metrics")

    assert status == 200
    assert content_type == "text/plain; version=0.0.4; charset=utf-8"
    got = samples(text)
    assert got['scheduler_schedule_attempts_total{profile="phalanx",result="scheduled"}'] == 2
    assert got['scheduler_schedule_attempts_total{profile="phalanx",result="unschedulable"}'] == 1
    assert got['scheduler_scheduling_attempt_duration_seconds_bucket{le="0.004",profile="phalanx",'
               'result="scheduled"}'] == 1
    assert got['scheduler_scheduling_attempt_duration_seconds_bucket{le="0.512",profile="phalanx",'
               'result="scheduled"}'] == 2
    assert got['scheduler_scheduling_attempt_duration_seconds_sum{profile="phalanx",result="scheduled"}'] == 0.503
    assert got['scheduler_podgroup_schedule_attempts_total{profile="phalanx",result="scheduled"}'] == 1
    assert got['scheduler_podgroup_scheduling_attempt_duration_seconds_count{profile="phalanx",'
               'result="scheduled"}'] == 1
    assert got['scheduler_pod_scheduling_sli_duration_seconds_bucket{attempts="2",le="2.56"}'] == 1
    assert got['scheduler_pod_scheduling_sli_duration_seconds_bucket{attempts="2",le="1.28"}'] == 0
    assert got['scheduler_pending_pods{queue="active"}'] == 3
    assert got['scheduler_pending_pods{queue="backoff"}'] == 0
    assert got['scheduler_pending_pods{queue="unschedulable"}'] == 2
    assert got['scheduler_pending_pods{queue="gated"}'] == 0
    assert got["scheduler_preemption_attempts_total"] == 1
    assert got['scheduler_preemption_victims_bucket{le="4.0"}'] == 1
    assert got['scheduler_preemption_victims_bucket{le="2.0"}'] == 0
    assert got['phalanx_bind_failures_total{reason="conflict"}'] == 1
    assert got['phalanx_bind_failures_total{reason="error"}'] == 0
    assert got["phalanx_leader"] == 1
    assert "_created" not in text  # kube-scheduler exports no creation timestamps
    types = {line.split()[2]: line.split()[3] for line in text.splitlines() if line.startswith("# TYPE")}
    assert types == {
        "scheduler_pending_pods": "gauge",
        "scheduler_schedule_attempts_total": "counter",
        "scheduler_scheduling_attempt_duration_seconds": "histogram",
        "scheduler_pod_scheduling_sli_duration_seconds": "histogram",
        "scheduler_preemption_attempts_total": "counter",
        "scheduler_preemption_victims": "histogram",
        "scheduler_podgroup_schedule_attempts_total": "counter",
        "scheduler_podgroup_scheduling_attempt_duration_seconds": "histogram",
        "phalanx_bind_failures_total": "counter",
        "phalanx_leader": "gauge",
    }


def test_buckets_are_kube_schedulers(metrics: Metrics) -> None:
    # metrics.ExponentialBuckets(0.001, 2, 15), (0.01, 2, 20) and (1, 2, 7) in kube-scheduler's metrics.go
    assert exponential_buckets(0.001, 2, 15)[-1] == 16.384
    metrics.attempt("error", "p", 0.0)
    metrics.scheduled(1, 0.0)
    metrics.preemption(0)
    text = metrics.exposition().decode()

    def bounds(prefix: str) -> list[str]:
        return [line.split('le="')[1].split('"')[0] for line in text.splitlines() if line.startswith(prefix)]

    assert bounds("scheduler_scheduling_attempt_duration_seconds_bucket") == [
        "0.001", "0.002", "0.004", "0.008", "0.016", "0.032", "0.064", "0.128", "0.256", "0.512", "1.024",
        "2.048", "4.096", "8.192", "16.384", "+Inf"]
    sli = bounds("scheduler_pod_scheduling_sli_duration_seconds_bucket")
    assert (len(sli), sli[0], sli[-2], sli[-1]) == (21, "0.01", "5242.88", "+Inf")
    assert bounds("scheduler_preemption_victims_bucket") == [
        "1.0", "2.0", "4.0", "8.0", "16.0", "32.0", "64.0", "+Inf"]


def test_each_metrics_has_a_registry_of_its_own() -> None:
    first, second = Metrics(), Metrics()  # the global registry would refuse the second set of names
    first.set_leader(True)
    assert b"phalanx_leader 1.0" in first.exposition()
    assert b"phalanx_leader 0.0" in second.exposition()


def test_unknown_label_values_are_refused(metrics: Metrics) -> None:
    with pytest.raises(ValueError, match="result 'bound'"):
        metrics.attempt("bound", "p", 0.1)
    with pytest.raises(ValueError, match="queue 'waiting'"):
        metrics.pending({"waiting": 1})
    with pytest.raises(ValueError, match="reason 'timeout'"):
        metrics.bind_failure("timeout")


def test_pending_forgets_queues_not_named(metrics: Metrics) -> None:
    metrics.pending({"backoff": 4})
    metrics.pending({"active": 1})
    got = samples(metrics.exposition().decode())
    assert got['scheduler_pending_pods{queue="backoff"}'] == 0
    assert got['scheduler_pending_pods{queue="active"}'] == 1


def test_readyz_follows_ready(server: Server, state: dict[str, bool]) -> None:
    assert fetch(server, "/readyz")[0] == 503
    state["ready"] = True
    assert fetch(server, "/readyz") == (200, "text/plain; charset=utf-8", "ok")
    state["ready"] = False
    assert fetch(server, "/readyz")[0] == 503


def test_healthz_follows_healthy(server: Server, state: dict[str, bool]) -> None:
    assert fetch(server, "/healthz") == (200, "text/plain; charset=utf-8", "ok")
    state["healthy"] = False
    assert fetch(server, "/healthz")[0] == 500


def test_a_probe_that_raises_fails(metrics: Metrics) -> None:
    def broken() -> bool:
        raise RuntimeError("informers gone")

    with serve(metrics, ready=broken, healthy=broken) as srv:
        assert fetch(srv, "/readyz")[0] == 503
        assert fetch(srv, "/healthz")[0] == 500
        assert fetch(srv, "/metrics")[0] == 200


def test_other_paths_are_not_found(server: Server) -> None:
    assert fetch(server, "/")[0] == 404
    assert fetch(server, "/metricsx")[0] == 404
    assert fetch(server, "/metrics?name[]=phalanx_leader")[0] == 200


def test_close_frees_the_port(metrics: Metrics) -> None:
    srv = serve(metrics)
    port = srv.port
    srv.close()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)
    assert not any(t.name == "phalanx-metrics" for t in threading.enumerate())


def test_a_scraper_that_hangs_up_early_is_no_traceback(metrics: Metrics, capfd: pytest.CaptureFixture[str]) -> None:
    import socket
    import struct
    import time

    answered = threading.Event()

    def slow() -> bool:  # the answer comes after the client has gone, as for a scrape that timed out
        time.sleep(0.3)
        answered.set()
        return True

    server = serve(metrics, ready=slow)
    try:
        for _ in range(3):
            answered.clear()
            with socket.create_connection((server.host, server.port)) as client:
                client.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # reset on close
            assert answered.wait(5)
            time.sleep(0.1)
        assert fetch(server, "/healthz")[0] == 200  # still serving
    finally:
        server.close()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Error" not in err, err
