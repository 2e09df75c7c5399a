"""Poison objects on the real v1.37.2 API server: objects it accepts that once crashed `phalanx run` on every start
(a RecursionError in the engine, 14 to 18 exits in under a minute, nothing scheduled). Beside ordinary pods, each
now fails alone, as kube-scheduler fails it, and the driver goes on:

- a chain of 600 CompositePodGroups over a PodGroup: the leaf's root is out of reach of PreEnqueue's hierarchy
  walk (4 parents), so its pods wait (kube-scheduler writes no condition for a pod PreEnqueue holds; the engine
  says why);
- a ResourceClaim with `allocationMode: All` on a node of 8 ResourceSlices of 128 devices: more than the 32
  devices a claim holds, the allocator's error, so the pod gets PodScheduled=False with reason SchedulerError.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from lightkube import Client
from lightkube.resources.resource_v1 import ResourceClaim, ResourceSlice

from tests.builders import kube_object
from tests.kube import until
from tests.live.test_composite import TreeRunning, make_composite, make_leaf, pod_condition
from tests.live.test_dra import Devices
from tests.live.test_driver import Running, make_node, make_pod, node_of, pods

pytestmark = pytest.mark.kube
CHAIN = 600
SLICES, PER_SLICE = 8, 128


@pytest.fixture
def tree_driver(client: Client, namespace: str) -> Iterator[Callable[[], TreeRunning]]:
    """Start the live driver with trees scheduled; stopped after the test."""
    started: list[TreeRunning] = []

    def start() -> TreeRunning:
        started.append(TreeRunning(client, namespace))
        return started[-1]

    yield start
    for run in started:
        run.close()


@pytest.fixture
def dra(client: Client, namespace: str) -> Iterator[Devices]:
    made = Devices(client, namespace)
    yield made
    made.cleanup()


def ordinary(client: Client, namespace: str, count: int, prefix: str = "plain") -> list[str]:
    names = [f"{prefix}-{i}" for i in range(count)]
    for name in names:
        make_pod(client, namespace, name)
    return names


def all_bound(client: Client, namespace: str, names: list[str]) -> Callable[[], bool]:
    return lambda: all(node_of(pods(client, namespace).get(name) or {}) for name in names)


def test_a_chain_of_600_parents_holds_its_pods_and_every_other_pod_binds(
        client: Client, namespace: str, tree_driver: Callable[[], TreeRunning]) -> None:
    make_node(client, namespace, "a", cpu="8")
    for i in reversed(range(CHAIN)):  # the root first, then each child naming the one made before it
        make_composite(client, namespace, f"c{i}", min_group_count=None, rack=False,
                       parent=f"c{i + 1}" if i < CHAIN - 1 else None)
    make_leaf(client, namespace, "deep", "c0", 1)
    make_pod(client, namespace, "deep-0", group="deep")
    run = tree_driver()
    names = ordinary(client, namespace, 3)
    until(all_bound(client, namespace, names), 60, "the ordinary pods bound")
    key = f"{namespace}/deep-0"
    until(lambda: run.driver.scheduler.knows_pod(key), 30, "the leaf's pod seen")
    assert "has no root within 4 levels up" in (run.driver.scheduler.pod_message(key) or "")
    later = ordinary(client, namespace, 2, prefix="later")  # the driver still schedules what comes next
    until(all_bound(client, namespace, later), 30, "the later pods bound")
    assert not node_of(pods(client, namespace)["deep-0"]) and run.thread.is_alive()


def all_devices_slices(client: Client, dra: Devices, node: str) -> None:
    """8 ResourceSlices of 128 devices each on the node, one pool."""
    for k in range(SLICES):
        client.create(kube_object(ResourceSlice, {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-gpus-{k}", "labels": {"phalanx.dev/test": dra.namespace}},
            "spec": {"driver": dra.driver, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": SLICES},
                     "devices": [{"name": f"gpu-{k}-{i}"} for i in range(PER_SLICE)]}}))


def test_a_claim_for_all_1024_devices_of_a_node_fails_its_pod_alone_with_a_scheduler_error(
        client: Client, namespace: str, dra: Devices, running: Callable[..., Running]) -> None:
    node = make_node(client, namespace, "a", cpu="8")
    all_devices_slices(client, dra, node)
    client.create(kube_object(ResourceClaim, {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "every", "namespace": namespace},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": dra.device_class, "allocationMode": "All"}}]}}}))
    dra.pod("greedy", claim="every")
    run = running()
    names = ordinary(client, namespace, 3)
    until(all_bound(client, namespace, names), 60, "the ordinary pods bound")

    def told() -> bool:
        condition = pod_condition(pods(client, namespace)["greedy"])
        return condition is not None and condition["status"] == "False"

    until(told, 30, "the claim's pod told why")
    condition = pod_condition(pods(client, namespace)["greedy"])
    assert condition is not None and condition["reason"] == "SchedulerError"
    assert "adding 1024 devices exceeds the claim limit of 32" in condition["message"]
    later = ordinary(client, namespace, 2, prefix="later")
    until(all_bound(client, namespace, later), 30, "the later pods bound")
    assert not node_of(pods(client, namespace)["greedy"]) and run.thread.is_alive()
