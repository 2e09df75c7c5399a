"""`--report DIR`: report.json, series.csv, PNG plots and one self-contained index.html.

Everything is rendered in memory first and then each file is written atomically (a temporary file in DIR,
renamed over the target), so an error leaves no half-written file behind. Plots use matplotlib's Agg
canvas (no display, no pyplot state); matplotlib is imported only when a report is written. The files and
their contents are documented in `docs/report.md` ("The report directory").
"""

from __future__ import annotations

import base64
import csv
import html
import io
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from phalanx.api.quantity import format_duration
from phalanx.errors import InputError
from phalanx.extras import require
from phalanx.sim.jsonsafe import dumps
from phalanx.sim.summary_fields import extra_rows
from phalanx.sim.tables import Result, summary_rows

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

FRACTIONS = ("allocated", "useful", "stranded")
COUNTS = ("podsRunning", "podsPending", "groupsPending", "preemptions")
DPI = 100


def results_of(document: Result) -> list[Result]:
    """The per-profile results of a report document (`compare`'s `results`, or one `simulate` report)."""
    results = document.get("results")
    if isinstance(results, list):
        return list(results)
    return [document]


def labels_of(results: Sequence[Result]) -> list[str]:
    """One unique label per result: its profile name, numbered when a name repeats."""
    labels: list[str] = []
    for report in results:
        base = str(report.get("profile", "profile"))
        label, n = base, 1
        while label in labels:
            n += 1
            label = f"{base} #{n}"
        labels.append(label)
    return labels


def _slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-.") or "profile"


# --- series.csv ------------------------------------------------------------------------------------------

