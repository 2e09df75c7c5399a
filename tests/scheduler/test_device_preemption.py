"""Preemption and DRA devices, driven through the Scheduler.

As kube-scheduler v1.37.2 does it (every built-in profile): a pod or gang whose shortage is devices preempts
nothing, since DynamicResources failures are UnschedulableAndUnresolvable and a dry run's victims keep their
devices; a node short of cpu is a candidate only where the pod's claims fit with the victims' devices still
held; a victim's devices come free when it is gone (its template claim deleted, a shared claim deallocated
when its last pod leaves). With the Phalanx extension `preemptForDevices`, removing a victim in the dry run
releases its claims, so holders of matching devices are preempted, the lowest priority first and only as
many as needed, PDBs and shared claims respected; a dry run leaves every claim on its devices.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phalanx.cluster.devices import device_state
from phalanx.errors import InputError
from phalanx.inputs.load import Inputs
from phalanx.scheduler.decisions import Bind, Decision, Evict, Nominate, Unschedulable
from phalanx.scheduler.plugins.dra.device_allocation import device_allocator
from phalanx.scheduler.plugins.dra.dynamic_resources import DynamicResources
from phalanx.scheduler.profiles import Profile, builtin
from phalanx.scheduler.scheduler import Scheduler
from tests import dra_builders as b

Doc = dict[str, Any]
ONE_GPU = b.template("t", b.claim_spec(b.request("gpu", b.exactly(1))))


def with_devices(profile: str) -> Profile:
    """The built-in profile with the `preemptForDevices` extension on."""
    base = builtin(profile)
    args = {**base.plugin_args, "DynamicResources": {**base.plugin_args.get("DynamicResources", {}),
                                                     "preemptForDevices": True}}
    return dataclasses.replace(base, plugin_args=args)


def prio(doc: Doc, value: int, **labels: str) -> Doc:
    doc["spec"]["priority"] = value
    if labels:
        doc["metadata"]["labels"] = labels
    return doc


def holder(name: str, priority: int, *, cpu: str = "1", template: str | None = "t", claim: str | None = None,
           on: str | None = "n0", **labels: str) -> Doc:
    """A pod claiming one GPU (from the template `t`, or the claim `claim`), running on `on` (pending: None)."""
    return prio(b.pod(name, template_name=template, claim_name=claim, cpu=cpu, node_name=on), priority, **labels)


class Devices:
    """A Scheduler over DRA manifests: `start` binds the first pods at time 0, `arrive` adds more later."""

    def __init__(self, tmp_path: Path, *docs: Doc, profile: str | Profile = "default") -> None:
        self.tmp_path = tmp_path
        self.docs = list(docs)
        inputs = b.load(tmp_path, *docs)
        chosen = builtin(profile) if isinstance(profile, str) else profile
        self.s = Scheduler(chosen, inputs.nodes)
        self.s.add_device_objects(0.0, slices=inputs.resource_slices, classes=inputs.device_classes,
                                  claims=inputs.resource_claims, templates=inputs.claim_templates)
        self._add(inputs, 0.0, None)
        self.decisions = self.s.schedule(0.0)
        self.loads = 0

    def _add(self, inputs: Inputs, now: float, only: set[str] | None) -> None:
        for group in inputs.pod_groups:
            if only is None or group.name in only:
                self.s.add_pod_group(group, now)
        for budget in inputs.pdbs:
            if only is None:
                self.s.add_pdb(budget)
        for pod in inputs.pods:
            if only is None or pod.name in only:
                self.s.add_pod(pod, now, node=pod.node_name)

    def arrive(self, *docs: Doc, now: float = 1.0) -> list[Decision]:
        """Pods (and PodGroups) arriving at `now`; read with the earlier manifests, which they refer to."""
        self.loads += 1
        inputs = b.load(self.tmp_path, *self.docs, *docs, name=f"more-{self.loads}.yaml")
        self.docs.extend(docs)
        self._add(inputs, now, {doc["metadata"]["name"] for doc in docs})
        self.decisions = self.s.schedule(now)
        return self.decisions

    def gone(self, *names: str, now: float) -> list[Decision]:
        for name in names:
            self.s.delete_pod(f"default/{name}", now)
        self.s.queue.move_all(now)
        self.decisions = self.s.schedule(now)
        return self.decisions

    def devices(self) -> dict[str, list[str]]:
        """Every bound pod's devices (`node/device`)."""
        return {key.split("/")[1]: [d.rsplit("/", 2)[-2] + "/" + d.rsplit("/", 1)[-1] for d in self.s.pod_devices(key)]
                for key in sorted(self.s.cluster.bound)}


