"""The live driver end to end on the real v1.37.2 API server: pods and gangs bound through the Binding
subresource, unschedulable pods told why, preemption, a binding refused (409, 500), the API server restarted in
the middle of a gang; and after each, the invariants: no pod bound twice, no gang bound below minCount, no
pending pod forgotten."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from lightkube import Client
from lightkube.resources.core_v1 import Pod

from phalanx.live.api_writer import ApiWriter, BindResult
from phalanx.live.driver import Driver
from phalanx.scheduler.profiles import builtin
from phalanx.verify.controlplane import ControlPlane
from tests.builders import MakeNode, MakePod, MakePodGroup, MakePriorityClass
from tests.kube import until

pytestmark = pytest.mark.kube


def make_node(client: Client, namespace: str, name: str, cpu: str = "4", memory: str = "16Gi",
              labels: Mapping[str, str] | None = None) -> str:
    """A Ready node `<namespace>-<name>`, labelled for the namespace's pods (and with `labels`)."""
    full = f"{namespace}-{name}"
    node = (MakeNode(full).label("phalanx.dev/test", namespace).label("kubernetes.io/hostname", full)
            .alloc(cpu=cpu, memory=memory, pods="110").capacity(cpu=cpu, memory=memory, pods="110").ready())
    for key, value in (labels or {}).items():
        node.label(key, value)
    client.create(node.kube())
    return full


def phalanx_pod(namespace: str, name: str, cpu: str = "1") -> MakePod:
    """A pod for Phalanx, on the namespace's nodes only, gone at once when deleted."""
    return (MakePod(name, namespace).scheduler("phalanx").grace(0).node_selector({"phalanx.dev/test": namespace})
            .req(cpu=cpu, memory="1Gi"))


def make_pod(client: Client, namespace: str, name: str, cpu: str = "1", *, group: str | None = None,
             priority_class: str | None = None, node: str | None = None, grace: int = 0) -> None:
    pod = phalanx_pod(namespace, name, cpu).grace(grace)
    if group:
        pod.group(group)
    if priority_class is not None:
        pod.priority_class(priority_class)
    if node:
        pod.node(node)
    client.create(pod.kube())


def make_gang(client: Client, namespace: str, name: str, min_count: int) -> None:
    client.create(MakePodGroup(name, namespace).gang(min_count).kube())


def pods(client: Client, namespace: str) -> dict[str, dict[str, Any]]:
    return {p.metadata.name: p.to_dict() for p in client.list(Pod, namespace=namespace)
            if p.metadata is not None and p.metadata.name is not None}


def node_of(pod: dict[str, Any]) -> str | None:
    return (pod.get("spec") or {}).get("nodeName")


class Running:
    """A Driver on its own thread (gang profile), stopped when the test ends."""

    def __init__(self, client: Client, namespace: str, writer: ApiWriter | None = None) -> None:
        self.stop = threading.Event()
        self.driver = Driver(client, builtin("gang"), api_writer=writer, namespaces={namespace})
        self.thread = threading.Thread(target=self.driver.run, args=(self.stop,), daemon=True)
        self.thread.start()
        until(self.driver.ready.is_set, 60, "the informers to sync")

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)


def check_invariants(client: Client, namespace: str, gangs: dict[str, int], binds: list[str]) -> None:
    """No pod bound twice; no gang bound below minCount; every pending pod says why (PodScheduled=False)."""
    assert len(binds) == len(set(binds)), f"a pod was bound twice: {binds}"
    now = pods(client, namespace)
    for gang, min_count in gangs.items():
        members = [p for p in now.values() if ((p["spec"].get("schedulingGroup") or {}).get("podGroupName")) == gang]
        bound = [p for p in members if node_of(p)]
        assert not bound or len(bound) >= min_count, f"gang {gang} bound {len(bound)} < minCount {min_count}"
    for name, pod in now.items():
        if node_of(pod):
            continue
        conditions = (pod.get("status") or {}).get("conditions") or []
        assert any(c["type"] == "PodScheduled" and c["status"] == "False" for c in conditions), \
            f"pending pod {name} carries no PodScheduled=False condition"


class RecordingApiWriter(ApiWriter):
    """The real ApiWriter, recording every successful binding; `fail(name, reason)` makes one call fail first."""

    def __init__(self, client: Client) -> None:
        super().__init__(client, "phalanx")
        self.bound: list[str] = []
        self.failures: dict[str, list[Callable[[str, str, str], BindResult]]] = {}

    def bind(self, namespace: str, name: str, uid: str | None, node: str) -> BindResult:
        hooks = self.failures.get(name)
        if hooks:
            return hooks.pop(0)(namespace, name, node)
        result = super().bind(namespace, name, uid, node)
        if result.ok:
            self.bound.append(f"{namespace}/{name}")
        return result


