"""Informers against the real API server: the first list, changes in order, a watch cut by a proxy, the API
server restarted mid-watch, a 410 Gone answered by a relist, and the kinds the live driver watches.

Every test checks the informer's two promises: no event is lost (its store ends equal to a fresh list) and none
repeats (no (object, resourceVersion) is delivered twice).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, cast

import pytest
from lightkube import Client, KubeConfig
from lightkube.generic_resource import create_namespaced_resource
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.core_v1 import Node, Pod
from lightkube.resources.scheduling_v1beta1 import PodGroup
from lightkube.types import PatchType

from phalanx.live.informers import Informer, _Gone, object_key
from phalanx.verify.controlplane import ControlPlane
from tests.builders import MakeNode, MakePod, MakePodGroup
from tests.live.proxy import Proxy

pytestmark = pytest.mark.kube

WAIT = 20.0  # seconds a test waits for the informer to catch up before it fails

Event = tuple[str, str, str, dict[str, Any]]  # kind, key, resourceVersion, object


class Recorder:
    """The informer's handler: records every event and lets the test wait for some."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._changed = threading.Condition()

    def __call__(self, kind: str, obj: dict[str, Any]) -> None:
        with self._changed:
            self.events.append((kind, object_key(obj), obj["metadata"]["resourceVersion"], obj))
            self._changed.notify_all()

    def wait(self, done: Callable[[list[Event]], bool], timeout: float = WAIT) -> list[Event]:
        with self._changed:
            if not self._changed.wait_for(lambda: done(self.events), timeout):
                pytest.fail(f"timed out; events so far: {self.brief()}")
            return list(self.events)

    def kinds(self, key: str) -> list[str]:
        """The kinds of the events of one object, without the MODIFIED that marks a pod deleting (the API
        server sets deletionTimestamp before it removes the pod, even with a grace period of 0)."""
        return [kind for kind, k, _, obj in self.events
                if k == key and not (kind == "MODIFIED" and "deletionTimestamp" in obj["metadata"])]

    def brief(self) -> list[tuple[str, str, str]]:
        return [(kind, key, rv) for kind, key, rv, _ in self.events]

    def assert_no_repeats(self) -> None:
        """No (object, resourceVersion) delivered twice as ADDED or MODIFIED, nor an object deleted twice. (A
        DELETED found by a relist carries the last state the informer knew, so that resourceVersion again.)"""
        seen = [(key, rv) for kind, key, rv, _ in self.events if kind != "DELETED"]
        assert len(seen) == len(set(seen)), f"an (object, resourceVersion) was delivered twice: {self.brief()}"
        deleted = [(key, rv) for kind, key, rv, _ in self.events if kind == "DELETED"]
        assert len(deleted) == len(set(deleted)), f"an object was deleted twice: {self.brief()}"


@contextlib.contextmanager
def running(informer: Informer) -> Iterator[Informer]:
    """Run the informer on its thread; at the end, stop it and check it stopped within about a second."""
    stop = threading.Event()
    thread = informer.start(stop)
    try:
        yield informer
    finally:
        stop.set()
        stopped = time.monotonic()
        thread.join(timeout=5.0)
        assert not thread.is_alive(), "the informer did not notice stop"
        assert time.monotonic() - stopped < 3.0, "the informer took too long to notice stop"  # about 1 s, idle


def wait_until(done: Callable[[], bool], timeout: float = WAIT, what: str = "condition") -> None:
    """Poll a condition on the API server's side (which sends no notification)."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def make_pod(client: Client, namespace: str, name: str, **labels: str) -> Pod:
    pod = MakePod(name, namespace).scheduler("phalanx").container()
    for key, value in labels.items():
        pod.label(key, value)
    return client.create(pod.kube())


def listed(client: Client, namespace: str) -> dict[str, str | None]:
    """A fresh list of the namespace's pods: key -> resourceVersion."""
    return {f"{namespace}/{pod.metadata.name}": pod.metadata.resourceVersion
            for pod in client.list(Pod, namespace=namespace) if pod.metadata is not None}


def versions(informer: Informer) -> dict[str, str | None]:
    return {key: obj["metadata"]["resourceVersion"] for key, obj in informer.snapshot().items()}


# --- the first list and the watch -----------------------------------------------------------------------

