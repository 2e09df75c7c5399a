"""ClusterState: node arrays, assume/forget, fit checks and the over-commit check."""

import numpy as np
import pytest

from phalanx.cluster.state import StateCorrupted
from tests.builders import MakeNode, MakePod, make_cluster

GI = 2**30


def test_assume_and_forget_move_one_row() -> None:
    cluster = make_cluster([MakeNode("a").alloc(cpu="4", memory="8Gi"), MakeNode("b").alloc(cpu="4", memory="8Gi")])
    pod = MakePod("p").req(cpu="1500m", memory="1Gi").obj()
    cluster.assume(pod, 1)
    cpu, memory, pods = (cluster.column[r] for r in ("cpu", "memory", "pods"))
    assert cluster.requested[1, [cpu, memory, pods]].tolist() == [1500, GI, 1]
    assert cluster.requested[0].tolist() == [0, 0, 0]
    assert cluster.nonzero_requested[1].tolist() == [1500, GI]
    with pytest.raises(ValueError):
        cluster.assume(pod, 0)
    assert cluster.forget("default/p") == 1
    assert not cluster.requested.any() and not cluster.nonzero_requested.any()


def test_best_effort_pods_count_as_non_zero_for_scoring_only() -> None:
    cluster = make_cluster([MakeNode("a").alloc(cpu="4", memory="8Gi"), MakeNode("b").alloc(cpu="4")])
    cluster.assume(MakePod("p").container().obj(), 0)
    assert cluster.requested[0, cluster.column["cpu"]] == 0
    assert cluster.nonzero_requested[0].tolist() == [100, 200 * 2**20]


def test_a_single_node_cluster_counts_a_pod_once() -> None:
    # Regression: the resources × nodes layout once shared memory with `requested` on one-node clusters.
    cluster = make_cluster([MakeNode("only").alloc(cpu="4", memory="8Gi")])
    cluster.assume(MakePod("p").req(cpu="2").obj(), 0)
    assert cluster.requested[0, cluster.column["cpu"]] == 2000
    assert cluster.fits(MakePod("q").req(cpu="2").obj(), 0)


def test_fits_and_overcommitted() -> None:
    cluster = make_cluster([MakeNode("a").alloc(cpu="4", memory="8Gi"), MakeNode("b").alloc(cpu="2")],
                           running=[(MakePod("x").req(cpu="3"), "a")])
    assert cluster.fits(MakePod().req(cpu="1", memory="8Gi").obj(), 0)
    assert not cluster.fits(MakePod().req(cpu="1100m").obj(), 0)
    assert not cluster.fits(MakePod().req(memory="1").obj(), 1)     # no memory on b at all
    assert not cluster.overcommitted().any()
    cluster.assume(MakePod("y").req(cpu="2").obj(), 0)                 # a snapshot may be over, the check sees it
    assert cluster.overcommitted().tolist() == [True, False]
    assert cluster.free()[0, cluster.column["cpu"]] == -1000


def test_a_new_resource_adds_a_zero_column() -> None:
    cluster = make_cluster([MakeNode("a").alloc(cpu="4"), MakeNode("gpu").alloc({"nvidia.com/gpu": 4}, cpu="4")],
                           running=[(MakePod("x").req(cpu="1"), "a")])
    col = cluster.column["nvidia.com/gpu"]
    assert cluster.allocatable[:, col].tolist() == [0, 4]
    assert not cluster.fits(MakePod().req({"example.com/fpga": 1}).obj(), 1)   # unknown to every node
    assert cluster.allocatable.shape[1] == len(cluster.resources)
    assert cluster.forget("default/x") == 0                                    # bound pods survive the widening
    assert not cluster.requested.any()


def test_labels_as_ids() -> None:
    cluster = make_cluster([MakeNode("a").alloc(cpu="1").label("zone", "x"), MakeNode("b").alloc(cpu="1"),
                            MakeNode("c").alloc(cpu="1").label("zone", "y").label("cores", "16")])
    assert cluster.labels.has("zone").tolist() == [True, False, True]
    assert cluster.labels.equals_any("zone", ("y", "z")).tolist() == [False, False, True]
    assert np.isnan(cluster.labels.numeric("cores")[0]) and cluster.labels.numeric("cores")[2] == 16


def test_hidden_pods_leave_the_pod_index_and_all_come_back_even_after_an_error() -> None:
    cluster = make_cluster([MakeNode("a").alloc(cpu="4", memory="8Gi", pods="10")])
    web = MakePod("web").req(cpu="1").label("app", "web").obj()
    loner = MakePod("loner").req(cpu="1").label("app", "db") \
        .pod_anti_affinity("kubernetes.io/hostname", {"app": "web"}).obj()
    cluster.assume(web, 0)
    cluster.assume(loner, 0)
    cluster.mark_terminating(web.key)
    index = cluster.pod_index
    before = (len(index), cluster.affinity_pods, len(index.terms))
    with pytest.raises(RuntimeError), cluster.hidden_pods() as hidden:
        hidden.hide(web.key)
        hidden.hide(loner.key)
        hidden.hide(loner.key)  # twice: once hidden is enough
        assert (len(index), cluster.affinity_pods, len(index.terms)) == (0, 0, 0)
        hidden.show(loner.key)
        assert (len(index), cluster.affinity_pods) == (1, 1)
        raise RuntimeError("the dry run failed")
    assert (len(index), cluster.affinity_pods, len(index.terms)) == before
    assert cluster.bound.keys() == {web.key, loner.key}  # resources were never touched
    assert index._terminating[index._slot[web.key]]  # still terminating once shown again


def test_a_pod_bound_twice_or_past_allocatable_is_state_corruption() -> None:
    cluster = make_cluster([MakeNode("a").alloc(cpu="2", memory="8Gi")])
    small, big = MakePod("small").req(cpu="1", memory="1Gi").obj(), MakePod("big").req(cpu="2", memory="1Gi").obj()
    cluster.assume(small, 0)
    cluster.check_fits("default/small")
    with pytest.raises(StateCorrupted, match="already bound"):
        cluster.assume(small, 0)
    cluster.assume(big, 0)
    with pytest.raises(StateCorrupted, match="node a is over-committed in cpu with pod default/big"):
        cluster.check_fits("default/big")
