"""InterPodAffinity: required (anti-)affinity both ways as a Filter, preferred terms both ways as a Score.

Expected values are computed by hand from kube-scheduler v1.37's interpodaffinity (the
InterPodAffinityHostnameFastPath gate off): PreFilter, satisfyPodAffinity (nodeTopologyMatchesAffinity),
satisfyPodAntiAffinity, satisfyExistingPodsAntiAffinity and Filter in filtering.go; processExistingPod,
PreScore, Score and NormalizeScore in scoring.go.
"""

from collections.abc import Sequence

import numpy as np
import pytest

from phalanx.errors import InputError
from phalanx.scheduler.cycle import PodCycle
from phalanx.scheduler.plugins.inter_pod_affinity import (
    REASON_AFFINITY,
    REASON_ANTI_AFFINITY,
    REASON_EXISTING_ANTI_AFFINITY,
    InterPodAffinity,
    normalize,
)
from phalanx.scheduler.profiles import builtin
from tests.builders import MakeNode, MakePod, cycle_state, make_cluster

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def node(name: str, zone: str | None = "zone1") -> MakeNode:
    made = MakeNode(name).alloc(cpu="8", memory="16Gi").label(HOST, name)
    return made.label(ZONE, zone) if zone is not None else made


NODES = [node("a"), node("b"), node("x", "zone2")]


def app(name: str, label: str, namespace: str = "default") -> MakePod:
    return MakePod(name, namespace).req(cpu="100m").label("app", label)


def passing(pod: MakePod, existing: Sequence[tuple[MakePod, str]] = (), nodes: Sequence[MakeNode] = NODES,
            ) -> list[str]:
    cluster = make_cluster(nodes, existing)
    mask = InterPodAffinity().filter(cycle_state(pod, cluster), cluster)
    return [cluster.names[i] for i in np.flatnonzero(mask)]


DB_ON_A = [(app("db-0", "db"), "a")]
WEB_ON_A = [(app("web-0", "web"), "a")]


@pytest.mark.parametrize(("pod", "existing", "want"), [
    # Required affinity by zone: db runs in zone1.
    (app("api", "api").pod_affinity(ZONE, {"app": "db"}), DB_ON_A, ["a", "b"]),
    # ... by hostname: only its node.
    (app("api", "api").pod_affinity(HOST, {"app": "db"}), DB_ON_A, ["a"]),
    # No db pod anywhere and the pod is not a db itself: nowhere.
    (app("api", "api").pod_affinity(ZONE, {"app": "db"}), [], []),
    # The first pod of a group with affinity to itself goes anywhere that has the key.
    (app("db-1", "db").pod_affinity(ZONE, {"app": "db"}), [], ["a", "b", "x"]),
    # Two terms: some pod must match both, in each term's domain.
    (app("api", "api").pod_affinity(ZONE, {"app": "db"}).pod_affinity(HOST, {"app": "db"}), DB_ON_A, ["a"]),
    # A pod in another namespace does not count unless the term names it or every namespace.
    (app("api", "api").pod_affinity(ZONE, {"app": "db"}), [(app("db-0", "db", "infra"), "x")], []),
    (app("api", "api").pod_affinity(ZONE, {"app": "db"}, namespaces=["infra"]),
     [(app("db-0", "db", "infra"), "x")], ["x"]),
    (app("api", "api").pod_affinity(ZONE, {"app": "db"}, namespaceSelector={}),
     [(app("db-0", "db", "infra"), "x")], ["x"]),
    # Required anti-affinity: not beside web by hostname, or not in its zone.
    (app("web-1", "web").pod_anti_affinity(HOST, {"app": "web"}), WEB_ON_A, ["b", "x"]),
    (app("web-1", "web").pod_anti_affinity(ZONE, {"app": "web"}), WEB_ON_A, ["x"]),
    (app("web-1", "web").pod_anti_affinity(ZONE, {"app": "web"}), [], ["a", "b", "x"]),
    # An existing pod's anti-affinity keeps a matching pod out of its domain (the symmetric check) ...
    (app("web-1", "web"), [(app("web-0", "web").pod_anti_affinity(ZONE, {"app": "web"}), "a")], ["x"]),
    # ... and lets a pod it does not match anywhere.
    (app("api", "api"), [(app("web-0", "web").pod_anti_affinity(ZONE, {"app": "web"}), "a")], ["a", "b", "x"]),
])
def test_filter(pod: MakePod, existing: list[tuple[MakePod, str]], want: list[str]) -> None:
    assert passing(pod, existing) == want


