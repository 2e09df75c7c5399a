"""`phalanx sweep --report DIR`: a sweep's report.json, cells.csv, PNG plots and one self-contained index.html.

`report.json` is the sweep document `-o json` prints (`phalanx.sweep.report.sweep_document`); `cells.csv` has one
row per cell with the headline numbers of the tables; the plots compare the profiles' means with their
standard deviations as error bars; `index.html` holds the grid, the aggregate table (the columns of
`render_sweep`), the plots as data URIs and the per-cell table. Everything is rendered in memory, then written
with `phalanx.sim.output.write_files` (each file to a temporary file beside it, then renamed over it), and
drawn with its Agg helpers (matplotlib loads only when a report is written). docs/sweeps.md lists the files.
"""

from __future__ import annotations

import csv
import html
import io
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from phalanx.api.quantity import format_duration
from phalanx.sim.jsonsafe import dumps
from phalanx.sim.output import (
    CSS,
    csv_text,
    img_tag,
    line_style,
    new_figure,
    png_bytes,
    printable,
    utf8,
    write_files,
)
from phalanx.sweep.grid import TRACE
from phalanx.sweep.report import MANIFEST_COLUMNS, TRACE_COLUMNS, Column

if TYPE_CHECKING:
    from matplotlib.axes import Axes

Document = Mapping[str, Any]
FieldPath = tuple[str, ...]

# The files every sweep report directory gets (the plots vary with the grid).
SWEEP_REPORT_FILES = ("report.json", "cells.csv", "index.html")
# cells.csv's numbers: the fields behind TRACE_COLUMNS / MANIFEST_COLUMNS, by their path in a cell's result.
TRACE_FIELDS: tuple[FieldPath, ...] = (("unallocatedGpus",), ("gpuAllocationAtFullLoad",),
                                  ("fragmentationPercent", "atEnd"), ("pods", "failed"), ("pods", "total"),
                                  ("replaySeconds",))
MANIFEST_FIELDS: tuple[FieldPath, ...] = (("pods", "running"), ("pods", "pending"), ("gangPodsPending",),
                                     ("notAdmitted", "workloads"), ("notAdmitted", "podsNotCreated"),
                                     ("podGroups", "scheduled"), ("waitSeconds", "p90"), ("preemptions",))
_EXTRA_CSS = """
th{text-align:left;vertical-align:bottom;padding:.2rem .4rem;border-bottom:2px solid #d0d7de}
.wide{overflow-x:auto;margin:.5rem 0 1.2rem}td.k{font-family:ui-monospace,monospace;font-size:.8rem}
"""


# --- the document's shape --------------------------------------------------------------------------------

def is_trace(document: Document) -> bool:
    """Whether the sweep is a trace grid (else a manifests grid)."""
    return bool(document["grid"]["kind"] == TRACE)


def _at(tree: Any, path: FieldPath) -> Any:
    for part in path:
        tree = tree.get(part) if isinstance(tree, Mapping) else None
    return tree


def _value(number: Any) -> float:
    """A mean or sd for a plot: NaN (not drawn) when missing."""
    return float(number) if isinstance(number, int | float) and not isinstance(number, bool) else math.nan


def _columns(document: Document) -> list[Column]:
    return TRACE_COLUMNS if is_trace(document) else MANIFEST_COLUMNS


def _heads(document: Document) -> list[str]:
    return ["trace", "load"] if is_trace(document) else ["manifests", "what-if"]


def _where(document: Document, result: Document) -> list[str]:
    """The first cells of a result's row, as `render_sweep` shows them."""
    if is_trace(document):
        return [str(result["trace"]["variant"]), f"{result['trace']['load']:g}"]
    return [str(result["input"]["name"]), str(result["input"]["edit"])]


def _measured(document: Document, seed: Document) -> dict[str, Any]:
    """A cell's numbers: a trace cell's result itself, a manifests cell's summary."""
    return dict(seed if is_trace(document) else seed.get("summary", {}))


# --- cells.csv -------------------------------------------------------------------------------------------

def _csv_number(value: Any) -> Any:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else ""


