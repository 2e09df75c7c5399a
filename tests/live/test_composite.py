"""CompositePodGroup trees (KEP-6012) through the live driver on the real v1.37.2 API server: the driver watches
`scheduling.k8s.io/v1alpha3` CompositePodGroups (with the CompositePodGroup gate on, and the two it needs), holds a
tree's pods until the tree is there and meets its quorum, and binds the tree whole in one topology domain, or
nothing of it. The shapes are those of tests/scenarios/composite-in-one-rack: racks of two 8-cpu nodes, a tree of a
leader (1 pod) and workers (3 pods) of 4 cpu each under a CompositePodGroup with minGroupCount 2 and a rack
constraint."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import pytest
from lightkube import Client
from lightkube.resources.core_v1 import Pod
from lightkube.resources.events_v1 import Event
from lightkube.resources.scheduling_v1alpha3 import CompositePodGroup
from lightkube.resources.scheduling_v1beta1 import PodGroup
from lightkube.types import PatchType

from phalanx.live.api_writer import ApiWriter
from phalanx.live.driver import Driver
from phalanx.live.leader import LeaderElector
from phalanx.scheduler.profiles import Profile, builtin
from phalanx.scheduler.scheduler import Scheduler
from phalanx.verify.controlplane import ControlPlane
from tests.builders import MakeCompositePodGroup, MakePodGroup, MakePriorityClass
from tests.kube import until
from tests.live.test_deploy import deploy_profile, service_account_client
from tests.live.test_driver import (
    RecordingApiWriter,
    Running,
    check_invariants,
    make_node,
    make_pod,
    node_of,
    pods,
)

pytestmark = pytest.mark.kube
RACK = "topology.kubernetes.io/rack"
TREE_GATES = {"TopologyAwareWorkloadScheduling": True, "CompositePodGroup": True}
LEAVES = {"leader": 1, "workers": 3}  # the scenario's leaves: name suffix -> minCount (and pods)


def with_trees(profile: Profile) -> Profile:
    """The profile with the CompositePodGroup gate on, and TopologyAwareWorkloadScheduling it needs."""
    return replace(profile, feature_gates={**profile.feature_gates, **TREE_GATES})


class TreeRunning(Running):
    """A Driver on its own thread with the gang profile and the tree gates on."""

    def __init__(self, client: Client, namespace: str, writer: ApiWriter | None = None,
                 profile: Profile | None = None) -> None:
        self.stop = threading.Event()
        self.driver = Driver(client, profile or with_trees(builtin("gang")), api_writer=writer, namespaces={namespace})
        self.thread = threading.Thread(target=self.driver.run, args=(self.stop,), daemon=True)
        self.thread.start()
        until(self.driver.ready.is_set, 60, "the informers to sync")


@pytest.fixture
def trees(client: Client, namespace: str) -> Iterator[Callable[..., TreeRunning]]:
    """Start the live driver with trees scheduled (`trees(writer=None)`); every one started is stopped after."""
    started: list[TreeRunning] = []

    def start(writer: ApiWriter | None = None) -> TreeRunning:
        run = TreeRunning(client, namespace, writer)
        started.append(run)
        return run

    yield start
    for run in started:
        run.close()


# --- objects ------------------------------------------------------------------------------------------------

def two_racks(client: Client, namespace: str) -> dict[str, str]:
    """Racks a and b of two 8-cpu nodes each: node name -> rack."""
    return {make_node(client, namespace, f"{rack}{i}", cpu="8", memory="32Gi", labels={RACK: f"rack-{rack}"}):
            f"rack-{rack}" for rack in "ab" for i in (1, 2)}


def make_composite(client: Client, namespace: str, name: str, *, min_group_count: int | None = 2,
                   rack: bool = True, parent: str | None = None, priority_class: str | None = None) -> None:
    """A CompositePodGroup: gang of `min_group_count` children (None: basic), in one rack when `rack`."""
    group = MakeCompositePodGroup(name, namespace).workload("llm", "replica")
    if min_group_count:
        group.gang(min_group_count)
    if rack:
        group.topology(RACK)
    if parent is not None:
        group.parent(parent)
    if priority_class is not None:
        group.priority_class(priority_class)
    client.create(group.kube())


def make_leaf(client: Client, namespace: str, name: str, parent: str, min_count: int,
              priority_class: str | None = None) -> None:
    """A PodGroup under the CompositePodGroup `parent`."""
    leaf = MakePodGroup(name, namespace).parent(parent, "llm", name.rsplit("-", 1)[-1]).gang(min_count)
    if priority_class is not None:
        leaf.priority_class(priority_class)
    client.create(leaf.kube())


def delete_group(client: Client, namespace: str, name: str) -> None:
    """Delete a PodGroup no pod names any more; the test plays the podgroup-protection controller, which
    takes its finalizer off (no kube-controller-manager runs here)."""
    client.patch(PodGroup, name, {"metadata": {"finalizers": None}}, namespace=namespace, patch_type=PatchType.MERGE)
    client.delete(PodGroup, name, namespace=namespace)


def leaf_pods(client: Client, namespace: str, leaf: str, count: int, cpu: str = "4") -> list[str]:
    names = [f"{leaf}-{i}" for i in range(count)]
    for name in names:
        make_pod(client, namespace, name, cpu=cpu, group=leaf)
    return names


def make_tree(client: Client, namespace: str, tree: str, *, composite: bool = True) -> list[str]:
    """The scenario's tree: the CompositePodGroup `tree` (unless not `composite`), its leaves `<tree>-leader` and
    `<tree>-workers`, and their pods; the pod names."""
    if composite:
        make_composite(client, namespace, tree)
    names: list[str] = []
    for suffix, count in LEAVES.items():
        make_leaf(client, namespace, f"{tree}-{suffix}", tree, count)
        names += leaf_pods(client, namespace, f"{tree}-{suffix}", count)
    return names


def gangs_of(*trees: str) -> dict[str, int]:
    return {f"{tree}-{suffix}": count for tree in trees for suffix, count in LEAVES.items()}


def bound(client: Client, namespace: str, names: list[str]) -> Callable[[], bool]:
    def check() -> bool:
        now = pods(client, namespace)
        return all(name in now and node_of(now[name]) for name in names)
    return check


def group_condition(client: Client, namespace: str, name: str) -> dict[str, Any] | None:
    group = client.get(PodGroup, name, namespace=namespace).to_dict()
    conditions = (group.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "PodGroupInitiallyScheduled"), None)


def has_condition(client: Client, namespace: str, name: str) -> Callable[[], bool]:
    return lambda: group_condition(client, namespace, name) is not None


def pod_condition(pod: dict[str, Any]) -> dict[str, Any] | None:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "PodScheduled"), None)


def engine(run: Running) -> Scheduler:
    """The driver's engine itself, past the port drivers hold it by: these tests look at its PreEnqueue gates."""
    return cast(Scheduler, run.driver.scheduler)


