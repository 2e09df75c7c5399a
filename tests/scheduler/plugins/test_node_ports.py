"""NodePorts: a pod binding host ports fits only where none of them is in use; preemption frees them."""

from phalanx.scheduler.plugins.node_ports import REASON, NodePorts
from phalanx.scheduler.profiles import builtin
from phalanx.sim.simulation import Simulation
from tests.builders import MakeNode, MakePod, cycle_state, inputs_of, make_cluster

NODES = [MakeNode("a").alloc(cpu="4"), MakeNode("b").alloc(cpu="4"), MakeNode("c").alloc(cpu="4")]


def binding(name: str, host_port: int, protocol: str = "TCP", host_ip: str | None = None) -> MakePod:
    pod = MakePod(name).req(cpu="1")
    entry: dict[str, object] = {"containerPort": 80, "hostPort": host_port, "protocol": protocol}
    if host_ip is not None:
        entry["hostIP"] = host_ip
    pod.spec["containers"][0]["ports"] = [entry]
    return pod


def test_a_node_holding_the_port_is_filtered_out_with_kube_schedulers_reason() -> None:
    cluster = make_cluster(NODES, [(binding("old", 8080), "a"), (binding("dns", 53, "UDP"), "b")])
    plugin = NodePorts()
    state = cycle_state(binding("new", 8080), cluster)
    assert not plugin.skips(state, cluster)
    assert plugin.filter(state, cluster).tolist() == [False, True, True]
    assert dict(plugin.reasons(state, cluster, ~plugin.filter(state, cluster))) == {REASON: 1}
    udp = cycle_state(binding("resolver", 53, "UDP", "10.0.0.9"), cluster)
    assert plugin.filter(udp, cluster).tolist() == [True, False, True]  # 0.0.0.0 in use covers 10.0.0.9


def test_a_pod_without_host_ports_skips_the_filter() -> None:
    cluster = make_cluster(NODES, [(binding("old", 8080), "a")])
    assert NodePorts().skips(cycle_state(MakePod("plain").req(cpu="1"), cluster), cluster)


def test_the_port_is_free_again_when_its_pod_leaves() -> None:
    cluster = make_cluster(NODES, [(binding("old", 8080), "a"), (binding("twin", 8080), "b")])
    cluster.forget("default/old")
    state = cycle_state(binding("new", 8080), cluster)
    assert NodePorts().filter(state, cluster).tolist() == [True, False, True]


def test_pods_asking_for_one_port_spread_one_per_node_and_the_last_waits() -> None:
    inputs = inputs_of(*NODES[:2], *(binding(f"web-{i}", 8080) for i in range(3)))
    sim = Simulation(inputs, builtin("default")).run()
    placed = sorted(r.node for r in sim.pods.values() if r.node is not None)
    assert placed == ["a", "b"]
    waiting = next(r for r in sim.pods.values() if r.node is None)
    assert waiting.message == f"0/2 nodes are available: 2 {REASON}."


def test_preemption_frees_the_port_of_a_lower_priority_pod() -> None:
    """The victim's room is not needed (4 cpu, 2 asked): only its port. The preemptor evicts it and binds."""
    inputs = inputs_of(NODES[0], binding("low", 8080).priority(1).grace(0),
                       binding("high", 8080).priority(100).arrival("10s"))
    sim = Simulation(inputs, builtin("default"))
    sim.recreate_bare_members = False
    sim.run()
    assert sim.pods["default/low"].preempted_count == 1
    assert sim.pods["default/high"].node == "a"
