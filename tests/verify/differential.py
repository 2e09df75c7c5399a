"""One shard of the differential suite: generated cases through Phalanx and through a real control plane.

A shard is a picklable call, so that the suite can run shards side by side in processes of their own, each
with its own control plane (a case owns the whole cluster while it runs: nodes are cluster-scoped).
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from phalanx.scheduler.profiles import builtin
from phalanx.sim.scenario import scenario_for
from phalanx.verify.compare import verify
from phalanx.verify.controlplane import ControlPlane
from phalanx.verify.generator import generate_case
from phalanx.verify.kueue_generator import generate_kueue_case
from phalanx.verify.oracle import Oracle


@dataclass
class ShardResult:
    agree: Counter[str] = field(default_factory=Counter)
    total: Counter[str] = field(default_factory=Counter)
    disagreeing: dict[int, list[str]] = field(default_factory=dict)  # seed -> differences but in messages


def run_shard(seeds: Sequence[int], oracle: Oracle, directory: Path) -> ShardResult:
    result = ShardResult()
    for seed in seeds:
        case = generate_case(seed)
        path = directory / f"case-{seed}.yaml"
        path.write_text(yaml.safe_dump_all(case.manifests, sort_keys=False))
        verdict = verify([str(path)], builtin(case.profile), oracle, seed=seed)
        result.agree.update(verdict.agree)
        result.total.update(verdict.total)
        wrong = [f"{d.category} {d.name}: {d.phalanx!r} vs {d.real!r}" for d in verdict.differences
                 if d.category != "messages"]
        if wrong:
            result.disagreeing[seed] = wrong
    return result


def run_kueue_shard(seeds: Sequence[int], oracle: Oracle, directory: Path) -> ShardResult:
    """The Kueue differential suite's cases (phalanx.verify.kueue_generator) under `kueue`, on the real Kueue."""
    result = ShardResult()
    for seed in seeds:
        path = directory / f"kueue-case-{seed}.yaml"
        path.write_text(yaml.safe_dump_all(generate_kueue_case(seed), sort_keys=False))
        verdict = verify([str(path)], builtin("kueue"), oracle, seed=seed, scenario=scenario_for("kueue"))
        result.agree.update(verdict.agree)
        result.total.update(verdict.total)
        wrong = [f"{d.category} {d.name}: {d.phalanx!r} vs {d.real!r}" for d in verdict.differences
                 if d.category != "messages"]
        if wrong:
            result.disagreeing[seed] = wrong
    return result


def run_kueue_shard_on_own_plane(seeds: Sequence[int]) -> ShardResult:
    """`run_kueue_shard` on a control plane (and a Kueue) started for it, stopped at the end."""
    with tempfile.TemporaryDirectory(prefix="phalanx-kueue-differential-") as directory, ControlPlane() as plane:
        return run_kueue_shard(seeds, Oracle(plane), Path(directory))


def run_shard_on_own_plane(seeds: Sequence[int]) -> ShardResult:
    """`run_shard` on a control plane started for it (in a worker process), stopped at the end."""
    with tempfile.TemporaryDirectory(prefix="phalanx-differential-") as directory, ControlPlane() as plane:
        return run_shard(seeds, Oracle(plane), Path(directory))
