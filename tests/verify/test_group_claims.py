"""PodGroup-level ResourceClaims (DRAWorkloadResourceClaims) against the real v1.37.2 kube-scheduler and
resourceclaim controller: a gang whose PodGroup names a one-GPU template lands on the one node with a GPU,
and the cluster holds one claim for the group, named in the PodGroup's `status.resourceClaimStatuses` and
reserved for the PodGroup, as Phalanx reports it; and a failed PodGroup cycle deallocates a group claim that a
node where the members' Filter ran cannot use (DynamicResources.PodGroupPostFilter), so that a later member
allocates another node's GPU."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import pytest
from lightkube.resources.resource_v1 import ResourceClaim
from lightkube.resources.scheduling_v1beta1 import PodGroup

from phalanx import build_report
from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.simulation import Simulation
from phalanx.verify.compare import CATEGORIES, verify
from phalanx.verify.oracle import Oracle
from tests import dra_builders as b
from tests.builders import Buildable, MakeNode, MakePod, MakePodGroup, write_manifests

# `gang` with PodGroup claims turned on (beta, off by default in v1.37.2).
GANG_WITH_CLAIMS = replace(builtin("gang"), feature_gates={"GenericWorkload": True, "DRAWorkloadResourceClaims": True})

pytestmark = pytest.mark.kube

HOSTNAME = "kubernetes.io/hostname"


def node(name: str, cpu: str) -> MakeNode:
    return MakeNode(name).alloc(cpu=cpu, memory="256Gi").label(HOSTNAME, name)


def member(name: str, group: str) -> MakePod:
    """A pod of `group` that uses the group's claim."""
    return MakePod(name).req(cpu="1").group(group).claim("gpu", template="one-gpu")


def group(name: str, min_count: int) -> MakePodGroup:
    """A gang with one claim of the one-GPU template for all its members."""
    return MakePodGroup(name).gang(min_count).claim("gpu", template="one-gpu")


def manifests() -> list[Buildable]:
    return [b.device_class(), b.template("one-gpu", b.claim_spec(b.request("gpu", b.exactly(1)))),
            node("n0", "64"), node("n1", "8"), b.gpus("n1", 1), group("train", 3),
            *(member(f"train-{i}", "train") for i in range(3))]


def test_a_gang_shares_its_pod_group_claim_as_kube_does(tmp_path: Path, oracle: Oracle) -> None:
    path = write_manifests(tmp_path / "manifests.yaml", *manifests())
    verdict = verify([str(path)], GANG_WITH_CLAIMS, oracle)
    differing = {c for c in CATEGORIES if c != "messages" and verdict.agree[c] != verdict.total[c]}
    assert not differing, [d.to_json() for d in verdict.differences if d.category != "messages"]
    real = {entry["name"]: entry["kubeScheduler"] for entry in verdict.pods}
    assert all(real[f"default/train-{i}"] == {**real[f"default/train-{i}"], "state": "bound", "node": "n1"}
               for i in range(3)), real

    [group] = [g for g in oracle.client.list(PodGroup, namespace="default") if g.metadata and
               g.metadata.name == "train"]
    statuses = [(s.name, s.resourceClaimName) for s in (group.status.resourceClaimStatuses or [])] \
        if group.status else []
    claims = list(oracle.client.list(ResourceClaim, namespace="default"))
    assert [c.metadata.name for c in claims if c.metadata] == [name for _, name in statuses]
    [(entry, name)] = statuses
    assert entry == "gpu" and name is not None and name.startswith("train-gpu-") and len(name) == len("train-gpu-") + 5
    [claim] = claims
    assert claim.status is not None and claim.status.allocation is not None
    assert [(r.resource, r.name) for r in claim.status.reservedFor or []] == [("podgroups", "train")]

    sim = Simulation(load_paths([str(path)]), GANG_WITH_CLAIMS).run()
    report = build_report(sim)
    [mine] = next(g for g in report["podGroups"] if g["name"] == "default/train")["resourceClaimStatuses"]
    assert mine["name"] == entry and mine["resourceClaimName"].startswith("train-gpu-")
    status = {c["name"]: c["status"] for c in report["resourceClaims"]}[f"default/{mine['resourceClaimName']}"]
    assert status["reservedFor"] == ["PodGroup default/train"]
    allocated = claim.status.allocation.devices
    mine_allocated = cast(dict[str, Any], status["allocation"])["devices"]["results"]  # the report's plain JSON
    assert allocated is not None and len(mine_allocated) == len(allocated.results or [])


def released_manifests() -> list[Buildable]:
    """g's first member runs on n1 (its claim takes n1's GPU) and ends at 10 s; the PodGroup keeps the claim.
    n2's GPU is free but its cpu is taken until 60 s; n0 has cpu and no GPU. At 20 s a blocker takes n1's cpu,
    and at 30 s a new member fits nowhere: on n0 (where DynamicResources' Filter runs) the claim is unavailable,
    so the PostFilter deallocates it. When n2's cpu comes back at 60 s the member allocates n2's GPU; with the
    claim still on n1 it would stay pending."""
    return [b.device_class(), b.template("one-gpu", b.claim_spec(b.request("gpu", b.exactly(1)))),
            node("n0", "4"), node("n1", "4"), b.gpus("n1", 1), node("n2", "4"), b.gpus("n2", 1), group("g", 1),
            member("g-0", "g").duration("10s").node_selector({HOSTNAME: "n1"}),
            MakePod("busy").req(cpu="4").duration("60s").node_selector({HOSTNAME: "n2"}),
            MakePod("blocker").req(cpu="4").arrival("20s").node_selector({HOSTNAME: "n1"}),
            member("g-1", "g").arrival("30s")]


def test_a_failed_cycle_deallocates_the_group_claim_as_kube_does(tmp_path: Path, oracle: Oracle) -> None:
    path = write_manifests(tmp_path / "manifests.yaml", *released_manifests())
    verdict = verify([str(path)], GANG_WITH_CLAIMS, oracle)
    real = {entry["name"]: entry["kubeScheduler"] for entry in verdict.pods}
    assert real["default/g-1"]["state"] == "bound" and real["default/g-1"]["node"] == "n2", real
    differing = {c for c in CATEGORIES if c != "messages" and verdict.agree[c] != verdict.total[c]}
    assert not differing, [d.to_json() for d in verdict.differences if d.category != "messages"]
    [claim] = list(oracle.client.list(ResourceClaim, namespace="default"))
    assert claim.status is not None and claim.status.allocation is not None
    devices = claim.status.allocation.devices
    assert devices is not None and [r.pool for r in devices.results or []] == ["n2"]  # n2's GPU now
