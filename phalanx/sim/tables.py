"""Reports as terminal tables (rich): one profile in detail, or several side by side."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from phalanx.api.quantity import format_duration
from phalanx.sim.report_schema import Report
from phalanx.sim.summary_fields import plain_number

# What the summary rows and the report directory (sim/output.py) render: a simulation's Report or a trace
# replay's result, so any mapping with a `summary`.
Result = Mapping[str, Any]
PENDING_ROWS = 20


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _resources(reports: Sequence[Result]) -> list[str]:
    names: set[str] = set()
    for report in reports:
        names.update(report["summary"]["allocated"])
    preferred = [n for n in ("cpu", "memory") if n in names]
    return preferred + sorted(names - set(preferred))


def _hours(value: float, resource: str) -> str:
    """Resource-hours to 3 significant figures, never in e-notation (`1,234`, not `1.23e+03`)."""
    if resource == "memory" or resource.startswith("hugepages-") or resource == "ephemeral-storage":
        return f"{plain_number(value / 2**30)} GiB·h"
    return plain_number(value)


Row = tuple[str, Callable[[Result], str]]


def _fraction_cell(field: str, resource: str) -> Callable[[Result], str]:
    return lambda r: _pct(r["summary"][field].get(resource, 0.0))


def _hours_cell(resource: str, field: str = "strandedResourceHours") -> Callable[[Result], str]:
    return lambda r: _hours(r["summary"].get(field, {}).get(resource, 0.0), resource)


def summary_rows(reports: Sequence[Result]) -> list[Row]:
    rows: list[Row] = [
        ("pods running", lambda r: str(r["summary"]["pods"]["running"])),
        ("pods pending", lambda r: str(r["summary"]["pods"]["pending"])),
        ("  of them gang members", lambda r: str(r["summary"]["gangPodsPending"])),
        ("workloads not admitted (pods not created)", _not_admitted),
        ("pods succeeded", lambda r: str(r["summary"]["pods"]["succeeded"])),
        ("pod groups scheduled", lambda r: f"{r['summary']['podGroups']['scheduled']}/"
                                            f"{r['summary']['podGroups']['total']}"),
    ]
    if any("exactPlacement" in r for r in reports):
        rows.append(("exact placement: placed / infeasible / undecided", _exact_cell))
    for name in _resources(reports):
        for field in ("allocated", "useful", "stranded"):
            rows.append((f"{name} {field}", _fraction_cell(field, name)))
        rows.append((f"{name} stranded hours", _hours_cell(name)))
    rows += [
        ("pod wait p50 / p90 / max", lambda r: " / ".join(
            format_duration(r["summary"]["waitSeconds"][k]) for k in ("p50", "p90", "max"))),
        ("group wait max", lambda r: format_duration(r["summary"]["groupWaitSeconds"]["max"])),
        ("preemptions / evictions", lambda r: f"{r['summary']['preemptions']} / {r['summary']['evictions']}"),
    ]
    if any(r["summary"].get("evictions") for r in reports):
        rows += [(f"{name} hours of work lost", _hours_cell(name, "lostResourceHours"))
                 for name in _resources(reports)]
    rows += [(f"{name} allocated, time-averaged", _fraction_cell("timeAveragedAllocated", name))
             for name in _resources(reports)]
    rows.append(("pods still pending, waited p50 / max", lambda r: _censored(r["summary"])))
    rows.append(("makespan", lambda r: _makespan(r["summary"])))
    rows.append(("end time", lambda r: format_duration(r["endTime"])))
    return rows


def _not_admitted(report: Result) -> str:
    held = report["summary"].get("notAdmitted") or {"workloads": 0, "podsNotCreated": 0}
    return f"{held['workloads']} ({held['podsNotCreated']})"


def _exact_cell(report: Result) -> str:
    exact = report.get("exactPlacement")
    if exact is None:
        return "off"
    return f"{exact['placed']} / {exact['infeasible']} / {exact['undecided']}"


def _censored(summary: Mapping[str, Any]) -> str:
    with_pending = summary.get("waitSecondsIncludingPending") or {}
    if not with_pending.get("censored"):
        return "none"
    return f"{with_pending['censored']}: " + " / ".join(
        format_duration(with_pending[k]) for k in ("p50", "max"))


def _makespan(summary: Mapping[str, Any]) -> str:
    span = summary.get("makespan") or {}
    if span.get("seconds") is None:
        held = (summary.get("notAdmitted") or {}).get("workloads", 0)
        return f"not finished ({span.get('unfinishedPods', 0)} pods" + (
            f"; {held} workload(s) not admitted)" if held else ")")
    return format_duration(span["seconds"])


def render_workloads(report: Report, console: Console) -> None:
    """One row per owner (Job, ReplicaSet, StatefulSet, …) of the report's pods."""
    if not report.get("workloads"):
        return
    table = Table(title="workloads")
    for column in ("kind", "name", "pods", "running", "pending", "succeeded", "wait p50 / max", "completion"):
        table.add_column(column, overflow="fold")
    for w in report["workloads"]:
        wait = w["waitSeconds"]
        table.add_row(w["kind"], w["name"], str(w["pods"]), str(w["running"]), str(w["pending"]),
                      str(w["succeeded"]),
                      " / ".join(format_duration(wait[k]) for k in ("p50", "max")) if wait["count"] else "",
                      format_duration(w["completionSeconds"]) if w["completionSeconds"] is not None
                      else _held_cell(w))
    console.print(table)


