"""Informers: keep one resource kind in step with the API server, as client-go's reflector does.

An `Informer` lists the kind, delivers every object to its handler as ADDED, sets `synced`, then watches from
the list's resourceVersion and delivers each change as ADDED, MODIFIED or DELETED. It keeps a store of the
current objects and the latest resourceVersion it has seen (from every event, BOOKMARK included), so that:

- a watch that ends (the server's `timeoutSeconds`) or breaks (a connection error, the API server down or
  restarted, a proxy cutting it) is opened again from that resourceVersion, after an exponential backoff
  (0.2 s doubling to 10 s, back to 0.2 s after a success) when it broke: nothing is lost and nothing repeats;
- a 410 Gone (the resourceVersion is older than the server's watch history; an error on the request or an
  ERROR event in the stream) makes it list again and deliver the difference against its store: ADDED for
  new objects, MODIFIED for a changed resourceVersion, DELETED (with the last state it knew) for objects
  that vanished, DELETED then ADDED for an object deleted and created again under the same name;
- the handler never sees the same (object, resourceVersion) twice as ADDED or MODIFIED, nor a DELETED for an
  object it was not given or already deleted: kinds follow the store (an object the store lacks arrives as
  ADDED, one it holds as MODIFIED). A DELETED found by a relist carries the last state the informer knew,
  so the resourceVersion of the event before it.

Bookmarks: lightkube's `Client.watch` cannot ask for them (it takes no extra query parameters) and restarts a
finished watch by itself, so the informer builds the watch request with lightkube's lower-level request path
(`prepare_request`, `build_adapter_request`, the `httpx2` client under it) and reads the stream itself, with
`allowWatchBookmarks=true`. The API server sends a bookmark two seconds before each watch's timeout (once its
watch cache has seen an event of the kind), so a quiet informer, one whose selector matches nothing that
changes, still moves its resourceVersion on and does not fall out of the server's watch history.
A blocked socket read cannot be interrupted, so each watch is read by a short-lived daemon thread and the
informer looks at `stop` every half second: `run` returns within about a second of `stop` being set, and the
abandoned watch ends with the server's timeout (a few seconds) without delivering anything more.

The handler runs on the informer's thread, in order; an exception it raises is logged and does not stop the
informer. The objects handed to it (and kept in `store`) are the plain dicts of lightkube's `to_dict()`, with
`apiVersion` and `kind` filled in: treat them as read-only.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any, Final

import httpx2
import msgspec
from lightkube import ApiError, Client
from lightkube.core import resource as r
from lightkube.core.client import FieldSelector, LabelSelector
from lightkube.core.decoders import decode_object, decode_status, decode_watch_event
from lightkube.core.generic_client import ALL_NS
from lightkube.core.selector import build_selector

__all__ = ["ADDED", "DELETED", "MODIFIED", "EventHandler", "Informer", "object_key"]

log = logging.getLogger(__name__)

ADDED: Final = "ADDED"
MODIFIED: Final = "MODIFIED"
DELETED: Final = "DELETED"

EventHandler = Callable[[str, dict[str, Any]], None]

BACKOFF_START = 0.2  # seconds before the first retry after an error
BACKOFF_MAX = 10.0
WATCH_TIMEOUT = 5  # seconds the API server keeps a watch open (timeoutSeconds); the informer then opens the next
STOP_POLL = 0.5  # how often a watch waiting for events looks at `stop`
LIST_CHUNK = 500  # objects per page of a list


class _Gone(Exception):
    """The resourceVersion the watch started from is older than the server's history (410 Gone)."""


class _Backoff:
    """Exponential backoff: `start` doubling to `cap`; `reset` after a success."""

    def __init__(self, start: float = BACKOFF_START, cap: float = BACKOFF_MAX) -> None:
        self.start = start
        self.cap = cap
        self._next = start

    def next(self) -> float:
        delay = self._next
        self._next = min(self._next * 2, self.cap)
        return delay

    def reset(self) -> None:
        self._next = self.start


