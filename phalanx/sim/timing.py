"""Outcomes a real cluster leaves to timing: the same inputs under every interleaving (phalanx/sim/interleavings.py),
and the workloads that end differently under some.

A workload is a PodGroup's members, the pods of one owner (a Job, a ReplicaSet, ...) or a bare pod. Its outcome is
how many of its pods were bound, left pending, failed or preempted, and when each was bound. The nodes are shown
but not compared: a different order of decisions draws other nodes among equally good ones, which is not a
different outcome. A workload whose outcome differs between interleavings is timing-dependent: the report names
each outcome with the interleavings that give it and how those arise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from phalanx.api.objects import Pod
from phalanx.sim.interleavings import INTERLEAVINGS, Interleaving
from phalanx.sim.report_schema import OutcomeEntry, TimingReport, WorkloadTiming
from phalanx.sim.simulation import Simulation


def workload_of(pod: Pod) -> str:
    """The workload a pod belongs to, as Phalanx names it: `PodGroup ns/name`, `<OwnerKind> ns/name`, `Pod ns/name`."""
    if pod.group_key is not None:
        return f"PodGroup {pod.group_key}"
    if pod.controller is not None and pod.owner is not None:
        return f"{pod.controller} {pod.owner}"
    return f"Pod {pod.key}"


@dataclass(frozen=True, slots=True)
class Outcome:
    bound: int = 0
    pending: int = 0
    failed: int = 0
    preempted: int = 0
    bound_at: tuple[float, ...] = ()
    nodes: tuple[str, ...] = field(default=(), compare=False)

    def entry(self, interleavings: Sequence[str]) -> OutcomeEntry:
        return {"interleavings": list(interleavings), "bound": self.bound, "pending": self.pending,
                "failed": self.failed, "preempted": self.preempted, "boundAt": list(self.bound_at),
                "nodes": list(self.nodes)}


def outcomes(sim: Simulation) -> dict[str, Outcome]:
    """Each workload's outcome at the end of a run (a YuniKorn placeholder is no workload's)."""
    pods: dict[str, list[tuple[str, float | None, str | None, int]]] = {}
    for record in sim.pods.values():
        if record.placeholder:
            continue
        state = "bound" if record.phase in ("Running", "Succeeded") else record.phase.lower()
        pods.setdefault(workload_of(record.pod), []).append((state, record.bound_at, record.node,
                                                             record.preempted_count))
    out: dict[str, Outcome] = {}
    for name, members in pods.items():
        bound = [(at, node) for state, at, node, _ in members if state == "bound"]
        out[name] = Outcome(bound=len(bound), pending=sum(s == "pending" for s, *_ in members),
                            failed=sum(s == "failed" for s, *_ in members),
                            preempted=sum(count for *_, count in members),
                            bound_at=tuple(sorted(round(at, 6) for at, _ in bound if at is not None)),
                            nodes=tuple(sorted(node for _, node in bound if node is not None)))
    return out


@dataclass
class Exploration:
    """Every interleaving's outcomes, by workload."""

    interleavings: Sequence[Interleaving]
    runs: dict[str, dict[str, Outcome]] = field(default_factory=dict)  # interleaving -> workload -> outcome

    def possible(self, workload: str) -> dict[Outcome, list[str]]:
        """The workload's outcomes, each with the interleavings that give it (as listed first)."""
        found: dict[Outcome, list[str]] = {}
        for interleaving in self.interleavings:
            outcome = self.runs[interleaving.name].get(workload, Outcome())
            found.setdefault(outcome, []).append(interleaving.name)
        return found

    def dependent(self) -> list[str]:
        names = sorted({w for run in self.runs.values() for w in run})
        return [w for w in names if len(self.possible(w)) > 1]

    def report(self, real: Mapping[str, str] | None = None) -> TimingReport:
        """The report's `timing` block; `real`: per workload, the interleaving the real scheduler took (verify)."""
        rows: list[WorkloadTiming] = []
        for workload in self.dependent():
            row: WorkloadTiming = {"workload": workload, "outcomes": [
                outcome.entry(names) for outcome, names in self.possible(workload).items()]}
            if real is not None and workload in real:
                row["kubeScheduler"] = real[workload]
            rows.append(row)
        return {"interleavings": [{"name": i.name, "how": i.how} for i in self.interleavings],
                "workloads": len({w for run in self.runs.values() for w in run}), "timingDependent": rows}


def explore(run: Callable[[Interleaving], Simulation],
            interleavings: Sequence[Interleaving] = INTERLEAVINGS) -> Exploration:
    """Run the inputs once per interleaving (`run` builds and runs the simulation under one)."""
    found = Exploration(interleavings)
    for interleaving in interleavings:
        found.runs[interleaving.name] = outcomes(run(interleaving))
    return found