def evicted(decisions: list[Decision]) -> list[str]:
    return sorted(d.pod.name for d in decisions if isinstance(d, Evict))


def bound(decisions: list[Decision]) -> dict[str, str]:
    return {d.pod.name: d.node for d in decisions if isinstance(d, Bind)}


def failed(decisions: list[Decision]) -> dict[str, str]:
    return {d.pod.name: d.message for d in decisions if isinstance(d, Unschedulable)}


def two_gpus_held(tmp_path: Path, profile: str | Profile = "default") -> Devices:
    c = Devices(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 2), ONE_GPU, holder("low-0", 0),
                holder("low-1", 10), profile=profile)
    assert c.devices() == {"low-0": ["n0/gpu-0"], "low-1": ["n0/gpu-1"]}
    return c


def shared_claim(c: Devices) -> tuple[bool, set[str]]:
    """Whether the claim `shared` is allocated, and the pods it is reserved for."""
    state = device_state(c.s.cluster).claims["default/shared"]
    return state.allocation is not None, set(state.reserved_for)


# --- v1.37.2: devices are never freed by preemption ------------------------------------------------------------

def test_a_pod_short_only_of_devices_preempts_nothing(tmp_path: Path) -> None:
    c = two_gpus_held(tmp_path)
    decisions = c.arrive(holder("high", 1000, on=None))
    assert evicted(decisions) == [] and bound(decisions) == {}
    assert failed(decisions) == {"high": "0/1 nodes are available: 1 cannot allocate all claims."}
    assert c.devices() == {"low-0": ["n0/gpu-0"], "low-1": ["n0/gpu-1"]}


def test_a_node_short_of_cpu_and_of_devices_is_no_candidate(tmp_path: Path) -> None:
    # Both nodes fail on cpu first (resolvable). On n0 the only GPU stays with its holder in the dry run, so
    # only n1, whose GPUs are free, is a candidate, although n0's victim has the lower priority.
    c = Devices(tmp_path, b.device_class(), b.node("n0", cpu="4"), b.gpus("n0", 1), b.node("n1", cpu="4"),
                b.gpus("n1", 2), ONE_GPU, holder("low", 0, cpu="3"), holder("busy", 5, cpu="3", template=None, on="n1"))
    decisions = c.arrive(holder("high", 1000, cpu="2", on=None))
    assert evicted(decisions) == ["busy"]
    assert c.devices()["low"] == ["n0/gpu-0"]


def test_cpu_and_devices_together_preempt_nothing_when_the_devices_are_held(tmp_path: Path) -> None:
    c = Devices(tmp_path, b.device_class(), b.node("n0", cpu="4"), b.gpus("n0", 1), ONE_GPU, holder("low", 0, cpu="3"))
    decisions = c.arrive(holder("high", 1000, cpu="2", on=None))
    assert evicted(decisions) == []
    assert failed(decisions) == {"high": "0/1 nodes are available: 1 Insufficient cpu."}


def test_a_gang_short_of_devices_preempts_nothing_and_the_dry_run_moves_no_claim(tmp_path: Path) -> None:
    c = two_gpus_held(tmp_path, "gang")
    group = b.pod_group("big", 2)
    group["spec"]["priority"] = 1000
    decisions = c.arrive(group, *(prio(b.pod(f"big-{i}", template_name="t", group="big"), 1000) for i in range(2)))
    assert evicted(decisions) == [] and bound(decisions) == {}
    assert c.devices() == {"low-0": ["n0/gpu-0"], "low-1": ["n0/gpu-1"]}
    state = device_state(c.s.cluster)
    assert state.kept == set() and state.allocations.tolist() == [1, 1]


def test_a_victim_preempted_for_cpu_frees_its_devices_when_it_is_gone(tmp_path: Path) -> None:
    c = Devices(tmp_path, b.device_class(), b.node("n0", cpu="4"), b.gpus("n0", 2), ONE_GPU, holder("low", 0, cpu="3"))
    decisions = c.arrive(holder("high", 1000, cpu="2", on=None))
    assert evicted(decisions) == ["low"]
    state = device_state(c.s.cluster)
    assert "default/low-gpus" in state.claims  # terminating: the claim holds its device until the pod is gone
    assert state.allocations.tolist() == [1, 0]
    decisions = c.gone("low", now=31.0)
    assert bound(decisions) == {"high": "n0"}
    assert "default/low-gpus" not in state.claims  # a template's claim is deleted with its pod
    assert c.devices() == {"high": ["n0/gpu-0"]}


