"""`scrape`, how the oracle polls metrics pages (kube-scheduler's, Kueue's): one TLS connection kept alive between
polls, a new one when the server dropped it, the bearer token sent, and OSError for what cannot be read."""

from __future__ import annotations

import http.server
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from phalanx.verify.controlplane import forget_connections, free_port, samples, scrape


class _Page(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    peers: ClassVar[list[tuple[str, int]]] = []
    tokens: ClassVar[list[str | None]] = []
    paths: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).peers.append(self.client_address)
        type(self).paths.append(self.path)
        type(self).tokens.append(self.headers.get("Authorization"))
        status, body = (200, b"kueue_pending_workloads 0\n") if self.path.split("?")[0] == "/metrics" \
            else (403, b"forbidden")
        self.send_response(status)
        if status != 200:  # and the connection dropped, as a server that restarts drops it
            self.send_header("Connection", "close")
            self.close_connection = True
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server(tmp_path: Path) -> Iterator[http.server.ThreadingHTTPServer]:
    key, cert = tmp_path / "tls.key", tmp_path / "tls.crt"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=127.0.0.1"], check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    _Page.peers, _Page.tokens, _Page.paths = [], [], []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_polls_share_one_connection_and_send_the_token(server: http.server.ThreadingHTTPServer) -> None:
    url = f"https://127.0.0.1:{server.server_address[1]}/metrics"
    assert [scrape(url, "t0k3n") for _ in range(3)] == ["kueue_pending_workloads 0\n"] * 3
    assert len(_Page.peers) == 3 and len(set(_Page.peers)) == 1  # one TLS handshake for three polls
    assert _Page.tokens == ["Bearer t0k3n"] * 3


def test_a_dropped_connection_is_made_again_and_a_closed_port_is_an_oserror(
        server: http.server.ThreadingHTTPServer) -> None:
    port = server.server_address[1]
    with pytest.raises(OSError, match="HTTP 403"):
        scrape(f"https://127.0.0.1:{port}/other")
    assert scrape(f"https://127.0.0.1:{port}/metrics") == "kueue_pending_workloads 0\n"
    assert len(set(_Page.peers)) == 2  # a new connection after the server closed the first
    with pytest.raises(OSError):
        scrape(f"https://127.0.0.1:{free_port()}/metrics")  # nothing listens there


def test_the_query_is_sent(server: http.server.ThreadingHTTPServer) -> None:
    scrape(f"https://127.0.0.1:{server.server_address[1]}/metrics?limit=1&labelSelector=a%3Db")
    assert _Page.paths == ["/metrics?limit=1&labelSelector=a%3Db"]


PAGE = """# HELP scheduler_pending_pods Number of pending pods, by the queue type.
# TYPE scheduler_pending_pods gauge
scheduler_pending_pods{queue="active"} 2
scheduler_pending_pods{queue="backoff"} 1e+00
scheduler_pending_pods_total{queue="active"} 7
scheduler_pending_podsx 9
scheduler_podgroup_schedule_attempts_total 4
scheduler_queued_entities{queue="active",type="podgroup"} 1
scheduler_queued_entities{queue="gated",type="pod"} NaN-ish
"""


def test_samples_are_the_named_families_only() -> None:
    assert list(samples(PAGE, "scheduler_pending_pods", "scheduler_podgroup_schedule_attempts_total")) == [
        ("scheduler_pending_pods", 'queue="active"', 2.0), ("scheduler_pending_pods", 'queue="backoff"', 1.0),
        ("scheduler_podgroup_schedule_attempts_total", "", 4.0)]
    # a value that is not a number is left out, not raised
    assert list(samples(PAGE, "scheduler_queued_entities")) == [
        ("scheduler_queued_entities", 'queue="active",type="podgroup"', 1.0)]
    assert list(samples(PAGE, "kueue_pending_workloads")) == []
    assert list(samples("kueue_pending_workloads 3\nx 1", "kueue_pending_workloads")) == [
        ("kueue_pending_workloads", "", 3.0)]


def test_a_stopped_servers_connections_are_forgotten(server: http.server.ThreadingHTTPServer) -> None:
    port = server.server_address[1]
    scrape(f"https://127.0.0.1:{port}/metrics")
    forget_connections(port)
    scrape(f"https://127.0.0.1:{port}/metrics")
    assert len(set(_Page.peers)) == 2  # a new connection after the old one was closed
