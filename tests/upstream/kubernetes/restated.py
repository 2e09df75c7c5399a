"""kube-scheduler v1.37.2's own integration cases, restated as Phalanx inputs.

Each `Case` names its upstream file (under `k8s.io/kubernetes@v1.37.2/test/integration/scheduler/`), the Go test
function and the case's name exactly as upstream writes them. Its objects are what the case creates, in the order
it creates them (a later step gets a later `phalanx.dev/arrival`), its deletions are the pods a step deletes, and
its check asserts what upstream asserts. A case whose steps Phalanx's inputs cannot say at all is an
`Unexpressed` entry with the reason; a case restated whose outcome differs from upstream's carries `differs`
(the test is then a strict xfail: it fails the suite once Phalanx starts to agree).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import pytest

from phalanx.api.kinds import KINDS
from phalanx.api.objects import Pod, PodGroup, Source
from phalanx.scheduler.profiles import builtin
from phalanx.sim.records import PodRecord
from phalanx.sim.run import simulate
from phalanx.sim.simulation import Simulation
from phalanx.sim.trace_file import Trace
from tests.builders import Buildable, _doc, inputs_of

UPSTREAM = "k8s.io/kubernetes@v1.37.2/test/integration/scheduler"


@dataclass(frozen=True)
class Outcome:
    """The end of a restated case's run, read the way upstream's steps read the cluster."""

    sim: Simulation

    def record(self, pod: str) -> PodRecord:
        key = pod if "/" in pod else f"default/{pod}"
        assert key in self.sim.pods, f"no pod {key} in the run (pods: {sorted(self.sim.pods)})"
        return self.sim.pods[key]

    def node(self, pod: str) -> str | None:
        """The node the pod is bound to (or ran on), None while it never bound."""
        return self.record(pod).node

    def bound(self, pod: str) -> bool:
        return self.record(pod).node is not None

    def pending(self, pod: str) -> bool:
        record = self.record(pod)
        return record.node is None and record.phase == "Pending"

    def preempted(self, pod: str) -> bool:
        """Evicted by preemption at least once (upstream: the victim was deleted)."""
        return self.record(pod).preempted_count > 0

    def bound_at(self, pod: str) -> float | None:
        return self.record(pod).bound_at

    def message(self, pod: str) -> str | None:
        return self.record(pod).message

    def group_scheduled(self, group: str) -> bool:
        """The PodGroup's PodGroupInitiallyScheduled condition is True."""
        key = group if "/" in group else f"default/{group}"
        condition = self.sim.groups[key].conditions.get("PodGroupInitiallyScheduled") or {}
        return condition.get("status") == "True"


@dataclass(frozen=True)
class Case:
    file: str  # relative to UPSTREAM, e.g. "podgroup/podgroup_test.go"
    test: str  # the Go test function, e.g. "TestPodGroupScheduling"
    name: str  # the case's name as upstream writes it
    objects: tuple[Buildable, ...]
    check: Callable[[Outcome], None]
    deletions: tuple[tuple[float, str], ...] = ()  # (time, pod key) a step deletes
    updates: tuple[tuple[float, Buildable], ...] = ()  # (time, the object's new state): a Pod's gates, a PodGroup
    group_deletions: tuple[tuple[float, str], ...] = ()  # (time, PodGroup key) a step deletes
    until: float | None = None
    profile: str = "gang"
    gates: Mapping[str, bool] = field(default_factory=dict)
    differs: str = ""  # why Phalanx's outcome is not upstream's (the case is a strict xfail)
    replay: str = ""  # why `phalanx verify` cannot replay it against the real kube-scheduler ("" when it can)

    @property
    def id(self) -> str:
        return f"{self.test}/{self.name}"


@dataclass(frozen=True)
class Unexpressed:
    file: str
    test: str
    name: str
    why: str


def run(case: Case) -> Outcome:
    profile = builtin(case.profile)
    profile.feature_gates.update(case.gates)
    trace = Trace(deletions=sorted((t, k if "/" in k else f"default/{k}") for t, k in case.deletions),
                  updates=[(t, _parsed(item)) for t, item in case.updates],
                  group_deletions=[(t, k if "/" in k else f"default/{k}") for t, k in case.group_deletions])
    result = simulate(inputs_of(*case.objects), profile, until=case.until, trace=trace, recreate_bare_members=False)
    return Outcome(result.sim)


def _parsed(item: Buildable) -> Pod | PodGroup:
    doc = _doc(item)
    obj = KINDS[doc["kind"]].parse(doc, Source("<test>", 0))
    assert isinstance(obj, Pod | PodGroup), obj
    return obj


def params(cases: Iterable[Case]) -> list[object]:
    """pytest params for `cases`, ids `Test/case name`, a strict xfail where the case `differs`."""
    return [pytest.param(c, id=c.id, marks=[pytest.mark.xfail(strict=True, reason=c.differs)] if c.differs else [])
            for c in cases]


def names(cases: Sequence[Case | Unexpressed]) -> list[tuple[str, str]]:
    return [(c.test, c.name) for c in cases]