def cells_csv(document: Document) -> str:
    """One row per cell: where it sits in the grid, its profile, seed and key, then its headline numbers."""
    trace = is_trace(document)
    fields = TRACE_FIELDS if trace else MANIFEST_FIELDS
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*(("variant", "load") if trace else ("manifests", "edit")), "profile", "seed", "key",
                     *(".".join(path) for path in fields)])
    for result in document["results"]:
        where = result["trace"] if trace else result["input"]
        first = [csv_text(str(where["variant"])), where["load"]] if trace else [csv_text(str(where["name"])),
                                                                                 csv_text(str(where["edit"]))]
        for seed in result["seeds"]:
            measured = _measured(document, seed)
            writer.writerow([*first, csv_text(str(result["profile"])), seed.get("seed"), seed["key"],
                             *(_csv_number(_at(measured, path)) for path in fields)])
    return out.getvalue()


# --- plots -----------------------------------------------------------------------------------------------

def _bars(ax: Axes, groups: Sequence[str], bars: Sequence[tuple[str, list[float], list[float]]]) -> None:
    """Grouped bars: one group per x label, one bar per (label, means, sds) with its sd as an error bar."""
    width = 0.8 / max(1, len(bars))
    for i, (label, means, sds) in enumerate(bars):
        xs = [g - 0.4 + width * (i + 0.5) for g in range(len(groups))]
        errors = [0.0 if math.isnan(sd) else sd for sd in sds]
        ax.bar(xs, means, width, yerr=errors, capsize=3, label=label, color=f"C{i % 10}",
               error_kw={"elinewidth": 1, "ecolor": "#333"})
    ax.set_xticks(range(len(groups)), list(groups), rotation=30 if len(groups) > 4 else 0,
                  ha="right" if len(groups) > 4 else "center")
    ax.set_ylim(bottom=0)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small")


def _bar_width(groups: int, bars: int) -> float:
    return min(18.0, max(6.4, 1.5 + 0.3 * groups * max(1, bars)))


def _axis(values: Sequence[Any]) -> list[Any]:
    return list(dict.fromkeys(values))


def _trace_index(document: Document) -> dict[tuple[str, float, str], Document]:
    return {(r["trace"]["variant"], r["trace"]["load"], r["profile"]): r for r in document["results"]}


def unallocated_plot(document: Document) -> bytes:
    """Mean unallocated GPUs at the end per pod list (x) and profile (bars), sd as error bars; a panel per load."""
    index = _trace_index(document)
    variants = _axis([variant for variant, _, _ in index])
    loads = _axis([load for _, load, _ in index])
    profiles = _axis([profile for _, _, profile in index])
    fig = new_figure(_bar_width(len(variants), len(profiles)), 3.6 * len(loads))
    axes = fig.subplots(len(loads), 1, squeeze=False)[:, 0]
    for ax, load in zip(axes, loads, strict=True):
        bars = []
        for profile in profiles:
            chosen = [index.get((variant, load, profile)) for variant in variants]
            bars.append((profile, [_value(_at(r, ("summary", "unallocatedGpus"))) for r in chosen],
                         [_value(_at(r, ("sd", "unallocatedGpus"))) for r in chosen]))
        _bars(ax, variants, bars)
        ax.set_ylabel("unallocated GPUs (end)")
        ax.set_title(f"GPUs left unallocated at load {load:g} (mean ± sd over seeds)")
    return png_bytes(fig)


