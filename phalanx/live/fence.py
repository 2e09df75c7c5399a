"""A client whose every write to the wire first asks the leader Lease: the last line of defence against a split
brain.

`ApiWriter` asks the fence before each API call, but a process paused (SIGSTOP, a stalled VM) between that check
and its request reaching the socket would still send the request when it resumes, perhaps long after another
replica took the Lease. `fenced_client` closes that window to the one system call: its connections ask `fence`
right before each `send` of request bytes, and raise `NotLeader` instead of sending when it says no, so the API
server sees nothing (a request cut after its headers is dropped with its connection).

The Kubernetes API has no server-side fencing token for Bindings, so this check on our side is the tightest one
there is; kube-scheduler itself only exits once it notices the lost Lease.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterable
from typing import Any

import httpcore2
import httpx2
from lightkube import Client, KubeConfig
from lightkube.config.client_adapter import verify_cluster

Fence = Callable[[], bool]


class NotLeader(Exception):
    """A request not sent: this replica no longer holds the leader Lease."""


class _FencedStream(httpcore2.NetworkStream):
    def __init__(self, inner: httpcore2.NetworkStream, fence: Fence) -> None:
        self._inner = inner
        self._fence = fence

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, timeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if buffer and not self._fence():
            raise NotLeader("not the leader any more: the request was not sent")
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore2.NetworkStream:
        return _FencedStream(self._inner.start_tls(ssl_context, server_hostname, timeout), self._fence)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _FencedBackend(httpcore2.NetworkBackend):
    def __init__(self, inner: httpcore2.NetworkBackend, fence: Fence) -> None:
        self._inner = inner
        self._fence = fence

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore2.NetworkStream:
        return _FencedStream(self._inner.connect_tcp(host, port, timeout, local_address, socket_options),
                             self._fence)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> httpcore2.NetworkStream:
        return _FencedStream(self._inner.connect_unix_socket(path, timeout, socket_options), self._fence)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class FencedTransport(httpx2.HTTPTransport):
    """httpx's own transport, with its connections' writes fenced."""

    def __init__(self, fence: Fence, *, verify: ssl.SSLContext | bool = True) -> None:
        super().__init__(verify=verify)
        # httpcore's pool takes its network backend at construction only; httpx builds the pool itself.
        pool = self._pool
        pool._network_backend = _FencedBackend(pool._network_backend, fence)


def fenced_client(config: KubeConfig, fence: Fence, *, field_manager: str = "phalanx") -> Client:
    """A lightkube client for the kubeconfig's current context whose writes ask `fence` first."""
    single = config.get()
    verify: ssl.SSLContext | bool = True
    if single is not None and single.user is not None:
        verify = verify_cluster(single.cluster, single.user, single.abs_file)
    return Client(config, field_manager=field_manager, transport=FencedTransport(fence, verify=verify))
