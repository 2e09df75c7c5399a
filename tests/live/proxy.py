"""A loopback TCP proxy in front of the API server, for fault tests: it cuts, refuses or holds connections.

Clients reach the API server through it with a kubeconfig whose server is `https://127.0.0.1:<proxy port>` and
`insecure-skip-tls-verify: true` (`Proxy.client_config`): TLS passes through untouched. Threads and sockets only.
"""

from __future__ import annotations

import contextlib
import copy
import socket
import struct
import threading
from collections.abc import Mapping
from types import TracebackType
from typing import Any

ACCEPT_POLL = 0.2  # how often the accept loop looks for `stop`


def _reset(sock: socket.socket, close: bool = True) -> None:
    """Break the connection with a TCP reset (SO_LINGER 0), as a refused or broken connection looks to the
    client. The shutdown wakes a thread blocked reading the socket (closing alone would not)."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.shutdown(socket.SHUT_RDWR)
    if close:
        sock.close()


class Proxy:
    """Listens on 127.0.0.1 (`port`, a free one) and forwards each connection to `target_host:target_port`.

    `cut()` closes every open connection now (cutting watches); `pause()` refuses new connections (accepts
    and resets them) or, with `hold=True`, holds them unanswered until `resume()` forwards them. Counters:
    `accepted` (every connection), `refused`, `cuts` (connections closed by `cut`).
    """

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(128)
        self._listener.settimeout(ACCEPT_POLL)
        self.port: int = self._listener.getsockname()[1]
        self.accepted = 0
        self.refused = 0
        self.cuts = 0
        self._lock = threading.Lock()
        self._pairs: dict[socket.socket, socket.socket] = {}  # client end -> upstream end, while forwarded
        self._held: list[socket.socket] = []
        self._mode = "open"  # "open", "refuse" or "hold"
        self._closing = threading.Event()
        self._threads: list[threading.Thread] = []

    # --- lifecycle ------------------------------------------------------------------------------------

    def start(self) -> Proxy:
        self._spawn(self._accept_loop, "proxy-accept")
        return self

    def stop(self) -> None:
        self._closing.set()
        self._listener.close()
        self.cut()
        for thread in list(self._threads):
            thread.join(timeout=2.0)

    def __enter__(self) -> Proxy:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()

    @property
    def connections(self) -> int:
        """The connections being forwarded now."""
        with self._lock:
            return len(self._pairs)

    @property
    def holding(self) -> int:
        """The new connections held unanswered (`pause(hold=True)`)."""
        with self._lock:
            return len(self._held)

    # --- faults ---------------------------------------------------------------------------------------

    def cut(self) -> int:
        """Close every open (and held) connection now; the number of client connections closed."""
        with self._lock:
            pairs, self._pairs = self._pairs, {}
            held, self._held = self._held, []
        for client, upstream in pairs.items():
            _reset(client, close=False)  # its forwarding threads wake up and close both ends
            _reset(upstream, close=False)
        for client in held:
            _reset(client)
        self.cuts += len(pairs) + len(held)
        return len(pairs) + len(held)

    def pause(self, hold: bool = False) -> None:
        """Refuse new connections (accept and reset them), or hold them unanswered (`hold=True`). Open
        connections go on; `cut()` them too to take the server away entirely."""
        with self._lock:
            self._mode = "hold" if hold else "refuse"

    def resume(self) -> None:
        """Forward new connections again, the held ones first."""
        with self._lock:
            self._mode = "open"
            held, self._held = self._held, []
        for client in held:
            self._forward(client)

    def client_config(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """A kubeconfig (as `ControlPlane.client_config()` gives one) pointed at the proxy instead."""
        routed = copy.deepcopy(dict(config))
        for cluster in routed["clusters"]:
            cluster["cluster"]["server"] = f"https://127.0.0.1:{self.port}"
            cluster["cluster"]["insecure-skip-tls-verify"] = True
            cluster["cluster"].pop("certificate-authority-data", None)
            cluster["cluster"].pop("certificate-authority", None)
        return routed

    # --- forwarding -----------------------------------------------------------------------------------

    def _spawn(self, target: Any, name: str, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._threads = [t for t in self._threads if t.is_alive()]
        self._threads.append(thread)
        thread.start()

    def _accept_loop(self) -> None:
        while not self._closing.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # the listener was closed
            client.settimeout(None)
            self.accepted += 1
            with self._lock:
                mode = self._mode
                if mode == "hold":
                    self._held.append(client)
            if mode == "refuse":
                self.refused += 1
                _reset(client)
            elif mode == "open":
                self._forward(client)

    def _forward(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.target, timeout=5.0)
        except OSError:
            _reset(client)
            return
        upstream.settimeout(None)
        with self._lock:
            self._pairs[client] = upstream
        self._spawn(self._pipe, "proxy-up", client, upstream)
        self._spawn(self._pipe, "proxy-down", upstream, client)

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._pairs.pop(source, None)
                self._pairs.pop(sink, None)
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
