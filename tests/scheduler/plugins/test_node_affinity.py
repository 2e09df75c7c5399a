"""NodeAffinity: nodeSelector and required terms filter (terms ORed, expressions ANDed); preferred terms score."""

import numpy as np
import pytest

from phalanx.scheduler.plugins.node_affinity import NodeAffinity
from tests.builders import MakeNode, MakePod, cycle_state, expr, make_cluster

NODES = [
    MakeNode("a").alloc(cpu="1").label("zone", "eu-1a").label("cores", "8").label("disk", "ssd"),
    MakeNode("b").alloc(cpu="1").label("zone", "eu-1b").label("cores", "16"),
    MakeNode("c").alloc(cpu="1").label("zone", "eu-1c").label("cores", "32").label("disk", "hdd"),
    MakeNode("d").alloc(cpu="1").label("cores", "many"),
]


def matches(pod: MakePod) -> list[str]:
    cluster = make_cluster(NODES)
    mask = NodeAffinity().filter(cycle_state(pod.req(cpu="1"), cluster), cluster)
    return [cluster.names[i] for i in np.flatnonzero(mask)]


def test_no_constraints_match_every_node() -> None:
    assert matches(MakePod()) == ["a", "b", "c", "d"]


def test_node_selector() -> None:
    assert matches(MakePod().node_selector(zone="eu-1b")) == ["b"]
    assert matches(MakePod().node_selector(zone="eu-1a", disk="ssd")) == ["a"]
    assert matches(MakePod().node_selector(zone="eu-1a", disk="hdd")) == []
    assert matches(MakePod().node_selector(zone="mars")) == []


@pytest.mark.parametrize(("requirement", "nodes"), [
    (expr("zone", "In", "eu-1a", "eu-1c"), ["a", "c"]),
    (expr("zone", "NotIn", "eu-1a"), ["b", "c", "d"]),       # a node without the label is not in the set
    (expr("disk", "Exists"), ["a", "c"]),
    (expr("disk", "DoesNotExist"), ["b", "d"]),
    (expr("cores", "Gt", 8), ["b", "c"]),                     # "many" is not an integer: no match
    (expr("cores", "Lt", 32), ["a", "b"]),
    (expr("cores", "Gt", 32), []),
    (expr("gpu", "Lt", 100), []),                             # missing label: no match
])
def test_operators(requirement: dict[str, object], nodes: list[str]) -> None:
    assert matches(MakePod().required_term(requirement)) == nodes


def test_expressions_in_a_term_are_anded() -> None:
    pod = MakePod().required_term(expr("zone", "In", "eu-1a", "eu-1b", "eu-1c"), expr("disk", "DoesNotExist"))
    assert matches(pod) == ["b"]


def test_terms_are_ored() -> None:
    pod = MakePod().required_term(expr("zone", "In", "eu-1a")).required_term(expr("cores", "Gt", 20))
    assert matches(pod) == ["a", "c"]


def test_node_selector_and_affinity_must_both_match() -> None:
    pod = MakePod().node_selector(disk="ssd").required_term(expr("zone", "In", "eu-1b", "eu-1a"))
    assert matches(pod) == ["a"]
    pod = MakePod().node_selector(disk="hdd").required_term(expr("zone", "In", "eu-1b"))
    assert matches(pod) == []


def test_match_fields_on_the_node_name() -> None:
    assert matches(MakePod().required_term(fields=[expr("metadata.name", "In", "c")])) == ["c"]
    assert matches(MakePod().required_term(fields=[expr("metadata.name", "NotIn", "c")])) == ["a", "b", "d"]
    # Fields and expressions of one term are ANDed.
    assert matches(MakePod().required_term(expr("disk", "Exists"), fields=[expr("metadata.name", "In", "b")])) == []


def test_an_empty_term_list_or_an_empty_term_matches_nothing() -> None:
    pod = MakePod()
    pod.spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                                             {"nodeSelectorTerms": []}}}
    assert matches(pod) == []
    assert matches(MakePod().required_term()) == []
    # …but an empty term ORed with a matching one still matches
    assert matches(MakePod().required_term().required_term(expr("zone", "In", "eu-1c"))) == ["c"]


def test_reason() -> None:
    cluster = make_cluster(NODES)
    state = cycle_state(MakePod().req(cpu="1").node_selector(zone="eu-1a"), cluster)
    plugin = NodeAffinity()
    assert dict(plugin.reasons(state, cluster, ~plugin.filter(state, cluster))) == {
        "node(s) didn't match Pod's node affinity/selector": 3}


def test_preferred_terms_add_their_weights_then_normalize() -> None:
    cluster = make_cluster(NODES)
    pod = (MakePod().req(cpu="1").preferred(20, expr("zone", "In", "eu-1a", "eu-1b"))
           .preferred(60, expr("disk", "Exists")))
    # raw: a 20+60 = 80, b 20, c 60, d 0 → ·100/80: 100, 25, 75, 0
    assert NodeAffinity().score(cycle_state(pod, cluster), cluster, np.arange(4)).tolist() == [100, 25, 75, 0]


def test_preferred_scores_cover_only_the_candidate_nodes() -> None:
    cluster = make_cluster(NODES)
    pod = MakePod().req(cpu="1").preferred(20, expr("zone", "In", "eu-1b")).preferred(10, expr("cores", "Gt", 20))
    # candidates b (20) and c (10): max 20 → 100, 50
    assert NodeAffinity().score(cycle_state(pod, cluster), cluster, np.array([1, 2])).tolist() == [100, 50]


def test_no_preferred_terms_score_zero() -> None:
    cluster = make_cluster(NODES)
    assert NodeAffinity().score(cycle_state(MakePod().req(cpu="1"), cluster), cluster, np.arange(4)).tolist() == \
        [0, 0, 0, 0]


def test_a_pod_without_preferred_terms_skips_scoring() -> None:
    cluster = make_cluster([MakeNode("a").alloc(cpu="1").label("zone", "z1")])
    plugin = NodeAffinity()
    assert plugin.skips_score(cycle_state(MakePod().req(cpu="1"), cluster), cluster)
    preferring = MakePod().req(cpu="1").preferred(10, expr("zone", "In", "z1"))
    assert not plugin.skips_score(cycle_state(preferring, cluster), cluster)
