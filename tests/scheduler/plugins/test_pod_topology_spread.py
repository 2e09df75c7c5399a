"""PodTopologySpread: Filter (DoNotSchedule), Score (ScheduleAnyway), system defaults, reasons and codes.

Expected values are computed by hand from kube-scheduler v1.37's podtopologyspread: calPreFilterState +
Filter (filtering.go), initPreScoreState + PreScore + Score + NormalizeScore (scoring.go), and
filterTopologySpreadConstraints / countPodsMatchSelector (common.go).
"""

from collections.abc import Sequence

import numpy as np
import pytest

from phalanx.api.objects import LabelSelector
from phalanx.cluster.state import ClusterState
from phalanx.errors import InputError
from phalanx.scheduler.cycle import PodCycle
from phalanx.scheduler.framework import CycleState
from phalanx.scheduler.plugins.pod_topology_spread import (
    REASON,
    REASON_MISSING_LABEL,
    PodTopologySpread,
    normalize,
)
from phalanx.scheduler.profiles import builtin
from tests.builders import MakeNode, MakePod, cycle_state, expr, make_cluster

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def node(name: str, zone: str | None = "zone1") -> MakeNode:
    made = MakeNode(name).alloc(cpu="8", memory="16Gi", pods="110").label(HOST, name)
    return made.label(ZONE, zone) if zone is not None else made


# node-a, node-b in zone1; node-x, node-y in zone2 (upstream's filtering_test layout).
NODES = [node("node-a"), node("node-b"), node("node-x", "zone2"), node("node-y", "zone2")]
NAMES = ["node-a", "node-b", "node-x", "node-y"]


def foo(name: str, namespace: str = "default", **labels: str) -> MakePod:
    pod = MakePod(name, namespace).req(cpu="100m")
    for key, value in ({"foo": ""} | labels).items():
        pod = pod.label(key, value)
    return pod


def running(counts: dict[str, int], namespace: str = "default") -> list[tuple[MakePod, str]]:
    """`counts` pods labelled foo on each node."""
    return [(foo(f"{n}-{i}", namespace), n) for n, k in counts.items() for i in range(k)]


def passing(pod: MakePod, nodes: Sequence[MakeNode], existing: Sequence[tuple[MakePod, str]] = ()) -> list[str]:
    cluster = make_cluster(nodes, existing)
    mask = PodTopologySpread().filter(cycle_state(pod, cluster), cluster)
    return [cluster.names[i] for i in np.flatnonzero(mask)]


@pytest.mark.parametrize(("pod", "existing", "want"), [
    # No pod matches yet: every domain has 0, the pod's own +1 gives skew 1.
    (foo("p").spread(1, ZONE, match={"foo": ""}), {}, ["node-a", "node-b", "node-x", "node-y"]),
    # zone1 holds 2, zone2 0: zone1 nodes would make 2 + 1 − 0 = 3 > 1.
    (foo("p").spread(1, ZONE, match={"foo": ""}), {"node-a": 1, "node-b": 1}, ["node-x", "node-y"]),
    # By hostname: counts a 2, b 1, x 0, y 1 → min 0; only x stays within 1.
    (foo("p").spread(1, HOST, match={"foo": ""}), {"node-a": 2, "node-b": 1, "node-y": 1}, ["node-x"]),
    # maxSkew 2 allows b and y too.
    (foo("p").spread(2, HOST, match={"foo": ""}), {"node-a": 2, "node-b": 1, "node-y": 1},
     ["node-b", "node-x", "node-y"]),
    # The pod does not match its own selector: no +1 (zone1 2 + 0 − 0 = 2 > 1 still fails).
    (MakePod("p").req(cpu="100m").spread(2, ZONE, match={"foo": ""}), {"node-a": 1, "node-b": 1},
     ["node-a", "node-b", "node-x", "node-y"]),
    # Two constraints must both hold: zone allows x, y; hostname (a 1, b 0, x 0, y 1) allows b, x.
    (foo("p").spread(1, ZONE, match={"foo": ""}).spread(1, HOST, match={"foo": ""}),
     {"node-a": 1, "node-y": 1}, ["node-b", "node-x"]),
    # An empty selector counts no pod (countPodsMatchSelector: selector.Empty()) but matches the pod itself.
    (foo("p").spread(1, ZONE, match={}), {"node-a": 3}, ["node-a", "node-b", "node-x", "node-y"]),
    # No labelSelector matches nothing, not even the pod: every skew is 0.
    (foo("p").spread(1, ZONE), {"node-a": 3}, ["node-a", "node-b", "node-x", "node-y"]),
])
def test_filter(pod: MakePod, existing: dict[str, int], want: list[str]) -> None:
    assert passing(pod, NODES, running(existing)) == want