def seen(run: Running, namespace: str, count: int) -> Callable[[], bool]:
    """The driver's engine knows `count` pods of the namespace."""
    return lambda: sum(1 for key in list(engine(run).pods) if key.startswith(f"{namespace}/")) == count


# --- the tests ----------------------------------------------------------------------------------------------

def test_a_two_leaf_tree_binds_whole_in_one_rack_and_its_leaves_get_their_condition(
        client: Client, namespace: str, trees: Callable[..., TreeRunning]) -> None:
    racks = two_racks(client, namespace)
    make_pod(client, namespace, "cache", cpu="4", node=f"{namespace}-a1")  # rack-a: 12 cpu free, rack-b: 16
    writer = RecordingApiWriter(client)
    run = trees(writer)
    assert "CompositePodGroup" in [informer.name for informer in run.driver.informers]
    names = make_tree(client, namespace, "llm-0")
    until(bound(client, namespace, names), 30, "the tree bound")
    now = pods(client, namespace)
    assert {racks[node_of(now[name]) or ""] for name in names} == {"rack-b"}  # the only rack that holds 16 cpu
    for leaf in gangs_of("llm-0"):
        until(has_condition(client, namespace, leaf), 30, f"{leaf}'s condition")
        condition = group_condition(client, namespace, leaf)
        assert condition is not None and (condition["status"], condition["reason"]) == ("True", "Scheduled")
    tree = client.get(CompositePodGroup, "llm-0", namespace=namespace).to_dict()
    assert not (tree.get("status") or {}).get("conditions")  # kube-scheduler v1.37.2 writes none either
    assert not run.driver.counters.skipped
    check_invariants(client, namespace, gangs_of("llm-0"), writer.bound)


