"""What the simulator calls on every workload controller, and what it answers.

A controller takes in the objects of its `kinds` as they arrive, hears about pods (bound, terminating, gone)
and nodes (arrived, removed), and answers each call with `Actions` for the simulator to carry out. The
methods with a body are defaults for a controller that ignores that event: a controller subclasses
`Controller` to inherit them. Every controller is built once per simulation from a `Setup`
(phalanx.controllers.registry lists them).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, Self

from phalanx.api.apps import ReplicaSet
from phalanx.api.objects import Job, Node, Pod, PodGroup
from phalanx.controllers.job import JobController


@dataclass(slots=True)
class Actions:
    pod_groups: list[PodGroup] = field(default_factory=list)  # to create now, before the pods
    pods: list[Pod] = field(default_factory=list)  # to create now
    jobs: list[Job] = field(default_factory=list)  # to start now (the Job controller takes them)
    delete_jobs: list[str] = field(default_factory=list)  # Jobs deleted: their pods go now
    delete_pods: list[str] = field(default_factory=list)  # running pods (not terminating) deleted now
    scale_down: list[str] = field(default_factory=list)  # pending or running pods a scale-down deletes now
    wake: list[tuple[float, str]] = field(default_factory=list)  # (time, key) at which to call `woken(key)`

    def extend(self, more: Actions) -> None:
        for name in self.__slots__:
            getattr(self, name).extend(getattr(more, name))


NOTHING = Actions()  # shared: never changed


@dataclass(slots=True)
class Given:
    """What the input already holds, for controllers to adopt: its nodes, its pods by (controller kind, owner key), and
    its ReplicaSets. Indexed once, so that each controller finds its own without a scan of every pod (a
    snapshot holds thousands of controllers)."""

    pods: Iterable[Pod] = ()
    replica_sets: Iterable[ReplicaSet] = ()
    nodes: Iterable[Node] = ()  # the nodes present at the start
    by_owner: dict[tuple[str, str], list[Pod]] = field(default_factory=dict)
    # Pods controlled by a ReplicaSet, by the Deployment its name implies (`<deployment>-<hash>`).
    by_deployment: dict[str, list[Pod]] = field(default_factory=dict)
    replica_set_keys: set[str] = field(default_factory=set)  # the input's ReplicaSets (namespace/name)
    managed: set[str] = field(default_factory=set)  # Deployments (namespace/name) whose ReplicaSets are given

    def __post_init__(self) -> None:
        for pod in self.pods:
            if pod.controller is not None and pod.owner is not None:
                self.by_owner.setdefault((pod.controller, pod.owner), []).append(pod)
                if pod.controller == "ReplicaSet":
                    self.by_deployment.setdefault(pod.owner.rsplit("-", 1)[0], []).append(pod)
        replica_sets = list(self.replica_sets)
        self.replica_set_keys = {rs.key for rs in replica_sets}
        self.managed = {f"{rs.namespace}/{rs.owner.name}" for rs in replica_sets
                        if rs.owner is not None and rs.owner.kind == "Deployment"}

    def owned(self, key: str, kind: str) -> list[Pod]:
        """The input's pods whose controller is the `kind` object `key`."""
        return self.by_owner.get((kind, key), [])


@dataclass(slots=True)
class Setup:
    """What a controller is built from: the run's seed and horizon, the Job controller (which runs the Jobs
    others create), the input's objects to adopt, and the controllers built before it."""

    jobs: JobController
    given: Given
    seed: int = 0
    until: float | None = None
    built: list[Controller] = field(default_factory=list)

    def controller(self, kind: type[Any]) -> Controller:
        """The controller, built before this one, that takes objects of `kind`."""
        return next(c for c in self.built if kind in c.kinds)


class Controller(Protocol):
    """A workload controller as the simulator drives it."""

    kinds: ClassVar[tuple[type[Any], ...]]  # the api objects it takes in

    @classmethod
    def build(cls, setup: Setup) -> Self:
        return cls()

    def arrive(self, obj: Any, now: float, given: Given) -> Actions:
        """An object of one of its kinds arrives (`given`: the input's pods and ReplicaSets to adopt)."""
        ...

    def woken(self, key: str, now: float) -> Actions:
        """A time it asked for (`Actions.wake`) has come."""
        return NOTHING

    def node_arrived(self, node: Node, now: float) -> Actions:
        return NOTHING

    def node_removed(self, name: str) -> None:
        return None

    def pod_bound(self, pod: Pod, now: float) -> Actions:
        return NOTHING

    def pod_terminating(self, pod: Pod, now: float) -> Actions:
        """The pod was evicted and is terminating (it is gone after its grace period)."""
        return NOTHING

    def pod_gone(self, pod: Pod, now: float) -> Actions:
        """The pod is gone (deleted, finished, or evicted and its grace over)."""
        return NOTHING

    def replaces(self, pod: Pod) -> bool:
        """It makes a new pod in this one's place: once deleted, this one is gone for good."""
        return False
