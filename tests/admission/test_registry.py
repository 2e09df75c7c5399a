"""The admission registry: every builtin profile's policy is registered, and the gate builds whatever policy
the registry names (a new policy needs nothing else in the simulator)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from phalanx.admission.base import AdmissionPolicy, Admit, EvictWorkload, NodeScoring, QueuedWorkload
from phalanx.admission.registry import POLICIES
from phalanx.api.fields import Manifest
from phalanx.api.objects import Pod, Queueing, Source
from phalanx.scheduler.profiles import BUILTIN, builtin
from phalanx.sim import admission_gate
from phalanx.sim.admission_gate import build_gate, policy_profile
from phalanx.sim.scenario import scenario_for


def test_every_builtin_profiles_policy_is_registered() -> None:
    assert set(POLICIES) == {"kueue", "volcano", "kai", "yunikorn"} and set(POLICIES) <= set(BUILTIN)
    assert {name: scenario_for(name).admission for name in BUILTIN if scenario_for(name).admission} == {
        "kueue": "kueue", "volcano": "volcano", "kai": "kai", "yunikorn": "yunikorn"}
    assert all(factory.name == name for name, factory in POLICIES.items())


class _AdmitAll:
    def __init__(self) -> None:
        self.waiting: list[str] = []

    def workload_priority(self, priority_class: str, priority: int) -> int:
        return priority

    def submit(self, workload: QueuedWorkload, now: float) -> None:
        self.waiting.append(workload.key)

    def finished(self, key: str, now: float) -> None:
        pass

    def cycle(self, now: float) -> list[Admit | EvictWorkload]:
        admitted, self.waiting = self.waiting, []
        return [Admit(key, "all") for key in admitted]

    def queue_rows(self) -> list[dict[str, object]]:
        return []

    def not_modelled(self) -> list[str]:
        return []

    def pending_reason(self, key: str) -> str:
        return ""


class _AdmitAllFactory:
    name = "admit-all"
    requeues = True
    whole = False
    per_pod = False
    held_message = "waiting for admission"

    def priority_class(self, queueing: Queueing) -> str | None:
        return None

    def load(self, queue_docs: Sequence[tuple[Manifest, Source]], capacity: Mapping[str, int]) -> AdmissionPolicy:
        return _AdmitAll()

    def queue(self, queueing: Sequence[Queueing | None]) -> str | None:
        return "all"

    def not_queued(self, kind: str, key: str, queueing: Queueing) -> str | None:
        return None

    def node_scoring(self, queue_docs: Sequence[tuple[Manifest, Source]]) -> NodeScoring | None:
        return None

    def application(self, pod: Pod, queueing: Queueing | None) -> str:
        return ""

    def reservations(self, policy: AdmissionPolicy) -> None:
        return None


def test_the_gate_builds_a_policy_by_its_registry_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(admission_gate.POLICIES, "admit-all", _AdmitAllFactory())
    gate = build_gate([], "admit-all", {})
    assert gate.which == "admit-all" and isinstance(gate.policy, _AdmitAll)
    profile = builtin("gang")
    assert policy_profile(profile, "admit-all", []) == (profile, [])