def test_the_first_list_delivers_existing_pods_then_sets_synced(client: Client, namespace: str) -> None:
    for name in ("a", "b", "c"):
        make_pod(client, namespace, name)
    recorder = Recorder()
    informer = Informer(client, Pod, recorder, namespace=namespace)
    with running(informer):
        assert informer.synced.wait(WAIT)
        assert recorder.brief() == [(kind, key, rv) for kind, key, rv, _ in recorder.events]
        assert [(kind, key) for kind, key, _, _ in recorder.events] == \
            [("ADDED", f"{namespace}/a"), ("ADDED", f"{namespace}/b"), ("ADDED", f"{namespace}/c")]
        first = recorder.events[0][3]
        assert (first["apiVersion"], first["kind"], first["spec"]["schedulerName"]) == ("v1", "Pod", "phalanx")
        assert versions(informer) == listed(client, namespace)
        assert (informer.relists, informer.reconnects) == (0, 0)


def test_create_update_delete_arrive_in_order(client: Client, namespace: str) -> None:
    recorder = Recorder()
    informer = Informer(client, Pod, recorder, namespace=namespace)
    key = f"{namespace}/p"
    with running(informer):
        assert informer.synced.wait(WAIT)
        make_pod(client, namespace, "p")
        client.patch(Pod, "p", {"metadata": {"labels": {"step": "2"}}}, namespace=namespace)
        client.patch(Pod, "p", {"metadata": {"labels": {"step": "3"}}}, namespace=namespace)
        client.delete(Pod, "p", namespace=namespace, grace_period=0)
        recorder.wait(lambda events: any(kind == "DELETED" for kind, _, _, _ in events))
    assert recorder.kinds(key) == ["ADDED", "MODIFIED", "MODIFIED", "DELETED"]
    assert [(obj["metadata"].get("labels") or {}).get("step") for _, _, _, obj in recorder.events[:3]] == \
        [None, "2", "3"]
    rvs = [int(rv) for _, _, rv, _ in recorder.events]
    assert rvs == sorted(rvs) and len(set(rvs)) == len(rvs)
    assert informer.store == {}


# --- faults ---------------------------------------------------------------------------------------------

def test_a_watch_cut_by_a_proxy_reconnects_and_loses_nothing(live_plane: ControlPlane, client: Client,
                                                             namespace: str) -> None:
    recorder = Recorder()
    make_pod(client, namespace, "before")
    with Proxy("127.0.0.1", live_plane.api_port) as proxy, \
            Client(KubeConfig.from_dict(proxy.client_config(live_plane.client_config()))) as routed:
        informer = Informer(routed, Pod, recorder, namespace=namespace)
        with running(informer):
            assert informer.synced.wait(WAIT)
            wait_until(lambda: proxy.connections >= 1, what="the watch")
            # The server away: the watch is cut and reconnections are refused while the pods change.
            proxy.pause()
            assert proxy.cut() >= 1
            for name in ("a", "b", "c"):
                make_pod(client, namespace, name)
            client.patch(Pod, "a", {"metadata": {"labels": {"changed": "yes"}}}, namespace=namespace)
            client.delete(Pod, "before", namespace=namespace, grace_period=0)
            wait_until(lambda: proxy.refused >= 1, what="a refused reconnection")
            proxy.resume()
            recorder.wait(lambda events: any(kind == "DELETED" for kind, _, _, _ in events))
            # Cuts racing with changes: each watch is cut right after a pod appears.
            for index in range(4):
                make_pod(client, namespace, f"cut-{index}")
                proxy.cut()
            wait_until(lambda: versions(informer) == listed(client, namespace), what="the store to catch up")
            # A reconnection held unanswered (a server slow to accept), then let through.
            proxy.pause(hold=True)
            proxy.cut()
            make_pod(client, namespace, "held")
            wait_until(lambda: proxy.holding >= 1, what="a held reconnection")
            proxy.resume()
            wait_until(lambda: versions(informer) == listed(client, namespace), what="the store to catch up")
        assert recorder.kinds(f"{namespace}/a") == ["ADDED", "MODIFIED"]
        assert recorder.kinds(f"{namespace}/held") == ["ADDED"]
        assert recorder.kinds(f"{namespace}/before") == ["ADDED", "DELETED"]
        for index in range(4):
            assert recorder.kinds(f"{namespace}/cut-{index}") == ["ADDED"]
        recorder.assert_no_repeats()
        assert informer.reconnects >= 1 and proxy.refused >= 1
        assert informer.relists == 0  # every reconnection resumed from the last resourceVersion