def test_pods_bind_and_the_unschedulable_one_is_told_why(client: Client, namespace: str,
                                                         running: Callable[..., Running]) -> None:
    make_node(client, namespace, "a", cpu="2")
    make_node(client, namespace, "b", cpu="2")
    writer = RecordingApiWriter(client)
    running(writer)
    for i in range(4):
        make_pod(client, namespace, f"p{i}")
    make_pod(client, namespace, "huge", cpu="3")
    until(lambda: all(node_of(p) for n, p in pods(client, namespace).items() if n != "huge"), what="4 binds")

    def told() -> bool:
        conditions = (pods(client, namespace)["huge"].get("status") or {}).get("conditions") or []
        return any(c.get("reason") == "Unschedulable" for c in conditions)

    until(told, what="the unschedulable condition")
    message = next(c["message"] for c in pods(client, namespace)["huge"]["status"]["conditions"]
                   if c["type"] == "PodScheduled")
    assert message.startswith("0/") and "2 Insufficient cpu" in message
    check_invariants(client, namespace, {}, writer.bound)


def test_a_gang_binds_whole_or_not_at_all(client: Client, namespace: str, running: Callable[..., Running]) -> None:
    make_node(client, namespace, "a", cpu="4")
    writer = RecordingApiWriter(client)
    run = running(writer)
    make_gang(client, namespace, "fits", 3)
    make_gang(client, namespace, "too-big", 2)
    for i in range(3):
        make_pod(client, namespace, f"fits-{i}", group="fits")
    until(lambda: sum(1 for p in pods(client, namespace).values() if node_of(p)) == 3, what="the gang")
    for i in range(2):
        make_pod(client, namespace, f"too-big-{i}", cpu="2", group="too-big")  # 1 cpu left: not even one

    def waiting() -> bool:
        now = pods(client, namespace)
        return all(any(c["type"] == "PodScheduled" and c["status"] == "False"
                       for c in (now[f"too-big-{i}"].get("status") or {}).get("conditions") or [])
                   for i in range(2))

    until(waiting, what="the unschedulable gang's conditions")
    check_invariants(client, namespace, {"fits": 3, "too-big": 2}, writer.bound)
    # The failed gang is retried on its backoff, whatever the events: in backoffQ, as kube-scheduler counts it.
    until(lambda: run.driver._pending_counts()["backoff"] == 2, what="the failed gang counted in backoff")


def test_a_binding_refused_with_409_takes_the_node_another_scheduler_chose(
        client: Client, namespace: str, running: Callable[..., Running]) -> None:
    a, b = make_node(client, namespace, "a"), make_node(client, namespace, "b")
    writer = RecordingApiWriter(client)
    other = ApiWriter(client, "someone-else")

    def someone_else_first(ns: str, name: str, node: str) -> BindResult:
        target = b if node == a else a
        assert other.bind(ns, name, None, target).ok
        return ApiWriter.bind(writer, ns, name, None, node)  # now refused: already bound

    writer.failures["p"] = [someone_else_first]
    running(writer)
    make_pod(client, namespace, "p", cpu="3")
    make_pod(client, namespace, "q", cpu="3")
    until(lambda: all(node_of(p) for p in pods(client, namespace).values()), what="both pods bound")
    now = pods(client, namespace)
    assert node_of(now["p"]) != node_of(now["q"])  # q was not put where p already runs
    check_invariants(client, namespace, {}, writer.bound)


def internal_error(namespace: str, name: str, node: str) -> BindResult:
    return BindResult(False, "error", "Internal error (500)")


def test_a_gang_member_whose_binding_fails_with_500_once_is_bound_on_a_retry_and_the_gang_stays_whole(
        client: Client, namespace: str, running: Callable[..., Running]) -> None:
    make_node(client, namespace, "a", cpu="8")
    writer = RecordingApiWriter(client)
    writer.failures["g-1"] = [internal_error]
    run = running(writer)
    make_gang(client, namespace, "g", 3)
    for i in range(3):
        make_pod(client, namespace, f"g-{i}", group="g")
    until(lambda: sum(1 for p in pods(client, namespace).values() if node_of(p)) == 3, 30, "the gang")
    assert writer.failures["g-1"] == [] and run.driver.counters.bind_failures == 0  # retried on its node
    check_invariants(client, namespace, {"g": 3}, writer.bound)