def test_a_shared_claim_stays_allocated_while_another_pod_reserves_it(tmp_path: Path) -> None:
    shared = b.claim("shared", b.claim_spec(b.request("gpu", b.exactly(1))))
    c = Devices(tmp_path, b.device_class(), b.node("n0", cpu="4"), b.gpus("n0", 1), shared,
                holder("low", 0, cpu="3", template=None, claim="shared"),
                holder("keeper", 2000, cpu="1", template=None, claim="shared"))
    c.arrive(holder("high", 1000, cpu="3", template=None, on=None))
    assert evicted(c.decisions) == ["low"]
    c.gone("low", now=31.0)
    assert shared_claim(c) == (True, {"default/keeper"})
    c.gone("keeper", now=32.0)
    assert shared_claim(c) == (False, set())


# --- preemptForDevices (Phalanx extension) ---------------------------------------------------------------------

def test_extension_a_high_priority_pod_needing_a_gpu_preempts_the_lowest_priority_holder(tmp_path: Path) -> None:
    c = two_gpus_held(tmp_path, with_devices("default"))
    decisions = c.arrive(holder("high", 1000, on=None))
    assert evicted(decisions) == ["low-0"]
    assert c.devices() == {"low-0": ["n0/gpu-0"], "low-1": ["n0/gpu-1"]}  # the dry run put everything back
    decisions = c.gone("low-0", now=31.0)
    assert bound(decisions) == {"high": "n0"}
    assert c.devices() == {"high": ["n0/gpu-0"], "low-1": ["n0/gpu-1"]}


def test_extension_a_gang_preempts_the_lowest_priority_holders_only_as_many_as_needed(tmp_path: Path) -> None:
    c = Devices(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 4), ONE_GPU,
                *(holder(f"p{i}", i) for i in (3, 1, 4, 2)), profile=with_devices("gang"))
    before = c.devices()
    group = b.pod_group("big", 2)
    group["spec"]["priority"] = 1000
    decisions = c.arrive(group, *(prio(b.pod(f"big-{i}", template_name="t", group="big"), 1000) for i in range(2)))
    assert evicted(decisions) == ["p1", "p2"]
    assert c.devices() == before
    c.gone("p1", "p2", now=31.0)
    # The group is tried again when its backoff ends (3, 6, 11, 20, 35 s), not when its victims go.
    assert sorted(c.devices()) == ["p3", "p4"]
    c.s.schedule(35.0)
    assert sorted(c.devices()) == ["big-0", "big-1", "p3", "p4"]


def test_extension_a_victim_sharing_its_claim_with_a_pod_that_stays_frees_nothing(tmp_path: Path) -> None:
    shared = b.claim("shared", b.claim_spec(b.request("gpu", b.exactly(1))))
    c = Devices(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 1), shared, ONE_GPU,
                holder("low", 0, template=None, claim="shared"), holder("keeper", 2000, template=None, claim="shared"),
                profile=with_devices("default"))
    decisions = c.arrive(holder("high", 1000, on=None))
    assert evicted(decisions) == [] and bound(decisions) == {}
    state = device_state(c.s.cluster).claims["default/shared"]
    assert state.reserved_for == {"default/low", "default/keeper"} and state.allocation is not None


def test_extension_every_user_of_a_shared_claim_is_preempted_when_all_of_them_rank_below(tmp_path: Path) -> None:
    shared = b.claim("shared", b.claim_spec(b.request("gpu", b.exactly(1))))
    c = Devices(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 1), shared, ONE_GPU,
                holder("a", 0, template=None, claim="shared"), holder("b", 5, template=None, claim="shared"),
                profile=with_devices("default"))
    decisions = c.arrive(holder("high", 1000, on=None))
    assert evicted(decisions) == ["a", "b"]  # either alone keeps the claim allocated: neither is reprieved
    c.gone("a", now=31.0)
    assert bound(c.decisions) == {}
    c.gone("b", now=60.0)  # after the back-off of the attempt at 31 s
    assert bound(c.decisions) == {"high": "n0"}


def test_extension_no_preemption_without_a_lower_priority_holder_of_a_matching_device(tmp_path: Path) -> None:
    model = 'device.attributes["gpu.example.com"].model == "H100"'
    slice_ = b.gpu_slice("n0", [b.gpu("gpu-0", model="A100"), b.gpu("gpu-1", index=1, model="H100")])
    h100 = b.template("h100", b.claim_spec(b.request("gpu", b.exactly(1, selectors=[model]))))
    c = Devices(tmp_path, b.device_class(), b.node("n0"), slice_, ONE_GPU, h100, holder("a100-user", 0),
                holder("h100-user", 2000, template="h100"), profile=with_devices("default"))
    assert c.devices() == {"a100-user": ["n0/gpu-0"], "h100-user": ["n0/gpu-1"]}
    decisions = c.arrive(holder("high", 1000, template="h100", on=None))
    assert evicted(decisions) == [] and bound(decisions) == {}


