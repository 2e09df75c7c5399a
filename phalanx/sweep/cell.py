"""One cell of a sweep, run: the function local worker processes and Ray tasks both call.

A trace cell replays the trace once (the fragmentation protocol, `phalanx.traces.fragmentation`) and returns
the per-seed entry `phalanx compare --trace` reports under `seeds`, plus the GPU count. A manifests cell runs
the simulation once and returns `phalanx compare`'s report for that profile, without the per-pod, per-group
and time-series lists. Inputs are loaded once per process and reused by the cells that follow (simulations
and replays never change the loaded objects).
"""

from __future__ import annotations

import functools
from typing import Any

from phalanx.cluster.gpus import TargetWorkload
from phalanx.inputs.load import Inputs, load_paths
from phalanx.scheduler.profiles import load_profile
from phalanx.sim.durations import DEFAULT_DURATIONS
from phalanx.sim.run import simulate
from phalanx.sim.scenario import scenario_for
from phalanx.sweep.edits import apply_edit, parse_edit
from phalanx.sweep.grid import TRACE, Cell
from phalanx.traces.fragmentation import replay_fragmentation
from phalanx.traces.openb import OpenbTrace, load_trace

# What a sweep's manifests cell leaves out of the report: long lists, one entry per object or sample.
LEFT_OUT = ("series", "pods", "podGroups")


@functools.lru_cache(maxsize=4)
def _trace(nodes: str, pods: str) -> tuple[OpenbTrace, TargetWorkload]:
    data = load_trace(nodes, pods)
    return data, TargetWorkload.from_pods(data.pods)


@functools.lru_cache(maxsize=4)
def _manifests(paths: tuple[str, ...]) -> Inputs:
    return load_paths(paths)


def run_cell(cell: Cell) -> dict[str, Any]:
    """The cell's result (JSON-ready); raises InputError on bad input."""
    profile = load_profile(cell.profile)
    if cell.kind == TRACE:
        data, workload = _trace(cell.nodes, cell.pods)
        run = replay_fragmentation(data.gpu_nodes, data.pods, profile, cell.seed, cell.load, workload)
        return {"profile": profile.name, "featureGates": dict(profile.feature_gates), "gpus": run.gpus,
                **run.describe()}
    inputs = apply_edit(_manifests(cell.manifests), parse_edit(cell.edit))
    scenario = scenario_for(cell.profile, durations=DEFAULT_DURATIONS)  # as `compare` without --default-duration
    full = simulate(inputs, profile, scenario=scenario, seed=cell.seed, until=cell.until).report()
    report = {key: value for key, value in full.items() if key not in LEFT_OUT}
    return {**report, "seed": cell.seed, "edit": cell.edit}
