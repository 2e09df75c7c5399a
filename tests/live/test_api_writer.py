"""The ApiWriter against the real v1.37.2 API server: bindings, PodScheduled conditions, nominations, preemption,
PodGroup conditions and the Events that go with them; plus the retry rules, with a stub client and with an
API server that is not there."""

from __future__ import annotations

import datetime
from typing import Any

import httpx2
import pytest
from lightkube import ApiError, Client, KubeConfig
from lightkube.resources.core_v1 import Event, Pod
from lightkube.resources.events_v1 import Event as EventV1
from lightkube.resources.scheduling_v1beta1 import PodGroup

from phalanx.live.api_writer import ApiWriter, BindResult
from phalanx.verify.controlplane import free_port
from tests.builders import MakeNode, MakePod, MakePodGroup

pytestmark = pytest.mark.kube

EPOCH = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


class FakeTime:
    """A monotonic clock, a sleep that only moves it, and a wall clock that follows it (no real waiting)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def wall(self) -> datetime.datetime:
        return EPOCH + datetime.timedelta(seconds=self.now)


def stamp(seconds: float) -> datetime.datetime:
    return EPOCH + datetime.timedelta(seconds=int(seconds))


def make_node(client: Client, namespace: str, name: str = "n1") -> str:
    node = f"{namespace}-{name}"
    client.create(MakeNode(node).label("phalanx.dev/test", namespace).kube())
    return node


def make_pod(client: Client, namespace: str, name: str) -> Pod:
    return client.create(MakePod(name, namespace).scheduler("phalanx").container().kube())


def uid_of(pod: Pod) -> str:
    assert pod.metadata is not None and pod.metadata.uid
    return pod.metadata.uid


def events(client: Client, namespace: str, reason: str) -> list[Event]:
    return [e for e in client.list(Event, namespace=namespace) if e.reason == reason]


def condition(pod: Pod, type_: str) -> Any:
    assert pod.status is not None
    return next((c for c in pod.status.conditions or [] if c.type == type_), None)


# --- bind -----------------------------------------------------------------------------------------------


def test_bind_sets_node_name_and_emits_scheduled(client: Client, namespace: str) -> None:
    node = make_node(client, namespace)
    pod = make_pod(client, namespace, "p")
    writer = ApiWriter(client)
    result = writer.bind(namespace, "p", uid_of(pod), node)
    assert result == BindResult(True, "", f"Successfully assigned {namespace}/p to {node}")
    writer.flush()  # the Scheduled event is written in the background
    bound = client.get(Pod, "p", namespace=namespace)
    assert bound.spec is not None and bound.spec.nodeName == node
    assert condition(bound, "PodScheduled").status == "True"  # the API server's own doing on a binding
    [event] = events(client, namespace, "Scheduled")
    assert (event.type, event.message, event.reportingComponent) == (
        "Normal", f"Successfully assigned {namespace}/p to {node}", "phalanx")
    assert event.involvedObject.uid == uid_of(pod) and event.involvedObject.kind == "Pod"
    assert event.action == "Binding" and event.reportingInstance and event.reportingInstance.startswith("phalanx-")


class LosesCreateAnswers:
    """The real client, except that the first `lose` Event creates reach the API server and their answers are
    lost (as when it restarts between writing and answering)."""

    def __init__(self, client: Client, lose: int) -> None:
        self.client, self.lose = client, lose

    def create(self, obj: Any, *args: Any, **kwargs: Any) -> Any:
        made = self.client.create(obj, *args, **kwargs)
        if isinstance(obj, EventV1) and self.lose:
            self.lose -= 1
            raise httpx2.RemoteProtocolError("Server disconnected without sending a response.")
        return made

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


def test_an_event_whose_answer_was_lost_is_written_once(client: Client, namespace: str) -> None:
    node = make_node(client, namespace)
    pod = make_pod(client, namespace, "p")
    writer = ApiWriter(LosesCreateAnswers(client, lose=2))  # type: ignore[arg-type]
    assert writer.bind(namespace, "p", uid_of(pod), node).ok
    assert writer.flush(timeout=30)
    [event] = events(client, namespace, "Scheduled")  # its answer lost, tried again: written once
    assert event.message == f"Successfully assigned {namespace}/p to {node}"


def test_bind_twice_is_a_conflict(client: Client, namespace: str) -> None:
    first, second = make_node(client, namespace, "a"), make_node(client, namespace, "b")
    pod = make_pod(client, namespace, "p")
    writer = ApiWriter(client)
    assert writer.bind(namespace, "p", uid_of(pod), first).ok
    again = writer.bind(namespace, "p", uid_of(pod), second)
    assert (again.ok, again.reason) == (False, "conflict")
    assert "already assigned" in again.message
    bound = client.get(Pod, "p", namespace=namespace)
    assert bound.spec is not None and bound.spec.nodeName == first
    writer.flush()
    assert len(events(client, namespace, "Scheduled")) == 1


def test_bind_of_a_missing_pod_is_gone(client: Client, namespace: str) -> None:
    node = make_node(client, namespace)
    writer = ApiWriter(client)
    result = writer.bind(namespace, "nobody", None, node)
    assert (result.ok, result.reason) == (False, "gone")
    writer.flush()
    assert events(client, namespace, "Scheduled") == []


def test_bind_with_a_stale_uid_is_refused(client: Client, namespace: str) -> None:
    node = make_node(client, namespace)
    old = make_pod(client, namespace, "p")
    client.delete(Pod, "p", namespace=namespace, grace_period=0)
    new = make_pod(client, namespace, "p")
    assert uid_of(new) != uid_of(old)
    result = ApiWriter(client).bind(namespace, "p", uid_of(old), node)
    assert (result.ok, result.reason) == (False, "gone")
    assert "Precondition failed" in result.message
    pod = client.get(Pod, "p", namespace=namespace)
    assert pod.spec is not None and not pod.spec.nodeName
    # The recreated pod itself binds with its own UID.
    assert ApiWriter(client).bind(namespace, "p", uid_of(new), node).ok


# --- unschedulable, nominate ----------------------------------------------------------------------------


def test_unschedulable_writes_the_condition_once_and_aggregates_events(client: Client, namespace: str) -> None:
    pod = make_pod(client, namespace, "p")
    t = FakeTime()
    writer = ApiWriter(client, clock=t.clock, sleep=t.sleep, wall=t.wall)
    message = "0/3 nodes are available: 3 Insufficient cpu."
    writer.unschedulable(namespace, "p", message)
    written = client.get(Pod, "p", namespace=namespace)
    cond = condition(written, "PodScheduled")
    assert (cond.status, cond.reason, cond.message, cond.lastTransitionTime) == (
        "False", "Unschedulable", message, stamp(0))
    assert cond.observedGeneration == (pod.metadata.generation if pod.metadata else None)
    for _ in range(3):
        t.now += 5
        writer.unschedulable(namespace, "p", message)
    # Nothing written again: same resourceVersion, one event.
    again = client.get(Pod, "p", namespace=namespace)
    assert again.metadata is not None and written.metadata is not None
    assert again.metadata.resourceVersion == written.metadata.resourceVersion
    writer.flush()
    [event] = events(client, namespace, "FailedScheduling")
    assert (event.type, event.message, event.reportingComponent, event.action) == (
        "Warning", message, "phalanx", "Scheduling")
    assert event.involvedObject.uid == uid_of(pod)

    # A new message: the condition changes but keeps its lastTransitionTime (same status); a second event.
    other = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
    writer.unschedulable(namespace, "p", other, nominated_node="n1")
    pod_now = client.get(Pod, "p", namespace=namespace)
    cond = condition(pod_now, "PodScheduled")
    assert (cond.message, cond.lastTransitionTime) == (other, stamp(0))
    assert pod_now.status is not None and pod_now.status.nominatedNodeName == "n1"
    writer.flush()
    assert sorted(e.message or "" for e in events(client, namespace, "FailedScheduling")) == sorted([message, other])

    # The same message after the 30 s window: the first event's series is updated, no new Event.
    t.now += 31
    writer.unschedulable(namespace, "p", other)
    writer.flush()
    v1 = [e for e in client.list(EventV1, namespace=namespace) if e.reason == "FailedScheduling"]
    assert len(v1) == 2
    [series] = [e.series for e in v1 if e.note == other]
    assert series is not None and series.count == 2


def test_unschedulable_leaves_bound_missing_and_recreated_pods_alone(client: Client, namespace: str) -> None:
    node = make_node(client, namespace)
    pod = make_pod(client, namespace, "p")
    writer = ApiWriter(client)
    assert writer.bind(namespace, "p", uid_of(pod), node).ok
    writer.unschedulable(namespace, "p", "too late")
    assert condition(client.get(Pod, "p", namespace=namespace), "PodScheduled").status == "True"
    writer.unschedulable(namespace, "nobody", "no such pod")  # no error
    make_pod(client, namespace, "q")
    writer.unschedulable(namespace, "q", "for an older pod of that name", uid="old-uid")
    assert condition(client.get(Pod, "q", namespace=namespace), "PodScheduled") is None
    writer.flush()
    assert events(client, namespace, "FailedScheduling") == []


def test_nominate_sets_and_clears(client: Client, namespace: str) -> None:
    make_pod(client, namespace, "p")
    writer = ApiWriter(client)
    writer.nominate(namespace, "p", "n1")
    pod = client.get(Pod, "p", namespace=namespace)
    assert pod.status is not None and pod.status.nominatedNodeName == "n1"
    writer.nominate(namespace, "p", "n2")
    pod = client.get(Pod, "p", namespace=namespace)
    assert pod.status is not None and pod.status.nominatedNodeName == "n2"
    writer.nominate(namespace, "p", "")
    pod = client.get(Pod, "p", namespace=namespace)
    assert pod.status is not None and pod.status.nominatedNodeName is None
    writer.nominate(namespace, "nobody", "n1")  # no error


# --- preempt --------------------------------------------------------------------------------------------


def test_preempt_marks_then_deletes_with_the_victims_grace_period(client: Client, namespace: str) -> None:
    node = make_node(client, namespace)
    victim = make_pod(client, namespace, "victim")
    writer = ApiWriter(client)
    assert writer.bind(namespace, "victim", uid_of(victim), node).ok  # unbound pods are deleted at once
    assert writer.preempt(namespace, "victim", preemptor="preemptor-uid", node=node, preemptor_name="big")
    # No kubelet: the victim stays, terminating within its 30 s grace period, with its DisruptionTarget.
    left = client.get(Pod, "victim", namespace=namespace)
    assert left.metadata is not None and left.metadata.deletionTimestamp is not None
    assert left.metadata.deletionGracePeriodSeconds == 30
    cond = condition(left, "DisruptionTarget")
    assert (cond.status, cond.reason, cond.message) == (
        "True", "PreemptionByScheduler", "phalanx: preempting to accommodate a higher priority pod")
    writer.flush()
    [event] = events(client, namespace, "Preempted")
    assert (event.type, event.message, event.reportingComponent, event.action) == (
        "Normal", f"Preempted by pod preemptor-uid on node {node}", "phalanx", "Preempting")
    assert event.involvedObject.uid == uid_of(victim)
    assert event.related is not None and (event.related.kind, event.related.name) == ("Pod", "big")
    # Again: deletion has started, nothing more is sent (no second event).
    assert writer.preempt(namespace, "victim", preemptor="preemptor-uid", node=node)
    writer.flush()
    assert len(events(client, namespace, "Preempted")) == 1


def test_preempt_with_no_grace_period_removes_the_victim(client: Client, namespace: str) -> None:
    node = make_node(client, namespace)
    victim = make_pod(client, namespace, "victim")
    writer = ApiWriter(client, scheduler_name="phalanx-b")
    assert writer.bind(namespace, "victim", uid_of(victim), node).ok
    assert writer.preempt(namespace, "victim", preemptor="group-uid", node=node, grace_seconds=0,
                          preemptor_kind="podgroup")
    with pytest.raises(ApiError) as gone:
        client.get(Pod, "victim", namespace=namespace)
    assert gone.value.status.code == 404
    writer.flush()
    [event] = events(client, namespace, "Preempted")
    assert event.message == f"Preempted by podgroup group-uid on node {node}"
    assert event.reportingComponent == "phalanx-b"
    # A victim that is already gone counts as preempted; so does a recreated one with another UID.
    assert writer.preempt(namespace, "victim", preemptor="group-uid", node=node)
    other = make_pod(client, namespace, "other")
    assert writer.preempt(namespace, "other", preemptor="group-uid", node=node, uid="not-its-uid")
    assert client.get(Pod, "other", namespace=namespace).metadata.deletionTimestamp is None  # type: ignore[union-attr]
    assert uid_of(other)


# --- PodGroup conditions --------------------------------------------------------------------------------


def test_group_condition_writes_and_updates(client: Client, namespace: str) -> None:
    client.create(MakePodGroup("g", namespace).gang(2).kube())
    t = FakeTime()
    writer = ApiWriter(client, clock=t.clock, sleep=t.sleep, wall=t.wall)

    def conditions() -> dict[str, Any]:
        group = client.get(PodGroup, "g", namespace=namespace)
        return {c.type: c for c in (group.status.conditions if group.status else None) or []}

    def version() -> str | None:
        return client.get(PodGroup, "g", namespace=namespace).metadata.resourceVersion  # type: ignore[union-attr]

    kind = "PodGroupInitiallyScheduled"
    short, shorter = ("minCount (2) cannot be satisfied: 1 scheduled, 0 remaining",
                      "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining")
    writer.group_condition(namespace, "g", kind, False, "Unschedulable", short)
    first = conditions()[kind]
    assert (first.status, first.reason, first.message, first.lastTransitionTime) == (
        "False", "Unschedulable", short, stamp(0))
    before = version()
    t.now += 10
    writer.group_condition(namespace, "g", kind, False, "Unschedulable", short)
    assert version() == before  # unchanged: not written
    writer.group_condition(namespace, "g", kind, False, "Unschedulable", shorter)
    second = conditions()[kind]
    assert (second.message, second.lastTransitionTime) == (shorter, stamp(0))
    t.now += 10
    writer.group_condition(namespace, "g", kind, True, "Scheduled", "")
    third = conditions()[kind]
    assert (third.status, third.reason, third.lastTransitionTime) == ("True", "Scheduled", stamp(20))
    # Final once True (updatePodGroupCondition does not regress it); other types merge alongside.
    writer.group_condition(namespace, "g", kind, False, "Unschedulable", "later members do not fit")
    writer.group_condition(namespace, "g", "DisruptionTarget", True, "PreemptionByScheduler", "preempted")
    now = conditions()
    assert (now[kind].status, now[kind].reason) == ("True", "Scheduled")
    assert (now["DisruptionTarget"].status, now["DisruptionTarget"].reason) == ("True", "PreemptionByScheduler")
    writer.group_condition(namespace, "missing", kind, True, "Scheduled", "")  # no error


# --- retries and failures -------------------------------------------------------------------------------


def api_error(code: int) -> ApiError:
    request = httpx2.Request("PATCH", "https://127.0.0.1/api/v1/namespaces/ns/pods/p/status")
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": f"http {code}",
            "code": code}
    return ApiError(request=request, response=httpx2.Response(code, json=body, request=request))


class StubClient:
    """Answers each call with the next of `answers` (an exception is raised), then with None."""

    def __init__(self, *answers: BaseException) -> None:
        self.answers = list(answers)
        self.calls: list[str] = []

    def _answer(self, verb: str) -> None:
        self.calls.append(verb)
        if self.answers:
            raise self.answers.pop(0)

    def patch(self, *args: object, **kwargs: object) -> None:
        self._answer("patch")

    def create(self, *args: object, **kwargs: object) -> None:
        self._answer("create")


def test_transient_errors_on_status_patches_are_retried_with_backoff() -> None:
    t = FakeTime()
    stub = StubClient(api_error(500), httpx2.ConnectError("refused"))
    ApiWriter(stub, events=False, clock=t.clock, sleep=t.sleep).nominate("ns", "p", "n1")  # type: ignore[arg-type]
    assert stub.calls == ["patch"] * 3
    assert len(t.slept) == 2 and 0.01 <= t.slept[0] <= 0.011 and 0.05 <= t.slept[1] <= 0.055

    t = FakeTime()
    stub = StubClient(*[api_error(503)] * 10)
    ApiWriter(stub, events=False, clock=t.clock, sleep=t.sleep).nominate("ns", "p", "n1")  # type: ignore[arg-type]
    assert stub.calls == ["patch"] * 4  # then logged and dropped
    stub = StubClient(api_error(422))
    ApiWriter(stub, events=False, clock=t.clock, sleep=t.sleep).nominate("ns", "p", "n1")  # type: ignore[arg-type]
    assert stub.calls == ["patch"]  # not transient: not retried


def test_binding_is_never_retried() -> None:
    t = FakeTime()
    for failure in (api_error(500), api_error(503), httpx2.ConnectError("refused"), httpx2.ReadTimeout("slow")):
        stub = StubClient(failure)
        result = ApiWriter(stub, clock=t.clock, sleep=t.sleep).bind("ns", "p", "uid", "n1")  # type: ignore[arg-type]
        assert (result.ok, result.reason) == (False, "error")
        assert stub.calls == ["create"]
    assert t.slept == []


def test_an_unreachable_api_server_never_raises() -> None:
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "nowhere",
        "clusters": [{"name": "nowhere", "cluster": {"server": f"https://127.0.0.1:{free_port()}",
                                                     "insecure-skip-tls-verify": True}}],
        "users": [{"name": "nobody", "user": {"token": "none"}}],
        "contexts": [{"name": "nowhere", "context": {"cluster": "nowhere", "user": "nobody"}}],
    }
    nowhere = Client(KubeConfig.from_dict(config), timeout=httpx2.Timeout(2))
    t = FakeTime()
    writer = ApiWriter(nowhere, clock=t.clock, sleep=t.sleep)
    result = writer.bind("ns", "p", "uid", "n1")
    assert (result.ok, result.reason) == (False, "error") and "ConnectError" in result.message
    writer.unschedulable("ns", "p", "no room")
    writer.nominate("ns", "p", "n1")
    writer.group_condition("ns", "g", "PodGroupInitiallyScheduled", False, "Unschedulable", "no room")
    assert writer.preempt("ns", "v", preemptor="u", node="n1") is False
    assert len(t.slept) == 4 * 3  # each of the four calls tried 4 times
