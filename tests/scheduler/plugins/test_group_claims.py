"""PodGroup-level ResourceClaims (DRAWorkloadResourceClaims), as Kubernetes v1.37.2 does them: one claim per
PodGroup from a template (named `<podgroup>-<entry>-` plus five characters), recorded in the PodGroup's
`status.resourceClaimStatuses`; a member's entry equal to the group's uses the group's claim, allocated once
and reserved for the PodGroup; the reservation lasts while the PodGroup exists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from phalanx import build_report, builtin
from phalanx.api.dra import PodResourceClaim
from phalanx.api.objects import PodGroup
from phalanx.cluster.devices import group_claim_name
from phalanx.errors import InputError
from phalanx.sim.simulation import Simulation
from tests import dra_builders as b
from tests.scheduler.plugins.test_dynamic_resources import run

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