def _held_cell(workload: Mapping[str, Any]) -> str:
    if "held" not in workload:
        return ""
    not_created = workload.get("podsNotCreated")
    return f"held: {workload['held']}" + (f" ({not_created} pods not created)" if not_created else "")


def render_queues(report: Report, console: Console) -> None:
    """One row per queue of the kueue or volcano profile (ClusterQueues and LocalQueues, or Volcano Queues)."""
    if not report.get("queues"):
        return
    table = Table(title=f"queues ({report['profile']})")
    for column in ("kind", "name", "admitted", "pending", "running", "borrowed", "preempted", "reclaimed",
                   "mean wait"):
        table.add_column(column, overflow="fold")
    for q in report["queues"]:
        wait = q["meanWaitSeconds"]
        table.add_row(q["kind"], str(q["name"]), str(q["admitted"]), str(q["pending"]), str(q["running"]),
                      "" if q["borrowed"] is None else str(q["borrowed"]), str(q["preempted"]),
                      str(q["reclaimed"]), "" if wait is None else format_duration(wait))
    console.print(table)
    skipped = report.get("admission", {}).get("notModelled") or []
    for line in skipped:
        console.print(f"[dim]not modelled: {line}[/dim]")


def render_autoscaler(reports: Sequence[Report], console: Console) -> None:
    """The cluster autoscaler's books per profile, when the input has node groups."""
    scaled = [r for r in reports if r.get("autoscaler")]
    if not scaled:
        return
    table = Table(title="cluster autoscaler")
    for column in ("profile", "scale-up", "nodes added", "removed", "node-hours", "idle node-hours", "cost"):
        table.add_column(column, overflow="fold")
    for r in scaled:
        a = r["autoscaler"]
        added = ", ".join(f"{g}: {n}" for g, n in sorted(a["nodesAdded"].items())) or "0"
        hours = sum(a["nodeHours"].values())
        table.add_row(r["profile"], a["scaleUp"], added, str(a["nodesRemoved"]), f"{hours:.3g}",
                      f"{a['idleNodeHours']:.3g}", f"{a['totalCost']:.2f}")
    console.print(table)
    for r in scaled:
        for miss in r["autoscaler"]["unhelped"][:5]:
            console.print(f"[dim]{r['profile']}: no scale-up for {miss['name']}: {miss['reason']}[/dim]")


