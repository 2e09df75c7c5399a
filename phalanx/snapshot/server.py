"""Read-only GETs against the API server, answered as plain JSON.

The connection (kubeconfig, in-cluster account, TLS, tokens, exec plugins) is lightkube's `Client`, built as
`phalanx run` builds it. The requests go through lightkube's HTTP client as raw GETs rather than its typed
resources: a snapshot keeps each object as the server sent it (every field, whatever lightkube's models know),
and the kinds are chosen by discovery at run time, which lightkube's registry of generic resources would
reject for a built-in kind it already holds.
"""

from __future__ import annotations

from typing import Any

import httpx2
import msgspec
from lightkube import Client

from phalanx.errors import InputError
from phalanx.live.run import client_config


class Server:
    """One API server; `where` names it in errors (the kubeconfig file, else the server's URL)."""

    def __init__(self, kubeconfig: str | None, timeout: float = 30.0) -> None:
        config = client_config(kubeconfig)
        try:
            self._client = Client(config, timeout=httpx2.Timeout(timeout))
        except Exception as exc:  # a kubeconfig that loads but names no usable cluster, user or certificate
            raise InputError(f"cannot build a client from it: {exc}", file=kubeconfig) from None
        single = self._client._client.config
        self.url = str(single.cluster.server) if single is not None else "the API server"
        self.where = kubeconfig or self.url

    def get(self, path: str, params: dict[str, str] | None = None) -> dict[str, Any] | None:
        """The JSON object at `path`; None when the server answers 404 (a group, version or kind not served)."""
        generic = self._client._client
        try:
            response = generic.send(generic._client.build_request("GET", path, params=params or {}))
        except httpx2.HTTPError as exc:
            raise InputError(f"cannot reach the API server at {self.url}: {type(exc).__name__}: {exc}",
                             file=self.where) from None
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise InputError(f"GET {path}: HTTP {response.status_code}: {_message(response)}", file=self.where)
        try:
            body = msgspec.json.decode(response.content)
        except msgspec.DecodeError as exc:
            raise InputError(f"GET {path}: the answer is not JSON ({exc}); is {self.url} an API server?",
                             file=self.where) from None
        if not isinstance(body, dict):
            raise InputError(f"GET {path}: the answer is not a JSON object", file=self.where)
        return body

    def close(self) -> None:
        self._client._client._client.close()


def _message(response: httpx2.Response) -> str:
    """The `message` of a Status answer, else the start of the body."""
    try:
        status = msgspec.json.decode(response.content)
    except msgspec.DecodeError:
        status = None
    if isinstance(status, dict) and isinstance(status.get("message"), str):
        return str(status["message"])
    return response.text[:200].strip() or response.reason_phrase