def test_extension_a_pdb_protected_holder_is_reprieved_first(tmp_path: Path) -> None:
    budget = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "keep",
                                                                                     "namespace": "default"},
              "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "keep"}}}}
    c = Devices(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 2), ONE_GPU, budget,
                holder("protected", 0, app="keep"), holder("other", 10), profile=with_devices("default"))
    decisions = c.arrive(holder("high", 1000, on=None))
    assert evicted(decisions) == ["other"]


def test_extension_a_node_that_cannot_reach_an_allocated_claim_stays_unresolvable(tmp_path: Path) -> None:
    # `high` shares the claim allocated on n0 (full of cpu at a higher priority): n1's victim cannot help it.
    shared = b.claim("shared", b.claim_spec(b.request("gpu", b.exactly(1))))
    c = Devices(tmp_path, b.device_class(), b.node("n0", cpu="2"), b.gpus("n0", 1), b.node("n1"), b.gpus("n1", 1),
                shared, ONE_GPU, holder("owner", 2000, cpu="2", template=None, claim="shared"),
                holder("low", 0, on="n1"), profile=with_devices("default"))
    decisions = c.arrive(holder("high", 1000, cpu="1", template=None, claim="shared", on=None))
    assert evicted(decisions) == []
    result = c.s.cycle.schedule(c.s.pods["default/high"])
    assert result.unresolvable is not None and result.unresolvable.tolist() == [False, True]
    assert np.all(device_state(c.s.cluster).allocations == 1)


def test_extension_argument_must_be_a_boolean() -> None:
    assert DynamicResources({"preemptForDevices": True}).frees_devices
    assert not DynamicResources().frees_devices
    try:
        DynamicResources({"preemptForDevices": "yes"})
    except InputError as exc:
        assert "preemptForDevices" in str(exc)
    else:
        raise AssertionError("a string was accepted")


@st.composite
def busy_fleets(draw: st.DrawFn) -> tuple[list[Doc], Doc]:
    """Nodes with whole and shared GPUs, all taken by running pods of mixed priorities (some sharing one claim),
    and a pending preemptor asking for devices."""
    docs: list[Doc] = [b.device_class(), ONE_GPU, b.template("two", b.claim_spec(b.request("gpu", b.exactly(2)))),
                       b.template("part", b.claim_spec(b.request("gpu", b.exactly(1, capacity={"compute": "500m"})))),
                       b.claim("shared", b.claim_spec(b.request("gpu", b.exactly(1))))]
    for n in range(draw(st.integers(1, 3))):
        docs.append(b.node(f"n{n}", cpu=str(draw(st.integers(2, 6)))))
        docs.append(b.gpu_slice(f"n{n}", [b.gpu(f"gpu-{g}", index=g, shared=g == 2, compute="1" if g == 2 else None)
                                          for g in range(draw(st.integers(1, 3)))]))
    for i in range(draw(st.integers(1, 6))):
        template = draw(st.sampled_from(["t", "two", "part", None]))
        docs.append(holder(f"p{i}", draw(st.integers(0, 3)) * 100, template=template, on=None,
                           claim="shared" if template is None and draw(st.booleans()) else None))
    preemptor = holder("high", 1000, cpu=str(draw(st.integers(1, 2))), template=draw(st.sampled_from(["t", "two"])),
                       on=None)
    return docs, preemptor


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(case=busy_fleets(), extension=st.booleans())
def test_a_dry_run_leaves_every_running_claim_on_its_devices(tmp_path: Path, case: tuple[list[Doc], Doc],
                                                            extension: bool) -> None:
    docs, preemptor = case
    c = Devices(tmp_path, *docs, profile=with_devices("default") if extension else "default")
    before = c.devices()
    decisions = c.arrive(preemptor)
    state = device_state(c.s.cluster)
    assert not state.kept and not state.overallocated()
    after = c.devices()
    assert {k: v for k, v in after.items() if k != "high"} == before
    if not extension and "high" not in bound(decisions):
        # v1.37.2: a preemptor is nominated only where its claims fit beside the victims' devices, still held.
        for d in decisions:
            if isinstance(d, Nominate):
                assert device_allocator(c.s.cluster).feasible_on(d.pod, c.s.cluster.index[d.node])
