"""PodGroup-level ResourceClaims (DRAWorkloadResourceClaims), as Kubernetes v1.37.2 does them: one claim per
PodGroup from a template (named `<podgroup>-<entry>-` plus five characters), recorded in the PodGroup's
`status.resourceClaimStatuses`; a member's entry equal to the group's uses the group's claim, allocated once
and reserved for the PodGroup; the reservation lasts while the PodGroup exists."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from phalanx import build_report, builtin
from phalanx.api.objects import PodGroup, PodResourceClaim
from phalanx.cluster.devices import ClaimState, group_claim_name
from phalanx.errors import InputError
from phalanx.inputs.load import Inputs
from phalanx.scheduler.decisions import Bind, Decision, Evict, Nominate, Unschedulable
from phalanx.scheduler.scheduler import Scheduler
from phalanx.sim.simulation import Simulation
from tests import dra_builders as b
from tests.scheduler.plugins.dra.test_dynamic_resources import run

Doc = dict[str, Any]
ENTRY = {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}


def one_gpu() -> Doc:
    return b.template("one-gpu", b.claim_spec(b.request("gpu", b.exactly(1))))


def gang(group: str, size: int, *, entry: Doc | None = None, cpu: str = "1") -> list[Doc]:
    """A PodGroup with the shared GPU claim and `size` members referring to it."""
    return [b.pod_group(group, size, claims=[ENTRY]),
            *(b.pod(f"{group}-{i}", group=group, cpu=cpu, claims=[entry or ENTRY]) for i in range(size))]


def test_members_share_the_group_claim_and_land_where_its_device_is(tmp_path: Path) -> None:
    # n0 is larger and has no GPU; n1's single GPU serves the whole gang through the group's claim.
    s, binds, failures = run(tmp_path, b.device_class(), b.node("n0", cpu="64"), b.node("n1", cpu="8"),
                             b.gpus("n1", 1), one_gpu(), *gang("train", 3), profile="phalanx")
    assert failures == {}
    assert binds == {"train-0": "n1", "train-1": "n1", "train-2": "n1"}
    devices = s.devices
    assert devices is not None
    group = s.groups["default/train"]
    name = group_claim_name(group, group.resource_claims[0])
    state = devices.claims[f"default/{name}"]
    assert int(devices.allocations.sum()) == 1  # allocated once, for the first member placed
    assert state.reserved_for == {"default/train-0", "default/train-1", "default/train-2"}
    assert devices.claim_status(state.key)["reservedFor"] == ["PodGroup default/train"]
    assert not any(k.startswith("default/train-0") for k in devices.claims)  # no claim of a pod's own
    assert devices.claim_statuses("default/train") == [{"name": "gpu", "resourceClaimName": name}]


def test_a_gang_that_cannot_reach_one_device_with_all_members_stays_pending(tmp_path: Path) -> None:
    # The GPU's node fits only two of the three members: the others cannot use the allocated claim anywhere.
    s, binds, failures = run(tmp_path, b.device_class(), b.node("n0", cpu="64"), b.node("n1", cpu="2"),
                             b.gpus("n1", 1), one_gpu(), *gang("train", 3), profile="phalanx")
    assert binds == {} and set(failures) == {"train-0", "train-1", "train-2"}
    assert s.devices is not None and int(s.devices.allocations.sum()) == 0  # the cycle's allocation rolled back


def test_a_template_gives_one_claim_per_pod_group(tmp_path: Path) -> None:
    s, binds, _ = run(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 1), b.node("n1"), b.gpus("n1", 1),
                      one_gpu(), *gang("a", 2), *gang("b", 2), profile="phalanx")
    assert len(binds) == 4
    assert binds["a-0"] == binds["a-1"] and binds["b-0"] == binds["b-1"] and binds["a-0"] != binds["b-0"]
    devices = s.devices
    assert devices is not None
    statuses = {g: devices.claim_statuses(f"default/{g}")[0]["resourceClaimName"] for g in ("a", "b")}
    assert statuses["a"].startswith("a-gpu-") and statuses["b"].startswith("b-gpu-")
    assert len(statuses["a"]) == len("a-gpu-") + 5 and statuses["a"] != statuses["b"]
    assert int(devices.allocations.sum()) == 2


def test_an_entry_that_differs_from_the_groups_is_the_pods_own(tmp_path: Path) -> None:
    # BindTo: same entry name but another template: a claim per pod, not the group's.
    other = b.template("other", b.claim_spec(b.request("gpu", b.exactly(1))))
    s, binds, _ = run(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 2), one_gpu(), other,
                      *gang("g", 2, entry={"name": "gpu", "resourceClaimTemplateName": "other"}), profile="phalanx")
    assert len(binds) == 2
    assert s.devices is not None
    assert {"default/g-0-gpu", "default/g-1-gpu"} <= set(s.devices.claims)
    assert int(s.devices.allocations.sum()) == 2


def test_the_claim_stays_allocated_while_the_pod_group_exists(tmp_path: Path) -> None:
    s, binds, _ = run(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 1), one_gpu(), *gang("g", 2),
                      profile="phalanx")
    assert len(binds) == 2
    devices = s.devices
    assert devices is not None
    key = f"default/{devices.claim_statuses('default/g')[0]['resourceClaimName']}"
    s.delete_pod("default/g-0", 1.0)
    s.delete_pod("default/g-1", 2.0)
    # syncClaim keeps the PodGroup in reservedFor while the PodGroup exists: still allocated
    assert devices.claims[key].allocation is not None and int(devices.allocations.sum()) == 1
    s.delete_pod_group("default/g", 3.0)
    assert key not in devices.claims and int(devices.allocations.sum()) == 0


def entry_named(name: str, claim: str | None = None) -> PodResourceClaim:
    return PodResourceClaim(name, claim, None if claim else "t")


def test_generated_names_are_shortened_as_upstream() -> None:
    name = group_claim_name(PodGroup("ns", "g" * 40, None), entry_named("c" * 30))
    base = f"{'g' * 40}-{'c' * 30}-"  # 72 > 57: both parts cut in proportion, without a trailing hyphen
    assert name[:-5] == "g" * (40 * 57 // len(base)) + "-" + "c" * (30 * 57 // len(base))
    assert len(name) <= 63
    assert group_claim_name(PodGroup("ns", "g", None), entry_named("x", claim="fixed")) == "fixed"


def test_a_pod_group_naming_a_missing_template_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        b.load(tmp_path, b.device_class(), b.pod_group("g", 1, claims=[ENTRY]))
    assert err.value.field == "spec.resourceClaims[0].resourceClaimTemplateName"


def test_report_shows_resource_claim_statuses(tmp_path: Path) -> None:
    inputs = b.load(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 1), one_gpu(), *gang("g", 2))
    sim = Simulation(inputs, builtin("phalanx")).run()
    report = build_report(sim)
    entry = next(g for g in report["podGroups"] if g["name"] == "default/g")
    [status] = entry["resourceClaimStatuses"]
    assert status["name"] == "gpu" and status["resourceClaimName"].startswith("g-gpu-")
    claims = {c["name"]: c["status"] for c in report["resourceClaims"]}
    assert claims[f"default/{status['resourceClaimName']}"]["reservedFor"] == ["PodGroup default/g"]
    assert {p["name"]: p["node"] for p in report["pods"]} == {"default/g-0": "n0", "default/g-1": "n0"}
    notes = report["podGroupResourceClaims"]["notes"]
    assert len(notes) == 1 and "PodGroupPostFilter" in notes[0] and "not allocated" not in notes[0]


def test_a_snapshot_status_names_the_claim_already_made(tmp_path: Path) -> None:
    doc = b.pod_group("g", 1, claims=[ENTRY])
    doc["status"] = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "g-gpu-x7k2p"}]}
    inputs = b.load(tmp_path, b.device_class(), one_gpu(), doc)
    group = inputs.pod_groups[0]
    assert group.claim_statuses == (("gpu", "g-gpu-x7k2p"),)
    assert group_claim_name(group, group.resource_claims[0]) == "g-gpu-x7k2p"


def test_with_the_gate_off_each_pod_has_its_own_claim(tmp_path: Path) -> None:
    # Without DRAWorkloadResourceClaims the API server drops the PodGroup's field: a claim per pod.
    profile = builtin("gang")
    profile.feature_gates["DRAWorkloadResourceClaims"] = False
    inputs = b.load(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 2), one_gpu(), *gang("g", 2))
    sim = Simulation(inputs, profile).run()
    report = build_report(sim)
    assert sorted(c["name"] for c in report["resourceClaims"]) == ["default/g-0-gpu", "default/g-1-gpu"]
    assert "resourceClaimStatuses" not in report["podGroups"][0]
    assert "DRAWorkloadResourceClaims" in report["podGroupResourceClaims"]["notes"][0]


# --- a failed cycle cleans up the group's claims (DynamicResources.PodGroupPostFilter) -------------------------

def staged(tmp_path: Path, *docs: Doc, later: tuple[str, ...]) -> tuple[Scheduler, Inputs]:
    """A scheduler with every object of `docs` but the pods named in `later` (added by the test), as v1.37.2
    with DRAWorkloadResourceClaims on: a failed group cycle is retried when its backoff ends."""
    inputs = b.load(tmp_path, *docs)
    gang = builtin("gang")
    s = Scheduler(replace(gang, feature_gates={**gang.feature_gates, "DRAWorkloadResourceClaims": True}), inputs.nodes)
    s.add_device_objects(0.0, slices=inputs.resource_slices, classes=inputs.device_classes,
                         claims=inputs.resource_claims, templates=inputs.claim_templates)
    for group in inputs.pod_groups:
        s.add_pod_group(group, 0.0)
    for pod in inputs.pods:
        if pod.name not in later:
            s.add_pod(pod, 0.0, node=pod.node_name)
    return s, inputs


def add(s: Scheduler, inputs: Inputs, name: str, now: float, node: str | None = None) -> None:
    s.add_pod(next(p for p in inputs.pods if p.name == name), now, node=node)


def claim_of(s: Scheduler, group: str = "g") -> ClaimState:
    assert s.devices is not None
    return s.devices.claims[f"default/{s.devices.claim_statuses(f'default/{group}')[0]['resourceClaimName']}"]


def binds_of(decisions: list[Decision]) -> dict[str, str]:
    return {d.pod.name: d.node for d in decisions if isinstance(d, Bind)}


def test_a_failed_cycle_deallocates_a_group_claim_no_node_can_use(tmp_path: Path) -> None:
    # g's claim is allocated on n0's GPU and stays so after its first members go (the PodGroup reserves it).
    # Then n0's cpu is taken: the new members fit on n1 (it has a GPU) but not with the claim where it is.
    s, inputs = staged(tmp_path, b.device_class(), b.node("n0", cpu="4"), b.gpus("n0", 1), b.node("n1", cpu="4"),
                       b.gpus("n1", 1), one_gpu(), *gang("g", 2), b.pod("g-2", group="g", claims=[ENTRY]),
                       b.pod("g-3", group="g", claims=[ENTRY]), b.pod("blocker", cpu="4"),
                       later=("g-2", "g-3", "blocker"))
    first = binds_of(s.schedule(0.0))
    assert set(first) == {"g-0", "g-1"}
    where = first["g-0"]
    s.delete_pod("default/g-0", 1.0)
    s.delete_pod("default/g-1", 1.0)
    claim = claim_of(s)
    assert claim.allocation is not None and claim.group_reserved == "default/g"
    add(s, inputs, "blocker", 2.0, node=where)
    add(s, inputs, "g-2", 3.0)
    add(s, inputs, "g-3", 3.0)
    other = "n1" if where == "n0" else "n0"
    decisions = s.schedule(3.0)
    # The first cycle fails and deallocates the claim. The group backs off whatever the events (no rejecting
    # plugin is recorded: requeuePodGroup); its next cycle, when the backoff ends (window 4 s, so at 5 s),
    # allocates the claim where the members fit.
    assert [d.pod.name for d in decisions if isinstance(d, Unschedulable)] == ["g-2", "g-3"]
    assert binds_of(decisions) == {} and claim.allocation is None
    assert s.queue.next_backoff() == 5.0
    assert binds_of(s.schedule(5.0)) == {"g-2": other, "g-3": other}
    assert s.devices is not None and claim.allocation is not None and claim.group_reserved == "default/g"
    assert int(s.devices.allocations.sum()) == 1


def test_a_failed_cycle_only_unreserves_a_claim_every_filtered_node_can_use(tmp_path: Path) -> None:
    # One node: the members fail NodeResourcesFit there, so DynamicResources' Filter never ran and the claim is
    # unavailable nowhere; the PodGroup's reservation goes, the allocation stays.
    s, inputs = staged(tmp_path, b.device_class(), b.node("n0", cpu="4"), b.gpus("n0", 1), one_gpu(),
                       *gang("g", 2), b.pod("g-2", group="g", claims=[ENTRY]),
                       b.pod("g-3", group="g", claims=[ENTRY]), b.pod("blocker", cpu="4"),
                       later=("g-2", "g-3", "blocker"))
    assert len(binds_of(s.schedule(0.0))) == 2
    s.delete_pod("default/g-0", 1.0)
    s.delete_pod("default/g-1", 1.0)
    add(s, inputs, "blocker", 2.0, node="n0")
    add(s, inputs, "g-2", 3.0)
    add(s, inputs, "g-3", 3.0)
    assert binds_of(s.schedule(3.0)) == {}
    claim = claim_of(s)
    assert claim.allocation is not None and claim.group_reserved is None and not claim.reserved_for
    assert s.devices is not None and s.devices.claim_status(claim.key)["reservedFor"] == []
    # Once there is room the members use the same devices, and PreBind reserves the claim for the PodGroup again.
    s.delete_pod("default/blocker", 4.0)
    assert binds_of(s.schedule(4.0)) == {}  # the group is tried again when its backoff ends, at 5 s
    assert binds_of(s.schedule(5.0)) == {"g-2": "n0", "g-3": "n0"}
    assert claim.group_reserved == "default/g" and int(s.devices.allocations.sum()) == 1


def test_nothing_is_released_while_a_member_is_bound(tmp_path: Path) -> None:
    s, inputs = staged(tmp_path, b.device_class(), b.node("n0", cpu="4"), b.gpus("n0", 1), b.node("n1", cpu="4"),
                       b.gpus("n1", 1), one_gpu(), *gang("g", 2), b.pod("g-2", group="g", cpu="3", claims=[ENTRY]),
                       later=("g-2",))
    assert len(binds_of(s.schedule(0.0))) == 2
    add(s, inputs, "g-2", 1.0)
    assert binds_of(s.schedule(1.0)) == {}
    claim = claim_of(s)
    assert claim.allocation is not None and claim.group_reserved == "default/g"


def test_the_same_cycles_preemption_still_sees_the_claim_where_it_was(tmp_path: Path) -> None:
    # As the first test, with a blocker of lower priority: DefaultPreemption runs after DynamicResources'
    # PostFilter, whose write has not reached the plugin's claim cache yet, so the dry run places the members with
    # the claim on its old node and evicts the blocker there, although the claim is deallocated by then.
    # (Seeing the claim free, the dry run would place the members on n0, the emptier node, and preempt nothing.)
    blocker = b.pod("blocker", cpu="4")
    blocker["spec"]["priority"] = -10
    first = gang("g", 2)
    for doc in first[1:]:
        doc["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "n1"}
    s, inputs = staged(tmp_path, b.device_class(), b.node("n0", cpu="8", labels={"kubernetes.io/hostname": "n0"}),
                       b.gpus("n0", 1), b.node("n1", cpu="4", labels={"kubernetes.io/hostname": "n1"}),
                       b.gpus("n1", 1), one_gpu(), *first, b.pod("g-2", group="g", claims=[ENTRY]),
                       b.pod("g-3", group="g", claims=[ENTRY]), blocker, later=("g-2", "g-3", "blocker"))
    assert binds_of(s.schedule(0.0)) == {"g-0": "n1", "g-1": "n1"}
    s.delete_pod("default/g-0", 1.0)
    s.delete_pod("default/g-1", 1.0)
    add(s, inputs, "blocker", 2.0, node="n1")
    add(s, inputs, "g-2", 3.0)
    add(s, inputs, "g-3", 3.0)
    decisions = s.schedule(3.0)
    assert [d.pod.name for d in decisions if isinstance(d, Evict)] == ["blocker"]
    assert {d.pod.name: d.node for d in decisions if isinstance(d, Nominate)} == {"g-2": "n1", "g-3": "n1"}
    # The group's next cycle, when its backoff ends at 5 s, sees the claim free; the blocker still holds n1 (it
    # is terminating), so the members take n0.
    assert binds_of(decisions) == {}
    assert binds_of(s.schedule(5.0)) == {"g-2": "n0", "g-3": "n0"}
