"""DynamicResources: allocation (count, All, selectors, matchAttribute, firstAvailable, shared claims,
consumable capacity), device taints, the FailedScheduling reasons, extended resources; and two hypothesis
properties: a device's capacity is never exceeded, an untolerated NoSchedule device is never allocated."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phalanx.inputs.load import Inputs, load_paths
from phalanx.scheduler.decisions import Bind, Unschedulable
from phalanx.scheduler.profiles import builtin
from phalanx.scheduler.scheduler import Scheduler
from tests import dra_builders as b

Doc = dict[str, Any]


def scheduler_for(inputs: Inputs, profile: str = "default") -> Scheduler:
    s = Scheduler(builtin(profile), inputs.nodes)
    s.add_device_objects(0.0, slices=inputs.resource_slices, classes=inputs.device_classes,
                         claims=inputs.resource_claims, templates=inputs.claim_templates)
    for rule in inputs.device_taint_rules:
        s.add_device_taint_rule(rule, 0.0)
    for group in inputs.pod_groups:
        s.add_pod_group(group, 0.0)
    for pod in inputs.pods:
        s.add_pod(pod, 0.0, node=pod.node_name)
    return s


def run(tmp_path: Path, *docs: Doc, profile: str = "default") -> tuple[Scheduler, dict[str, str], dict[str, str]]:
    s = scheduler_for(b.load(tmp_path, *docs), profile)
    decisions = s.schedule(0.0)
    binds = {d.pod.name: d.node for d in decisions if isinstance(d, Bind)}
    failures = {d.pod.name: d.message for d in decisions if isinstance(d, Unschedulable)}
    return s, binds, failures


def load_json(tmp_path: Path, *docs: Doc) -> Inputs:
    """The documents as one JSON List (read much faster than YAML: for inputs of a thousand devices)."""
    path = tmp_path / "input.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(docs)}), encoding="utf-8")
    return load_paths([str(path)])


def devices_of(s: Scheduler, pod: str, namespace: str = "default") -> list[str]:
    return [d.rsplit("/", 2)[-2] + "/" + d.rsplit("/", 1)[-1] for d in s.pod_devices(f"{namespace}/{pod}")]


def one_request(exact: Doc, name: str = "t") -> Doc:
    return b.template(name, b.claim_spec(b.request("gpu", exact)))


def test_pods_without_claims_pass_everywhere(tmp_path: Path) -> None:
    _, binds, _ = run(tmp_path, b.device_class(), b.node("n0"), b.pod("plain"))
    assert binds == {"plain": "n0"}


def test_count_picks_a_node_with_enough_free_devices(tmp_path: Path) -> None:
    s, binds, failures = run(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 2), b.node("n1"),
                             b.gpus("n1", 4), one_request(b.exactly(3)), b.pod("p", template_name="t"),
                             b.pod("q", template_name="t"))
    assert binds == {"p": "n1"}
    assert devices_of(s, "p") == ["n1/gpu-0", "n1/gpu-1", "n1/gpu-2"]
    assert failures["q"] == "0/2 nodes are available: 2 cannot allocate all claims."


def test_all_mode_takes_every_matching_device_and_needs_them_free(tmp_path: Path) -> None:
    s, binds, failures = run(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 3),
                             one_request(b.exactly(None, mode="All")), b.pod("p", template_name="t"),
                             b.pod("q", template_name="t"))
    assert binds == {"p": "n0"} and len(devices_of(s, "p")) == 3
    assert "q" in failures


def test_selectors_filter_devices(tmp_path: Path) -> None:
    slice_ = b.gpu_slice("n0", [b.gpu("gpu-0", model="A100"), b.gpu("gpu-1", index=1, model="H100")])
    s, _binds, _ = run(tmp_path, b.device_class(), b.node("n0"), slice_,
                      one_request(b.exactly(1, selectors=['device.attributes["gpu.example.com"].model == "H100"'])),
                      b.pod("p", template_name="t"))
    assert devices_of(s, "p") == ["n0/gpu-1"]


def test_capacity_selector_with_quantity(tmp_path: Path) -> None:
    expression = 'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0'
    _, binds, _ = run(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 1),
                      one_request(b.exactly(1, selectors=[expression])), b.pod("p", template_name="t"))
    assert binds == {"p": "n0"}


def test_match_attribute_keeps_devices_on_one_numa_node(tmp_path: Path) -> None:
    # numa 0: gpu-0..3, numa 1: gpu-4..7; gpu-0..2 already taken, so three GPUs on one NUMA node means 4, 5, 6.
    spec = b.claim_spec(b.request("a", b.exactly(2)), b.request("b", b.exactly(1)),
                        constraints=[{"matchAttribute": "gpu.example.com/numa"}])
    s, binds, _ = run(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 8),
                      one_request(b.exactly(3), name="three"), b.template("numa", spec),
                      b.pod("first", template_name="three"), b.pod("p", template_name="numa"))
    assert binds["p"] == "n0"
    assert devices_of(s, "p") == ["n0/gpu-4", "n0/gpu-5", "n0/gpu-6"]


def test_distinct_attribute(tmp_path: Path) -> None:
    spec = b.claim_spec(b.request("a", b.exactly(2)), constraints=[{"distinctAttribute": "gpu.example.com/numa"}])
    s, _, _ = run(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 8), b.template("t", spec),
                  b.pod("p", template_name="t"))
    assert devices_of(s, "p") == ["n0/gpu-0", "n0/gpu-4"]


def test_first_available_falls_back_in_order(tmp_path: Path) -> None:
    alternatives = [{"name": "big", "deviceClassName": b.DRIVER, "count": 4},
                    {"name": "small", "deviceClassName": b.DRIVER, "count": 2}]
    spec = b.claim_spec(b.request("gpu", first_available=alternatives))
    s, binds, _ = run(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 3), b.template("t", spec),
                      b.pod("p", template_name="t"))
    assert binds == {"p": "n0"}
    state = s.devices.claims["default/p-gpus"] if s.devices else None
    assert state is not None and state.allocation is not None
    assert {c.request for c in state.allocation} == {"gpu/small"}


def test_two_requests_compete_for_the_same_devices(tmp_path: Path) -> None:
    spec = b.claim_spec(b.request("a", b.exactly(2)), b.request("b", b.exactly(2)))
    _, binds, _ = run(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 3), b.node("n1"), b.gpus("n1", 4),
                      b.template("t", spec), b.pod("p", template_name="t"))
    assert binds == {"p": "n1"}  # n0 has 3 GPUs for 2 + 2: Hall's condition rules it out


def test_shared_claim_is_allocated_once_and_released_by_the_last_user(tmp_path: Path) -> None:
    s, binds, _ = run(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 1), b.node("n1"), b.gpus("n1", 1),
                      b.claim("shared", b.claim_spec(b.request("gpu", b.exactly(1)))),
                      b.pod("p", claim_name="shared"), b.pod("q", claim_name="shared"))
    assert binds["p"] == binds["q"]
    assert s.devices is not None
    state = s.devices.claims["default/shared"]
    assert state.reserved_for == {"default/p", "default/q"}
    assert int(s.devices.allocations.sum()) == 1
    s.delete_pod("default/p", 1.0)
    assert state.allocation is not None
    s.delete_pod("default/q", 2.0)
    assert state.allocation is None and int(s.devices.allocations.sum()) == 0


def test_gang_shares_one_claim(tmp_path: Path) -> None:
    _s, binds, _ = run(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 2), b.node("n1"), b.gpus("n1", 2),
                      b.claim("shared", b.claim_spec(b.request("gpu", b.exactly(2)))), b.pod_group("g", 3),
                      *(b.pod(f"m{i}", claim_name="shared", group="g") for i in range(3)), profile="gang")
    assert len(binds) == 3 and len(set(binds.values())) == 1


def test_consumable_capacity_shares_a_device_until_it_is_used_up(tmp_path: Path) -> None:
    slice_ = b.gpu_slice("n0", [b.gpu("gpu-0", shared=True, compute="1")])
    half = one_request(b.exactly(1, capacity={"compute": "400m", "memory": "10Gi"}))
    s, binds, failures = run(tmp_path, b.device_class(), b.node("n0"), slice_, half,
                             *(b.pod(f"p{i}", template_name="t") for i in range(3)))
    assert sorted(binds) == ["p0", "p1"] and "p2" in failures
    assert s.devices is not None
    assert int(s.devices.cap_used[0, s.devices.cap_names.index("gpu.example.com/compute")]) == 800
    assert not s.devices.overallocated()


def test_request_policy_rounds_requests_up(tmp_path: Path) -> None:
    device = b.gpu("gpu-0", shared=True)
    device["capacity"]["compute"] = {"value": "1",
                                     "requestPolicy": {"default": "1", "validValues": ["250m", "500m", "1"]}}
    slice_ = b.gpu_slice("n0", [device])
    _s, binds, _failures = run(tmp_path, b.device_class(), b.node("n0"), slice_,
                             one_request(b.exactly(1, capacity={"compute": "300m", "memory": "1Gi"})),
                             *(b.pod(f"p{i}", template_name="t") for i in range(3)))
    assert sorted(binds) == ["p0", "p1"]  # each takes 500m


def test_unrequested_capacity_without_a_policy_is_consumed_whole(tmp_path: Path) -> None:
    slice_ = b.gpu_slice("n0", [b.gpu("gpu-0", shared=True, compute="1")])
    _, binds, _ = run(tmp_path, b.device_class(), b.node("n0"), slice_,
                      one_request(b.exactly(1, capacity={"compute": "100m"})),  # memory: all 80Gi
                      *(b.pod(f"p{i}", template_name="t") for i in range(2)))
    assert sorted(binds) == ["p0"]


def test_untolerated_no_schedule_device_is_skipped_and_reported(tmp_path: Path) -> None:
    taint = {"key": "gpu.example.com/ecc", "effect": "NoSchedule"}
    slice_ = b.gpu_slice("n0", [b.gpu("gpu-0", taints=[taint]), b.gpu("gpu-1", index=1)])
    s, _binds, failures = run(tmp_path, b.device_class(), b.node("n0"), slice_, one_request(b.exactly(1)),
                             b.pod("p", template_name="t"), b.pod("q", template_name="t"))
    assert devices_of(s, "p") == ["n0/gpu-1"]
    # v1.37 does not name device taints: the node cannot allocate the claim.
    assert failures["q"] == "0/1 nodes are available: 1 cannot allocate all claims."


def test_toleration_admits_the_tainted_device(tmp_path: Path) -> None:
    tolerant = b.exactly(1, tolerations=[{"key": "gpu.example.com/ecc", "operator": "Exists"}])
    s, _binds, _ = run(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 1),
                      b.taint_rule("r", "gpu.example.com/ecc", "NoSchedule"),
                      one_request(tolerant), b.pod("p", template_name="t"))
    assert devices_of(s, "p") == ["n0/gpu-0"]


def test_taint_effect_none_does_not_block(tmp_path: Path) -> None:
    _, binds, _ = run(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 1),
                      b.taint_rule("r", "gpu.example.com/note", "None"), one_request(b.exactly(1)),
                      b.pod("p", template_name="t"))
    assert binds == {"p": "n0"}


def test_slice_and_rule_taints_add_up(tmp_path: Path) -> None:
    slice_ = b.gpu_slice("n0", [b.gpu("gpu-0", taints=[{"key": "a", "effect": "NoSchedule"}])])
    only_a = b.exactly(1, tolerations=[{"key": "a", "operator": "Exists"}])
    _, _binds, failures = run(tmp_path, b.device_class(), b.node("n0"), slice_,
                             b.taint_rule("r", "b", "NoSchedule"), one_request(only_a), b.pod("p", template_name="t"))
    assert failures["p"] == "0/1 nodes are available: 1 cannot allocate all claims."


def test_claim_allocated_elsewhere_is_not_available(tmp_path: Path) -> None:
    _s, _binds, failures = run(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 1),
                             b.node("n1", cpu="1"), b.gpus("n1", 1),
                             b.claim("shared", b.claim_spec(b.request("gpu", b.exactly(1)))),
                             b.pod("p", claim_name="shared", cpu="1", node_name="n1"),
                             b.pod("q", claim_name="shared", cpu="1"))
    assert failures["q"] == ("0/2 nodes are available: 1 Insufficient cpu, "
                             "1 resourceclaim not available on the node.")


def test_extended_resources_through_a_device_class(tmp_path: Path) -> None:
    s, binds, _ = run(tmp_path, b.device_class(extended="nvidia.com/gpu"), b.node("n0"), b.gpus("n0", 2),
                      b.pod("p", requests={"nvidia.com/gpu": 2}), b.pod("q", requests={"nvidia.com/gpu": 1}))
    assert binds == {"p": "n0"}
    assert devices_of(s, "p") == ["n0/gpu-0", "n0/gpu-1"]


def test_extended_resources_through_profile_args(tmp_path: Path) -> None:
    inputs = b.load(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 2),
                    b.pod("p", requests={"example.com/g": 1}))
    profile = builtin("default")
    profile.plugin_args["DynamicResources"] = {"extendedResources": {"example.com/g": b.DRIVER}}
    s = Scheduler(profile, inputs.nodes)
    s.add_device_objects(0.0, slices=inputs.resource_slices, classes=inputs.device_classes)
    s.add_pod(inputs.pods[0], 0.0)
    assert [d.node for d in s.schedule(0.0) if isinstance(d, Bind)] == ["n0"]


# --- invariants ---------------------------------------------------------------------------------------------

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                          HealthCheck.function_scoped_fixture])


@st.composite
def fleets(draw: st.DrawFn) -> list[Doc]:
    docs: list[Doc] = [b.device_class()]
    for n in range(draw(st.integers(1, 3))):
        docs.append(b.node(f"n{n}", cpu="64"))
        devices = []
        for g in range(draw(st.integers(1, 4))):
            taints = [{"key": "bad", "effect": "NoSchedule"}] if draw(st.integers(0, 3)) == 0 else None
            shared = draw(st.booleans())
            devices.append(b.gpu(f"gpu-{g}", index=g, numa=g % 2, taints=taints, shared=shared,
                                 compute="1" if shared else None))
        docs.append(b.gpu_slice(f"n{n}", devices))
    docs.append(one_request(b.exactly(1), name="whole"))
    docs.append(one_request(b.exactly(2), name="two"))
    docs.append(one_request(b.exactly(1, capacity={"compute": draw(st.sampled_from(["200m", "500m", "700m"]))}),
                            name="part"))
    docs.append(b.template("pair", b.claim_spec(b.request("a", b.exactly(1)), b.request("b", b.exactly(1)),
                                                constraints=[{"matchAttribute": "gpu.example.com/numa"}])))
    for i in range(draw(st.integers(1, 10))):
        docs.append(b.pod(f"p{i}", template_name=draw(st.sampled_from(["whole", "two", "part", "pair"]))))
    return docs


@SETTINGS
@given(docs=fleets())
def test_capacity_never_exceeded_and_no_untolerated_device_allocated(tmp_path: Path, docs: list[Doc]) -> None:
    s = scheduler_for(b.load(tmp_path, *docs))
    s.schedule(0.0)
    devices = s.devices
    assert devices is not None
    assert not devices.overallocated()
    assert np.all(devices.cap_used <= devices.cap_total)
    for state in devices.claims.values():
        for choice in state.allocation or ():
            assert not any(t.effect == "NoSchedule" for t in devices.taints(choice.device))
    # every pod's devices are on its node
    for key, (node, _) in s.cluster.bound.items():
        for name in s.pod_devices(key):
            assert name.split("/")[1] == s.cluster.names[node]


def test_a_failed_group_preemption_dry_run_leaves_running_claims_on_their_devices(tmp_path: Path) -> None:
    # `b` holds gpu-1 (gpu-0 went to `a`, which has finished since). A high-priority gang that cannot fit
    # even with every lower-priority pod gone runs a workload-aware preemption dry run and gives up: `b`
    # must still hold gpu-1, and nothing may have moved its claim.
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
            "value": 1000}
    group = b.pod_group("big", 2)
    group["spec"]["priorityClassName"] = "high"
    members = [b.pod(f"big-{i}", cpu="60", group="big") for i in range(2)]
    for member in members:
        member["spec"]["priorityClassName"] = "high"
    inputs = b.load(tmp_path, high, b.device_class(), b.node("n0"), b.gpus("n0", 2), one_request(b.exactly(1)),
                    b.pod("a", template_name="t"), b.pod("b", template_name="t"))
    s = scheduler_for(inputs, "gang")
    s.schedule(0.0)
    assert (devices_of(s, "a"), devices_of(s, "b")) == (["n0/gpu-0"], ["n0/gpu-1"])
    s.delete_pod("default/a", 1.0)
    gang = b.load(tmp_path, high, group, *members, name="gang.yaml")
    s.add_pod_group(gang.pod_groups[0], 2.0)
    for pod in gang.pods:
        s.add_pod(pod, 2.0)
    decisions = s.schedule(2.0)
    assert not [d for d in decisions if isinstance(d, Bind)]
    assert devices_of(s, "b") == ["n0/gpu-1"]


def test_bind_carries_the_allocation_the_driver_writes_to_each_claim(tmp_path: Path) -> None:
    inputs = b.load(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 2), b.node("n1"),
                    one_request(b.exactly(2)), b.claim("shared", b.claim_spec(b.request("gpu", b.exactly(1)))),
                    b.gpu_slice("n1", [b.gpu("gpu-9")], pool="spare"),
                    b.pod("p", template_name="t"), b.pod("q", cpu="2", claim_name="shared"))
    s = scheduler_for(inputs)
    binds = {d.pod.name: d for d in s.schedule(0.0) if isinstance(d, Bind)}
    p_claims = dict(binds["p"].claims)
    assert list(p_claims) == ["default/p-gpus"]
    allocation: Any = p_claims["default/p-gpus"]
    assert sorted(r["device"] for r in allocation["devices"]["results"]) == ["gpu-0", "gpu-1"]
    assert {r["request"] for r in allocation["devices"]["results"]} == {"gpu"}
    assert allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"] == [
        {"key": "metadata.name", "operator": "In", "values": [binds["p"].node]}]
    assert dict(binds["q"].claims)["default/shared"]["devices"]["results"][0]["device"] == "gpu-9"  # type: ignore[index]


def test_bind_of_a_pod_without_claims_carries_none(tmp_path: Path) -> None:
    s = scheduler_for(b.load(tmp_path, b.device_class(), b.node("n0"), b.pod("plain")))
    assert [d.claims for d in s.schedule(0.0) if isinstance(d, Bind)] == [()]


# --- device objects that change or go (what a live driver's informers report) ---------------------------

def parsed_slice(doc: Doc) -> Any:
    from phalanx.api.dra import parse_resource_slice
    from phalanx.api.objects import Source
    return parse_resource_slice(doc, Source("test", 0))


def test_a_slice_added_again_replaces_its_devices_instead_of_doubling_them(tmp_path: Path) -> None:
    inputs = b.load(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 2), one_request(b.exactly(3)),
                    b.pod("p", template_name="t"))
    s = scheduler_for(inputs)
    s.add_device_objects(0.0, slices=[parsed_slice(b.gpus("n0", 2))])  # a relist: the same slice again
    assert s.devices is not None and len(s.devices.index) == 2
    assert [d.pod.name for d in s.schedule(0.0) if isinstance(d, Unschedulable)] == ["p"]
    s.add_device_objects(1.0, slices=[parsed_slice(b.gpus("n0", 3))])  # the driver found a third GPU
    assert {d.pod.name: d.node for d in s.schedule(1.0) if isinstance(d, Bind)} == {"p": "n0"}


def test_a_device_dropped_from_its_slice_keeps_its_holder_and_is_never_allocated_again(tmp_path: Path) -> None:
    inputs = b.load(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 2), one_request(b.exactly(1)),
                    b.pod("p", template_name="t"))
    s = scheduler_for(inputs)
    assert [d.claims for d in s.schedule(0.0) if isinstance(d, Bind)]
    assert devices_of(s, "p") == ["n0/gpu-0"]
    # gpu-0 (held by p) and gpu-1 both leave the slice; gpu-2 arrives
    s.add_device_objects(1.0, slices=[parsed_slice(b.gpu_slice("n0", [b.gpu("gpu-2", index=2)]))])
    assert devices_of(s, "p") == ["n0/gpu-0"]
    for name in ("q", "r"):
        s.add_pod(b_pod(tmp_path, name), 1.0)
    decisions = s.schedule(1.0)
    assert {d.pod.name for d in decisions if isinstance(d, Bind)} == {"q"} and devices_of(s, "q") == ["n0/gpu-2"]
    assert {d.pod.name for d in decisions if isinstance(d, Unschedulable)} == {"r"}


def b_pod(tmp_path: Path, name: str) -> Any:
    from phalanx.api.objects import Source
    from phalanx.api.parse import parse_pod
    return parse_pod(b.pod(name, template_name="t"), Source("test", 0))


def test_a_taint_added_to_a_device_by_a_slice_update_keeps_new_claims_off_it(tmp_path: Path) -> None:
    inputs = b.load(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 1), one_request(b.exactly(1)))
    s = scheduler_for(inputs)
    tainted = b.gpu_slice("n0", [b.gpu("gpu-0", taints=[{"key": "gpu.example.com/ecc", "effect": "NoSchedule"}])])
    s.add_device_objects(0.0, slices=[parsed_slice(tainted)])
    s.add_pod(b_pod(tmp_path, "p"), 0.0)
    assert [d.pod.name for d in s.schedule(0.0) if isinstance(d, Unschedulable)] == ["p"]


def test_deleted_slices_claims_and_classes(tmp_path: Path) -> None:
    inputs = b.load(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 1), b.node("n1"),
                    b.gpu_slice("n1", [b.gpu("gpu-0")], pool="other"), one_request(b.exactly(1)),
                    b.claim("spare", b.claim_spec(b.request("gpu", b.exactly(1)))),
                    b.pod("p", template_name="t"))
    s = scheduler_for(inputs)
    assert {d.pod.name for d in s.schedule(0.0) if isinstance(d, Bind)} == {"p"}
    held = devices_of(s, "p")[0]
    assert s.devices is not None
    s.delete_device_objects(1.0, slices=["n0-gpus", "n1-other"], claims=["default/spare"])
    assert devices_of(s, "p") == [held] and "default/spare" not in s.devices.claims
    s.add_pod(b_pod(tmp_path, "q"), 1.0)
    assert [d.pod.name for d in s.schedule(1.0) if isinstance(d, Unschedulable)] == ["q"]
    s.delete_pod("default/p", 2.0)  # the retired device goes with its last holder; nothing to allocate
    s.add_device_objects(3.0, slices=[parsed_slice(b.gpus("n0", 1))])
    s.delete_device_objects(3.0, classes=[b.DRIVER])
    assert [d.pod.name for d in s.schedule(3.0) if isinstance(d, Unschedulable)] == ["q"]
    s.add_device_objects(4.0, classes=inputs.device_classes)
    assert {d.pod.name for d in s.schedule(6.0) if isinstance(d, Bind)} == {"q"}  # after its backoff


def allocated_claim(name: str, device: str, pool: str, reserved_for: str | None) -> Doc:
    doc = b.claim(name, b.claim_spec(b.request("gpu", b.exactly(1))))
    doc["status"] = {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": b.DRIVER, "pool": pool, "device": device}]}}}
    if reserved_for:
        doc["status"]["reservedFor"] = [{"resource": "pods", "name": reserved_for, "uid": "u1"}]
    return doc


def test_a_claim_allocated_and_reserved_elsewhere_holds_its_device_until_the_api_deallocates_it(
        tmp_path: Path) -> None:
    from phalanx.api.dra import parse_resource_claim
    from phalanx.api.objects import Source
    inputs = b.load(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 1), one_request(b.exactly(1)),
                    allocated_claim("theirs", "gpu-0", "n0", reserved_for="other-scheduler-pod"))
    s = scheduler_for(inputs)
    s.add_pod(b_pod(tmp_path, "mine"), 0.0)
    assert [d.pod.name for d in s.schedule(0.0) if isinstance(d, Unschedulable)] == ["mine"]
    freed = parse_resource_claim(b.claim("theirs", b.claim_spec(b.request("gpu", b.exactly(1)))),
                                 Source("test", 0))
    s.add_device_objects(5.0, claims=[freed])  # the resourceclaim controller deallocated it
    assert {d.pod.name for d in s.schedule(5.0) if isinstance(d, Bind)} == {"mine"}
    assert devices_of(s, "mine") == ["n0/gpu-0"]


def test_an_allocated_claim_nobody_reserves_does_not_hold_its_device(tmp_path: Path) -> None:
    inputs = b.load(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 1), one_request(b.exactly(1)),
                    allocated_claim("stale", "gpu-0", "n0", reserved_for=None))
    s = scheduler_for(inputs)
    s.add_pod(b_pod(tmp_path, "mine"), 0.0)
    assert {d.pod.name for d in s.schedule(0.0) if isinstance(d, Bind)} == {"mine"}


def test_a_search_over_a_thousand_devices_needs_no_recursion(tmp_path: Path) -> None:
    # 32 claims of 32 devices each (the most one claim holds) from one class, all on one node, for one pod: too
    # many competing requests to count every subset (Hall), so the per-node search decides, choosing 1,024
    # devices one after another on a stack of its own.
    devices = [b.gpu(f"gpu-{i}", index=i) for i in range(1024)]
    slices = [b.gpu_slice("n0", devices[k:k + 128], pool=f"p{k // 128}") for k in range(0, 1024, 128)]
    every = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": b.DRIVER}, "spec": {}}
    claims = [b.claim(f"c{j}", b.claim_spec(b.request("gpus", b.exactly(32)))) for j in range(32)]
    refs = [{"name": f"c{j}", "resourceClaimName": f"c{j}"} for j in range(32)]
    s = scheduler_for(load_json(tmp_path, every, b.node("n0"), *slices, *claims, b.pod("p", claims=refs)))
    decisions = s.schedule(0.0)
    assert {d.pod.name: d.node for d in decisions if isinstance(d, Bind)} == {"p": "n0"}
    assert len(devices_of(s, "p")) == 1024 and len(set(devices_of(s, "p"))) == 1024


def test_all_devices_of_a_node_with_1024_fails_its_pod_alone_with_a_scheduler_error(tmp_path: Path) -> None:
    # The campaign's poison claim: allocationMode All on a node of 8 slices of 128 devices. The allocator refuses
    # a claim of more than 32 devices (AllocationResultsMaxSize), DynamicResources' Filter returns an error, and
    # the pod's cycle fails with SchedulerError; the plain pod binds.
    slices = [b.gpu_slice("n0", [b.gpu(f"g{k}-{i}", index=i) for i in range(128)], pool=f"p{k}") for k in range(8)]
    claim = b.claim("all", b.claim_spec(b.request("every", b.exactly(None, mode="All"))))
    s = scheduler_for(load_json(tmp_path, b.device_class(), b.node("n0"), *slices, claim,
                                b.pod("p", claim_name="all"), b.pod("plain")))
    assert {d.pod.name: d.node for d in s.schedule(0.0) if isinstance(d, Bind)} == {"plain": "n0"}
    failed = [d for d in s.schedule(0.0) if isinstance(d, Unschedulable)]
    assert failed == []  # asleep: nothing changed since
    s.add_nodes([], 1.0)
    retry = s.next_retry()
    assert retry is not None
    (again,) = [d for d in s.schedule(retry) if isinstance(d, Unschedulable)]
    assert again.reason == "SchedulerError" and again.message == (
        'running "DynamicResources" filter plugin: claim default/all, request every: adding 1024 devices exceeds '
        "the claim limit of 32, with 0 already accounted for")


def test_a_claim_of_32_devices_is_allocated_and_33_is_an_error(tmp_path: Path) -> None:
    slice_ = b.gpu_slice("n0", [b.gpu(f"g{i}", index=i) for i in range(40)])
    asks = {"fits": b.exactly(32), "over": b.exactly(33)}
    claims = [b.claim(name, b.claim_spec(b.request("gpus", exact))) for name, exact in asks.items()]
    s, binds, failures = run(tmp_path, b.device_class(), b.node("n0"), slice_, *claims,
                             b.pod("fits", claim_name="fits"), b.pod("over", claim_name="over"))
    assert binds == {"fits": "n0"} and len(devices_of(s, "fits")) == 32
    assert failures["over"].endswith("adding 33 devices exceeds the claim limit of 32, with 0 already accounted for")
