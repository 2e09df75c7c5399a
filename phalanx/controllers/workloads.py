"""The workload controllers together, as the simulator drives them: every controller the registry lists
(phalanx.controllers.registry), built once, told of each object of its kinds and of every pod and node event;
their `Actions` merged in registry order for the simulator to carry out. The scale subresource (an HPA's
target: a Deployment, ReplicaSet or StatefulSet) is answered here too."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from phalanx.api.apps import ReplicaSet, StatefulSet
from phalanx.api.objects import Node, Pod
from phalanx.controllers import registry
from phalanx.controllers.job import JobController
from phalanx.controllers.protocol import NOTHING, Actions, Controller, Given, Setup
from phalanx.controllers.replicaset import ReplicaSetController
from phalanx.controllers.statefulset import StatefulSetController


def _merged(results: Sequence[Actions]) -> Actions:
    """One `Actions` holding each of `results`' lists in order (NOTHING when all are empty)."""
    found = [r for r in results if r is not NOTHING]
    if not found:
        return NOTHING
    if len(found) == 1:
        return found[0]
    out = Actions()
    for actions in found:
        out.extend(actions)
    return out


@dataclass(slots=True)
class WorkloadControllers:
    jobs: JobController
    existing: list[Pod] = field(default_factory=list)  # the input's pods, adopted by the owners they name
    replica_sets: list[ReplicaSet] = field(default_factory=list)  # the input's, adopted by their Deployments
    nodes: list[Node] = field(default_factory=list)  # the nodes present at the start
    seed: int = 0
    until: float | None = None
    given: Given = field(init=False)
    controllers: list[Controller] = field(init=False)
    rs: ReplicaSetController = field(init=False)
    sts: StatefulSetController = field(init=False)
    _by_kind: dict[type[Any], Controller] = field(init=False)
    _wakers: dict[str, Controller] = field(default_factory=dict)  # key of an asked wake-up -> who asked
    replicas_version: int = 0  # bumped by whatever may change some `replicas` (an object arrives, a scale)

    def __post_init__(self) -> None:
        self.given = Given(self.existing, self.replica_sets, self.nodes)
        setup = Setup(self.jobs, self.given, seed=self.seed, until=self.until)
        for build in registry.CONTROLLERS:
            setup.built.append(build.build(setup))
        self.controllers = setup.built
        self._by_kind = {kind: c for c in self.controllers for kind in c.kinds}
        rs, sts = setup.controller(ReplicaSet), setup.controller(StatefulSet)
        assert isinstance(rs, ReplicaSetController) and isinstance(sts, StatefulSetController)
        self.rs, self.sts = rs, sts

    def arrive(self, obj: Any, now: float) -> Actions:
        self.replicas_version += 1
        controller = self._by_kind[type(obj)]
        return self._asked(controller, controller.arrive(obj, now, self.given))

    def woken(self, key: str, now: float) -> Actions:
        controller = self._wakers[key]
        return self._asked(controller, controller.woken(key, now))

    def _asked(self, controller: Controller, actions: Actions) -> Actions:
        for _, key in actions.wake:
            self._wakers[key] = controller
        return actions

    def _scaled(self, kind: str, key: str) -> tuple[str, str] | None:
        if kind == "Deployment":
            rs = self.rs.deployments.get(key)
            return None if rs is None else ("ReplicaSet", rs)
        if kind in ("ReplicaSet", "StatefulSet"):
            return kind, key
        return None

    def scaled_owner(self, kind: str, key: str) -> tuple[str, str] | None:
        """(controller kind, owner key) of the pods a Deployment, ReplicaSet or StatefulSet runs."""
        return self._scaled(kind, key)

    def replicas(self, kind: str, key: str) -> int | None:
        """`spec.replicas` of a Deployment (its ReplicaSet's), ReplicaSet or StatefulSet; None if unknown."""
        found = self._scaled(kind, key)
        if found is None:
            return None
        return self.rs.replicas(found[1]) if found[0] == "ReplicaSet" else self.sts.replicas(found[1])

    def replica_counts(self, targets: Sequence[tuple[str, str]]) -> list[int | None]:
        """`replicas` of many (kind, key) targets at once (an HPA bank's sync)."""
        deployments, replica_sets, stateful_sets = self.rs.deployments, self.rs.sets, self.sts.sets
        out: list[int | None] = []
        for kind, key in targets:
            if kind == "Deployment":
                rs = deployments.get(key)
                record = replica_sets.get(rs) if rs is not None else None
                out.append(None if record is None else record.replica_set.replicas)
            elif kind == "ReplicaSet":
                record = replica_sets.get(key)
                out.append(None if record is None else record.replica_set.replicas)
            elif kind == "StatefulSet":
                stateful = stateful_sets.get(key)
                out.append(None if stateful is None else stateful.stateful_set.replicas)
            else:
                out.append(None)
        return out

    def scale(self, kind: str, key: str, replicas: int, now: float, rank: Callable[[str], Any]) -> Actions:
        """The scale subresource: new pods, or pods to delete (`rank` orders a ReplicaSet's candidates)."""
        self.replicas_version += 1
        found = self._scaled(kind, key)
        if found is None:
            return Actions()
        if found[0] == "ReplicaSet":
            pods, gone = self.rs.scale(found[1], replicas, now, rank)
        else:
            pods, gone = self.sts.scale(found[1], replicas, now)
        return Actions(pods=pods, scale_down=gone)

    def node_removed(self, name: str) -> None:
        for controller in self.controllers:
            controller.node_removed(name)

    def node_added(self, node: Node, now: float) -> Actions:
        return _merged([c.node_arrived(node, now) for c in self.controllers])

    def bound(self, pod: Pod, now: float) -> Actions:
        return _merged([c.pod_bound(pod, now) for c in self.controllers])

    def replaces(self, pod: Pod) -> bool:
        """Its controller replaces it by a new pod (ReplicaSet, DaemonSet): once deleted it is gone for good."""
        return any(c.replaces(pod) for c in self.controllers)

    def terminating(self, pod: Pod, now: float) -> Actions:
        """The pod was evicted and is terminating: a ReplicaSet replaces it at once; a LeaderWorkerSet deletes
        the rest of its group (which `gone` makes again)."""
        return _merged([c.pod_terminating(pod, now) for c in self.controllers])

    def gone(self, pod: Pod, now: float) -> Actions:
        """The pod is gone (deleted, finished, or evicted and its grace over): its controller makes another."""
        return _merged([c.pod_gone(pod, now) for c in self.controllers])