def render_services(reports: Sequence[Report], console: Console) -> None:
    """One row per HorizontalPodAutoscaler per profile: scale-to-zero, cold starts and what they saved."""
    rows = [(r["profile"], s) for r in reports for s in r.get("services") or ()]
    if not rows:
        return
    table = Table(title="services (HorizontalPodAutoscalers)")
    for column in ("profile", "hpa", "to zero / back", "cold", "requests cold", "dropped", "latency added p99 / max",
                   "replica-h", "GPU-h saved"):
        table.add_column(column, overflow="fold")
    for profile, s in rows:
        latency = s["addedLatencySeconds"]
        added = "" if latency is None else " / ".join(format_duration(latency[k]) for k in ("p99", "max"))
        table.add_row(profile, s["name"], f"{s['scaledToZero']} / {s['wokeFromZero']}",
                      format_duration(s["coldSeconds"]),
                      "" if s["requestsCold"] is None else f"{s['requestsCold']:,.0f}",
                      "" if s["requestsDropped"] is None else f"{s['requestsDropped']:,.0f}",
                      added,
                      f"{s['replicaHours']:.3g}", f"{s['gpuHoursSaved']:.3g}")
    console.print(table)


def render_compare(reports: Sequence[Report], console: Console) -> None:
    table = Table(title="Phalanx: profiles side by side")
    table.add_column("metric")
    for report in reports:
        gates = ",".join(f"{k}={'on' if v else 'off'}" for k, v in report["featureGates"].items())
        table.add_column(f"{report['profile']}\n[dim]{gates}[/dim]", justify="right")
    for label, cell in summary_rows(reports):
        table.add_row(label, *(cell(r) for r in reports))
    console.print(table)
    render_autoscaler(reports, console)
    render_services(reports, console)
    for report in reports:
        render_queues(report, console)


def _outcome_cell(outcome: Mapping[str, Any]) -> str:
    parts = [f"{outcome[state]} {state}" for state in ("bound", "pending", "failed", "preempted") if outcome[state]]
    when = sorted(set(outcome["boundAt"]))
    if when:
        parts.append("bound at " + ", ".join(format_duration(t) for t in when[:4]) + (" …" if len(when) > 4 else ""))
    return "; ".join(parts) or "no pod"


def render_timing(report: Report, console: Console) -> None:
    """`simulate --timing`: the workloads whose outcome changes with the order of events, each outcome with the
    interleavings that give it."""
    timing = report.get("timing")
    if timing is None:
        return
    rows = timing["timingDependent"]
    if not rows:
        console.print(f"timing: none of {timing['workloads']} workload(s) ends differently under "
                      f"{len(timing['interleavings'])} interleavings")
        return
    table = Table(title=f"outcomes left to timing: {len(rows)} of {timing['workloads']} workload(s)")
    for column in ("workload", "outcome", "interleavings"):
        table.add_column(column, overflow="fold")
    for row in rows:
        for i, outcome in enumerate(row["outcomes"]):
            table.add_row(row["workload"] if i == 0 else "", _outcome_cell(outcome),
                          ", ".join(outcome["interleavings"]))
    console.print(table)


def render_simulation(report: Report, console: Console, *, wide: bool = False) -> None:
    table = Table(title=f"Phalanx simulation: profile {report['profile']}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for label, cell in summary_rows([report]):
        table.add_row(label, cell(report))
    console.print(table)
    render_workloads(report, console)
    render_autoscaler([report], console)
    render_services([report], console)
    render_queues(report, console)
    render_timing(report, console)
    if report["podGroups"]:
        groups = Table(title="pod groups")
        for column in ("name", "minCount", "running", "pending", "message"):
            groups.add_column(column, overflow="fold")
        for g in report["podGroups"]:
            groups.add_row(g["name"], str(g["minCount"]), str(g["running"]), str(g["pending"]), g["message"] or "")
        console.print(groups)
    shown = report["pods"] if wide else [p for p in report["pods"] if p["phase"] == "Pending"]
    if not shown:
        return
    pods = Table(title="pods" if wide else "pending pods")
    columns = ("name", "phase", "node", "pod group", "message") if wide else ("name", "pod group", "message")
    for column in columns:
        pods.add_column(column, overflow="fold")
    limit = len(shown) if wide else PENDING_ROWS
    for p in shown[:limit]:
        cells = [p["name"], p["phase"], p["node"] or "", p["podGroup"] or "", p["message"] or ""] if wide \
            else [p["name"], p["podGroup"] or "", p["message"] or ""]
        pods.add_row(*cells)
    console.print(pods)
    if len(shown) > limit:
        console.print(f"… and {len(shown) - limit} more pending pods (-o wide or -o json lists them all)")
