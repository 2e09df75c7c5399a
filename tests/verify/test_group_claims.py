"""PodGroup-level ResourceClaims (DRAWorkloadResourceClaims) against the real v1.37.2 kube-scheduler and
resourceclaim controller: a gang whose PodGroup names a one-GPU template lands on the one node with a GPU,
and the cluster holds one claim for the group, named in the PodGroup's `status.resourceClaimStatuses` and
reserved for the PodGroup, as Phalanx reports it; and a failed PodGroup cycle deallocates a group claim that a
node where the members' Filter ran cannot use (DynamicResources.PodGroupPostFilter), so that a later member
allocates another node's GPU."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube.resources.resource_v1 import ResourceClaim
from lightkube.resources.scheduling_v1beta1 import PodGroup

from phalanx import build_report
from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.simulation import Simulation
from phalanx.verify.compare import CATEGORIES, verify
from phalanx.verify.oracle import Oracle
from tests import dra_builders as b

# `gang` with PodGroup claims turned on (beta, off by default in v1.37.2).
GANG_WITH_CLAIMS = replace(builtin("gang"), feature_gates={"GenericWorkload": True, "DRAWorkloadResourceClaims": True})

pytestmark = pytest.mark.kube

Doc = dict[str, Any]
HOSTNAME = "kubernetes.io/hostname"
ENTRY = {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}


def manifests() -> list[Doc]:
    return [b.device_class(), b.template("one-gpu", b.claim_spec(b.request("gpu", b.exactly(1)))),
            b.node("n0", cpu="64", labels={HOSTNAME: "n0"}), b.node("n1", cpu="8", labels={HOSTNAME: "n1"}),
            b.gpus("n1", 1), b.pod_group("train", 3, claims=[ENTRY]),
            *(b.pod(f"train-{i}", group="train", claims=[ENTRY]) for i in range(3))]


def test_a_gang_shares_its_pod_group_claim_as_kube_does(tmp_path: Path, oracle: Oracle) -> None:
    path = tmp_path / "manifests.yaml"
    path.write_text(yaml.safe_dump_all(manifests(), sort_keys=False), encoding="utf-8")
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
    assert allocated is not None and len(status["allocation"]["devices"]["results"]) == len(allocated.results or [])


def pinned(doc: Doc, node: str) -> Doc:
    doc["spec"]["nodeSelector"] = {HOSTNAME: node}
    return doc


def released_manifests() -> list[Doc]:
    """g's first member runs on n1 (its claim takes n1's GPU) and ends at 10 s; the PodGroup keeps the claim.
    n2's GPU is free but its cpu is taken until 60 s; n0 has cpu and no GPU. At 20 s a blocker takes n1's cpu,
    and at 30 s a new member fits nowhere: on n0 (where DynamicResources' Filter runs) the claim is unavailable,
    so the PostFilter deallocates it. When n2's cpu comes back at 60 s the member allocates n2's GPU; with the
    claim still on n1 it would stay pending."""
    return [b.device_class(), b.template("one-gpu", b.claim_spec(b.request("gpu", b.exactly(1)))),
            b.node("n0", cpu="4", labels={HOSTNAME: "n0"}),
            b.node("n1", cpu="4", labels={HOSTNAME: "n1"}), b.gpus("n1", 1),
            b.node("n2", cpu="4", labels={HOSTNAME: "n2"}), b.gpus("n2", 1), b.pod_group("g", 1, claims=[ENTRY]),
            pinned(b.pod("g-0", group="g", claims=[ENTRY], duration="10s"), "n1"),
            pinned(b.pod("busy", cpu="4", duration="60s"), "n2"),
            pinned(b.pod("blocker", cpu="4", arrival="20s"), "n1"),
            b.pod("g-1", group="g", claims=[ENTRY], arrival="30s")]


def test_a_failed_cycle_deallocates_the_group_claim_as_kube_does(tmp_path: Path, oracle: Oracle) -> None:
    path = tmp_path / "manifests.yaml"
    path.write_text(yaml.safe_dump_all(released_manifests(), sort_keys=False), encoding="utf-8")
    verdict = verify([str(path)], GANG_WITH_CLAIMS, oracle)
    real = {entry["name"]: entry["kubeScheduler"] for entry in verdict.pods}
    assert real["default/g-1"]["state"] == "bound" and real["default/g-1"]["node"] == "n2", real
    differing = {c for c in CATEGORIES if c != "messages" and verdict.agree[c] != verdict.total[c]}
    assert not differing, [d.to_json() for d in verdict.differences if d.category != "messages"]
    [claim] = list(oracle.client.list(ResourceClaim, namespace="default"))
    assert claim.status is not None and claim.status.allocation is not None
    devices = claim.status.allocation.devices
    assert devices is not None and [r.pool for r in devices.results or []] == ["n2"]  # n2's GPU now
