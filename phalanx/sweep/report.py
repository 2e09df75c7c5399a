"""A sweep's report: its cells grouped by every parameter but the seed, with means and standard deviations.

`sweep_document` builds the JSON contract (docs/sweeps.md): `schemaVersion`, `grid` (the axes) and `results`,
one per (input, load or edit, profile), shaped like `phalanx compare`'s results: `summary` holds the means over
the seeds of every number the cells report, `sd` their sample standard deviations (null with one seed), and
`seeds` each cell's own result with its key. `render_sweep` prints the same as tables.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from phalanx.sweep.grid import SCHEMA_VERSION, TRACE, Cell

# Per-cell fields that are not measurements (or are curves): not averaged.
NOT_AVERAGED = frozenset({"seed", "profile", "featureGates", "allocationCurve", "edit", "schemaVersion"})


class _Skip:
    pass


SKIP = _Skip()


def _numbers(values: Sequence[Any]) -> list[float] | None:
    if values and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return [float(v) for v in values]
    return None


def _tree(values: Sequence[Any], reduce: Callable[[list[float]], float | None]) -> Any:
    """Reduce numbers position by position through nested dicts; other leaves (text, lists) are dropped."""
    present = [v for v in values if v is not None]
    numbers = _numbers(present)
    if numbers is not None:
        return reduce(numbers)
    if present and all(isinstance(v, dict) for v in present):
        keys = list(dict.fromkeys(k for v in present for k in v if k not in NOT_AVERAGED))
        out = {key: _tree([v.get(key) for v in present], reduce) for key in keys}
        return {key: value for key, value in out.items() if value is not SKIP}
    return None if not present else SKIP


def _mean(numbers: list[float]) -> float:
    return round(statistics.fmean(numbers), 6)


def _sd(numbers: list[float]) -> float | None:
    return round(statistics.stdev(numbers), 6) if len(numbers) > 1 else None


def _group(cells: Sequence[Cell], records: Sequence[dict[str, Any]]) -> list[tuple[Cell, list[dict[str, Any]]]]:
    groups: dict[tuple[Any, ...], tuple[Cell, list[dict[str, Any]]]] = {}
    for cell, stored in zip(cells, records, strict=True):
        groups.setdefault(cell.group(), (cell, []))[1].append(stored)
    return list(groups.values())


def _result(cell: Cell, records: list[dict[str, Any]]) -> dict[str, Any]:
    results = [stored["result"] for stored in records]
    seeds = [stored["cell"]["seed"] for stored in records]
    first = results[0]
    head: dict[str, Any] = {"schemaVersion": SCHEMA_VERSION, "profile": first.get("profile"),
                            "featureGates": first.get("featureGates", {})}
    if cell.kind == TRACE:
        head["trace"] = {"name": cell.trace, "variant": cell.name, "nodes": cell.nodes, "pods": cell.pods,
                         "protocol": "fragmentation", "load": cell.load, "seeds": seeds}
        measured = results
    else:
        head["input"] = {"manifests": list(cell.manifests), "name": cell.name, "edit": cell.edit,
                         "until": cell.until, "seeds": seeds}
        measured = [r.get("summary", {}) for r in results]
    summary = _tree(measured, _mean)
    sd = _tree(measured, _sd)
    if cell.kind == TRACE:
        summary["unallocatedGpusSd"] = sd.get("unallocatedGpus")  # as `compare --trace` names it
    return {**head, "summary": summary, "sd": sd,
            "seeds": [{"key": stored["key"], **stored["result"]} for stored in records]}


def _axis(values: Sequence[Any]) -> list[Any]:
    return list(dict.fromkeys(values))


def sweep_document(cells: Sequence[Cell], records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The JSON contract of a finished sweep (records in the order of `cells`)."""
    grid: dict[str, Any] = {"kind": cells[0].kind if cells else TRACE, "cells": len(cells)}
    if cells and cells[0].kind == TRACE:
        grid.update(trace=cells[0].trace, nodes=cells[0].nodes, pods=_axis([c.pods for c in cells]),
                    loads=_axis([c.load for c in cells]))
    elif cells:
        grid.update(manifests=[list(m) for m in _axis([c.manifests for c in cells])],
                    edits=_axis([c.edit for c in cells]), until=cells[0].until)
    grid.update(profiles=_axis([c.profile for c in cells]), seeds=_axis([c.seed for c in cells]))
    return {"schemaVersion": SCHEMA_VERSION, "grid": grid,
            "results": [_result(cell, group) for cell, group in _group(cells, records)]}


