"""Queueing hints for an assigned pod being added (kube-scheduler v1.37's AssignedPod/Add event), for pods and
for the members of a PodGroup, whose rejections tell which events can change the outcome of the group's next
retry (a failed group is retried on its backoff whatever the events).

A pod rejected by InterPodAffinity waits until a bound pod matches all of its required affinity terms
(interpodaffinity/plugin.go isSchedulableAfterAssignedPodChange); one rejected by PodTopologySpread until a
bound pod in its namespace matches a selector of its DoNotSchedule constraints (podtopologyspread/plugin.go
isSchedulableAfterAssignedPodChange). Plugins without such a hint (NodeResourcesFit, NodeAffinity) skip the
event: the pod stays unschedulable until another event moves it.
"""

from __future__ import annotations

from phalanx.api.objects import Pod
from phalanx.scheduler.decisions import Bind
from phalanx.scheduler.entries import GROUP, POD
from phalanx.scheduler.plugins.inter_pod_affinity import InterPodAffinity
from phalanx.scheduler.plugins.pod_topology_spread import PodTopologySpread
from phalanx.scheduler.queue import Where
from tests.builders import MakeNode, MakePod
from tests.scheduler.test_preemption import Cluster
from tests.scheduler.test_workload_preemption import gang_cluster, group

ZONE = "topology.kubernetes.io/zone"


def zone_node(name: str, zone: str, cpu: str = "4") -> MakeNode:
    return MakeNode(name).alloc(cpu=cpu, memory="64Gi", pods="110").label(ZONE, zone)


def app(name: str, label: str, namespace: str = "default") -> MakePod:
    return MakePod(name, namespace).req(cpu="1", memory="1Gi").label("app", label)


def where(cluster: Cluster, name: str) -> Where:
    return cluster.scheduler.queue.entries[POD + f"default/{name}"].where


def attempts(cluster: Cluster, name: str) -> int:
    """How many cycles the pod has failed: a pod the event moved was tried again (and failed again)."""
    return cluster.scheduler.queue.entries[POD + f"default/{name}"].attempts


def bound(decisions: list[object]) -> dict[str, str]:
    return {d.pod.name: d.node for d in decisions if isinstance(d, Bind)}


def test_a_pod_waiting_for_pod_affinity_retries_when_a_matching_pod_binds() -> None:
    cluster = Cluster(zone_node("a1", "zone-a"), zone_node("b1", "zone-b"))
    follower = app("follower", "batch").pod_affinity(ZONE, {"app": "web"}).obj()
    assert bound(cluster.schedule(follower)) == {}
    assert where(cluster, "follower") is Where.UNSCHEDULABLE
    # The web pod binds at t=5: the follower is queued again (through backoff) and joins its zone.
    web = app("web", "web").node_selector({ZONE: "zone-b"}).obj()
    assert bound(cluster.schedule(web, now=5.0)) == {"web": "b1", "follower": "b1"}


def test_a_bound_pod_that_matches_only_some_affinity_terms_does_not_requeue() -> None:
    cluster = Cluster(zone_node("a1", "zone-a"))
    follower = (app("follower", "batch").pod_affinity(ZONE, {"app": "web"})
                .pod_affinity(ZONE, {"tier": "front"}).obj())
    cluster.schedule(follower)
    cluster.schedule(app("web", "web").obj(), now=5.0)  # app=web, but no tier=front
    assert attempts(cluster, "follower") == 1


def test_a_pod_in_another_namespace_does_not_satisfy_the_default_namespace_of_a_term() -> None:
    cluster = Cluster(zone_node("a1", "zone-a"))
    cluster.schedule(app("follower", "batch").pod_affinity(ZONE, {"app": "web"}).obj())
    cluster.schedule(app("web", "web", namespace="other").obj(), now=5.0)
    assert attempts(cluster, "follower") == 1


def test_a_pod_short_of_cpu_is_not_moved_by_a_pod_binding_elsewhere() -> None:
    cluster = Cluster(zone_node("a1", "zone-a", cpu="2"), zone_node("b1", "zone-b", cpu="2"))
    big = MakePod("big").req(cpu="3", memory="1Gi").label("app", "web").obj()
    cluster.schedule(big)
    assert where(cluster, "big") is Where.UNSCHEDULABLE
    cluster.schedule(app("web", "web").obj(), now=5.0)  # NodeResourcesFit has no hint for an added pod
    assert attempts(cluster, "big") == 1


