"""The timed replay of a trace: pods arrive at their creation time and run for deletion − start seconds,
on the simulator's clock (`phalanx.sim.run.simulate`, the same driver as for manifests)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from phalanx.cluster.gpus import GPU_MILLI, TargetWorkload
from phalanx.inputs.load import Inputs
from phalanx.scheduler.profiles import Profile
from phalanx.sim.run import simulate
from phalanx.sim.scenario import Scenario
from phalanx.traces.fragmentation import seeded_profile
from phalanx.traces.openb import OpenbTrace


def replay_timed(profile: Profile, trace: OpenbTrace, seeds: Sequence[int], workload: TargetWorkload,
                 scenario: Scenario | None = None) -> dict[str, Any]:
    """Simulate the trace on its own clock once per seed; summary = the first seed's, with the pod counts
    and `gpuAllocationTimeAverage` (allocated GPU-hours over capacity × simulated time) averaged over seeds."""
    reports: list[dict[str, Any]] = []
    for seed in seeds:
        inputs = Inputs(nodes=list(trace.gpu_nodes), pods=list(trace.pods))
        run = simulate(inputs, seeded_profile(profile, seed, workload, trace.pods), scenario=scenario, seed=seed)
        # A seed's entry: the report without its per-pod and per-group lists, plus fields of the trace's own.
        report: dict[str, Any] = {key: value for key, value in run.report().items()
                                  if key not in ("pods", "podGroups")}
        report["seed"] = seed
        reports.append(report)
    capacity = sum(n.allocatable.get(GPU_MILLI, 0) for n in trace.gpu_nodes)
    averages = []
    for report in reports:
        milli_hours = report["summary"].get("allocatedResourceHours", {}).get(GPU_MILLI, 0.0)
        hours = report.get("endTime", 0.0) / 3600.0
        average = milli_hours / (capacity * hours) if capacity and hours else None
        report["summary"]["gpuAllocationTimeAverage"] = None if average is None else round(average, 6)
        averages.append(average)
    summary = dict(reports[0]["summary"])
    for key in ("running", "pending", "succeeded", "failed"):
        summary.setdefault("pods", {})[key] = statistics.fmean(r["summary"]["pods"][key] for r in reports)
    present = [a for a in averages if a is not None]
    # The fragmentation protocol's headline numbers have no meaning on the trace's clock.
    summary.update({"unallocatedGpus": None, "gpuAllocationAtFullLoad": None,
                    "gpuAllocationTimeAverage": round(statistics.fmean(present), 6) if present else None})
    return {"summary": summary, "seeds": reports}