def load_plot(document: Document) -> bytes | None:
    """Mean unallocated GPUs against load, a line per profile with sd error bars, a panel per pod list; None
    when the grid has one load."""
    index = _trace_index(document)
    loads = sorted(_axis([load for _, load, _ in index]))
    if len(loads) < 2:
        return None
    variants = _axis([variant for variant, _, _ in index])
    profiles = _axis([profile for _, _, profile in index])
    columns = min(3, len(variants))
    rows = math.ceil(len(variants) / columns)
    fig = new_figure(4.6 * columns + 0.6, 3.4 * rows)
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    for ax, variant in zip(axes, variants, strict=False):
        for i, profile in enumerate(profiles):
            chosen = [index.get((variant, load, profile)) for load in loads]
            sds = [_value(_at(r, ("sd", "unallocatedGpus"))) for r in chosen]
            ax.errorbar(loads, [_value(_at(r, ("summary", "unallocatedGpus"))) for r in chosen],
                        yerr=[0.0 if math.isnan(sd) else sd for sd in sds], capsize=3, marker="o", label=profile,
                        **line_style(i))
        ax.set_title(f"{variant}: unallocated GPUs against load")
        ax.set_xlabel("arrived GPU requests (× GPU capacity)")
        ax.set_ylabel("unallocated GPUs (end)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    for ax in axes[len(variants):]:
        ax.set_visible(False)
    return png_bytes(fig)


def pending_plot(document: Document) -> bytes:
    """Mean pending pods and pending gang pods per (input,) what-if edit (x) and profile (bars), sd as error
    bars."""
    from matplotlib.ticker import MaxNLocator

    index = {(r["input"]["name"], r["input"]["edit"], r["profile"]): r for r in document["results"]}
    places = _axis([(name, edit) for name, edit, _ in index])
    profiles = _axis([profile for _, _, profile in index])
    several = len({name for name, _ in places}) > 1
    groups = [f"{name}: {edit}" if several else edit for name, edit in places]
    if max(map(len, groups), default=0) > 14:  # long labels (several inputs): the panels one above the other
        fig = new_figure(_bar_width(len(groups), len(profiles)), 8.0)
        axes = fig.subplots(2, 1)
    else:
        fig = new_figure(2 * _bar_width(len(groups), len(profiles)) / 1.4, 3.8)
        axes = fig.subplots(1, 2)
    for ax, path, title in ((axes[0], ("pods", "pending"), "pods pending at the end"),
                            (axes[1], ("gangPodsPending",), "gang pods pending at the end")):
        bars = []
        for profile in profiles:
            chosen = [index.get((name, edit, profile)) for name, edit in places]
            bars.append((profile, [_value(_at(r, ("summary", *path))) for r in chosen],
                         [_value(_at(r, ("sd", *path))) for r in chosen]))
        _bars(ax, groups, bars)
        ax.set_ylim(top=max(1.0, ax.get_ylim()[1]))  # all zero: an axis of whole pods, not 0 to 0.055
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(title)
        ax.set_ylabel("pods")
    fig.suptitle("mean ± sd over seeds", fontsize="medium")
    return png_bytes(fig)


def render_plots(document: Document) -> dict[str, bytes]:
    """The sweep's PNGs by file name."""
    if not document["results"]:
        return {}
    if not is_trace(document):
        return {"pending.png": pending_plot(document)}
    pngs = {"unallocated.png": unallocated_plot(document)}
    by_load = load_plot(document)
    if by_load is not None:
        pngs["unallocated-by-load.png"] = by_load
    return pngs


# --- index.html ------------------------------------------------------------------------------------------

CAPTIONS = {
    "unallocated.png": "GPUs left unallocated at the end of the replay, per pod list and profile (mean ± sd over "
                       "seeds); fewer is better.",
    "unallocated-by-load.png": "Unallocated GPUs against the arrived load, per pod list and profile (mean ± sd "
                               "over seeds).",
    "pending.png": "Pods and gang pods still pending at the end, per what-if edit and profile (mean ± sd over "
                   "seeds).",
}


def _list(values: Sequence[Any]) -> str:
    return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in values)


def grid_rows(document: Document) -> list[tuple[str, str]]:
    """The grid's axes as (name, value) rows."""
    grid = document["grid"]
    if is_trace(document):
        rows = [("trace", str(grid.get("trace"))), ("node list", str(grid.get("nodes"))),
                ("pod lists", _list(grid.get("pods", []))), ("loads (× GPU capacity)", _list(grid.get("loads", [])))]
    else:
        until = grid.get("until")
        rows = [("inputs", "; ".join(", ".join(paths) for paths in grid.get("manifests", []))),
                ("what-if edits", _list(grid.get("edits", []))),
                ("until", "when nothing more can change" if until is None else format_duration(until))]
    return [*rows, ("profiles", _list(grid.get("profiles", []))), ("seeds", _list(grid.get("seeds", []))),
            ("cells", str(grid.get("cells")))]