def test_a_pod_rejected_by_spread_retries_when_a_matching_pod_binds_in_its_namespace() -> None:
    cluster = Cluster(zone_node("a1", "zone-a", cpu="8"), zone_node("b1", "zone-b", cpu="1"))
    # zone-a already has two app=web pods; b1 is full: skew would reach 3 with maxSkew 1.
    cluster.running("a1", app("web-0", "web").obj(), app("web-1", "web").obj())
    cluster.running("b1", MakePod("filler").req(cpu="1", memory="1Gi").obj())
    spread = app("spread", "web").spread(1, ZONE, match={"app": "web"}).obj()
    assert bound(cluster.schedule(spread)) == {}
    assert where(cluster, "spread") is Where.UNSCHEDULABLE
    cluster.schedule(app("other-ns", "web", namespace="other").obj(), now=5.0)
    cluster.schedule(app("api", "api").obj(), now=6.0)
    assert attempts(cluster, "spread") == 1  # another namespace, and labels that match no selector
    assert bound(cluster.schedule(app("web-2", "web").obj(), now=7.0)) == {"web-2": "a1"}
    assert attempts(cluster, "spread") == 2  # tried again (zone-a now 3 ahead: still unschedulable)


def pod_with(*builders: MakePod) -> list[Pod]:
    return [b.obj() for b in builders]


def test_the_hints_restate_upstream_for_added_pods() -> None:
    affinity = InterPodAffinity()
    pending = app("p", "batch").pod_affinity(ZONE, {"app": "web"}).obj()
    web, api = pod_with(app("w", "web"), app("a", "api"))
    assert affinity.requeue_after_assigned_pod_add(pending, web)
    assert not affinity.requeue_after_assigned_pod_add(pending, api)
    anti_only = app("q", "batch").pod_anti_affinity(ZONE, {"app": "web"}).obj()
    assert not affinity.requeue_after_assigned_pod_add(anti_only, web)  # no affinity term: never
    spread = PodTopologySpread()
    spreading = app("s", "web").spread(1, ZONE, match={"app": "web"}).obj()
    assert spread.requeue_after_assigned_pod_add(spreading, web)
    assert not spread.requeue_after_assigned_pod_add(spreading, api)
    soft = app("t", "web").spread(1, ZONE, when="ScheduleAnyway", match={"app": "web"}).obj()
    assert not spread.requeue_after_assigned_pod_add(soft, web)  # only DoNotSchedule constraints count


def test_a_gang_whose_members_wait_for_pod_affinity_binds_at_its_retry_after_a_matching_pod_binds() -> None:
    # A failed group cycle retries on its backoff whatever the events (requeuePodGroup: no rejecting plugin is
    # recorded); the members' rejections only tell which events can change the outcome of the next retry.
    cluster = gang_cluster(zone_node("a1", "zone-a"), zone_node("b1", "zone-b"))
    cluster.group(group("g", 2))
    gang = [app(f"g-{i}", "batch").group("g").pod_affinity(ZONE, {"app": "web"}).obj() for i in range(2)]
    assert bound(cluster.schedule(*gang)) == {}
    entry = cluster.scheduler.queue.entries[GROUP + "default/g"]
    assert entry.where is Where.UNSCHEDULABLE and entry.attempts == 1  # asleep: its retries would fail the same way
    cluster.schedule(app("api", "api").obj(), now=5.0)
    assert entry.where is Where.UNSCHEDULABLE and entry.attempts == 1  # matches no term: still asleep
    web = app("web", "web").node_selector({ZONE: "zone-a"}).obj()
    assert bound(cluster.schedule(web, now=6.0)) == {"web": "a1"}
    assert cluster.scheduler.queue.next_backoff() == 10.0  # retries at 2, 5, 10 s
    assert bound(cluster.schedule(now=10.0)) == {"g-0": "a1", "g-1": "a1"}
