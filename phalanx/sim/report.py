"""The simulation report: the JSON contract (`docs/report.md`) built from a finished Simulation."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import numpy as np

from phalanx.scheduler.plugins.composite.report import composite_report
from phalanx.scheduler.plugins.topology.report import constraint_report
from phalanx.sim.admission_gate import queue_report
from phalanx.sim.outcomes import (
    censored_waits,
    group_completion,
    held_work,
    makespan,
    not_admitted,
    time_averaged_allocation,
    workloads,
)
from phalanx.sim.records import PodRecord
from phalanx.sim.report_schema import GroupEntry, Notes, Placeholders, PodEntry, Report, WaitStats
from phalanx.sim.services import service_report
from phalanx.sim.simulation import Simulation

if TYPE_CHECKING:
    from phalanx.sim.series import SeriesRecorder

SCHEMA_VERSION = 1


def _round(value: float) -> float:
    return round(float(value), 6)


def wait_stats(waits: list[float]) -> WaitStats:
    """Count, mean, p50, p90, p99 and max of waiting times in seconds (zeros when there are none)."""
    if not waits:
        return {"count": 0, "mean": 0.0, "p50": 0.0, "p90": 0.0, "p99": 0.0, "max": 0.0}
    arr = np.asarray(waits, dtype=float)
    p50, p90, p99 = np.percentile(arr, [50, 90, 99])
    return {"count": len(waits), "mean": _round(arr.mean()), "p50": _round(p50), "p90": _round(p90),
            "p99": _round(p99), "max": _round(arr.max())}


def _fractions(sim: Simulation, values: dict[str, float]) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, total in sorted(sim.allocatable.items()):
        if name == "pods" or total <= 0:
            continue
        out[name] = _round(min(max(values.get(name, 0.0) / total, 0.0), 1.0))
    return out


def _hours(values: dict[str, float]) -> dict[str, float]:
    """Resource-hours in Kubernetes units: cpu in core-hours, everything else in base units × hours."""
    return {k: _round(v / (1000.0 if k == "cpu" else 1.0)) for k, v in sorted(values.items()) if k != "pods"}


def build_report(sim: Simulation, *, series: SeriesRecorder | None = None) -> Report:
    """The JSON contract for one finished simulation; with `series` (the recorder that watched it), plus
    the `series` block (time series and per-pod waits), which `--report DIR` writes and `-o json` leaves out."""
    pods = [r for r in sim.pods.values() if not r.placeholder]
    phases = {phase: sum(1 for r in pods if r.phase == phase) for phase in ("Running", "Pending", "Succeeded",
                                                                               "Failed")}
    gang_keys = {k for k, g in sim.groups.items() if g.group.is_gang}
    gang_pending = sum(1 for r in pods if r.phase == "Pending" and r.pod.group_key in gang_keys)
    allocated = dict(sim.books.allocated)
    useful = dict(sim.books.useful)
    stranded = {name: allocated.get(name, 0.0) - useful.get(name, 0.0) for name in allocated}
    waits = [r.bound_at - r.created for r in pods if r.bound_at is not None and r.pod.node_name is None]
    group_waits = [wait for g in sim.groups.values() for wait in g.waits]
    scheduled_groups = sum(1 for g in sim.groups.values() if g.started_at is not None)
    censored = censored_waits(sim)
    completions = [seconds for key in sim.groups if (seconds := group_completion(sim, key)[1]) is not None]
    seconds = sim.scheduling_seconds
    held = held_work(sim)
    report: Report = {
        "schemaVersion": SCHEMA_VERSION,
        "profile": sim.profile.name,
        "featureGates": dict(sim.profile.feature_gates),
        "endTime": _round(sim.end_time),
        "summary": {
            "pods": {"total": len(pods), "running": phases["Running"], "pending": phases["Pending"],
                     "succeeded": phases["Succeeded"], "failed": phases["Failed"]},
            "gangPodsPending": gang_pending,
            "notAdmitted": not_admitted(held),
            "podGroups": {"total": len(sim.groups), "scheduled": scheduled_groups,
                          "pending": len(sim.groups) - scheduled_groups},
            "allocated": _fractions(sim, allocated),
            "useful": _fractions(sim, useful),
            "stranded": _fractions(sim, stranded),
            "strandedResourceHours": _hours(sim.books.stranded_hours()),
            "allocatedResourceHours": _hours(sim.books.allocated_hours),
            "timeAveragedAllocated": time_averaged_allocation(sim),
            "waitSeconds": wait_stats(waits),
            "waitSecondsIncludingPending": {**wait_stats(waits + censored), "censored": len(censored)},
            "groupWaitSeconds": wait_stats(group_waits),
            "groupCompletionSeconds": wait_stats(completions),
            "makespan": makespan(sim, held),
            "preemptions": sim.preemptions,
            "evictions": sim.evictions,
            "lostResourceHours": _hours(sim.lost_hours),
        },
        "stats": {"podsScheduled": sim.binds, "schedulingSeconds": _round(seconds),
                  "podsPerSecond": _round(sim.binds / seconds) if seconds > 0 else 0.0},
        "notImplementedPlugins": sim.profile.missing_plugins,
        "pods": [_pod_entry(sim, r) for r in sorted(pods, key=lambda r: r.pod.key)],
        "podGroups": [_group_entry(sim, key) for key in sorted(sim.groups)],
        "workloads": workloads(sim, wait_stats, held),
    }
    if sim.defaulted:  # pods that ran for a default duration, by owner kind
        report["defaultDurations"] = {kind: {"seconds": sim.durations[kind], "pods": count}
                                      for kind, count in sorted(sim.defaulted.items())}
    if sim.hpas is not None:
        report["services"] = [service_report(sim, state, sim.end_time) for _, state in sorted(sim.hpas.states.items())]
    if sim.autoscaling is not None:
        report["autoscaler"] = sim.autoscaling.report(sim.end_time)
    if sim.gate is not None:
        report["admission"] = {"policy": sim.gate.which, "admitted": sim.gate.admitted,
                               "evicted": sim.gate.evicted, "notModelled": sim.gate.not_modelled(),
                               "workloads": sim.gate.workload_rows()}
        if sim.gate.reservations is not None and sim.gate.reservations.used:
            report["admission"]["placeholders"] = cast(Placeholders, sim.gate.reservations.counts())
        report["queues"] = queue_report(sim.gate)
    claims = sim.scheduler.claim_statuses()
    if claims:
        report["resourceClaims"] = [{"name": key, "status": status} for key, status in claims]
    if sim.profile.exact_placement is not None:  # the gangs exact placement placed, proved infeasible, left undecided
        report["exactPlacement"], report["stats"]["exactPlacementSeconds"] = sim.scheduler.exact_placement()
    topology = constraint_report((g.group for g in sim.groups.values()), placement_phase=sim.profile.topology_aware,
                                 gang=sim.profile.gang)
    if topology is not None:  # PodGroups with schedulingConstraints.topology, and whether the profile honours them
        report["topologyConstraints"] = topology
    groups = [g.group for g in sim.groups.values()]
    trees = composite_report(groups, sim.scheduler.composites(),
                             scheduled=sim.profile.composite, topology_aware=sim.profile.topology_aware,
                             gang=sim.profile.gang)
    if trees is not None:  # CompositePodGroup trees (KEP-6012), and whether the profile schedules them
        report["compositePodGroups"] = trees
    claimed = sorted(g.key for g in groups if g.resource_claims)
    if claimed:
        report["podGroupResourceClaims"] = group_claims_report(claimed, devices=sim.scheduler.allocates_devices(),
                                                               gate=sim.profile.workload_claims)
    if series is not None:
        report["series"] = series.to_json(sim)
    return report


def _pod_entry(sim: Simulation, record: PodRecord) -> PodEntry:
    pod = record.pod
    message = record.message
    # A pod that was preempted keeps naming its preemptor, also once it was recreated and runs again.
    evicted = record.preempted_by[-1]["message"] if record.preempted_by else None
    if record.phase == "Pending":
        message = sim.scheduler.pod_message(pod.key) or message or "waiting to be scheduled"
        if evicted and evicted not in message:
            message = f"{message} (evicted earlier: {evicted})"
    elif record.phase in ("Running", "Succeeded"):
        message = evicted
    return {
        "name": pod.key, "node": record.node, "phase": record.phase, "podGroup": pod.group_key,
        "priority": pod.priority, "message": message,
        "createdAt": _round(record.created),
        "boundAt": None if record.bound_at is None else _round(record.bound_at),
        "finishedAt": None if record.finished_at is None else _round(record.finished_at),
        "nominatedNodeName": record.nominated,
        "preemptedCount": record.preempted_count,
        "preemptedBy": list(record.preempted_by),
        "deviceTaintEvictions": list(record.device_taint_evictions),
        "devices": list(record.devices),
    }


def _group_entry(sim: Simulation, key: str) -> GroupEntry:
    record = sim.groups[key]
    group = record.group
    phases = [sim.pods[k].phase for k in sim.members[key]]
    running = phases.count("Running")
    pending = phases.count("Pending")
    message = sim.group_message(key)
    completed_at, completion_seconds = group_completion(sim, key)
    if message is None and record.started_at is None and group.is_gang:
        message = (f"pod group {key}: {running} of the {group.min_count} pods (minCount) running, "
                   f"{pending} pending")
    entry: GroupEntry = {
        "name": key, "policy": group.policy.kind if group.policy else None, "minCount": group.min_count,
        "running": running, "pending": pending, "succeeded": phases.count("Succeeded"),
        "scheduled": record.started_at is not None,
        "startedAt": None if record.started_at is None else _round(record.started_at),
        "disruptionMode": group.disruption_mode,
        "priority": group.priority,
        "preemptedCount": record.preempted_count,
        "waitSeconds": _round(sum(record.waits)),
        "completedAt": completed_at,
        "completionSeconds": completion_seconds,
        "message": message,
        "conditions": list(record.conditions.values()),
    }
    statuses = sim.scheduler.group_claim_statuses(key) if group.resource_claims and sim.profile.workload_claims \
        else None
    if statuses is not None:
        entry["resourceClaimStatuses"] = statuses
    return entry


def group_claims_report(claimed: list[str], *, devices: bool, gate: bool) -> Notes:
    """The `podGroupResourceClaims` block: PodGroups with spec.resourceClaims, and what is not modelled."""
    names = f"{', '.join(claimed[:3])}{' and more' if len(claimed) > 3 else ''}"
    if not gate:
        return {"podGroups": len(claimed), "notes": [
            f"spec.resourceClaims of {len(claimed)} PodGroup(s) ({names}) ignored: DRAWorkloadResourceClaims (or "
            "GenericWorkload) is off in this profile, so the API server drops the field and each pod entry is "
            "the pod's own claim"]}
    if not devices:
        return {"podGroups": len(claimed), "notes": [
            f"not modelled: spec.resourceClaims of {len(claimed)} PodGroup(s) ({names}): the profile does not run "
            "DynamicResources, so no claim is allocated"]}
    return {"podGroups": len(claimed), "notes": [
        f"not modelled for spec.resourceClaims of {len(claimed)} PodGroup(s) ({names}): the DynamicResources "
        "PodGroupPostFilter's pod-level part (a member's own claims) is not run after a failed PodGroup cycle"]}