def test_a_tree_that_fits_in_no_rack_binds_nothing_and_its_pods_are_told_why(
        client: Client, namespace: str, trees: Callable[..., TreeRunning]) -> None:
    two_racks(client, namespace)
    for node in ("a1", "b1"):  # 12 cpu free in each rack: 24 in all, but 16 in one rack nowhere
        make_pod(client, namespace, f"cache-{node}", cpu="4", node=f"{namespace}-{node}")
    writer = RecordingApiWriter(client)
    run = trees(writer)
    names = make_tree(client, namespace, "llm-1")

    def told() -> bool:
        now = pods(client, namespace)
        return all((c := pod_condition(now[name])) is not None and c["status"] == "False" for name in names)

    until(told, 30, "every pod of the tree told PodScheduled=False")
    for leaf in gangs_of("llm-1"):
        until(has_condition(client, namespace, leaf), 30, f"{leaf}'s condition")
        condition = group_condition(client, namespace, leaf)
        assert condition is not None and (condition["status"], condition["reason"]) == ("False", "Unschedulable")
    time.sleep(1.0)  # a retry through backoff binds nothing either: the leader alone would fit, but not the tree
    now = pods(client, namespace)
    assert not any(node_of(now[name]) for name in names)
    assert writer.bound == [] and run.driver.counters.unschedulable >= len(names)
    check_invariants(client, namespace, gangs_of("llm-1"), writer.bound)


def test_a_tree_whose_composite_pod_group_comes_after_its_pods_waits_then_binds(
        client: Client, namespace: str, trees: Callable[..., TreeRunning]) -> None:
    racks = two_racks(client, namespace)
    writer = RecordingApiWriter(client)
    run = trees(writer)
    names = make_tree(client, namespace, "late", composite=False)
    until(seen(run, namespace, len(names)), 30, "the driver to see the pods")
    time.sleep(1.0)
    assert not any(node_of(p) for p in pods(client, namespace).values())
    waiting = {key: why for key, why in dict(engine(run).gated).items() if key.startswith(f"{namespace}/")}
    assert set(waiting) == {f"{namespace}/{leaf}" for leaf in gangs_of("late")}
    assert all("to be created" in why for why in waiting.values()), waiting
    make_composite(client, namespace, "late")
    until(bound(client, namespace, names), 30, "the tree bound once its CompositePodGroup came")
    now = pods(client, namespace)
    assert len({racks[node_of(now[name]) or ""] for name in names}) == 1
    check_invariants(client, namespace, gangs_of("late"), writer.bound)


