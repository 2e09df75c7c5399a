"""Verification's hints, given to the Scheduler when it is made: the hinted node is taken among equally best
nodes (never over a better one), and every decision's best nodes are noted."""

from __future__ import annotations

from phalanx.scheduler.decisions import Bind
from phalanx.scheduler.hints import Hints
from phalanx.scheduler.profiles import builtin
from phalanx.scheduler.scheduler import Scheduler
from tests.builders import MakeNode, MakePod


def test_a_hinted_node_is_taken_among_equally_best_nodes() -> None:
    nodes = [MakeNode(f"n{i}").alloc(cpu="4", memory="8Gi").obj() for i in range(3)]
    s = Scheduler(builtin("default"), nodes, hints=Hints(nodes={"default/p": "n1"}))  # unhinted it goes to n2
    s.add_pod(MakePod("p").req(cpu="1", memory="1Gi").obj(), 0.0)
    (bind,) = [d for d in s.schedule(0.0) if isinstance(d, Bind)]
    assert bind.node == "n1"
    assert s.ties() == {"default/p": ("n0", "n1", "n2")}


def test_without_hints_no_ties_are_noted() -> None:
    s = Scheduler(builtin("default"), [MakeNode("n0").alloc(cpu="4", memory="8Gi").obj()])
    s.add_pod(MakePod("p").req(cpu="1", memory="1Gi").obj(), 0.0)
    s.schedule(0.0)
    assert s.ties() == {}
