"""Preemption and DRA devices against the real kube-scheduler v1.37.2: each case runs through `phalanx verify`
and must agree on what binds, where, when, on the victims and on PodGroup conditions; the real scheduler's
outcome (and its FailedScheduling message, preemption part included) is checked to be the one the case is
about. v1.37.2 never preempts to free devices: DynamicResources rejects a node as UnschedulableAndUnresolvable
and its dry run keeps the victims' devices allocated (it has no PreFilterExtensions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.scheduler.profiles import builtin
from phalanx.verify.compare import CATEGORIES, Verdict, verify
from phalanx.verify.oracle import Oracle
from tests import dra_builders as b
from tests.builders import Buildable, MakeNode, MakePod, MakePodGroup, MakePriorityClass, write_manifests

pytestmark = pytest.mark.kube

HOSTNAME = "kubernetes.io/hostname"


def priority_classes() -> list[Buildable]:
    return [MakePriorityClass(name, value) for name, value in (("low", 0), ("mid", 5), ("high", 1000), ("top", 2000))]


def node(name: str, cpu: str = "64") -> MakeNode:
    return MakeNode(name).alloc(cpu=cpu, memory="256Gi").label(HOSTNAME, name)


def pod(name: str, priority: str, *, cpu: str = "1", template: str | None = "one-gpu", claim: str | None = None,
        on: str | None = None, arrival: str | None = None, group: str | None = None) -> MakePod:
    built = MakePod(name).req(cpu=cpu).priority_class(priority)
    if template:
        built.claim("gpus", template=template)
    if claim:
        built.claim("shared", claim=claim)
    if group:
        built.group(group)
    if arrival:
        built.arrival(arrival)
    if on is not None:
        built.node_selector({HOSTNAME: on})
    return built


def fleet(*nodes: tuple[str, str, int]) -> list[Buildable]:
    """Priority classes, the GPU class, a one-GPU template and nodes (name, cpu, GPUs)."""
    docs: list[Buildable] = [*priority_classes(), b.device_class(),
            b.template("one-gpu", b.claim_spec(b.request("gpu", b.exactly(1))))]
    for name, cpu, count in nodes:
        docs += [node(name, cpu), b.gpus(name, count)]
    return docs


def gang(name: str, size: int, arrival: str) -> list[Buildable]:
    group = MakePodGroup(name).gang(size).priority_class("high").arrival(arrival)
    return [group, *(pod(f"{name}-{i}", "high", arrival=arrival, group=name) for i in range(size))]


SHARED = b.claim("shared", b.claim_spec(b.request("gpu", b.exactly(1))))
CASES: dict[str, tuple[str, list[Buildable], dict[str, str | None], set[str]]] = {
    # (profile, manifests, pod -> the real node or None for pending, the real victims)
    "a pod short only of devices preempts nothing": (
        "default",
        [*fleet(("n0", "64", 2)), pod("low-0", "low"), pod("low-1", "mid"), pod("high", "high", arrival="5s")],
        {"default/high": None, "default/low-0": "n0", "default/low-1": "n0"}, set()),
    # n0 and n1 both fail on cpu (resolvable). n0's only GPU stays with its holder in the dry run: only n1,
    # whose GPUs are free, is a candidate although n0's victim has the lower priority.
    "a node short of cpu and of devices is no candidate": (
        "default",
        [*fleet(("n0", "4", 1), ("n1", "4", 2)), pod("low", "low", cpu="3", on="n0"),
         pod("busy", "mid", cpu="3", template=None, on="n1"), pod("high", "high", cpu="2", arrival="5s")],
        {"default/high": "n1", "default/low": "n0"}, {"default/busy"}),
    "cpu and devices both short on the only node preempt nothing": (
        "default",
        [*fleet(("n0", "4", 1)), pod("low", "low", cpu="3"), pod("high", "high", cpu="2", arrival="5s")],
        {"default/high": None, "default/low": "n0"}, set()),
    # The victim holds a GPU, the preemptor takes the other one once the victim is gone.
    "a victim preempted for cpu is gone with its claim": (
        "default",
        [*fleet(("n0", "4", 2)), pod("low", "low", cpu="3"), pod("high", "high", cpu="2", arrival="5s")],
        {"default/high": "n0"}, {"default/low"}),
    # `low` shares its claim with `keeper`: once `low` is preempted the claim stays allocated for `keeper`,
    # so `later` finds no GPU.
    "a shared claim stays allocated for the pod that stays": (
        "default",
        [*fleet(("n0", "5", 1)), SHARED, pod("low", "low", cpu="3", template=None, claim="shared"),
         pod("keeper", "top", cpu="1", template=None, claim="shared"),
         pod("high", "high", cpu="3", template=None, arrival="5s"), pod("later", "high", arrival="60s")],
        {"default/high": "n0", "default/keeper": "n0", "default/later": None}, {"default/low"}),
    "a gang short of devices preempts nothing": (
        "gang",
        [*fleet(("n0", "64", 2)), pod("low-0", "low"), pod("low-1", "mid"), *gang("big", 2, "5s")],
        {"default/big-0": None, "default/big-1": None, "default/low-0": "n0", "default/low-1": "n0"}, set()),
}
MESSAGES = {
    "a pod short only of devices preempts nothing": (
        "default/high", "0/1 nodes are available: 1 cannot allocate all claims. preemption: 0/1 nodes are "
                        "available: 1 Preemption is not helpful for scheduling."),
    "cpu and devices both short on the only node preempt nothing": (
        "default/high", "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
                        "1 cannot allocate all claims."),
}


def _agree(verdict: Verdict) -> None:
    differing = {c for c in CATEGORIES if c != "messages" and verdict.agree[c] != verdict.total[c]}
    assert not differing, [d.to_json() for d in verdict.differences if d.category != "messages"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_device_preemption_agrees_with_kube_scheduler(case: str, tmp_path: Path, oracle: Oracle) -> None:
    profile, docs, expected, victims = CASES[case]
    path = write_manifests(tmp_path / "manifests.yaml", *docs)
    verdict = verify([str(path)], builtin(profile), oracle)
    _agree(verdict)
    real = {entry["name"]: entry["kubeScheduler"] for entry in verdict.pods}
    mine = {entry["name"]: entry["phalanx"] for entry in verdict.pods}
    for key, where in expected.items():
        if where is None:
            assert real[key]["state"] == "pending", (case, key, real[key])
        else:
            assert real[key]["state"] == "bound" and real[key]["node"] == where, (case, key, real[key])
    # A preempted bare pod ends Failed in Phalanx; `_agree` has checked that the real scheduler preempted the same.
    assert {key for key, entry in mine.items() if entry["state"] == "failed"} == victims
    if case in MESSAGES:
        key, message = MESSAGES[case]
        assert real[key]["message"] == message
        assert mine[key]["message"] == message.split(" preemption: ")[0]