def test_required_affinity_needs_the_key_even_for_the_first_pod() -> None:
    nodes = [*NODES, node("bare", zone=None)]
    assert passing(app("db-1", "db").pod_affinity(ZONE, {"app": "db"}), nodes=nodes) == ["a", "b", "x"]


def test_reasons_and_codes_follow_the_order_of_the_checks() -> None:
    """A node reports its first failure: affinity (UnschedulableAndUnresolvable), then the pod's
    anti-affinity, then existing pods' anti-affinity (both Unschedulable)."""
    existing = [(app("db-0", "db"), "a"), (app("web-0", "web"), "b"),
                (app("guard", "guard").pod_anti_affinity(HOST, {"app": "api"}), "x")]
    nodes = [*NODES, node("y", "zone2")]
    cluster = make_cluster(nodes, existing)
    pod = app("api", "api").pod_affinity(ZONE, {"app": "db"}).pod_anti_affinity(HOST, {"app": "web"})
    plugin = InterPodAffinity()
    state = cycle_state(pod, cluster)
    failed = ~plugin.filter(state, cluster)
    assert failed.tolist() == [False, True, True, True]
    assert plugin.reasons(state, cluster, failed) == {REASON_ANTI_AFFINITY: 1, REASON_AFFINITY: 2}
    assert plugin.unresolvable(state, cluster, failed).tolist() == [False, False, True, True]
    pod_b = app("api", "api").pod_anti_affinity(HOST, {"app": "web"})
    state = cycle_state(pod_b, cluster)
    failed = ~plugin.filter(state, cluster)
    assert plugin.reasons(state, cluster, failed) == {REASON_ANTI_AFFINITY: 1, REASON_EXISTING_ANTI_AFFINITY: 1}


def test_fit_error_of_a_spread_by_anti_affinity() -> None:
    existing = [(app(f"web-{i}", "web").pod_anti_affinity(HOST, {"app": "web"}), n) for i, n in enumerate("abx")]
    cluster = make_cluster(NODES, existing)
    pod = app("web-3", "web").pod_anti_affinity(HOST, {"app": "web"}).obj()
    result = PodCycle(builtin("default"), cluster).schedule(pod)
    assert result.node is None
    assert result.message == "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules."
    assert result.unresolvable is not None and not result.unresolvable.any()


def test_the_filter_follows_assume_and_forget() -> None:
    cluster = make_cluster(NODES)
    plugin = InterPodAffinity()
    web = app("web-1", "web").pod_anti_affinity(HOST, {"app": "web"})

    def allowed() -> list[int]:
        return np.flatnonzero(plugin.filter(cycle_state(web, cluster), cluster)).tolist()

    assert allowed() == [0, 1, 2]
    cluster.assume(app("web-0", "web").pod_anti_affinity(HOST, {"app": "web"}).obj(), 1)
    assert cluster.affinity_pods == 1
    assert allowed() == [0, 2]
    cluster.forget("default/web-0")
    assert cluster.affinity_pods == 0
    assert allowed() == [0, 1, 2]


def test_pods_without_terms_skip_the_plugin() -> None:
    cluster = make_cluster(NODES, DB_ON_A)
    plugin = InterPodAffinity()
    state = cycle_state(app("api", "api"), cluster)
    assert plugin.skips(state, cluster) and plugin.skips_score(state, cluster)
    assert cluster._pod_index is None  # nothing asked for the bound pods' index yet