def test_a_binding_that_keeps_failing_is_given_up_unreserved_and_scheduled_again(
        client: Client, namespace: str, running: Callable[..., Running]) -> None:
    make_node(client, namespace, "a", cpu="8")
    writer = RecordingApiWriter(client)
    writer.failures["p"] = [internal_error] * 5  # the first try and every retry of the first cycle
    run = running(writer)
    make_pod(client, namespace, "p")
    until(lambda: bool(node_of(pods(client, namespace)["p"])), 30, "p bound by a later cycle")
    assert run.driver.counters.bind_failures == 1
    check_invariants(client, namespace, {}, writer.bound)


def test_preemption_evicts_a_lower_priority_pod_for_a_higher_one(
        client: Client, namespace: str, running: Callable[..., Running]) -> None:
    make_node(client, namespace, "a", cpu="2")
    high = f"{namespace}-high"
    client.create(MakePriorityClass(high, 1000).kube())
    writer = RecordingApiWriter(client)
    running(writer)
    make_pod(client, namespace, "low", cpu="2")
    until(lambda: bool(node_of(pods(client, namespace)["low"])), what="low bound")
    make_pod(client, namespace, "high", cpu="2", priority_class=high)
    until(lambda: "low" not in pods(client, namespace), what="the victim deleted")
    until(lambda: bool(node_of(pods(client, namespace)["high"])), what="the preemptor bound")
    check_invariants(client, namespace, {}, writer.bound)


def test_the_api_server_restarted_in_the_middle_of_a_gang(
        client: Client, namespace: str, running: Callable[..., Running], live_plane: ControlPlane) -> None:
    make_node(client, namespace, "a", cpu="8")
    writer = RecordingApiWriter(client)
    running(writer)
    make_gang(client, namespace, "g", 4)
    for i in range(2):
        make_pod(client, namespace, f"g-{i}", group="g")
    live_plane.restart_apiserver(down_for=2.0)
    for i in range(2, 4):
        make_pod(client, namespace, f"g-{i}", group="g")
    until(lambda: sum(1 for p in pods(client, namespace).values() if node_of(p)) == 4, 60, "the gang after restart")
    check_invariants(client, namespace, {"g": 4}, writer.bound)


def test_watches_cut_again_and_again_lose_no_pod(client: Client, namespace: str, live_plane: ControlPlane) -> None:
    """The driver talks to the API server through a proxy that drops every connection now and then."""
    from lightkube import KubeConfig

    from tests.live.proxy import Proxy

    make_node(client, namespace, "a", cpu="10")
    with Proxy("127.0.0.1", live_plane.api_port) as proxy:
        routed = Client(KubeConfig.from_dict(proxy.client_config(live_plane.client_config())),
                        field_manager="phalanx")
        writer = RecordingApiWriter(routed)
        stop = threading.Event()
        driver = Driver(routed, builtin("gang"), api_writer=writer, namespaces={namespace})
        thread = threading.Thread(target=driver.run, args=(stop,), daemon=True)
        thread.start()
        try:
            until(driver.ready.is_set, 60, "the informers to sync")
            make_gang(client, namespace, "g", 3)
            for i in range(6):
                proxy.cut()
                make_pod(client, namespace, f"p{i}")
                if i < 3:
                    make_pod(client, namespace, f"g-{i}", group="g")
                time.sleep(0.2)
            until(lambda: all(node_of(p) for p in pods(client, namespace).values()), 60, "every pod bound")
        finally:
            stop.set()
            thread.join(timeout=10)
    check_invariants(client, namespace, {"g": 3}, writer.bound)


def test_kube_scheduler_beside_phalanx_each_binds_its_own_and_phalanx_counts_the_others(
        client: Client, namespace: str, live_plane: ControlPlane, running: Callable[..., Running]) -> None:
    node = make_node(client, namespace, "a", cpu="4")
    live_plane.start_scheduler()
    try:
        for i in range(3):  # kube-scheduler's pods take 3 of the node's 4 cpus
            client.create(MakePod(f"kube-{i}", namespace).node_selector({"phalanx.dev/test": namespace})
                          .req(cpu="1").kube())
        until(lambda: all(node_of(p) for p in pods(client, namespace).values()), 60, "kube-scheduler's binds")
        writer = RecordingApiWriter(client)
        running(writer)
        make_pod(client, namespace, "ours-fits")
        make_pod(client, namespace, "ours-too-many")
        until(lambda: bool(node_of(pods(client, namespace)["ours-fits"])), 30, "phalanx's bind")

        def told() -> bool:
            conditions = (pods(client, namespace)["ours-too-many"].get("status") or {}).get("conditions") or []
            return any(c.get("reason") == "Unschedulable" for c in conditions)

        until(told, 30, "the second pod told there is no room")
        now = pods(client, namespace)
        assert node_of(now["ours-fits"]) == node
        assert not node_of(now["ours-too-many"])
        assert writer.bound == [f"{namespace}/ours-fits"]  # never one of kube-scheduler's
        check_invariants(client, namespace, {}, writer.bound)
    finally:
        live_plane.stop_scheduler()