def object_key(obj: dict[str, Any]) -> str:
    """`namespace/name` of a namespaced object, `name` of a cluster-scoped one (the key of `Informer.store`)."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    name = str(meta.get("name") or "")
    return f"{namespace}/{name}" if namespace else name


def _resource_version(obj: dict[str, Any]) -> str | None:
    rv = (obj.get("metadata") or {}).get("resourceVersion")
    return str(rv) if rv is not None else None


def _uid(obj: dict[str, Any]) -> str | None:
    uid = (obj.get("metadata") or {}).get("uid")
    return str(uid) if uid is not None else None


def _is_gone(exc: BaseException) -> bool:
    if isinstance(exc, _Gone):
        return True
    if isinstance(exc, ApiError):
        return exc.status is not None and exc.status.code == 410
    return isinstance(exc, httpx2.HTTPStatusError) and exc.response.status_code == 410


def _status_error(response: httpx2.Response) -> httpx2.HTTPStatusError:
    """The error of a watch request the server refused: an `ApiError` when the body is a Status."""
    if response.headers.get("content-type", "").startswith("application/json"):
        try:
            return ApiError(request=response.request, response=response)
        except (ValueError, msgspec.MsgspecError):
            pass
    return httpx2.HTTPStatusError(f"HTTP {response.status_code} from the watch", request=response.request,
                                  response=response)


class _Stream:
    """One watch response, read line by line by a daemon thread of its own so that the reader can leave it
    (when `stop` is set) without waiting for the server to end it."""

    def __init__(self, http: httpx2.Client, request: httpx2.Request, name: str) -> None:
        self.ended = False  # the server ended the watch (its timeout), as opposed to an error
        self._http = http
        self._request = request
        # A line, None at the end of the response, or the error that ended it.
        self._queue: queue.SimpleQueue[bytes | BaseException | None] = queue.SimpleQueue()
        self._left = threading.Event()
        self._thread = threading.Thread(target=self._pump, name=f"informer-{name}-watch", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        try:
            response = self._http.send(self._request, stream=True)
            try:
                if response.status_code != 200:
                    response.read()
                    raise _status_error(response)
                for line in response.iter_lines():
                    if self._left.is_set():
                        return
                    if line:
                        self._queue.put(line.encode() if isinstance(line, str) else line)
            finally:
                response.close()
            self._queue.put(None)
        except Exception as exc:
            self._queue.put(exc)

    def lines(self, stop: threading.Event) -> Iterator[bytes]:
        """The response's lines until it ends (returns) or breaks (raises), or until `stop` is set."""
        while not stop.is_set():
            try:
                item = self._queue.get(timeout=STOP_POLL)
            except queue.Empty:
                continue
            if item is None:
                self.ended = True
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def leave(self) -> None:
        self._left.set()


