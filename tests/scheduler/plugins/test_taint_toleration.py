"""TaintToleration: Filter on NoSchedule/NoExecute taints, Score on PreferNoSchedule ones (reverse normalized)."""

import numpy as np
import pytest

from phalanx.api.objects import Taint, Toleration
from phalanx.scheduler.plugins.taint_toleration import TaintToleration
from tests.builders import MakeNode, MakePod, cycle_state, make_cluster

GPU_NODE = MakeNode("gpu").alloc(cpu="8").taint("gpu", "true", "NoSchedule")


def passes(pod: MakePod, node: MakeNode) -> bool:
    cluster = make_cluster([node])
    return bool(TaintToleration().filter(cycle_state(pod, cluster), cluster)[0])


@pytest.mark.parametrize(("pod", "tolerated"), [
    (MakePod(), False),
    (MakePod().toleration("gpu", "true"), True),                              # Equal (the default operator)
    (MakePod().toleration("gpu", "true", operator="Equal"), True),
    (MakePod().toleration("gpu", "false"), False),                            # value differs
    (MakePod().toleration("gpu", operator="Exists"), True),                   # any value
    (MakePod().toleration("other", operator="Exists"), False),                # another key
    (MakePod().toleration(operator="Exists"), True),                          # empty key + Exists: everything
    (MakePod().toleration("gpu", "true", "NoSchedule"), True),
    (MakePod().toleration("gpu", "true", "NoExecute"), False),                # effect differs
    (MakePod().toleration("gpu", "true", "PreferNoSchedule"), False),
    (MakePod().toleration(operator="Exists", effect="NoExecute"), False),
    (MakePod().toleration(operator="Exists", effect="NoSchedule"), True),
])
def test_no_schedule_taint(pod: MakePod, tolerated: bool) -> None:
    assert passes(pod.req(cpu="1"), GPU_NODE) is tolerated


def test_no_execute_taints_filter_too() -> None:
    node = MakeNode("n").alloc(cpu="1").taint("node.kubernetes.io/not-ready", effect="NoExecute")
    assert not passes(MakePod().req(cpu="1"), node)
    assert passes(MakePod().req(cpu="1").toleration("node.kubernetes.io/not-ready", operator="Exists",
                                                    effect="NoExecute", seconds=300), node)


def test_prefer_no_schedule_does_not_filter() -> None:
    assert passes(MakePod().req(cpu="1"), MakeNode("n").alloc(cpu="1").taint("spot", "true", "PreferNoSchedule"))


def test_every_filtering_taint_must_be_tolerated() -> None:
    node = MakeNode("n").alloc(cpu="1").taint("a", "1").taint("b", "2", "NoExecute")
    assert not passes(MakePod().req(cpu="1").toleration("a", "1"), node)
    assert passes(MakePod().req(cpu="1").toleration("a", "1").toleration("b", "2"), node)


def test_toleration_matching_follows_kubernetes() -> None:
    taint = Taint("k", "v", "NoSchedule")
    assert Toleration("k", "Equal", "v").tolerates(taint)
    assert Toleration("k", "Exists").tolerates(taint)
    assert Toleration("", "Exists").tolerates(taint)
    assert Toleration("", "Exists", effect="NoSchedule").tolerates(taint)
    assert not Toleration("k", "Equal", "").tolerates(taint)
    assert Toleration("k", "Equal", "").tolerates(Taint("k", "", "NoSchedule"))
    assert not Toleration("", "Exists", effect="NoExecute").tolerates(taint)


def test_reason_counts_nodes_with_any_untolerated_taint() -> None:
    cluster = make_cluster([MakeNode("a").alloc(cpu="1").taint("gpu", "true"),
                            MakeNode("b").alloc(cpu="1").taint("gpu", "true"),
                            MakeNode("c").alloc(cpu="1").taint("dedicated", "db").taint("gpu", "true"),
                            MakeNode("d").alloc(cpu="1").taint("maintenance", effect="NoExecute"),
                            MakeNode("e").alloc(cpu="1")])
    state = cycle_state(MakePod().req(cpu="1"), cluster)
    plugin = TaintToleration()
    mask = plugin.filter(state, cluster)
    assert mask.tolist() == [False, False, False, False, True]
    # taint_toleration.go Filter: one reason for every taint, without naming it.
    assert dict(plugin.reasons(state, cluster, ~mask)) == {"node(s) had untolerated taint(s)": 4}
    # Tolerating one of node c's two taints does not let it pass.
    state = cycle_state(MakePod().req(cpu="1").toleration("dedicated", "db"), cluster)
    assert plugin.reasons(state, cluster, ~plugin.filter(state, cluster))["node(s) had untolerated taint(s)"] \
        == 4


def test_score_counts_untolerated_prefer_no_schedule_taints_reverse_normalized() -> None:
    cluster = make_cluster([MakeNode("clean").alloc(cpu="1"),
                            MakeNode("one").alloc(cpu="1").taint("spot", "true", "PreferNoSchedule"),
                            MakeNode("three").alloc(cpu="1").taint("spot", "true", "PreferNoSchedule")
                            .taint("old", "true", "PreferNoSchedule").taint("slow", "true", "PreferNoSchedule"),
                            MakeNode("hard").alloc(cpu="1").taint("gpu", "true", "NoSchedule")])
    nodes = np.arange(4)
    plugin = TaintToleration()
    # counts 0, 1, 3, 0 → 100 - 100·c/3: 100, 67, 0, 100 (NoSchedule taints do not count)
    assert plugin.score(cycle_state(MakePod().req(cpu="1"), cluster), cluster, nodes).tolist() == [100, 67, 0, 100]
    # Tolerating `spot` (effect PreferNoSchedule or empty) drops it from the count: 0, 0, 2, 0
    for toleration in (MakePod().toleration("spot", "true", "PreferNoSchedule"), MakePod().toleration("spot", "true")):
        state = cycle_state(toleration.req(cpu="1"), cluster)
        assert plugin.score(state, cluster, nodes).tolist() == [100, 100, 0, 100]
    # A toleration for another effect does not help with PreferNoSchedule
    state = cycle_state(MakePod().req(cpu="1").toleration("spot", "true", "NoSchedule"), cluster)
    assert plugin.score(state, cluster, nodes).tolist() == [100, 67, 0, 100]


def test_score_all_clean_is_100_everywhere() -> None:
    cluster = make_cluster([MakeNode("a").alloc(cpu="1"), MakeNode("b").alloc(cpu="1")])
    state = cycle_state(MakePod().req(cpu="1"), cluster)
    assert TaintToleration().score(state, cluster, np.arange(2)).tolist() == [100, 100]


def test_score_is_left_out_while_no_node_has_a_prefer_no_schedule_taint() -> None:
    # Every node would score 100: the same for all, so the cycle skips the plugin (the total is only compared).
    cluster = make_cluster([MakeNode("a").alloc(cpu="1").taint("gpu", "true", "NoSchedule"),
                            MakeNode("b").alloc(cpu="1")])
    plugin = TaintToleration()
    state = cycle_state(MakePod().req(cpu="1"), cluster)
    assert plugin.skips_score(state, cluster)
    # A node tainted PreferNoSchedule later: the plugin scores again.
    cluster.set_taints(1, (Taint("spot", "true", "PreferNoSchedule"),))
    assert not plugin.skips_score(state, cluster)
    assert plugin.score(state, cluster, np.arange(2)).tolist() == [100, 0]
