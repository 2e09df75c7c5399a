"""`phalanx compare --trace openb …`: replay a trace under several profiles and seeds, one result each.

Each result carries the report contract's top fields (`schemaVersion`, `profile`, `featureGates`,
`summary`) plus per-seed details and, for the fragmentation protocol, the allocation curve (mean alloc%
against arrived load k = 0..130). Summary values are means over the seeds.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from phalanx.cluster.gpus import TargetWorkload
from phalanx.errors import InputError
from phalanx.scheduler.profiles import Profile, load_profile
from phalanx.sim.scenario import scenario_for
from phalanx.traces.fragmentation import FULL_LOAD, ReplayResult, replay_fragmentation
from phalanx.traces.openb import OpenbTrace, load_trace
from phalanx.traces.timed import replay_timed

SCHEMA_VERSION = 1
TRACES = ("openb",)
PROTOCOLS = ("fragmentation", "timed")


def parse_seeds(text: str) -> list[int]:
    """`42-51`, `1,2,5` or a mix (`1,4-6`) → a list of seeds in the given order."""
    seeds: list[int] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        low, sep, high = part.partition("-")
        try:
            if sep:
                first, last = int(low), int(high)
                if last < first:
                    raise ValueError
                seeds.extend(range(first, last + 1))
            else:
                seeds.append(int(part))
        except ValueError:
            raise InputError(f"invalid seed list {text!r}: want e.g. 42-51 or 1,2,3", field="--seeds") from None
    if not seeds:
        raise InputError("name at least one seed", field="--seeds")
    return seeds


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.fmean(present), 6) if present else None


def _sd(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.stdev(present), 6) if len(present) > 1 else None


def _fragmentation_result(profile: Profile, trace: OpenbTrace, load: float, seeds: Sequence[int],
                          workload: TargetWorkload) -> dict[str, Any]:
    runs: list[ReplayResult] = [replay_fragmentation(trace.gpu_nodes, trace.pods, profile, seed, load, workload)
                                for seed in seeds]
    details = [r.describe() for r in runs]
    gpus = runs[0].gpus
    unallocated = [r.unallocated_gpus for r in runs]
    at_full = [r.allocation_at_full_load for r in runs]
    curve_len = max(len(r.curve) for r in runs)
    mean_curve = [_mean([r.curve[k] if k < len(r.curve) else None for r in runs]) for k in range(curve_len)]
    seconds = [r.seconds for r in runs]

    def pods_mean(key: str) -> float | None:
        return _mean([float(d["pods"][key]) for d in details])

    summary = {
        "unallocatedGpus": _mean(unallocated),
        "unallocatedGpusSd": _sd(unallocated),
        "gpuAllocationAtFullLoad": _mean(at_full),
        "unallocatedGpusAtFullLoad": _mean([d["unallocatedGpusAtFullLoad"] for d in details]),
        "gpus": gpus,
        "pods": {key: pods_mean(key) for key in ("total", "running", "pending", "succeeded", "failed")},
        "allocated": {name: _mean([r.allocated_fraction[name] for r in runs]) for name in ("cpu", "memory", "gpu")},
        "fragmentationPercent": {
            "atFullLoad": _mean([r.fragmentation.get("atFullLoad") for r in runs]),
            "atEnd": _mean([r.fragmentation.get("atEnd") for r in runs]),
        },
        "replaySeconds": {"mean": _mean(seconds), "max": round(max(seconds), 4), "total": round(sum(seconds), 4),
                          "cpuMean": _mean([r.cpu_seconds for r in runs])},
    }
    return {
        "summary": summary,
        "seeds": details,
        "allocationCurve": {
            "arrivedPercent": list(range(curve_len)),
            "allocatedPercent": mean_curve,
            "unallocatedGpus": [None if v is None else round(gpus * (100.0 - v) / 100.0, 4) for v in mean_curve],
            "fullLoadK": FULL_LOAD,
            "endK": runs[0].end_k,
        },
    }


def compare_trace(trace: str, nodes_csv: str, pods_csv: str, protocol: str, load: float, seeds: list[int],
                  profiles: list[str]) -> list[dict[str, Any]]:
    """Replay the trace under each profile (built-in names or profile files) for each seed."""
    if trace not in TRACES:
        raise InputError(f"unknown trace {trace!r} (known: {', '.join(TRACES)})", field="--trace")
    if protocol not in PROTOCOLS:
        raise InputError(f"unknown protocol {protocol!r} (known: {', '.join(PROTOCOLS)})", field="--protocol")
    if not seeds:
        raise InputError("name at least one seed", field="--seeds")
    if not load > 0:
        raise InputError(f"must be positive, got {load}", field="--load")
    loaded = [load_profile(spec) for spec in profiles]
    if not loaded:
        raise InputError("name at least one profile", field="--profiles")
    data = load_trace(nodes_csv, pods_csv)
    workload = TargetWorkload.from_pods(data.pods)
    results: list[dict[str, Any]] = []
    for profile, spec in zip(loaded, profiles, strict=True):
        head: dict[str, Any] = {
            "schemaVersion": SCHEMA_VERSION, "profile": profile.name, "featureGates": dict(profile.feature_gates),
            "trace": {"name": trace, "nodes": nodes_csv, "pods": pods_csv, "protocol": protocol, "load": load,
                      "seeds": list(seeds)},
        }
        if protocol == "fragmentation":
            head.update(_fragmentation_result(profile, data, load, seeds, workload))
        else:
            head.update(replay_timed(profile, data, seeds, workload, scenario_for(spec)))
        results.append(head)
    return results


__all__ = ["PROTOCOLS", "TRACES", "compare_trace", "parse_seeds", "render_trace_compare"]


def render_trace_compare(results: Sequence[dict[str, Any]], console: Console) -> None:
    """One row per profile: the headline numbers of the trace replay."""
    table = Table(title="trace replay (means over seeds)")
    for column in ("profile", "unallocated GPUs (end)", "GPU alloc at 100% load", "pods failed", "pods",
                   "s / replay"):
        table.add_column(column, justify="left" if column == "profile" else "right")
    for result in results:
        summary = result["summary"]
        unalloc = summary.get("unallocatedGpus")
        at_full = summary.get("gpuAllocationAtFullLoad")
        pods = summary.get("pods", {})
        seconds = summary.get("replaySeconds", {})
        table.add_row(
            str(result["profile"]),
            "-" if unalloc is None else f"{unalloc:.1f}",
            "-" if at_full is None else f"{100 * at_full:.2f}%",
            _number(pods.get("failed")),
            _number(pods.get("total")),
            _number(seconds.get("mean") if isinstance(seconds, dict) else None, digits=2),
        )
    console.print(table)


def _number(value: object, digits: int = 1) -> str:
    return f"{value:.{digits}f}" if isinstance(value, int | float) else "-"