class Informer:
    """Keeps one resource kind (of `namespace`, or of all namespaces when it is None; matching `labels` and
    `fields`) in step with the API server and tells `on_event` of every change.

    `name` names the informer in logs and its threads (the kind by default). `run` blocks until `stop` is set;
    `start` runs it on a daemon thread. `synced` is set once the first full list has been delivered; `store`
    holds the current objects by `object_key`; `relists` counts lists after the first (after a 410 Gone) and
    `reconnects` the retries after an error (not the routine re-watch when the server ends a watch).
    """

    def __init__(self, client: Client, resource: type[r.Resource], on_event: EventHandler, *,
                 namespace: str | None = None, labels: LabelSelector | None = None,
                 fields: FieldSelector | None = None, name: str | None = None,
                 watch_timeout: int = WATCH_TIMEOUT) -> None:
        info = r.api_info(resource)
        if issubclass(resource, r.NamespacedResource):
            if namespace is None and not issubclass(resource, r.NamespacedResourceG):
                raise ValueError(f"{resource.__name__} cannot be listed across namespaces: give a namespace")
        elif not issubclass(resource, r.GlobalResource):
            raise ValueError(f"{resource.__name__} is a subresource: it cannot be watched")
        elif namespace is not None:
            raise ValueError(f"{resource.__name__} is cluster-scoped: it takes no namespace")
        if "watch" not in info.verbs and "global_watch" not in info.verbs:
            raise ValueError(f"{resource.__name__} cannot be watched")
        self.client = client
        self.resource = resource
        self.on_event = on_event
        self.namespace = namespace
        self.name = name or info.resource.kind
        self.watch_timeout = watch_timeout
        self.store: dict[str, dict[str, Any]] = {}
        self.synced = threading.Event()
        self.relists = 0
        self.reconnects = 0
        self.resource_version: str | None = None  # the latest the informer has seen: where the next watch starts
        self._api_version = info.resource.api_version
        self._kind = info.resource.kind
        self._selectors: dict[str, str] = {}
        if labels:
            self._selectors["labelSelector"] = build_selector(dict(labels))
        if fields:
            self._selectors["fieldSelector"] = build_selector(dict(fields), for_fields=True)
        self._must_list = True
        self._lock = threading.Lock()  # guards `store` against readers on other threads (see `snapshot`)

    # --- running --------------------------------------------------------------------------------------

    def start(self, stop: threading.Event) -> threading.Thread:
        """Run the informer on a daemon thread until `stop` is set; the thread is returned."""
        thread = threading.Thread(target=self.run, args=(stop,), name=f"informer-{self.name}", daemon=True)
        thread.start()
        return thread

    def run(self, stop: threading.Event) -> None:
        """List, then watch, until `stop` is set (noticed within about a second). Never raises on API or
        connection errors: it retries them with backoff."""
        backoff = _Backoff()
        gone_in_a_row = 0
        while not stop.is_set():
            try:
                if self._must_list:
                    self._list()
                    backoff.reset()
                if self._watch(stop):
                    backoff.reset()
                gone_in_a_row = 0
            except Exception as exc:
                if stop.is_set():
                    break
                if _is_gone(exc):
                    # Relist at once; a server that keeps answering 410 to a fresh list's version gets backoff.
                    log.info("%s: resourceVersion %s is too old (%s): listing again", self.name,
                             self.resource_version, exc)
                    self._must_list = True
                    gone_in_a_row += 1
                    if gone_in_a_row > 1:
                        stop.wait(backoff.next())
                    continue
                self.reconnects += 1
                delay = backoff.next()
                known = isinstance(exc, httpx2.HTTPError | OSError)
                log.warning("%s: %s: %s; retrying in %.1fs", self.name, type(exc).__name__, exc, delay,
                            exc_info=not known)
                stop.wait(delay)

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """A copy of `store`, safe to take from another thread."""
        with self._lock:
            return dict(self.store)

    # --- list -----------------------------------------------------------------------------------------

    def _list(self) -> None:
        generic = self.client._client
        request = generic.prepare_request("list", res=self.resource, namespace=self._where(),
                                          params={"limit": LIST_CHUNK, **self._selectors})
        listing = generic.list(request)
        fresh: dict[str, dict[str, Any]] = {}
        for item in listing:
            obj = self._plain(item)
            fresh[object_key(obj)] = obj
        self._replace(fresh, listing.resourceVersion)

    def _replace(self, fresh: dict[str, dict[str, Any]], resource_version: str) -> None:
        """Make the store what a list returned (`fresh`, by key, at `resource_version`) and deliver the
        difference: ADDED, MODIFIED (another resourceVersion), DELETED then ADDED (another uid), and DELETED
        (with its last known state) for what the list no longer holds."""
        first = not self.synced.is_set()
        for key, obj in fresh.items():
            self._upsert(key, obj)
        for key in [key for key in self.store if key not in fresh]:
            self._apply(DELETED, key, self.store[key])
        self.resource_version = resource_version
        self._must_list = False
        if not first:
            self.relists += 1
        log.debug("%s: listed %d objects at resourceVersion %s", self.name, len(fresh), resource_version)
        self.synced.set()

    # --- watch ----------------------------------------------------------------------------------------

    def _watch(self, stop: threading.Event) -> bool:
        """One watch from `resource_version`, until the server ends it or `stop` is set. True when it made
        progress (delivered something, or ran its course); raises on a 410 Gone or a broken connection."""
        generic = self.client._client
        request = generic.prepare_request("list", res=self.resource, namespace=self._where(), watch=True, params={
            "resourceVersion": self.resource_version, "allowWatchBookmarks": "true",
            "timeoutSeconds": str(self.watch_timeout), **self._selectors,
        })
        # The server ends the watch after `timeoutSeconds`; a read timeout beyond that catches a dead peer.
        request.timeout = httpx2.Timeout(10.0, read=self.watch_timeout + 15.0)
        stream = _Stream(generic._client, generic.build_adapter_request(request), self.name)
        progressed = False
        try:
            for line in stream.lines(stop):
                self._line(line)
                progressed = True
        finally:
            stream.leave()
        return progressed or stream.ended

    def _line(self, line: bytes) -> None:
        event = decode_watch_event(line)
        if event.type == "ERROR":
            status = decode_status(event.object)
            if status.code == 410:
                raise _Gone(status.message or "410 Gone")
            raise ApiError(status=status)
        if event.type == "BOOKMARK":
            raw = msgspec.json.decode(event.object)
            rv = (raw.get("metadata") or {}).get("resourceVersion") if isinstance(raw, dict) else None
            if rv:
                self.resource_version = str(rv)
            return
        self._event(event.type, self._plain(decode_object(event.object, self.resource)))

    def _event(self, kind: str, obj: dict[str, Any]) -> None:
        """Apply one watch event to the store and deliver it, unless the store already has it."""
        key = object_key(obj)
        old = self.store.get(key)
        if kind in (ADDED, MODIFIED):
            self._upsert(key, obj)
        elif kind == DELETED:
            if old is not None:
                self._apply(DELETED, key, obj)
        else:
            log.warning("%s: unknown watch event type %r ignored", self.name, kind)
        rv = _resource_version(obj)
        if rv:
            self.resource_version = rv

    # --- helpers --------------------------------------------------------------------------------------

    def _upsert(self, key: str, obj: dict[str, Any]) -> None:
        """An object as the server now has it: ADDED if new, DELETED then ADDED if its uid changed (recreated
        under the same name), MODIFIED if its resourceVersion moved, nothing if the store already has it."""
        old = self.store.get(key)
        if old is None:
            self._apply(ADDED, key, obj)
        elif _uid(old) != _uid(obj):
            self._apply(DELETED, key, old)
            self._apply(ADDED, key, obj)
        elif _resource_version(old) != _resource_version(obj):
            self._apply(MODIFIED, key, obj)

    def _apply(self, kind: str, key: str, obj: dict[str, Any]) -> None:
        with self._lock:
            if kind == DELETED:
                self.store.pop(key, None)
            else:
                self.store[key] = obj
        try:
            self.on_event(kind, obj)
        except Exception:
            log.exception("%s: the handler failed on %s %s", self.name, kind, key)

    def _plain(self, item: Any) -> dict[str, Any]:
        obj: dict[str, Any] = item.to_dict()
        obj.setdefault("apiVersion", self._api_version)
        obj.setdefault("kind", self._kind)
        return obj

    def _where(self) -> str | None:
        """The namespace argument of lightkube's requests: `*` for all namespaces of a namespaced kind."""
        if self.namespace is None and issubclass(self.resource, r.NamespacedResource):
            return ALL_NS
        return self.namespace