# --- Score ---

def scores(pod: MakePod, existing: Sequence[tuple[MakePod, str]], plugin: InterPodAffinity | None = None,
           ) -> list[int]:
    cluster = make_cluster(NODES, existing)
    out = (plugin or InterPodAffinity()).score(cycle_state(pod, cluster), cluster,
                                               np.arange(len(cluster), dtype=np.int64))
    return [int(v) for v in out]


@pytest.mark.parametrize(("pod", "existing", "want"), [
    # Preferred affinity 10 to db by zone: zone1 +10 → a, b 10, x 0.
    (app("api", "api").pod_affinity(ZONE, {"app": "db"}, weight=10), DB_ON_A, [100, 100, 0]),
    # Preferred anti-affinity 10 to web by hostname, two web pods on a: a −20 → min −20, max 0.
    (app("web-9", "web").pod_anti_affinity(HOST, {"app": "web"}, weight=10),
     [(app("web-0", "web"), "a"), (app("web-1", "web"), "a")], [0, 100, 100]),
    # Both: zone1 +10, b −5 → a 10, b 5, x 0.
    (app("api", "api").pod_affinity(ZONE, {"app": "db"}, weight=10).pod_anti_affinity(HOST, {"app": "web"},
                                                                                       weight=5),
     [(app("db-0", "db"), "a"), (app("web-0", "web"), "b")], [100, 50, 0]),
    # An existing pod's required affinity that matches the incoming pod: hardPodAffinityWeight 1 in its zone.
    (app("api", "api"), [(app("db-0", "db").pod_affinity(ZONE, {"app": "api"}), "x")], [0, 0, 100]),
    # An existing pod's preferred anti-affinity 5 against the incoming pod, by hostname: a −5.
    (app("api", "api"), [(app("db-0", "db").pod_anti_affinity(HOST, {"app": "api"}, weight=5), "a")],
     [0, 100, 100]),
    # An existing pod's preferred affinity 7 to the incoming pod by zone: zone2 +7.
    (app("api", "api"), [(app("db-0", "db").pod_affinity(ZONE, {"app": "api"}, weight=7), "x")], [0, 0, 100]),
    # Existing required anti-affinity does not score.
    (app("api", "api"), [(app("db-0", "db").pod_anti_affinity(HOST, {"app": "api"}), "a")], [0, 0, 0]),
    # Terms that match nobody: all 0.
    (app("api", "api").pod_affinity(ZONE, {"app": "nobody"}, weight=10), DB_ON_A, [0, 0, 0]),
])
def test_score(pod: MakePod, existing: list[tuple[MakePod, str]], want: list[int]) -> None:
    assert scores(pod, existing) == want


def test_hard_pod_affinity_weight() -> None:
    existing = [(app("db-0", "db").pod_affinity(ZONE, {"app": "api"}), "x"),
                (app("db-1", "db").pod_affinity(ZONE, {"app": "api"}, weight=3), "a")]
    # zone2 +hard, zone1 +3: weight 1 → a, b 3, x 1; weight 5 → x 5.
    assert scores(app("api", "api"), existing) == [100, 100, 0]
    assert scores(app("api", "api"), existing, InterPodAffinity({"hardPodAffinityWeight": 5})) == [0, 0, 100]
    assert scores(app("api", "api"), existing, InterPodAffinity({"hardPodAffinityWeight": 0})) == [100, 100, 0]
    with pytest.raises(InputError):
        InterPodAffinity({"hardPodAffinityWeight": 101})


def test_normalize_truncates_like_go() -> None:
    """100·(s − min)/(max − min) as a float64, then int64 (truncation)."""
    assert normalize(np.array([0, 1, 2])).tolist() == [0, 50, 100]
    assert normalize(np.array([-3, 0, 0])).tolist() == [0, 100, 100]
    assert normalize(np.array([0, 1, 3])).tolist() == [0, 33, 100]
    assert normalize(np.array([5, 5])).tolist() == [0, 0]
