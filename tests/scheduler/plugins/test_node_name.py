"""NodeName: a pod naming a node fits only that node."""

import dataclasses

from phalanx.api.objects import Pod
from phalanx.scheduler.plugins.node_name import NodeName
from tests.builders import MakeNode, MakePod, cycle_state, make_cluster

NODES = [MakeNode("a").alloc(cpu="1"), MakeNode("b").alloc(cpu="1"), MakeNode("c").alloc(cpu="1")]


def naming(node: str | None) -> Pod:
    pod = MakePod().req(cpu="1").obj()
    return dataclasses.replace(pod, placement=dataclasses.replace(pod.placement, node_name=node))


def test_only_the_named_node_fits() -> None:
    cluster = make_cluster(NODES)
    plugin = NodeName()
    assert plugin.filter(cycle_state(naming("b"), cluster), cluster).tolist() == [False, True, False]
    assert plugin.filter(cycle_state(naming(None), cluster), cluster).tolist() == [True, True, True]
    assert plugin.filter(cycle_state(naming("zz"), cluster), cluster).tolist() == [False, False, False]


def test_reason() -> None:
    cluster = make_cluster(NODES)
    state = cycle_state(naming("b"), cluster)
    plugin = NodeName()
    assert dict(plugin.reasons(state, cluster, ~plugin.filter(state, cluster))) == {
        "node(s) didn't match the requested node name": 2}