def test_min_domains_makes_the_global_minimum_zero() -> None:
    """minMatchNum: fewer domains than minDomains → the minimum counts as 0."""
    existing = running({"node-a": 1, "node-x": 1})
    pod = foo("p").spread(1, ZONE, match={"foo": ""})
    assert passing(pod, NODES, existing) == ["node-a", "node-b", "node-x", "node-y"]  # 1 + 1 − 1 = 1
    assert passing(foo("p").spread(1, ZONE, match={"foo": ""}, minDomains=3), NODES, existing) == []  # 1 + 1 − 0
    assert passing(foo("p").spread(1, ZONE, match={"foo": ""}, minDomains=2), NODES, existing) == NAMES


THREE_ZONES = [node("a", "z1"), node("b", "z2"), node("c", "z3")]


def test_node_affinity_policy() -> None:
    """Honor (default): nodes the pod's required node affinity excludes are no domain; Ignore: they are."""
    existing = running({"a": 1, "b": 1})
    honor = foo("p").spread(1, ZONE, match={"foo": ""}).required_term(expr(ZONE, "In", "z1", "z2"))
    assert passing(honor, THREE_ZONES, existing) == ["a", "b", "c"]  # z1, z2 only: min 1, 1 + 1 − 1 = 1
    ignore = foo("p").spread(1, ZONE, match={"foo": ""}, nodeAffinityPolicy="Ignore").required_term(
        expr(ZONE, "In", "z1", "z2"))
    assert passing(ignore, THREE_ZONES, existing) == ["c"]  # z3 counts with 0: 1 + 1 − 0 = 2 > 1


def test_node_taints_policy() -> None:
    """Ignore (default): tainted nodes are domains; Honor: only if the pod tolerates the taint."""
    nodes = [node("a", "z1"), node("b", "z2"), node("c", "z3").taint("dedicated", "infra")]
    existing = running({"a": 1, "b": 1})
    assert passing(foo("p").spread(1, ZONE, match={"foo": ""}), nodes, existing) == ["c"]
    honor = foo("p").spread(1, ZONE, match={"foo": ""}, nodeTaintsPolicy="Honor")
    assert passing(honor, nodes, existing) == ["a", "b", "c"]
    tolerant = honor.toleration("dedicated", "infra")
    assert passing(tolerant, nodes, existing) == ["c"]


def test_other_namespaces_and_terminating_pods_do_not_count() -> None:
    pod = foo("p").spread(1, ZONE, match={"foo": ""})
    assert passing(pod, NODES, running({"node-a": 2}, namespace="other")) == NAMES
    cluster = make_cluster(NODES, running({"node-a": 2}))
    plugin = PodTopologySpread()
    assert np.flatnonzero(plugin.filter(cycle_state(pod, cluster), cluster)).tolist() == [2, 3]
    for key in list(cluster.bound):
        cluster.mark_terminating(key)
    assert plugin.filter(cycle_state(pod, cluster), cluster).all()


def test_a_node_without_the_key_fails_unresolvable() -> None:
    nodes = [*NODES, node("node-c", zone=None)]
    cluster = make_cluster(nodes, running({"node-a": 1, "node-b": 1}))
    plugin = PodTopologySpread()
    state = cycle_state(foo("p").spread(1, ZONE, match={"foo": ""}), cluster)
    failed = ~plugin.filter(state, cluster)
    assert failed.tolist() == [True, True, False, False, True]
    assert plugin.reasons(state, cluster, failed) == {REASON: 2, REASON_MISSING_LABEL: 1}
    assert plugin.unresolvable(state, cluster, failed).tolist() == [False, False, False, False, True]


def test_the_filter_follows_assume_and_forget() -> None:
    """The bound pods' index changes with ClusterState.assume/forget (reserve, unreserve, rollbacks)."""
    cluster = make_cluster(NODES)
    plugin = PodTopologySpread()
    pod = foo("p").spread(1, ZONE, match={"foo": ""}).obj()

    def allowed() -> list[int]:
        return np.flatnonzero(plugin.filter(CycleState(pod, cluster.demand(pod)), cluster)).tolist()

    assert allowed() == [0, 1, 2, 3]
    cluster.assume(foo("w1").obj(), 0)
    assert allowed() == [2, 3]
    cluster.assume(foo("w2").obj(), 2)
    assert allowed() == [0, 1, 2, 3]
    cluster.forget("default/w2")
    assert allowed() == [2, 3]


def test_reasons_in_the_fit_error() -> None:
    """Each node reports its first failing plugin in kube-scheduler's order (NodeResourcesFit first)."""
    cluster = make_cluster([*NODES, node("node-c", zone=None)],
                           [*running({"node-a": 1, "node-b": 1}),
                            (MakePod("big-x").req(cpu="8"), "node-x"), (MakePod("big-y").req(cpu="8"), "node-y")])
    result = PodCycle(builtin("default"), cluster).schedule(foo("p").spread(1, ZONE, match={"foo": ""}).obj())
    assert result.node is None
    assert result.message == ("0/5 nodes are available: 1 node(s) didn't match pod topology spread constraints "
                              "(missing required label), 2 Insufficient cpu, "
                              "2 node(s) didn't match pod topology spread constraints.")
    assert result.unresolvable is not None and result.unresolvable.tolist() == [False, False, False, False, True]