def test_objects_added_and_deleted_in_any_order_never_stop_the_driver(
        client: Client, namespace: str, trees: Callable[..., TreeRunning]) -> None:
    racks = two_racks(client, namespace)
    writer = RecordingApiWriter(client)
    run = trees(writer)

    # A nested tree built bottom-up: pods, then leaves, then the inner CompositePodGroup, then the root.
    for leaf in ("deep-x", "deep-y"):
        leaf_pods(client, namespace, leaf, 2, cpu="2")
    for leaf in ("deep-x", "deep-y"):
        make_leaf(client, namespace, leaf, "deep-mid", 2)
    make_composite(client, namespace, "deep-mid", rack=False, parent="deep")
    until(seen(run, namespace, 4), 30, "the driver to see the nested tree's pods")
    time.sleep(0.5)
    assert not any(node_of(p) for p in pods(client, namespace).values())  # no root yet
    make_composite(client, namespace, "deep", min_group_count=1)
    deep = [f"{leaf}-{i}" for leaf in ("deep-x", "deep-y") for i in range(2)]
    until(bound(client, namespace, deep), 30, "the nested tree bound")
    now = pods(client, namespace)
    assert len({racks[node_of(now[name]) or ""] for name in deep}) == 1

    # A tree below its quorum loses its CompositePodGroup, its pods and a leaf, then gets them back with the
    # pods it lacked.
    make_composite(client, namespace, "churn")
    make_leaf(client, namespace, "churn-leader", "churn", 1)
    make_leaf(client, namespace, "churn-workers", "churn", 3)
    churn = leaf_pods(client, namespace, "churn-leader", 1) + leaf_pods(client, namespace, "churn-workers", 1)
    client.delete(CompositePodGroup, "churn", namespace=namespace)
    for name in churn:
        client.delete(Pod, name, namespace=namespace, grace_period=0)
    delete_group(client, namespace, "churn-workers")
    make_composite(client, namespace, "churn")
    make_leaf(client, namespace, "churn-workers", "churn", 3)
    churn += [f"churn-workers-{i}" for i in (1, 2)]
    for name in churn:
        make_pod(client, namespace, name, cpu="4", group=name.rsplit("-", 1)[0])

    # A loop of two CompositePodGroups (each the other's parent) holds its leaf's pod forever; upstream only logs it.
    make_composite(client, namespace, "loop-a", min_group_count=1, rack=False, parent="loop-b")
    make_composite(client, namespace, "loop-b", min_group_count=1, rack=False, parent="loop-a")
    make_leaf(client, namespace, "loop-leaf", "loop-a", 1)
    make_pod(client, namespace, "loop-leaf-0", cpu="1", group="loop-leaf")

    # The bound nested tree loses its root and its inner CompositePodGroup: its pods stay where they are.
    client.delete(CompositePodGroup, "deep", namespace=namespace)
    client.delete(CompositePodGroup, "deep-mid", namespace=namespace)
    until(bound(client, namespace, churn), 30, "the churned tree bound")
    now = pods(client, namespace)
    assert len({racks[node_of(now[name]) or ""] for name in churn}) == 1
    assert all(node_of(now[name]) for name in deep)
    time.sleep(1.0)
    assert not node_of(pods(client, namespace)["loop-leaf-0"])
    assert f"{namespace}/loop-leaf" in dict(engine(run).gated)  # a cycle, or a parent not seen yet

    # Breaking the loop lets its leaf in.
    client.delete(CompositePodGroup, "loop-b", namespace=namespace)
    make_composite(client, namespace, "loop-b", min_group_count=1, rack=False)
    until(bound(client, namespace, ["loop-leaf-0"]), 30, "the loop's leaf bound once the loop was broken")
    assert run.thread.is_alive() and not run.driver.counters.skipped
    check_invariants(client, namespace, {"deep-x": 2, "deep-y": 2, "churn-leader": 1, "churn-workers": 3,
                                         "loop-leaf": 1}, writer.bound)