def test_every_pod_bound_across_api_server_restarts_has_its_scheduled_event(
        client: Client, namespace: str, running: Callable[..., Running], live_plane: ControlPlane) -> None:
    """Bindings whose answer was lost, and Events the API server could not take while it was down, are not
    lost: each bound pod ends with exactly one Scheduled Event."""
    from lightkube.resources.events_v1 import Event

    for node in ("a", "b"):
        make_node(client, namespace, node, cpu="16")
    writer = RecordingApiWriter(client)
    running(writer)
    names: list[str] = []
    for round_ in range(3):
        make_gang(client, namespace, f"g{round_}", 4)
        for i in range(4):
            make_pod(client, namespace, f"g{round_}-{i}", group=f"g{round_}")
            make_pod(client, namespace, f"p{round_}-{i}")
            names += [f"g{round_}-{i}", f"p{round_}-{i}"]
        live_plane.restart_apiserver(down_for=1.0)  # while the round's bindings and events are under way
    until(lambda: all(node_of(p) for p in pods(client, namespace).values()), 60, "every pod bound")

    def scheduled() -> dict[str, int]:
        counts: dict[str, int] = {}
        for event in client.list(Event, namespace=namespace):
            if event.reason == "Scheduled" and event.regarding is not None and event.regarding.name:
                counts[event.regarding.name] = counts.get(event.regarding.name, 0) + 1
        return counts

    until(lambda: set(scheduled()) >= set(names), 60, "a Scheduled Event for every pod")
    assert all(count == 1 for count in scheduled().values()), scheduled()
    check_invariants(client, namespace, {f"g{r}": 4 for r in range(3)}, writer.bound)


def test_a_pod_the_engine_cannot_take_in_is_told_why_and_the_others_are_bound(
        client: Client, namespace: str, running: Callable[..., Running], monkeypatch: pytest.MonkeyPatch) -> None:
    """An unexpected fault while taking one object in (here forced) skips that object, not the scheduler."""
    from phalanx.scheduler.scheduler import Scheduler

    real = Scheduler.add_pod

    def add_pod(self: Scheduler, pod: Any, now: float, **kwargs: Any) -> Any:
        if pod.name == "poison":
            raise RecursionError("maximum recursion depth exceeded")
        return real(self, pod, now, **kwargs)

    monkeypatch.setattr(Scheduler, "add_pod", add_pod)
    make_node(client, namespace, "a", cpu="8")
    run = running()
    make_pod(client, namespace, "poison")
    make_pod(client, namespace, "fine")
    until(lambda: bool(node_of(pods(client, namespace)["fine"])), what="the other pod bound")
    until(lambda: any(c.get("reason") == "SchedulerError"
                      for c in (pods(client, namespace)["poison"].get("status") or {}).get("conditions") or []),
          what="the poisoned pod told why")
    [condition] = [c for c in pods(client, namespace)["poison"]["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert condition["status"] == "False" and "RecursionError" in condition["message"]
    assert run.thread.is_alive()
    assert not node_of(pods(client, namespace)["poison"])


def test_a_gated_member_holds_its_gang_until_its_gate_is_removed(client: Client, namespace: str,
                                                                 running: Callable[..., Running]) -> None:
    """SchedulingGates on the real API server: nothing of the gang binds while one member carries a gate
    (kube-scheduler's runPreEnqueuePlugins gates the whole entity); removing it (the only edit the API server
    allows a pending pod's gates) queues the gang, which binds whole."""
    make_node(client, namespace, "a", cpu="4")
    writer = RecordingApiWriter(client)
    running(writer)
    make_gang(client, namespace, "train", 2)
    make_pod(client, namespace, "train-0", group="train")
    gated = phalanx_pod(namespace, "train-1").group("train")
    gated.spec["schedulingGates"] = [{"name": "example.com/quota"}]
    client.create(gated.kube())
    time.sleep(3)  # a few rounds: had the gate been ignored, the gang would be bound by now
    assert not any(node_of(p) for p in pods(client, namespace).values())
    client.patch(Pod, "train-1", {"spec": {"schedulingGates": None}}, namespace=namespace)
    until(lambda: all(node_of(p) for p in pods(client, namespace).values()), what="the gang after its gate went")
    check_invariants(client, namespace, {"train": 2}, writer.bound)