# --- Score ---

def scores(pod: MakePod, nodes: Sequence[MakeNode], existing: Sequence[tuple[MakePod, str]] = (),
           candidates: Sequence[str] | None = None) -> list[int]:
    cluster = make_cluster(nodes, existing)
    idx = np.array([cluster.index[n] for n in (candidates or cluster.names)], dtype=np.int64)
    return [int(v) for v in PodTopologySpread().score(cycle_state(pod, cluster), cluster, idx)]


def test_score_by_zone() -> None:
    """zone1 holds 2, zone2 0; 2 domains → weight ln 4: a, b = round(2·1.386) = 3, x, y = 0;
    normalized 100·(3 + 0 − s)/3."""
    pod = foo("p").spread(1, ZONE, "ScheduleAnyway", match={"foo": ""})
    assert scores(pod, NODES, running({"node-a": 1, "node-b": 1})) == [0, 0, 100, 100]


def test_score_by_hostname() -> None:
    """Counts a 2, b 0, x 1 over 3 scored nodes → weight ln 5 = 1.609, + maxSkew − 1 = 1:
    a = round(4.219) = 4, b = 1, x = round(2.609) = 3; normalized 100·(4 + 1 − s)/4 = 25, 100, 50."""
    nodes = [node("a"), node("b"), node("x", "zone2")]
    pod = foo("p").spread(2, HOST, "ScheduleAnyway", match={"foo": ""})
    assert scores(pod, nodes, running({"a": 2, "x": 1})) == [25, 100, 50]


def test_score_ignores_nodes_without_every_key() -> None:
    """A scored node missing a constraint's key scores 0 and is left out of min and max."""
    nodes = [*NODES, node("node-c", zone=None)]
    pod = foo("p").spread(1, ZONE, "ScheduleAnyway", match={"foo": ""})
    assert scores(pod, nodes, running({"node-a": 1, "node-b": 1})) == [0, 0, 100, 100, 0]


def test_score_counts_only_domains_of_scored_nodes() -> None:
    """Scoring node-a and node-x only: zone1 = 2 (pods on node-b count), zone2 = 0."""
    pod = foo("p").spread(1, ZONE, "ScheduleAnyway", match={"foo": ""})
    assert scores(pod, NODES, running({"node-b": 2}), candidates=["node-a", "node-x"]) == [0, 100]


def test_do_not_schedule_constraints_do_not_score_and_all_zero_scores_100() -> None:
    assert scores(foo("p").spread(1, ZONE, match={"foo": ""}), NODES, running({"node-a": 1})) == [0, 0, 0, 0]
    # maxSkew 1 and no matching pod: every raw score is 0 → every node 100.
    assert scores(foo("p").spread(1, ZONE, "ScheduleAnyway", match={"foo": ""}), NODES) == [100] * 4


def test_normalize() -> None:
    assert normalize(np.array([3, 0, 1]), np.zeros(3, dtype=bool)).tolist() == [0, 100, 66]
    assert normalize(np.array([0, 0]), np.array([False, True])).tolist() == [100, 0]


def test_system_defaults_need_a_selector_source() -> None:
    """Without Services or controllers that select the pod, the system defaults have no effect (as upstream
    when none selects it); with one, they spread by hostname (maxSkew 3) and zone (maxSkew 5)."""
    plugin = PodTopologySpread()
    cluster: ClusterState = make_cluster(NODES, running({"node-a": 1, "node-b": 1}))
    pod = foo("p").obj()
    state = CycleState(pod, cluster.demand(pod))
    assert plugin.skips(state, cluster) and plugin.skips_score(state, cluster)
    plugin.selector_for = lambda p: LabelSelector(match_labels=(("foo", ""),))
    assert plugin.skips(state, cluster)  # the defaults are ScheduleAnyway only
    assert not plugin.skips_score(state, cluster)
    # hostname: a, b 1 (weight ln 6 = 1.792) + 2; zone: zone1 2 (weight ln 4) + 4 → a, b = round(1.792 + 2 +
    # 2.773 + 4) = 11, x, y = 6: normalized 100·(11 + 6 − s)/11 = 54, 54, 100, 100.
    nodes = np.arange(4, dtype=np.int64)
    assert plugin.score(state, cluster, nodes).tolist() == [54, 54, 100, 100]


def test_plugin_args() -> None:
    plugin = PodTopologySpread({"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]})
    assert not plugin.system_defaulted and plugin.defaults[0].max_skew == 1
    with pytest.raises(InputError):
        PodTopologySpread({"defaultingType": "Sometimes"})