def test_a_tree_of_higher_priority_preempts_for_the_whole_tree_and_is_named_as_the_preemptor(
        client: Client, namespace: str, trees: Callable[..., TreeRunning]) -> None:
    for i in (1, 2):
        make_node(client, namespace, f"a{i}", cpu="8", memory="32Gi", labels={RACK: "rack-a"})
    make_pod(client, namespace, "low", cpu="8", node=f"{namespace}-a1")  # the rack holds the tree only without it
    high = f"{namespace}-high"
    client.create(MakePriorityClass(high, 1000).kube())
    writer = RecordingApiWriter(client)
    run = trees(writer)
    make_composite(client, namespace, "urgent", priority_class=high)
    names: list[str] = []
    for suffix, count in LEAVES.items():
        leaf = f"urgent-{suffix}"
        make_leaf(client, namespace, leaf, "urgent", count, priority_class=high)
        for i in range(count):
            names.append(f"{leaf}-{i}")
            make_pod(client, namespace, names[-1], cpu="4", group=leaf, priority_class=high)
    until(lambda: "low" not in pods(client, namespace), 30, "the victim deleted")
    until(bound(client, namespace, names), 30, "the tree bound after the preemption")
    assert run.driver.counters.evictions == 1
    tree_uid = client.get(CompositePodGroup, "urgent", namespace=namespace).to_dict()["metadata"]["uid"]

    def preempted() -> list[dict[str, Any]]:
        return [e.to_dict() for e in client.list(Event, namespace=namespace)
                if e.reason == "Preempted" and e.regarding is not None and e.regarding.name == "low"]

    until(lambda: bool(preempted()), 30, "the Preempted event")
    event = preempted()[0]
    assert event["note"] == f"Preempted by compositepodgroup {tree_uid} on node {namespace}-a1"
    assert (event["related"]["kind"], event["related"]["name"]) == ("CompositePodGroup", "urgent")
    check_invariants(client, namespace, gangs_of("urgent"), writer.bound)


def test_the_service_account_of_deploy_can_watch_composite_pod_groups(
        live_plane: ControlPlane, client: Client, namespace: str, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    sa = service_account_client(live_plane, client)
    profile = with_trees(deploy_profile(tmp_path))
    racks = two_racks(client, namespace)
    stop, leading = threading.Event(), threading.Event()
    elector = LeaderElector(sa, namespace="phalanx-system", name="phalanx-scheduler", identity="test-trees",
                            lease_duration=3, renew_deadline=2, retry_period=0.5)
    driver = Driver(sa, profile, namespaces={namespace})
    loop = threading.Thread(target=driver.run, args=(stop, leading), daemon=True)
    election = threading.Thread(target=elector.run, args=(stop, leading.set, leading.clear), daemon=True)
    loop.start()
    election.start()
    try:
        until(leading.is_set, 30, "the Lease")
        names = make_tree(client, namespace, "llm-0")
        until(bound(client, namespace, names), 30, "the tree bound")
        now = pods(client, namespace)
        assert len({racks[node_of(now[name]) or ""] for name in names}) == 1
        assert "CompositePodGroup" in [informer.name for informer in driver.informers]
        refused = [r.getMessage() for r in caplog.records if "forbidden" in r.getMessage().lower()]
        assert not refused, refused
    finally:
        stop.set()
        loop.join(timeout=10)
        election.join(timeout=10)


def test_composite_pod_groups_are_watched_only_with_the_gates_on_and_when_served(
        client: Client, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    caplog.set_level(logging.WARNING)

    def informers(profile: Profile) -> list[str]:
        stop = threading.Event()
        driver = Driver(client, profile)
        try:
            driver.start_informers(stop)
            until(driver.synced, 60, "the informers to sync")
            return [informer.name for informer in driver.informers]
        finally:
            stop.set()

    gang = builtin("gang")
    assert "CompositePodGroup" not in informers(gang)  # the gate is off by default
    assert "CompositePodGroup" not in informers(replace(gang, feature_gates={**gang.feature_gates,
                                                                             "CompositePodGroup": True}))
    assert "needs GenericWorkload and TopologyAwareWorkloadScheduling" in caplog.text
    caplog.clear()
    served = Driver._served
    monkeypatch.setattr(Driver, "_served",
                        lambda self, resource: resource is not CompositePodGroup and served(self, resource))
    names = informers(with_trees(gang))
    assert "CompositePodGroup" not in names and "PodGroup" in names and "Pod" in names
    assert caplog.text.count("CompositePodGroup is not served by this API server") == 1