def test_the_informer_recovers_from_an_api_server_restart(live_plane: ControlPlane, client: Client,
                                                          namespace: str) -> None:
    for name in ("a", "b"):
        make_pod(client, namespace, name)
    recorder = Recorder()
    informer = Informer(client, Pod, recorder, namespace=namespace)
    with running(informer):
        assert informer.synced.wait(WAIT)
        live_plane.restart_apiserver(down_for=2)  # returns once the new API server is ready
        # Changes right after the restart, while the informer may still be backing off.
        make_pod(client, namespace, "c")
        client.delete(Pod, "a", namespace=namespace, grace_period=0)
        wait_until(lambda: versions(informer) == listed(client, namespace), what="the store to catch up")
        make_pod(client, namespace, "d")  # and the watch runs again afterwards
        recorder.wait(lambda events: any(key == f"{namespace}/d" for _, key, _, _ in events))
    assert informer.reconnects >= 1
    assert recorder.kinds(f"{namespace}/a") == ["ADDED", "DELETED"]
    assert recorder.kinds(f"{namespace}/b") == ["ADDED"]
    assert recorder.kinds(f"{namespace}/c") == ["ADDED"]
    recorder.assert_no_repeats()
    assert live_plane.apiserver is not None and live_plane.apiserver.alive()


def test_a_410_gone_relists_and_delivers_the_difference(live_plane: ControlPlane, client: Client,
                                                        namespace: str) -> None:
    """The informer is stopped, the pods change, the API server restarts (its watch cache then begins after
    the changes) and the informer resumes from its resourceVersion, now older than the server's watch history:
    the server answers 410 Gone and the informer lists again."""
    for name in ("kept", "changed", "deleted"):
        make_pod(client, namespace, name)
    recorder = Recorder()
    informer = Informer(client, Pod, recorder, namespace=namespace)
    with running(informer):
        assert informer.synced.wait(WAIT)
        recorder.wait(lambda events: len(events) == 3)
    client.patch(Pod, "changed", {"metadata": {"labels": {"changed": "yes"}}}, namespace=namespace)
    client.delete(Pod, "deleted", namespace=namespace, grace_period=0)
    make_pod(client, namespace, "new")
    live_plane.restart_apiserver()
    with running(informer):
        recorder.wait(lambda events: len(events) == 6)
        assert informer.relists == 1
        assert versions(informer) == listed(client, namespace)
    assert [(kind, key.split("/")[1]) for kind, key, _, _ in recorder.events[3:]] == \
        [("MODIFIED", "changed"), ("ADDED", "new"), ("DELETED", "deleted")]
    assert recorder.events[-1][3]["metadata"]["name"] == "deleted"  # its last known state
    recorder.assert_no_repeats()


def test_bookmarks_move_the_resource_version_of_a_quiet_watch(client: Client, namespace: str) -> None:
    """Pods outside the informer's selector change: it is told nothing, but the server's bookmarks carry its
    resourceVersion forward (so a later watch does not start from a version the server has forgotten)."""
    recorder = Recorder()
    informer = Informer(client, Pod, recorder, namespace=namespace, labels={"watched": "yes"})
    with running(informer):
        assert informer.synced.wait(WAIT)
        listed_at = int(informer.resource_version or 0)
        others = [make_pod(client, namespace, f"other-{index}") for index in range(3)]
        latest = max(int(pod.metadata.resourceVersion or 0) for pod in others if pod.metadata is not None)
        # The server sends bookmarks best-effort, near each watch's end: on a loaded machine it takes a few.
        wait_until(lambda: int(informer.resource_version or 0) >= latest, timeout=3 * WAIT, what="a bookmark")
    assert latest > listed_at
    assert recorder.events == []


# --- kinds ----------------------------------------------------------------------------------------------

def test_nodes_and_podgroups(client: Client, namespace: str) -> None:
    nodes, groups = Recorder(), Recorder()
    node_name = f"{namespace}-n"
    node_informer = Informer(client, Node, nodes, labels={"phalanx.dev/test": namespace})
    group_informer = Informer(client, PodGroup, groups, namespace=namespace)
    with running(node_informer), running(group_informer):
        assert node_informer.synced.wait(WAIT) and group_informer.synced.wait(WAIT)
        client.create(MakeNode(node_name).label("phalanx.dev/test", namespace).kube())
        client.patch(Node, node_name, {"spec": {"unschedulable": True}})
        client.create(MakePodGroup("g", namespace).gang(2).kube())
        client.patch(PodGroup, "g", {"metadata": {"labels": {"changed": "yes"}}}, namespace=namespace)
        nodes.wait(lambda events: len(events) == 2)
        groups.wait(lambda events: len(events) == 2)
    assert nodes.kinds(node_name) == ["ADDED", "MODIFIED"]  # cluster-scoped: keyed by name
    assert nodes.events[1][3]["spec"]["unschedulable"] is True
    assert set(node_informer.store) == {node_name}
    assert groups.kinds(f"{namespace}/g") == ["ADDED", "MODIFIED"]
    first = groups.events[0][3]
    assert (first["apiVersion"], first["kind"]) == ("scheduling.k8s.io/v1beta1", "PodGroup")
    assert first["spec"]["schedulingPolicy"]["gang"]["minCount"] == 2
    for recorder in (nodes, groups):
        recorder.assert_no_repeats()


