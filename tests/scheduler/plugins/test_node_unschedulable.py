"""NodeUnschedulable: a cordoned node takes only pods tolerating node.kubernetes.io/unschedulable:NoSchedule."""

import pytest

from phalanx.scheduler.plugins.node_unschedulable import NodeUnschedulable
from tests.builders import MakeNode, MakePod, cycle_state, make_cluster

NODES = [MakeNode("cordoned").alloc(cpu="1").unschedulable(), MakeNode("open").alloc(cpu="1")]


@pytest.mark.parametrize(("pod", "allowed"), [
    (MakePod(), [False, True]),
    (MakePod().toleration("node.kubernetes.io/unschedulable", operator="Exists", effect="NoSchedule"), [True, True]),
    (MakePod().toleration("node.kubernetes.io/unschedulable", operator="Exists"), [True, True]),
    (MakePod().toleration(operator="Exists"), [True, True]),
    (MakePod().toleration("node.kubernetes.io/unschedulable", operator="Exists", effect="NoExecute"), [False, True]),
    (MakePod().toleration("node.kubernetes.io/unschedulable", "true"), [False, True]),  # the taint has no value
])
def test_cordoned_nodes(pod: MakePod, allowed: list[bool]) -> None:
    cluster = make_cluster(NODES)
    assert NodeUnschedulable().filter(cycle_state(pod.req(cpu="1"), cluster), cluster).tolist() == allowed


def test_reason() -> None:
    cluster = make_cluster(NODES)
    state = cycle_state(MakePod().req(cpu="1"), cluster)
    plugin = NodeUnschedulable()
    assert dict(plugin.reasons(state, cluster, ~plugin.filter(state, cluster))) == {"node(s) were unschedulable": 1}
