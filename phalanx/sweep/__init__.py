"""`phalanx sweep`: a grid of simulation runs (traces × profiles × seeds × loads, or manifests × profiles ×
what-if edits × seeds), run in local processes or on a Ray cluster, stored one JSON file per finished cell so
that an interrupted sweep resumes, and reported as means and standard deviations over the seeds.

Modules: `grid` (cells and their keys), `edits` (the what-if vocabulary), `cell` (runs one cell: the one
function both executors call), `store` (the results directory), `runner` (local processes or Ray, progress),
`report` (aggregates, JSON document and tables), `output` (`--report DIR`: report.json, cells.csv, plots,
index.html).
"""

from phalanx.sweep.cell import run_cell
from phalanx.sweep.edits import Edit, apply_edit, parse_edit, parse_edits
from phalanx.sweep.grid import SCHEMA_VERSION, Cell, manifest_grid, parse_loads, trace_grid
from phalanx.sweep.output import SWEEP_REPORT_FILES, render_sweep_report, write_sweep_report
from phalanx.sweep.report import render_sweep, sweep_document
from phalanx.sweep.runner import run_grid
from phalanx.sweep.store import ResultStore

__all__ = [
    "SCHEMA_VERSION",
    "SWEEP_REPORT_FILES",
    "Cell",
    "Edit",
    "ResultStore",
    "apply_edit",
    "manifest_grid",
    "parse_edit",
    "parse_edits",
    "parse_loads",
    "render_sweep",
    "render_sweep_report",
    "run_cell",
    "run_grid",
    "sweep_document",
    "trace_grid",
    "write_sweep_report",
]