def _number(value: object, digits: int = 1) -> str:
    return f"{value:.{digits}f}" if isinstance(value, int | float) else "-"


def _spread(mean: object, sd: object, digits: int = 1, scale: float = 1.0, unit: str = "") -> str:
    if not isinstance(mean, int | float):
        return "-"
    text = f"{scale * mean:.{digits}f}{unit}"
    return f"{text} ± {scale * sd:.{digits}f}{unit}" if isinstance(sd, int | float) else text


def _get(tree: Any, *path: str) -> Any:
    for part in path:
        tree = tree.get(part) if isinstance(tree, dict) else None
    return tree


Column = tuple[str, Callable[[dict[str, Any], dict[str, Any]], str]]

TRACE_COLUMNS: list[Column] = [
    ("unallocated GPUs (end)", lambda m, s: _spread(m.get("unallocatedGpus"), s.get("unallocatedGpus"))),
    ("GPU alloc at 100% load", lambda m, s: _spread(m.get("gpuAllocationAtFullLoad"),
                                                     s.get("gpuAllocationAtFullLoad"), 2, 100.0, "%")),
    ("frag % (end)", lambda m, s: _spread(_get(m, "fragmentationPercent", "atEnd"),
                                          _get(s, "fragmentationPercent", "atEnd"), 2)),
    ("pods failed", lambda m, s: _spread(_get(m, "pods", "failed"), _get(s, "pods", "failed"))),
    ("pods", lambda m, s: _number(_get(m, "pods", "total"))),
    ("s / replay", lambda m, s: _number(m.get("replaySeconds"), 2)),
]
MANIFEST_COLUMNS: list[Column] = [
    ("pods running", lambda m, s: _spread(_get(m, "pods", "running"), _get(s, "pods", "running"))),
    ("pods pending", lambda m, s: _spread(_get(m, "pods", "pending"), _get(s, "pods", "pending"))),
    ("gang pods pending", lambda m, s: _spread(m.get("gangPodsPending"), s.get("gangPodsPending"))),
    ("workloads not admitted", lambda m, s: _spread(_get(m, "notAdmitted", "workloads"),
                                                     _get(s, "notAdmitted", "workloads"))),
    ("pods not created", lambda m, s: _spread(_get(m, "notAdmitted", "podsNotCreated"),
                                               _get(s, "notAdmitted", "podsNotCreated"))),
    ("groups scheduled", lambda m, s: _spread(_get(m, "podGroups", "scheduled"), _get(s, "podGroups", "scheduled"))),
    ("wait p90 (s)", lambda m, s: _spread(_get(m, "waitSeconds", "p90"), _get(s, "waitSeconds", "p90"))),
    ("preemptions", lambda m, s: _spread(m.get("preemptions"), s.get("preemptions"))),
]


def render_sweep(document: dict[str, Any], console: Console, *, wide: bool = False) -> None:
    """The aggregate table (mean ± sd over seeds); with `wide`, one row per cell below it."""
    trace = document["grid"]["kind"] == TRACE
    columns = TRACE_COLUMNS if trace else MANIFEST_COLUMNS
    heads = ["trace", "load"] if trace else ["manifests", "what-if"]
    table = Table(title=f"sweep: {document['grid']['cells']} cells (mean ± sd over seeds)")
    for name in [*heads, "profile", "seeds", *(name for name, _ in columns)]:
        table.add_column(name, justify="left" if name in (*heads, "profile") else "right")
    for result in document["results"]:
        where = result["trace"] if trace else result["input"]
        first = [where["variant"], f"{where['load']:g}"] if trace else [where["name"], where["edit"]]
        table.add_row(*first, str(result["profile"]), str(len(where["seeds"])),
                      *(cell(result["summary"], result["sd"]) for _, cell in columns))
    console.print(table)
    if not wide:
        return
    cells = Table(title="sweep: cells")
    for name in [*heads, "profile", "seed", *(name for name, _ in columns), "key"]:
        cells.add_column(name, justify="left" if name in (*heads, "profile", "key") else "right")
    for result in document["results"]:
        where = result["trace"] if trace else result["input"]
        first = [where["variant"], f"{where['load']:g}"] if trace else [where["name"], where["edit"]]
        for seed in result["seeds"]:
            measured = seed if trace else seed.get("summary", {})
            cells.add_row(*first, str(result["profile"]), str(seed.get("seed")),
                          *(cell(measured, {}) for _, cell in columns), seed["key"])
    console.print(cells)