def _table(heads: Sequence[str], rows: Sequence[Sequence[str]], left: int, key: bool = False) -> str:
    """An HTML table; the first `left` columns (and a last `key` column) are text, the rest numbers."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in heads)
    body = []
    for row in rows:
        cells = []
        for i, value in enumerate(row):
            kind = "" if i < left else ' class="k"' if key and i == len(row) - 1 else ' class="v"'
            cells.append(f"<td{kind}>{html.escape(value)}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    return f'<div class="wide"><table><tr>{head}</tr>{"".join(body)}</table></div>'


def aggregate_rows(document: Document) -> list[list[str]]:
    """The rows of `render_sweep`'s aggregate table: where, profile, seed count, then mean ± sd per column."""
    return [[*_where(document, r), str(r["profile"]), str(len(r["seeds"])),
             *(cell(r["summary"], r["sd"]) for _, cell in _columns(document))] for r in document["results"]]


def cell_rows(document: Document) -> list[list[str]]:
    """The rows of `render_sweep`'s wide per-cell table: where, profile, seed, the numbers, then the key."""
    return [[*_where(document, r), str(r["profile"]), str(seed.get("seed")),
             *(cell(_measured(document, seed), {}) for _, cell in _columns(document)), str(seed["key"])]
            for r in document["results"] for seed in r["seeds"]]


def index_html(document: Document, pngs: Mapping[str, bytes]) -> str:
    """One page, no network: the grid, the aggregate table, the plots and the per-cell table."""
    heads = _heads(document)
    names = [name for name, _ in _columns(document)]
    grid = "".join(f"<tr><td>{html.escape(name)}</td><td>{html.escape(value)}</td></tr>"
                   for name, value in grid_rows(document))
    figures = "".join(f"<figure>{img_tag(data, CAPTIONS.get(name, name))}<figcaption>"
                      f"{html.escape(CAPTIONS.get(name, name))}</figcaption></figure>" for name, data in pngs.items())
    kind = "trace" if is_trace(document) else "manifests"
    cells = document["grid"]["cells"]
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>Phalanx sweep: {kind} grid, {cells} cells</title><style>{CSS}{_EXTRA_CSS}</style></head>\n"
        f"<body><h1>Phalanx sweep</h1><p class=\"note\">A {kind} grid of {cells} cells; per (input, "
        f"{'load' if is_trace(document) else 'what-if edit'}, profile) the mean ± sample standard deviation over "
        "the seeds. report.json holds every number (docs/sweeps.md explains them), cells.csv one row per cell.</p>\n"
        f'<section class="grid"><h2>Grid</h2><table>{grid}</table></section>\n'
        f'<section class="aggregate"><h2>Mean ± sd over seeds</h2>'
        f"{_table([*heads, 'profile', 'seeds', *names], aggregate_rows(document), len(heads) + 1)}</section>\n"
        f'<div class="all">{figures}</div>\n'
        f'<section class="cells"><h2>Cells</h2>'
        f"{_table([*heads, 'profile', 'seed', *names, 'key'], cell_rows(document), len(heads) + 1, key=True)}"
        "</section>\n</body></html>\n"
    )


# --- the directory ---------------------------------------------------------------------------------------

def render_sweep_report(document: Document) -> dict[str, bytes]:
    """Every file of a sweep's report directory, by name, rendered in memory (nothing is written)."""
    document = printable(document)
    pngs = render_plots(document)
    files = {"report.json": utf8(dumps(document) + "\n"), "cells.csv": utf8(cells_csv(document))}
    files.update(pngs)
    files["index.html"] = utf8(index_html(document, pngs))
    return files


def write_sweep_report(directory: str, document: Document) -> list[str]:
    """Render the report directory of a sweep document and write it atomically; returns the paths written."""
    return write_files(directory, render_sweep_report(document))