def _established(client: Client, crd_name: str) -> bool:
    status = client.get(CustomResourceDefinition, crd_name).status
    conditions = (status.conditions if status is not None else None) or []
    return any(c.type == "Established" and c.status == "True" for c in conditions)


def test_a_generic_resource_of_a_custom_kind(client: Client, namespace: str) -> None:
    """A kind lightkube has no model for (a CustomResourceDefinition of the test's own group)."""
    group = f"{namespace}.phalanx.dev"
    crd_name = f"widgets.{group}"
    client.create(cast(CustomResourceDefinition, CustomResourceDefinition.from_dict({
        "metadata": {"name": crd_name},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                     "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
    })))
    try:
        wait_until(lambda: _established(client, crd_name), what="the CRD to be served")
        widget = create_namespaced_resource(group, "v1", "Widget", "widgets")
        recorder = Recorder()
        informer = Informer(client, widget, recorder, namespace=namespace, name="widgets")
        with running(informer):
            assert informer.synced.wait(WAIT)
            client.create(widget.from_dict({"apiVersion": f"{group}/v1", "kind": "Widget",
                                            "metadata": {"name": "w", "namespace": namespace}, "size": 1}))
            client.patch(widget, "w", {"size": 2}, namespace=namespace, patch_type=PatchType.MERGE)
            client.delete(widget, "w", namespace=namespace)
            recorder.wait(lambda events: len(events) == 3)
        assert recorder.kinds(f"{namespace}/w") == ["ADDED", "MODIFIED", "DELETED"]
        assert [obj.get("size") for _, _, _, obj in recorder.events] == [1, 2, 2]
        assert recorder.events[0][3]["apiVersion"] == f"{group}/v1"
        recorder.assert_no_repeats()
    finally:
        client.delete(CustomResourceDefinition, crd_name)


# --- the relist and watch bookkeeping, without a server -------------------------------------------------

def _offline_informer(recorder: Recorder) -> Informer:
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
              "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
              "users": [{"name": "u", "user": {"token": "t"}}],
              "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}
    return Informer(Client(KubeConfig.from_dict(config)), Pod, recorder)


def _pod(name: str, rv: str, uid: str | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv, "uid": uid or f"uid-{name}"}}


def test_a_relist_delivers_the_difference_against_the_store() -> None:
    recorder = Recorder()
    informer = _offline_informer(recorder)
    informer._replace({f"ns/{name}": _pod(name, "10") for name in ("same", "changed", "gone", "reborn")}, "10")
    assert informer.synced.is_set() and informer.relists == 0
    recorder.events.clear()
    informer._replace({"ns/same": _pod("same", "10"), "ns/changed": _pod("changed", "12"),
                       "ns/reborn": _pod("reborn", "13", uid="uid-2"), "ns/new": _pod("new", "14")}, "15")
    assert [(kind, key, rv) for kind, key, rv, _ in recorder.events] == [
        ("MODIFIED", "ns/changed", "12"),
        ("DELETED", "ns/reborn", "10"), ("ADDED", "ns/reborn", "13"),  # deleted and created again
        ("ADDED", "ns/new", "14"),
        ("DELETED", "ns/gone", "10"),  # with its last known state
    ]
    assert set(informer.store) == {"ns/same", "ns/changed", "ns/reborn", "ns/new"}
    assert (informer.resource_version, informer.relists) == ("15", 1)


def test_watch_events_are_not_delivered_twice_and_bookmarks_move_the_version() -> None:
    recorder = Recorder()
    informer = _offline_informer(recorder)
    informer._replace({}, "1")
    added = (b'{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns",'
             b'"resourceVersion":"2","uid":"u"}}}')
    informer._line(added)
    informer._line(added)  # as a watch resumed from an older version would repeat it
    assert informer.resource_version == "2"
    # A bookmark's object is an empty shell of the kind (a Pod with `containers: null`): only its version counts.
    informer._line(b'{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":'
                   b'"7"},"spec":{"containers":null},"status":{}}}')
    assert informer.resource_version == "7"
    informer._line(b'{"type":"DELETED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"q",'
                   b'"namespace":"ns","resourceVersion":"8","uid":"v"}}}')  # never delivered: not deleted twice
    assert [(kind, key, rv) for kind, key, rv, _ in recorder.events] == [("ADDED", "ns/p", "2")]
    assert informer.resource_version == "8"
    with pytest.raises(_Gone):
        informer._line(b'{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure",'
                       b'"message":"too old resource version: 1 (9)","reason":"Expired","code":410}}')