def csv_text(text: str) -> str:
    """A text cell a spreadsheet will not run as a formula (OWASP's CSV injection advice: prefix a quote)."""
    return f"'{text}" if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def series_csv(results: Sequence[Result]) -> str:
    """The series of every result in long format: profile,time,metric,resource,value (resource empty for counts)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["profile", "time", "metric", "resource", "value"])
    for label, report in zip(labels_of(results), results, strict=True):
        series = report.get("series")
        if not isinstance(series, Mapping):
            continue
        times = series.get("time", [])
        for i, t in enumerate(times):
            for metric in FRACTIONS:
                for resource, values in series.get(metric, {}).items():
                    writer.writerow([csv_text(label), t, metric, csv_text(resource), values[i]])
            for metric in COUNTS:
                values = series.get(metric)
                if values is not None:
                    writer.writerow([csv_text(label), t, metric, "", values[i]])
    return out.getvalue()


# --- plots -----------------------------------------------------------------------------------------------

def new_figure(width: float, height: float) -> Figure:
    """A matplotlib figure on an Agg canvas (no display, no pyplot state); size in inches."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def png_bytes(fig: Figure) -> bytes:
    """The figure as PNG bytes (no software tag, so equal figures give equal files)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()


def _time_unit(results: Sequence[Result]) -> tuple[str, float]:
    end = max((float(r.get("endTime", 0.0) or 0.0) for r in results), default=0.0)
    if end <= 2 * 3600:
        return "minutes", 60.0
    if end <= 3 * 86400:
        return "hours", 3600.0
    return "days", 86400.0


def _time_axis(ax: Axes, results: Sequence[Result], unit: tuple[str, float]) -> None:
    """Simulated time from 0 to the latest end, at least one unit wide: a run that ends at 0 (nothing with a
    duration) still draws a readable axis."""
    end = max((float(r.get("endTime", 0.0) or 0.0) for r in results), default=0.0)
    ax.set_xlim(0, max(end / unit[1], 1.0))
    ax.set_xlabel(f"simulated time ({unit[0]})")


def _steps(times: Sequence[float], values: Sequence[float], scale: float) -> tuple[list[float], list[float]]:
    """Points for a step plot (each value holds until the next sample); a lone sample becomes a dot."""
    return [t / scale for t in times], [float(v) for v in values]


def allocation_plot(label: str, report: Result, unit: tuple[str, float]) -> bytes:
    """Allocated (solid) and useful (dashed) fraction per resource over time; the gap between them is stranded."""
    series = report["series"]
    fig = new_figure(6.4, 3.6)
    ax = fig.add_subplot()
    times = series["time"]
    for i, (resource, allocated) in enumerate(sorted(series.get("allocated", {}).items(),
                                                     key=lambda kv: (kv[0] not in ("cpu", "memory"), kv[0]))):
        color = f"C{i % 10}"
        x, y = _steps(times, [100 * v for v in allocated], unit[1])
        _, useful = _steps(times, [100 * v for v in series["useful"][resource]], unit[1])
        ax.step(x, y, where="post", color=color, label=f"{resource} allocated", marker="." if len(x) < 3 else None)
        ax.step(x, useful, where="post", color=color, linestyle="--", label=f"{resource} useful")
        ax.fill_between(x, useful, y, step="post", color=color, alpha=0.15, linewidth=0)
    ax.set_ylim(0, 105)
    _time_axis(ax, [report], unit)
    ax.set_ylabel("% of allocatable")
    ax.set_title(f"{label}: allocation over time (shaded: stranded)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    return png_bytes(fig)


def pending_plot(labels: Sequence[str], results: Sequence[Result], unit: tuple[str, float]) -> bytes:
    """Pods pending (gang members counted) and PodGroups pending over time, one line per profile."""
    from matplotlib.ticker import MaxNLocator

    fig = new_figure(9.0, 3.4)
    axes = fig.subplots(1, 2)
    for ax, metric, title in ((axes[0], "podsPending", "pods pending (gang members counted)"),
                              (axes[1], "groupsPending", "pod groups pending")):
        for i, (label, report) in enumerate(zip(labels, results, strict=True)):
            series = report.get("series")
            if not isinstance(series, Mapping):
                continue
            x, y = _steps(series["time"], series[metric], unit[1])
            ax.step(x, y, where="post", label=label, marker="." if len(x) < 3 else None, **line_style(i))
        ax.set_title(title)
        _time_axis(ax, results, unit)
        ax.set_ylim(bottom=0, top=max(1.0, ax.get_ylim()[1]))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    return png_bytes(fig)


def queue_share_plot(labels: Sequence[str], results: Sequence[Result], unit: tuple[str, float]) -> bytes | None:
    """Each queue's share of the cluster (the cpu its admitted workloads ask) over time, a panel per profile
    that queues (kueue, volcano); None when no profile does."""
    queued = [(label, r) for label, r in zip(labels, results, strict=True)
              if isinstance(r.get("series"), Mapping) and r["series"].get("queueShare")]
    if not queued:
        return None
    fig = new_figure(4.6 * len(queued) + 0.6, 3.4)
    axes = fig.subplots(1, len(queued), squeeze=False)[0]
    for ax, (label, report) in zip(axes, queued, strict=True):
        series = report["series"]
        for i, (queue, share) in enumerate(sorted(series["queueShare"].items())):
            x, y = _steps(series["time"], [100 * v for v in share], unit[1])
            ax.step(x, y, where="post", label=queue, color=f"C{i % 10}", marker="." if len(x) < 3 else None)
        ax.set_ylim(0, 105)
        ax.set_title(f"{label}: share of the cluster per queue")
        _time_axis(ax, [report], unit)
        ax.set_ylabel("% of allocatable cpu admitted")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    return png_bytes(fig)


def services_plot(labels: Sequence[str], results: Sequence[Result]) -> bytes | None:
    """Going to zero, cost against latency: per service and profile, the GPU-hours (else replica-hours) saved
    against the worst latency cold starts added; None when no result has HorizontalPodAutoscalers."""
    points = [(label, s) for label, r in zip(labels, results, strict=True) for s in r.get("services") or ()]
    if not points:
        return None
    gpu = any(s["gpuHoursSaved"] for _, s in points)
    fig = new_figure(6.4, 3.8)
    ax = fig.add_subplot()
    for i, label in enumerate(dict.fromkeys(label for label, _ in points)):
        mine = [s for lab, s in points if lab == label]
        xs = [s["gpuHoursSaved" if gpu else "replicaHoursSaved"] for s in mine]
        ys = [(s["addedLatencySeconds"] or {}).get("max", 0.0) for s in mine]
        ax.scatter(xs, ys, label=label, color=f"C{i % 10}", marker="os^vD"[i % 5])
        for x, y, s in zip(xs, ys, mine, strict=True):
            ax.annotate(s["name"], (x, y), fontsize="x-small", xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel(f"{'GPU' if gpu else 'replica'}-hours saved by scaling to zero")
    ax.set_ylabel("latency cold starts added, max (s)")
    ax.set_xlim(left=0, right=max(1.0, ax.get_xlim()[1] * 1.1))
    ax.set_ylim(bottom=0, top=max(1.0, ax.get_ylim()[1] * 1.1))
    ax.set_title("Scale to zero: hours saved against cold-start latency")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    return png_bytes(fig)


def line_style(i: int) -> dict[str, Any]:
    """Color and line style of the i-th profile (styles differ so equal curves stay visible)."""
    return {"color": f"C{i % 10}", "linestyle": ("-", "--", ":", "-.")[i % 4], "linewidth": 2.2 - 0.3 * (i % 4)}


def _ecdf(ax: Axes, waits: Sequence[float], label: str, style: dict[str, Any]) -> None:
    n = len(waits)
    xs = [w / 60.0 for w in sorted(waits)]
    ys = [100.0 * (i + 1) / n for i in range(n)]
    ax.step([0.0, *xs], [0.0, *ys], where="post", label=f"{label} (n={n})", **style)


def _wait_axis(ax: Axes) -> None:
    """Waits from 0 to the longest, at least a minute wide (when every pod bound at once, all waits 0, the axis
    read −0.04 to 0.04 minutes), with a sliver left of 0 so a curve rising at 0 is not hidden by the spine."""
    right = max(1.0, ax.get_xlim()[1])
    ax.set_xlim(-0.02 * right, right)
    ax.set_xlabel("wait (minutes)")


def waits_plot(labels: Sequence[str], results: Sequence[Result]) -> bytes:
    """Cumulative distribution of waiting times, per pod and per PodGroup, one line per profile."""
    fig = new_figure(9.0, 3.4)
    axes = fig.subplots(1, 2)
    for ax, key, title in ((axes[0], "pods", "pod wait (creation to bind)"),
                           (axes[1], "groups", "pod group wait (to minCount running)")):
        drawn = False
        for i, (label, report) in enumerate(zip(labels, results, strict=True)):
            series = report.get("series")
            waits = series.get("waitSeconds", {}).get(key, []) if isinstance(series, Mapping) else []
            if waits:
                _ecdf(ax, waits, label, line_style(i))
                drawn = True
        ax.set_title(title)
        _wait_axis(ax)
        ax.set_ylabel("% waited at most")
        ax.set_ylim(0, 105)
        ax.grid(alpha=0.3)
        if drawn:
            ax.legend(fontsize="small", loc="lower right")
        else:
            ax.text(0.5, 0.5, "nothing was scheduled here", ha="center", va="center", transform=ax.transAxes)
    return png_bytes(fig)


_PERCENT_LOAD = ("arrivedPercent", "k")
_FRACTION_LOAD = ("arrivedLoad", "load")
_PERCENT_ALLOCATION = ("allocatedPercent",)
_FRACTION_ALLOCATION = ("gpuAllocation", "allocation")


def _first(row: Mapping[str, Any], keys: Sequence[str]) -> tuple[str, float] | None:
    for key in keys:
        value = row.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return key, float(value)
    return None


def allocation_curve(report: Result) -> tuple[list[float], list[float], bool] | None:
    """(arrived GPU load in % of capacity, unallocated GPUs — or % of GPUs when the total is unknown —, whether
    the values are GPUs) from a result's `allocationCurve` (the fragmentation protocol), or None.

    Accepted shapes: an object of parallel lists (`arrivedPercent` or `arrivedLoad`; `unallocatedGpus`,
    `allocatedPercent` or `gpuAllocation`), a list of such objects, or a plain list of allocation percentages
    indexed by arrived load k = 0, 1, …. Points whose value is null are left out.
    """
    curve = report.get("allocationCurve")
    if isinstance(curve, Mapping):
        keys = [k for k, v in curve.items() if isinstance(v, list)]
        length = min((len(curve[k]) for k in keys), default=0)
        rows: list[Mapping[str, Any]] = [{k: curve[k][i] for k in keys} for i in range(length)]
    elif isinstance(curve, list) and all(isinstance(v, int | float) or v is None for v in curve):
        rows = [{"k": k, "allocatedPercent": v} for k, v in enumerate(curve)]
    elif isinstance(curve, list) and all(isinstance(v, Mapping) for v in curve):
        rows = list(curve)
    else:
        return None
    summary = report.get("summary")
    total = summary.get("gpus") if isinstance(summary, Mapping) else None
    use_gpus = any(isinstance(r.get("unallocatedGpus"), int | float) for r in rows)
    loads: list[float] = []
    values: list[float] = []
    for row in rows:
        load = _first(row, _PERCENT_LOAD + _FRACTION_LOAD)
        if load is None:
            continue
        percent_load = load[1] if load[0] in _PERCENT_LOAD else 100.0 * load[1]
        if use_gpus:
            unallocated = _first(row, ("unallocatedGpus",))
            if unallocated is None:
                continue
            value = unallocated[1]
        else:
            allocation = _first(row, _PERCENT_ALLOCATION + _FRACTION_ALLOCATION)
            if allocation is None:
                continue
            fraction = allocation[1] / 100.0 if allocation[0] in _PERCENT_ALLOCATION else allocation[1]
            value = (total * (1.0 - fraction) if isinstance(total, int | float) and total > 0
                     else 100.0 * (1.0 - fraction))
        loads.append(percent_load)
        values.append(value)
    if not loads:
        return None
    in_gpus = use_gpus or (isinstance(total, int | float) and total > 0)
    return loads, values, bool(in_gpus)


def fragmentation_plot(labels: Sequence[str], results: Sequence[Result]) -> bytes | None:
    """Unallocated GPUs against arrived GPU load, one line per policy (the FGD paper's Fig. 9a)."""
    curves = [(label, allocation_curve(report)) for label, report in zip(labels, results, strict=True)]
    drawn = [(label, c) for label, c in curves if c is not None]
    if not drawn:
        return None
    fig = new_figure(10.0, 4.0)
    axes = fig.subplots(1, 2, width_ratios=[3, 2])
    in_gpus = all(c[2] for _, c in drawn)
    for ax, low, title in ((axes[0], None, "GPUs left unallocated as load arrives"),
                           (axes[1], 80.0, "from 80% of capacity on")):
        tail: list[float] = []
        for i, (label, (loads, values, gpus)) in enumerate(drawn):
            if not (in_gpus or not gpus):
                continue
            points = [(x, y) for x, y in zip(loads, values, strict=True) if low is None or x >= low]
            if points:
                ax.plot([x for x, _ in points], [y for _, y in points], label=label, **line_style(i))
                tail += [y for _, y in points]
        ax.axvline(100, color="grey", linewidth=0.8, linestyle=":")
        ax.set_xlabel("arrived GPU requests (% of GPU capacity)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
        if low is None:
            ax.set_ylabel("unallocated GPUs" if in_gpus else "unallocated GPUs (% of capacity)")
            ax.set_ylim(bottom=0)
        elif tail:
            ax.set_ylim(0, max(tail) * 1.15 + 1e-9)
    axes[0].legend(fontsize="small")
    return png_bytes(fig)


# --- index.html ------------------------------------------------------------------------------------------

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:1.5rem;color:#1b1f24;background:#fff}
h1{font-size:1.5rem;margin:0 0 .3rem}h2{font-size:1.15rem;margin:.2rem 0}
.note{color:#57606a;font-size:.9rem;margin:.2rem 0 1rem}
.profiles{display:grid;gap:1rem;overflow-x:auto;align-items:start}
.profile{border:1px solid #d0d7de;border-radius:6px;padding:.8rem;min-width:0}
.profile h2,.profile td:first-child{overflow-wrap:anywhere}.profile td.v{white-space:normal}
.profile td.sub{padding-left:1.4rem}
.workloads,.queues{overflow-x:auto}
.gates{color:#57606a;font-size:.8rem;margin:.1rem 0 .5rem;word-break:break-all}
table{border-collapse:collapse;width:100%;font-size:.85rem}
td{padding:.15rem .4rem;border-bottom:1px solid #eaeef2;vertical-align:top}
td.v{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
img{max-width:100%;height:auto;display:block;margin:.6rem auto 0}
.all figure{margin:1rem 0}figcaption{font-size:.85rem;color:#57606a}
"""

# Records the rendered layout on <body> (data-columns: distinct column positions of the profile sections,
# data-rows: distinct row positions), so a headless browser can check the profiles really sit side by side.
_LAYOUT_SCRIPT = """(function(){var xs={},ys={};document.querySelectorAll('section.profile').forEach(function(e){
var r=e.getBoundingClientRect();xs[Math.round(r.left)]=1;ys[Math.round(r.top)]=1;});
document.body.setAttribute('data-columns',String(Object.keys(xs).length));
document.body.setAttribute('data-rows',String(Object.keys(ys).length));})();"""


def _cell(render: Any, report: Result) -> str:
    try:
        return str(render(report))
    except (KeyError, TypeError, ValueError, AttributeError):
        return "—"


def _extra_rows(results: Sequence[Result]) -> tuple[list[str], list[dict[str, str]]]:
    """The labels of the card rows for summary fields the standard rows do not show (the union over the
    results, in order), and each result's formatted values by label."""
    values = [extra_rows(report.get("summary")) for report in results]
    labels = list(dict.fromkeys(label for rows in values for label in rows))
    return labels, values


def _indent(label: str) -> str:
    """A row label's leading spaces (`  of them gang members`: a part of the row above) as an indent, which
    HTML would otherwise collapse."""
    return ' class="sub"' if label.startswith(" ") else ""


def value_html(text: str) -> str:
    """A card value that may wrap where a narrow card needs it: after a ` / ` separator (`36s / 1h50m36s /
    1h50m36s`) or between words, never inside a duration nor between a number and its unit (`137 GiB·h`)."""
    return "&nbsp;/ ".join(re.sub(r"(?<=\d) ", "&nbsp;", html.escape(part)) for part in text.split(" / "))


def workloads_html(labels: Sequence[str], results: Sequence[Result]) -> str:
    """A row per workload (owner of pods), a column per profile: pods succeeded of all, and completion time."""
    rows: dict[tuple[str, str], dict[int, Mapping[str, Any]]] = {}
    for i, report in enumerate(results):
        for w in report.get("workloads") or ():
            rows.setdefault((str(w.get("kind")), str(w.get("name"))), {})[i] = w
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(label)}</th>" for label in labels)
    body = []
    for (kind, name), by_profile in sorted(rows.items()):
        cells = []
        for i in range(len(results)):
            w = by_profile.get(i)
            if w is None:
                cells.append("<td class=\"v\">—</td>")
                continue
            seconds = w.get("completionSeconds")
            done = format_duration(seconds) if isinstance(seconds, int | float) else "not finished"
            cells.append(f"<td class=\"v\">{w.get('succeeded', 0)}/{w.get('pods', 0)} succeeded, "
                         f"{html.escape(done)}</td>")
        body.append(f"<tr><td>{html.escape(kind)} {html.escape(name)}</td>{''.join(cells)}</tr>")
    return (f'<section class="workloads"><h2>Workloads</h2><table class="summary"><tr><th>workload</th>{head}'
            f"</tr>{''.join(body)}</table></section>")


def queues_html(labels: Sequence[str], results: Sequence[Result]) -> str:
    """A table per queueing profile: a row per queue with what it admitted, held back and lost."""
    sections = []
    columns = ("admitted", "pending", "running", "borrowed", "preempted", "reclaimed")
    for label, report in zip(labels, results, strict=True):
        queues = report.get("queues")
        if not queues:
            continue
        head = "".join(f"<th>{c}</th>" for c in (*columns, "mean wait"))
        body = []
        for q in queues:
            wait = q.get("meanWaitSeconds")
            cells = "".join(f"<td class=\"v\">{'' if q.get(c) is None else html.escape(str(q.get(c)))}</td>"
                            for c in columns)
            cells += f"<td class=\"v\">{'' if wait is None else html.escape(format_duration(wait))}</td>"
            name = f"{q.get('kind')} {q.get('name')}"
            body.append(f"<tr><td>{html.escape(name)}</td>{cells}</tr>")
        sections.append(f"<h3>{html.escape(label)}</h3><table class=\"summary\"><tr><th>queue</th>{head}</tr>"
                        f"{''.join(body)}</table>")
    if not sections:
        return ""
    return f'<section class="queues"><h2>Queues</h2>{"".join(sections)}</section>'


def img_tag(data: bytes, alt: str) -> str:
    """An <img> with the PNG embedded as a base64 data URI (the page needs no other file)."""
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{base64.b64encode(data).decode("ascii")}">'


def index_html(labels: Sequence[str], results: Sequence[Result], pngs: Mapping[str, bytes]) -> str:
    """One page, no network: a column per profile (summary metrics and its allocation plot), then the
    plots that put the profiles on the same axes."""
    rows = [(name, render) for name, render in summary_rows(
        [{**r, "summary": {"allocated": {}, **r.get("summary", {})}} for r in results])
            if any(_cell(render, r) != "—" for r in results)]  # rows no result can fill are left out
    extra, extra_values = _extra_rows(results)
    columns: list[str] = []
    for label, report, mine in zip(labels, results, extra_values, strict=True):
        gates = ", ".join(f"{k}={'on' if v else 'off'}" for k, v in sorted(report.get("featureGates", {}).items()))
        cells = [f"<tr><td{_indent(name)}>{html.escape(name.strip())}</td>"
                 f"<td class=\"v\">{value_html(_cell(render, report))}</td></tr>" for name, render in rows]
        cells += [f"<tr><td>{html.escape(name)}</td><td class=\"v\">{value_html(mine.get(name, '—'))}</td></tr>"
                  for name in extra]
        plot = pngs.get(f"allocation-{_slug(label)}.png")
        figure = img_tag(plot, f"allocation over time, {label}") if plot is not None else ""
        columns.append(
            f'<section class="profile" data-profile="{html.escape(label)}">'
            f"<h2>{html.escape(label)}</h2><p class=\"gates\">{html.escape(gates) or '&nbsp;'}</p>"
            f'<table class="summary">{"".join(cells)}</table>{figure}</section>')
    shared = [("pending.png", "Pending over time: pods (gang members counted) and pod groups, per profile."),
              ("waits.png", "Waiting times: cumulative distribution per pod and per pod group."),
              ("fragmentation.png", "Fragmentation protocol: GPUs left unallocated against arrived GPU load."),
              ("queues.png", "Queues: each queue's share of the cluster over time, per queueing profile."),
              ("services.png", "Scale to zero: hours saved against the latency cold starts added, per service.")]
    figures = "".join(f"<figure>{img_tag(pngs[name], caption)}<figcaption>{html.escape(caption)}</figcaption></figure>"
                      for name, caption in shared if name in pngs)
    count = len(results)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>Phalanx report: {html.escape(', '.join(labels))}</title><style>{CSS}</style></head>\n"
        f"<body><h1>Phalanx report</h1><p class=\"note\">{count} profile{'s' if count != 1 else ''} side by side; "
        "fractions are of allocatable capacity at the end of the run; stranded capacity is held by gang members "
        "that cannot make progress. Every field is explained in docs/report.md.</p>\n"
        f"<div class=\"profiles\" style=\"grid-template-columns:repeat({count},minmax(300px,1fr))\">"
        f"{''.join(columns)}</div>\n{workloads_html(labels, results)}{queues_html(labels, results)}"
        f"<div class=\"all\">{figures}</div>\n"
        f"<script>{_LAYOUT_SCRIPT}</script></body></html>\n"
    )


# --- the directory ---------------------------------------------------------------------------------------

def printable(value: Any) -> Any:
    """The document with every string UTF-8 can encode: a lone surrogate (from a JSON escape in the input) is
    written escaped, as Python writes it to stderr, rather than failing the plots and the files halfway."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if isinstance(value, Mapping):
        return {printable(key): printable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [printable(item) for item in value]
    return value


def render_report(document: Result) -> dict[str, bytes]:
    """Every file of a report directory, by name, rendered in memory (nothing is written)."""
    document = printable(document)
    results = results_of(document)
    labels = labels_of(results)
    unit = _time_unit(results)
    pngs: dict[str, bytes] = {}
    with_series = [(label, r) for label, r in zip(labels, results, strict=True) if isinstance(r.get("series"),
                                                                                                Mapping)]
    for label, report in with_series:
        pngs[f"allocation-{_slug(label)}.png"] = allocation_plot(label, report, unit)
    if with_series:
        pngs["pending.png"] = pending_plot(labels, results, unit)
        pngs["waits.png"] = waits_plot(labels, results)
    fragmentation = fragmentation_plot(labels, results)
    if fragmentation is not None:
        pngs["fragmentation.png"] = fragmentation
    shares = queue_share_plot(labels, results, unit)
    if shares is not None:
        pngs["queues.png"] = shares
    services = services_plot(labels, results)
    if services is not None:
        pngs["services.png"] = services
    files = {"report.json": utf8(dumps(document) + "\n")}
    if with_series:
        files["series.csv"] = utf8(series_csv(results))
    files.update(pngs)
    files["index.html"] = utf8(index_html(labels, results, pngs))
    return files


def utf8(text: str) -> bytes:
    """The text as UTF-8; what UTF-8 cannot hold (a lone surrogate from a JSON escape in the input) escaped."""
    return text.encode("utf-8", "backslashreplace")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# The files every report directory gets (plots vary with the report).
REPORT_FILES = ("report.json", "series.csv", "index.html")


def check_report_directory(directory: str, names: Sequence[str] = REPORT_FILES) -> None:
    """InputError unless `directory` can take the report: a directory (or a path one can be made at) that this
    process may write, where none of `names` is a directory, and matplotlib is installed. Run before the
    simulation, so none is lost."""
    require("matplotlib", "--report DIR (its PNG plots)")
    if not directory.strip():
        raise InputError("must name a directory", field="--report")
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise InputError("exists and is not a directory", field="--report", file=directory)
    existing = os.path.abspath(directory)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise InputError(f"{existing} is not a directory", field="--report", file=directory)
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"{'the directory' if existing == os.path.abspath(directory) else existing} is not writable",
                         field="--report", file=directory)
    for name in names:
        if os.path.isdir(os.path.join(directory, name)):
            raise InputError(f"{name} is a directory: the report writes a file there", field="--report",
                             file=directory)


def _check_directory(directory: str) -> None:
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise InputError("exists and is not a directory", field="--report", file=directory)


def write_files(directory: str, files: Mapping[str, bytes]) -> list[str]:
    """Write the files into `directory` (created if missing); returns the paths written.

    Every file is first written in full to a temporary file beside its target; only when all are written are
    they renamed over their targets. A failure (a full disk, a directory where a file goes) leaves the files
    already in `directory` as they were."""
    check_report_directory(directory, list(files))
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise InputError(exc.strerror or str(exc), field="--report", file=directory) from None
    mode = 0o666 & ~_umask()
    staged: list[tuple[str, str]] = []
    try:
        for name, data in files.items():
            fd, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
            staged.append((temporary, os.path.join(directory, name)))
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.chmod(temporary, mode)
        for temporary, target in staged:
            os.replace(temporary, target)
    except OSError as exc:
        raise InputError(f"cannot write the report: {exc.strerror or exc}", field="--report",
                         file=directory) from None
    finally:
        for temporary, _ in staged:
            if os.path.exists(temporary):
                os.unlink(temporary)
    return [target for _, target in staged]


def write_report(directory: str, document: Result) -> list[str]:
    """Render the report directory for `document` (one report, or compare's {"results": [...]}) and write it."""
    _check_directory(directory)  # before the rendering work
    return write_files(directory, render_report(document))
