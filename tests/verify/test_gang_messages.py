"""The FailedScheduling messages of PodGroup members, word for word against the real kube-scheduler v1.37.2
(`phalanx verify`): members that fitted in a gang that failed, members that fitted nowhere, members the cycle
never tried, a topology-constrained gang with no feasible placement, a basic group, and a group whose members
break validatePodGroup. Only a single pod's own preemption tail (`preemption: 0/1 nodes …`), which Phalanx does
not write, is left out of the comparison; a group's `pod group preemption: …` is compared."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.scheduler.profiles import Profile, builtin
from phalanx.verify.compare import verify
from phalanx.verify.oracle import Oracle
from tests.builders import Buildable, MakeNode, MakePod, MakePodGroup, MakePriorityClass, write_manifests

pytestmark = pytest.mark.kube

RACK = "topology.kubernetes.io/rack"


def nodes(count: int, cpu: int) -> list[Buildable]:
    return [MakeNode(f"node-{i}").alloc(cpu=str(cpu), memory="32Gi", pods="110") for i in range(count)]


def gang(min_count: int) -> MakePodGroup:
    return MakePodGroup("g", "ml").gang(min_count)


def member(i: int, cpu: int) -> MakePod:
    return MakePod(f"w-{i}", "ml").req(cpu=str(cpu), memory="1Gi").group("g").duration("1h")


def _tas_gang() -> list[Buildable]:
    racks = [MakeNode(name).alloc(cpu="2", memory="32Gi", pods="110").label(RACK, rack)
             for name, rack in (("a1", "rack-a"), ("a2", "rack-a"), ("b1", "rack-b"), ("b2", "rack-b"))]
    group = gang(3)
    group.doc["spec"]["schedulingConstraints"] = {"topology": [{"key": RACK}]}
    return [*racks, group, *(member(i, 2) for i in range(3))]


def _mixed_priorities() -> list[Buildable]:
    return [*nodes(1, 8), MakePriorityClass("high", 100), gang(2), member(0, 1),
            member(1, 1).priority_class("high")]


GANG = builtin("gang")
TAS = Profile("gang-topology", feature_gates={"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True})

CASES: dict[str, tuple[list[Buildable], Profile, int]] = {
    # Three fit, the fourth does not: the three read the group's message, the fourth its fit error.
    "three fitted, the last did not": ([*nodes(3, 2), gang(4), *(member(i, 2) for i in range(4))], GANG, 4),
    # The first fits nowhere and minCount can no longer be met: the other three are never tried.
    "the first did not fit, the rest untried": (
        [*nodes(3, 2), gang(4), member(0, 5), *(member(i, 2) for i in range(1, 4))], GANG, 4),
    # minCount 2 of 4, one fits: the cycle runs to the end.
    "one fitted of minCount 2": ([*nodes(1, 2), gang(2), *(member(i, 2) for i in range(4))], GANG, 4),
    "no rack holds the gang": (_tas_gang(), TAS, 3),
    # With the topology gate on, a group without a constraint has one placement of every node.
    "the topology gate, no constraint": ([*nodes(1, 2), gang(2), member(0, 2), member(1, 2)], TAS, 2),
    "a basic group none of whose pods fit": (
        [*nodes(1, 2), MakePodGroup("g", "ml").basic(), member(0, 3), member(1, 3)], GANG, 2),
    "members with two priorities": (_mixed_priorities(), GANG, 2),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_members_messages_are_kube_schedulers(case: str, tmp_path: Path, oracle: Oracle) -> None:
    objects, profile, pending = CASES[case]
    verdict = verify([str(write_manifests(tmp_path / "manifests.yaml", *objects))], profile, oracle)
    assert verdict.total["messages"] == pending, [entry for entry in verdict.pods]
    assert verdict.agree["messages"] == pending, [d.to_json() for d in verdict.differences]
