"""DRA on the real v1.37.2 API server: the live driver watches ResourceSlices, DeviceClasses, ResourceClaims and
templates, writes each claim's allocation and reservation before the Binding (as kube-scheduler's
DynamicResources PreBind), takes them back when the Binding fails, and holds pods whose claims are not there yet
(no kube-controller-manager runs here: the tests play the resourceclaim controller)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from lightkube import Client
from lightkube.core import resource as res
from lightkube.generic_resource import Generic
from lightkube.resources.core_v1 import Pod
from lightkube.resources.resource_v1 import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from lightkube.types import PatchType

from phalanx.live.api_writer import CLAIM_FINALIZER, BindResult
from tests.builders import kube_object
from tests.kube import until
from tests.live.test_driver import (
    RecordingApiWriter,
    Running,
    check_invariants,
    make_gang,
    make_node,
    node_of,
    phalanx_pod,
    pods,
)

pytestmark = pytest.mark.kube


class Devices:
    """A test's DRA objects: one driver and DeviceClass of its own, slices on its nodes (removed afterwards)."""

    def __init__(self, client: Client, namespace: str) -> None:
        self.client = client
        self.namespace = namespace
        self.driver = f"{namespace}.gpu.example.com"
        self.device_class = f"{namespace}-gpu"
        client.create(kube_object(DeviceClass, {
            "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": self.device_class, "labels": {"phalanx.dev/test": namespace}},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{self.driver}"'}}]}}))

    def slice(self, node: str, count: int, model: str = "a100") -> list[str]:
        """`count` devices on the node (`<node>-gpu-<i>`), of the given model."""
        names = [f"gpu-{i}" for i in range(count)]
        self.client.create(kube_object(ResourceSlice, {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-gpus", "labels": {"phalanx.dev/test": self.namespace}},
            "spec": {"driver": self.driver, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": n, "attributes": {"model": {"string": model}}} for n in names]}}))
        return names

    def spec(self, count: int = 1, model: str | None = None) -> dict[str, Any]:
        exactly: dict[str, Any] = {"deviceClassName": self.device_class, "count": count}
        if model is not None:
            exactly["selectors"] = [{"cel": {"expression": f'device.attributes["{self.driver}"].model == "{model}"'}}]
        return {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}

    def claim(self, name: str, count: int = 1, model: str | None = None,
              owner: dict[str, Any] | None = None) -> None:
        meta: dict[str, Any] = {"name": name, "namespace": self.namespace}
        if owner is not None:
            meta["ownerReferences"] = [owner]
        self.client.create(kube_object(ResourceClaim, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                                    "metadata": meta, "spec": self.spec(count, model)}))

    def template(self, name: str, count: int = 1) -> None:
        self.client.create(kube_object(ResourceClaimTemplate, {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": self.namespace}, "spec": {"spec": self.spec(count)}}))

    def read(self, name: str) -> dict[str, Any]:
        return dict(self.client.get(RawClaim, name, namespace=self.namespace))

    def pod(self, name: str, *, claim: str | None = None, template: str | None = None,
            group: str | None = None) -> None:
        pod = phalanx_pod(self.namespace, name).claim("gpu", claim=claim, template=template)
        if group is not None:
            pod.group(group)
        self.client.create(pod.kube())

    def cleanup(self) -> None:
        for claim in self.client.list(ResourceClaim, namespace=self.namespace):
            name = claim.metadata.name if claim.metadata is not None else None
            if name is not None:
                self.client.patch(ResourceClaim, name, {"metadata": {"finalizers": None}},
                                  namespace=self.namespace, patch_type=PatchType.MERGE)
                self.client.delete(ResourceClaim, name, namespace=self.namespace)
        for slice_ in self.client.list(ResourceSlice, labels={"phalanx.dev/test": self.namespace}):
            if slice_.metadata is not None and slice_.metadata.name is not None:
                self.client.delete(ResourceSlice, slice_.metadata.name)
        for device_class in self.client.list(DeviceClass, labels={"phalanx.dev/test": self.namespace}):
            if device_class.metadata is not None and device_class.metadata.name is not None:
                self.client.delete(DeviceClass, device_class.metadata.name)


class RawClaim(res.NamespacedResource, Generic):  # type: ignore[misc]
    """A ResourceClaim as the API server's plain dict (every status field, as written)."""

    _api_info = res.ApiInfo(resource=res.ResourceDef("resource.k8s.io", "v1", "ResourceClaim"),
                            plural="resourceclaims", verbs=["get"])


@pytest.fixture
def devices(client: Client, namespace: str) -> Iterator[Devices]:
    made = Devices(client, namespace)
    yield made
    made.cleanup()


def status_of(claim: dict[str, Any]) -> dict[str, Any]:
    return claim.get("status") or {}


def results(claim: dict[str, Any]) -> list[dict[str, Any]]:
    return list(((status_of(claim).get("allocation") or {}).get("devices") or {}).get("results") or [])


def reserved(claim: dict[str, Any]) -> list[tuple[str, str]]:
    return [(r["name"], r["uid"]) for r in status_of(claim).get("reservedFor") or []]


def uid(client: Client, namespace: str, name: str) -> str:
    return str(pods(client, namespace)[name]["metadata"]["uid"])


def scheduled_condition(client: Client, namespace: str, name: str) -> dict[str, Any] | None:
    conditions = (pods(client, namespace)[name].get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "PodScheduled"), None)


def told(client: Client, namespace: str, name: str, words: str) -> Callable[[], bool]:
    def check() -> bool:
        condition = scheduled_condition(client, namespace, name)
        return condition is not None and condition["status"] == "False" and words in condition.get("message", "")
    return check


def test_a_named_claim_is_allocated_on_the_node_with_the_device_and_reserved_for_the_pod(
        client: Client, namespace: str, devices: Devices, running: Callable[..., Running]) -> None:
    a, b = make_node(client, namespace, "a"), make_node(client, namespace, "b")
    devices.slice(a, 2, model="a100")
    devices.slice(b, 1, model="h100")
    devices.claim("big", model="h100")
    writer = RecordingApiWriter(client)
    running(writer)
    devices.pod("p", claim="big")
    until(lambda: bool(node_of(pods(client, namespace)["p"])), what="p bound")
    assert node_of(pods(client, namespace)["p"]) == b
    claim = devices.read("big")
    assert [(r["driver"], r["pool"], r["device"]) for r in results(claim)] == [(devices.driver, b, "gpu-0")]
    assert reserved(claim) == [("p", uid(client, namespace, "p"))]
    assert status_of(claim)["reservedFor"][0]["resource"] == "pods"
    terms = status_of(claim)["allocation"]["nodeSelector"]["nodeSelectorTerms"]
    assert terms == [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [b]}]}]
    assert CLAIM_FINALIZER in claim["metadata"]["finalizers"]
    check_invariants(client, namespace, {}, writer.bound)


def test_pods_sharing_a_claim_land_together_and_the_claim_is_reserved_for_each(
        client: Client, namespace: str, devices: Devices, running: Callable[..., Running]) -> None:
    for name in ("a", "b"):
        devices.slice(make_node(client, namespace, name, cpu="8"), 1)
    devices.claim("shared")
    writer = RecordingApiWriter(client)
    running(writer)
    names = [f"p{i}" for i in range(4)]
    for name in names:  # in one round: their bindings run in parallel and meet on the one claim
        devices.pod(name, claim="shared")
    until(lambda: all(node_of(pods(client, namespace)[n]) for n in names), what="every sharer bound")
    now = pods(client, namespace)
    assert len({node_of(now[n]) for n in names}) == 1
    claim = devices.read("shared")
    assert len(results(claim)) == 1 and results(claim)[0]["pool"] == node_of(now["p0"])
    assert sorted(reserved(claim)) == sorted((n, str(now[n]["metadata"]["uid"])) for n in names)
    check_invariants(client, namespace, {}, writer.bound)


def test_a_pod_whose_devices_cannot_be_found_is_told_why(
        client: Client, namespace: str, devices: Devices, running: Callable[..., Running]) -> None:
    for name in ("a", "b"):
        devices.slice(make_node(client, namespace, name), 2)
    devices.claim("three", count=3)
    writer = RecordingApiWriter(client)
    run = running(writer)
    devices.pod("p", claim="three")
    until(told(client, namespace, "p", "cannot allocate all claims"), what="the DRA reason")
    condition = scheduled_condition(client, namespace, "p")
    assert condition is not None and condition["reason"] == "Unschedulable"
    assert condition["message"].startswith("0/")
    assert not node_of(pods(client, namespace)["p"]) and not status_of(devices.read("three"))
    assert run.driver.counters.bind_failures == 0


def test_a_pod_waits_for_its_named_claim_and_binds_once_it_exists(
        client: Client, namespace: str, devices: Devices, running: Callable[..., Running]) -> None:
    devices.slice(make_node(client, namespace, "a"), 1)
    writer = RecordingApiWriter(client)
    running(writer)
    devices.pod("p", claim="later")
    until(told(client, namespace, "p", f'could not find ResourceClaim "{namespace}/later"'), what="the wait")
    devices.claim("later")
    until(lambda: bool(node_of(pods(client, namespace)["p"])), what="p bound")
    assert reserved(devices.read("later")) == [("p", uid(client, namespace, "p"))]


def test_a_claim_deleted_under_a_queued_pod_sends_it_back_to_waiting(
        client: Client, namespace: str, devices: Devices, running: Callable[..., Running]) -> None:
    devices.slice(make_node(client, namespace, "a"), 1)
    devices.claim("two", count=2)
    run = running(RecordingApiWriter(client))
    devices.pod("p", claim="two")
    until(told(client, namespace, "p", "cannot allocate all claims"), what="the queued pod told why")
    client.delete(ResourceClaim, "two", namespace=namespace)
    until(told(client, namespace, "p", f'could not find ResourceClaim "{namespace}/two"'), what="the wait")
    devices.claim("two", count=1)
    until(lambda: bool(node_of(pods(client, namespace)["p"])), what="p bound on the claim made again")
    assert run.thread.is_alive()


def test_a_restarted_driver_counts_the_devices_bound_pods_hold(
        client: Client, namespace: str, devices: Devices, running: Callable[..., Running]) -> None:
    devices.slice(make_node(client, namespace, "a"), 1)
    devices.claim("first")
    devices.claim("second")
    first = running(RecordingApiWriter(client))
    devices.pod("p", claim="first")
    until(lambda: bool(node_of(pods(client, namespace)["p"])), what="p bound")
    first.close()
    running(RecordingApiWriter(client))  # lists the claims before the pods: p's allocation is known
    devices.pod("q", claim="second")
    until(told(client, namespace, "q", "cannot allocate all claims"), what="q told the device is taken")
    assert not status_of(devices.read("second"))


def test_a_template_claim_is_used_once_the_controller_made_it_and_named_it_in_the_pod_status(
        client: Client, namespace: str, devices: Devices, running: Callable[..., Running]) -> None:
    node = make_node(client, namespace, "a")
    devices.slice(node, 1)
    devices.template("one-gpu")
    writer = RecordingApiWriter(client)
    running(writer)
    devices.pod("p", template="one-gpu")
    until(told(client, namespace, "p", f'pod "{namespace}/p": ResourceClaim not created yet'), what="the wait")
    assert not node_of(pods(client, namespace)["p"])
    # The resourceclaim controller's part: the claim, owned by the pod, then its name in the pod's status.
    generated = f"p-gpu-{uuid.uuid4().hex[:5]}"
    devices.claim(generated, owner={"apiVersion": "v1", "kind": "Pod", "name": "p",
                                    "uid": uid(client, namespace, "p"), "controller": True,
                                    "blockOwnerDeletion": True})
    client.patch(Pod.Status, "p", {"status": {"resourceClaimStatuses": [
        {"name": "gpu", "resourceClaimName": generated}]}}, namespace=namespace, patch_type=PatchType.MERGE)
    until(lambda: bool(node_of(pods(client, namespace)["p"])), what="p bound")
    claim = devices.read(generated)
    assert [(r["pool"], r["device"]) for r in results(claim)] == [(node, "gpu-0")]
    assert reserved(claim) == [("p", uid(client, namespace, "p"))]
    assert not [n for n in client.list(ResourceClaim, namespace=namespace)
                if n.metadata is not None and n.metadata.name == "p-gpu"]  # no claim of Phalanx's own making
    check_invariants(client, namespace, {}, writer.bound)


def test_a_gang_of_claims_binds_whole_or_not_at_all_and_only_the_bound_hold_devices(
        client: Client, namespace: str, devices: Devices, running: Callable[..., Running]) -> None:
    for name in ("a", "b"):
        devices.slice(make_node(client, namespace, name, cpu="8"), 1)  # two devices in all
    writer = RecordingApiWriter(client)
    running(writer)
    make_gang(client, namespace, "big", 3)
    for i in range(3):
        devices.claim(f"big-{i}")
        devices.pod(f"big-{i}", claim=f"big-{i}", group="big")

    def gang_waits() -> bool:
        return all(told(client, namespace, f"big-{i}", "")() for i in range(3))

    until(gang_waits, what="the gang that cannot have its devices told so")
    make_gang(client, namespace, "fits", 2)
    for i in range(2):
        devices.claim(f"fits-{i}")
        devices.pod(f"fits-{i}", claim=f"fits-{i}", group="fits")
    until(lambda: all(node_of(pods(client, namespace)[f"fits-{i}"]) for i in range(2)), what="the gang that fits")
    now = pods(client, namespace)
    assert len({node_of(now[f"fits-{i}"]) for i in range(2)}) == 2  # one device per node
    for i in range(2):
        claim = devices.read(f"fits-{i}")
        assert [r["pool"] for r in results(claim)] == [node_of(now[f"fits-{i}"])]
        assert reserved(claim) == [(f"fits-{i}", str(now[f"fits-{i}"]["metadata"]["uid"]))]
    for i in range(3):
        assert not node_of(now[f"big-{i}"]) and not status_of(devices.read(f"big-{i}"))
    check_invariants(client, namespace, {"big": 3, "fits": 2}, writer.bound)


def test_a_binding_that_fails_after_the_claim_was_written_leaves_the_claim_unreserved(
        client: Client, namespace: str, devices: Devices, running: Callable[..., Running]) -> None:
    devices.slice(make_node(client, namespace, "a"), 1)
    devices.claim("c")
    writer = RecordingApiWriter(client)
    seen: list[list[tuple[str, str]]] = []

    def refused(ns: str, name: str, node: str) -> BindResult:
        seen.append(reserved(devices.read("c")))  # PreBind ran first: the claim is reserved for the pod
        return BindResult(False, "error", "Internal error (500)")

    writer.failures["p"] = [refused] * 1000
    run = running(writer)
    devices.pod("p", claim="c")
    until(lambda: run.driver.counters.bind_failures >= 1, what="the binding given up")
    run.close()
    assert seen and seen[0] == [("p", uid(client, namespace, "p"))]
    claim = devices.read("c")
    assert not status_of(claim).get("reservedFor") and not status_of(claim).get("allocation")
    assert CLAIM_FINALIZER not in (claim["metadata"].get("finalizers") or [])
    assert not node_of(pods(client, namespace)["p"])


def test_a_pod_bound_on_a_later_try_holds_its_claim_once(
        client: Client, namespace: str, devices: Devices, running: Callable[..., Running]) -> None:
    devices.slice(make_node(client, namespace, "a"), 1)
    devices.claim("c")
    writer = RecordingApiWriter(client)
    writer.failures["p"] = [lambda ns, name, node: BindResult(False, "error", "Internal error (500)")] * 5
    run = running(writer)
    devices.pod("p", claim="c")
    until(lambda: bool(node_of(pods(client, namespace)["p"])), what="p bound by a later cycle")
    assert run.driver.counters.bind_failures == 1
    claim = devices.read("c")
    assert reserved(claim) == [("p", uid(client, namespace, "p"))] and len(results(claim)) == 1


class TouchingApiWriter(RecordingApiWriter):
    """A ApiWriter that, right after its first read of a claim, has someone else change the claim (a label): its
    write then meets a newer resourceVersion (409)."""

    def __init__(self, client: Client) -> None:
        super().__init__(client)
        self.touched = False

    def _read_claim(self, key: str) -> dict[str, Any]:
        claim = super()._read_claim(key)
        if not self.touched:
            self.touched = True
            namespace, _, name = key.partition("/")
            self.client.patch(ResourceClaim, name, {"metadata": {"labels": {"touched": "yes"}}},
                              namespace=namespace, patch_type=PatchType.MERGE)
        return claim


def allocation(devices: Devices, node: str, device: str) -> dict[str, Any]:
    return {"devices": {"results": [{"request": "gpu", "driver": devices.driver, "pool": node, "device": device}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}


def test_claim_writes_retry_a_conflict_on_a_fresh_read_and_refuse_other_devices(
        client: Client, namespace: str, devices: Devices) -> None:
    node = make_node(client, namespace, "a")
    devices.slice(node, 2)
    devices.claim("c")
    key = f"{namespace}/c"
    writer = TouchingApiWriter(client)
    first = writer.reserve_claims(namespace, "p", "uid-p", [(key, allocation(devices, node, "gpu-0"))])
    assert first.ok and [(h.key, h.allocated) for h in first.held] == [(key, True)]
    claim = devices.read("c")
    assert claim["metadata"]["labels"] == {"touched": "yes"}  # the other writer's change is kept
    assert reserved(claim) == [("p", "uid-p")] and results(claim)[0]["device"] == "gpu-0"
    assert writer.reserve_claims(namespace, "p", "uid-p", [(key, allocation(devices, node, "gpu-0"))]).held == ()

    other = writer.reserve_claims(namespace, "q", "uid-q", [(key, allocation(devices, node, "gpu-1"))])
    assert not other.ok and other.reason == "conflict" and "allocated elsewhere" in other.message
    same = writer.reserve_claims(namespace, "q", "uid-q", [(key, allocation(devices, node, "gpu-0"))])
    assert same.ok and [(h.key, h.allocated) for h in same.held] == [(key, False)]

    writer.unreserve_claims(namespace, "p", "uid-p", first.held)  # q still uses it: the allocation stays
    claim = devices.read("c")
    assert reserved(claim) == [("q", "uid-q")] and results(claim)
    missing = writer.reserve_claims(namespace, "p", "uid-p", [(f"{namespace}/nope", {})])
    assert not missing.ok and missing.reason == "conflict" and "not found" in missing.message
