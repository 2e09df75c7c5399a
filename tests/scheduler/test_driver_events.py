"""What a live driver tells the Scheduler beyond "add": bindings confirmed or failed (assume, then bind), node
updates and removals, pods terminating, PodGroups deleted."""

from __future__ import annotations

from phalanx.scheduler.decisions import Bind, Unschedulable
from tests.builders import MakeNode
from tests.scheduler.test_preemption import Cluster, node, pod
from tests.scheduler.test_workload_preemption import gang_cluster, group, members


def binds(decisions: list[object]) -> dict[str, str]:
    return {d.pod.name: d.node for d in decisions if isinstance(d, Bind)}


def test_a_failed_binding_unreserves_the_pod_and_queues_it_again_through_backoff() -> None:
    cluster = Cluster(node("node-a", "2"))
    assert binds(cluster.schedule(pod("p", "2"))) == {"p": "node-a"}
    s = cluster.scheduler
    assert s.assumed == {"default/p": ""}
    assert s.bind_failed("default/p", 1.0) == ["default/p"]
    assert "default/p" not in s.cluster.bound and not s.cluster.requested.any()
    assert s.schedule(1.5) == []  # backing off (1 s after the failure, to the end of that second's window)
    assert s.schedule(2.5) == []  # an error's backoff is not cut short when activeQ is empty
    again = s.schedule(3.0)
    assert binds(again) == {"p": "node-a"}
    s.confirm_bind("default/p")
    assert s.assumed == {}
    assert s.bind_failed("default/p", 3.0) == []  # a confirmed pod cannot fail any more


def test_a_failed_member_rolls_back_the_gang_members_not_yet_bound_when_below_min_count() -> None:
    cluster = gang_cluster(node("node-a", "8"))
    cluster.group(group("g", 3))
    decisions = cluster.schedule(*members("g", 3, "2"))
    assert set(binds(decisions)) == {"g-0", "g-1", "g-2"}
    s = cluster.scheduler
    s.confirm_bind("default/g-0")  # the driver bound g-0, then g-1 failed: g-2 must not be bound
    rolled = s.bind_failed("default/g-1", 1.0)
    assert rolled == ["default/g-1", "default/g-2"]
    assert set(s.cluster.bound) == {"default/g-0"}
    retry = s.schedule(3.0)
    assert set(binds(retry)) == {"g-1", "g-2"}


def test_a_failed_member_of_a_gang_still_at_min_count_rolls_back_alone() -> None:
    cluster = gang_cluster(node("node-a", "8"))
    cluster.group(group("g", 2))
    cluster.schedule(*members("g", 3, "2"))
    s = cluster.scheduler
    s.confirm_bind("default/g-0")
    s.confirm_bind("default/g-1")
    assert s.bind_failed("default/g-2", 1.0) == ["default/g-2"]
    assert set(s.cluster.bound) == {"default/g-0", "default/g-1"}


def test_node_updates_taints_cordon_allocatable_and_removal() -> None:
    cluster = Cluster(node("node-a", "2"), node("node-b", "2"))
    s = cluster.scheduler
    s.update_nodes([MakeNode("node-a").alloc(cpu="2", memory="64Gi", pods="110").taint("gpu", "true").obj(),
                    MakeNode("node-b").alloc(cpu="2", memory="64Gi", pods="110").obj()], 0.0)
    assert binds(cluster.schedule(pod("p", "1"))) == {"p": "node-b"}
    cordoned = MakeNode("node-b").alloc(cpu="2", memory="64Gi", pods="110").obj()
    cordoned.unschedulable = True
    s.update_nodes([cordoned], 1.0)
    failed = [d for d in s.schedule(1.0)] + cluster.schedule(pod("q", "1"), now=1.0)
    assert any(isinstance(d, Unschedulable) and d.pod.name == "q" for d in failed)
    s.update_nodes([MakeNode("node-c").alloc(cpu="4", memory="64Gi", pods="110").obj()], 2.0)  # a new node
    assert binds(s.schedule(3.0)) == {"q": "node-c"}
    s.delete_node("node-c", 4.0)
    message = [d.message for d in cluster.schedule(pod("r", "1"), now=4.0) if isinstance(d, Unschedulable)]
    assert message and message[0].startswith("0/3 nodes are available")
    bigger = MakeNode("node-a").alloc(cpu="8", memory="64Gi", pods="110").obj()
    s.update_nodes([bigger], 5.0)  # node-a grows and loses its taint
    assert binds(s.schedule(6.0)) == {"r": "node-a"}


def test_node_label_changes_move_selectors_and_spread_domains() -> None:
    cluster = Cluster(node("node-a", "4", zone="z1"), node("node-b", "4", zone="z1"))
    s = cluster.scheduler
    message = [d.message for d in cluster.schedule(pod("p", "1", selector={"zone": "z2"}))
               if isinstance(d, Unschedulable)]
    assert message == ["0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."]
    relabelled = MakeNode("node-b").alloc(cpu="4", memory="64Gi", pods="110").label("zone", "z2").obj()
    s.update_nodes([relabelled], 1.0)
    assert binds(s.schedule(2.0)) == {"p": "node-b"}
    s.update_nodes([MakeNode("node-b").alloc(cpu="4", memory="64Gi", pods="110").obj()], 3.0)  # label removed
    message = [d.message for d in cluster.schedule(pod("q", "1", selector={"zone": "z2"}), now=3.0)
               if isinstance(d, Unschedulable)]
    assert message == ["0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."]


def test_a_terminating_pod_keeps_its_room_until_it_is_deleted() -> None:
    cluster = Cluster(node("node-a", "2"))
    cluster.running("node-a", pod("old", "2"))
    s = cluster.scheduler
    s.pod_terminating("default/old", 0.0)
    assert binds(cluster.schedule(pod("new", "2"))) == {}
    s.delete_pod("default/old", 1.0)
    assert binds(s.schedule(2.0)) == {"new": "node-a"}


def test_a_deleted_pod_group_gates_its_members_again() -> None:
    cluster = gang_cluster(node("node-a", "1"))
    cluster.group(group("g", 2))
    cluster.schedule(*members("g", 2, "1"))  # one fits: the gang waits
    s = cluster.scheduler
    s.delete_pod_group("default/g", 1.0)
    assert s.pod_message("default/g-0") == "waiting for PodGroup default/g to be created"


def test_a_deleted_pod_disruption_budget_no_longer_protects_its_pods() -> None:
    from tests.scheduler.test_preemption import evicted, pdb

    def victim(delete_it: bool) -> list[str]:
        cluster = Cluster(node("node-a", "2"), node("node-b", "2"))
        # Without a budget the later-started `guarded` goes (pickOneNodeForPreemption's start-time rule).
        cluster.running("node-a", pod("guarded", "2", 0, labels={"app": "db"}, start=-10))
        cluster.running("node-b", pod("plain", "2", 0, start=-100))
        cluster.scheduler.add_pdb(pdb("db", min_available=1, app="db"))
        if delete_it:
            cluster.scheduler.delete_pdb("default/db")
        return evicted(cluster.schedule(pod("urgent", "2", 10)))

    assert victim(delete_it=False) == ["plain"]
    assert victim(delete_it=True) == ["guarded"]
