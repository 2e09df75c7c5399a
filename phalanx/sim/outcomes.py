"""Outcome metrics of a finished simulation that a platform team asks for beyond the summary counts.

- Time-averaged allocation: resource-hours held by running pods over the resource-hours the nodes offered
  (nodes that arrive later count from their arrival).
- Waits with the pods still pending at the end: their wait so far is a lower bound (censored), reported
  beside the waits of bound pods rather than dropped.
- Work not admitted: workloads a queueing policy never admitted (still waiting at the end) and Jobs that stay
  suspended (`spec.suspend: true` with nothing to resume them) count in the summary beside pending pods; a Job
  never started made no pod, so its completions count as pods not created, and the makespan stays open.
- Completion: a gang (PodGroup) or workload (the pods of one owner: Job, ReplicaSet, StatefulSet, JobSet, …) is
  complete when every pod it had has succeeded; its completion time runs from its first pod's creation to
  its last pod's end. The makespan is the same over every pod that arrived during the run; None while
  some pod has not finished (pods of a snapshot, running at time 0, are left out: they have no creation).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from phalanx.api.sets import JOBSET_NAME_LABEL
from phalanx.sim.records import PodRecord
from phalanx.sim.report_schema import Makespan, NotAdmitted, WaitStats, WorkloadEntry
from phalanx.sim.simulation import Simulation


def _round(value: float) -> float:
    return round(float(value), 6)


def time_averaged_allocation(sim: Simulation) -> dict[str, float]:
    """Per resource, the share of offered resource-hours that running pods held."""
    out: dict[str, float] = {}
    for name, offered in sorted(sim.books.capacity_hours.items()):
        if name == "pods" or offered <= 0:
            continue
        out[name] = _round(min(max(sim.books.allocated_hours.get(name, 0.0) / offered, 0.0), 1.0))
    return out


def censored_waits(sim: Simulation) -> list[float]:
    """How long each pod still pending at the end has waited (created during the run)."""
    return [sim.end_time - r.created for r in sim.pods.values()
            if not r.placeholder and r.phase == "Pending" and r.pod.node_name is None and sim.end_time >= r.created]


def _completion(records: list[PodRecord]) -> tuple[float | None, float | None]:
    """(completed at, completion seconds) of a set of pods: None unless every one succeeded."""
    if not records or any(r.phase != "Succeeded" or r.finished_at is None for r in records):
        return None, None
    finished = max(r.finished_at for r in records if r.finished_at is not None)
    return _round(finished), _round(finished - min(r.created for r in records))


def group_completion(sim: Simulation, key: str) -> tuple[float | None, float | None]:
    return _completion([sim.pods[k] for k in sim.members.get(key, ()) if k in sim.pods])


SUSPENDED = "suspended (spec.suspend: true) and nothing resumes it: its controller creates no pod"


def held_work(sim: Simulation) -> dict[str, tuple[str, int]]:
    """Workloads that did not run by the end, by workload key (`Job ns/name`, `PodGroup ns/name`, …): why, and
    how many pods they never created (a Job never started: its completions; 0 when its pods exist, pending)."""
    held = {f"Job {key}": (SUSPENDED, job.completions) for key, job in sim.suspended.items()}
    if sim.gate is not None:
        for key, not_created, reason in sim.gate.held():
            held[key] = (reason, not_created)
    return held


def not_admitted(held: dict[str, tuple[str, int]]) -> NotAdmitted:
    return {"workloads": len(held), "podsNotCreated": sum(pods for _, pods in held.values())}


def makespan(sim: Simulation, held: dict[str, tuple[str, int]]) -> Makespan:
    """From the first pod created to the last pod finished, over the pods that arrived during the run; open
    while a workload is held (its pods not created count as unfinished)."""
    arrived = [r for r in sim.pods.values() if r.pod.node_name is None and not r.placeholder]
    unfinished = sum(1 for r in arrived if r.phase not in ("Succeeded", "Failed"))
    unfinished += not_admitted(held)["podsNotCreated"]
    if not arrived or unfinished or held:
        return {"seconds": None, "unfinishedPods": unfinished}
    end = max(r.finished_at or r.created for r in arrived)
    return {"seconds": _round(end - min(r.created for r in arrived)), "unfinishedPods": 0}


def workloads(sim: Simulation, wait_stats: Callable[[list[float]], WaitStats],
              held: dict[str, tuple[str, int]]) -> list[WorkloadEntry]:
    """One row per owner (controller kind and `namespace/name`): its pods by phase, waits, completion. A JobSet
    has a row of its own beside its Jobs' (its pods, found by their `jobset-name` label). A held Job has a row
    with why (`held`), and, never started, the pods it did not create."""
    owned: dict[tuple[str, str], list[PodRecord]] = defaultdict(list)
    for record in sim.pods.values():
        if record.placeholder:
            continue
        pod = record.pod
        if pod.owner is not None:
            owned[(pod.controller or "Owner", pod.owner)].append(record)
            job_set = pod.labels.get(JOBSET_NAME_LABEL) if pod.controller == "Job" else None
            if job_set is not None:
                owned[("JobSet", f"{pod.namespace}/{job_set}")].append(record)
    for key in held:
        kind, _, name = key.partition(" ")
        if kind not in ("Pod", "PodGroup"):  # a Job, JobSet or Kubeflow job held whole
            owned.setdefault((kind, name), [])
    rows: list[WorkloadEntry] = []
    for (kind, name), records in sorted(owned.items()):
        phases = [r.phase for r in records]
        waits = [r.bound_at - r.created for r in records if r.bound_at is not None and r.pod.node_name is None]
        completed_at, seconds = _completion(records)
        row: WorkloadEntry = {
            "kind": kind, "name": name, "pods": len(records), "running": phases.count("Running"),
            "pending": phases.count("Pending"), "succeeded": phases.count("Succeeded"),
            "failed": phases.count("Failed"), "waitSeconds": wait_stats(waits),
            "completedAt": completed_at, "completionSeconds": seconds}
        if f"{kind} {name}" in held:
            row["held"], not_created = held[f"{kind} {name}"]
            if not_created:
                row["podsNotCreated"] = not_created
        rows.append(row)
    return rows
