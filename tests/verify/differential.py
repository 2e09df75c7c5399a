"""One shard of the differential suite: generated cases through Phalanx and through a real control plane.

A shard is a picklable call, so that the suite can run shards side by side in processes of their own, each
with its own control plane (a case owns the whole cluster while it runs: nodes are cluster-scoped).
"""

from __future__ import annotations

import json
import multiprocessing
import tempfile
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from phalanx.errors import PhalanxError
from phalanx.scheduler.profiles import builtin
from phalanx.sim.scenario import scenario_for
from phalanx.verify.compare import CATEGORIES, Verdict, verify
from phalanx.verify.controlplane import ControlPlane
from phalanx.verify.generator import generate_case
from phalanx.verify.kueue_generator import generate_kueue_case
from phalanx.verify.oracle import Oracle


@dataclass
class ShardResult:
    agree: Counter[str] = field(default_factory=Counter)
    total: Counter[str] = field(default_factory=Counter)
    disagreeing: dict[int, list[str]] = field(default_factory=dict)  # seed -> differences but in messages
    # seed -> the first replay's differences, for a case whose second replay agreed: the real outcome there
    # depends on the control plane's timing (which of two racing controllers acts first), not on a decision
    timing: dict[int, list[str]] = field(default_factory=dict)
    # seed -> the interleavings that explain its differences, for a case that ends as the real one under another
    # interleaving of events (phalanx/sim/interleavings.py); only where the suite counts those (`within_timing`)
    within: dict[int, list[str]] = field(default_factory=dict)
    within_timing: bool = False

    def add(self, seed: int, verdict: Verdict) -> None:
        self.agree.update(verdict.agree)
        self.total.update(verdict.total)
        wrong = [f"{d.category} {d.name}: {d.phalanx!r} vs {d.real!r}" for d in verdict.differences
                 if d.category != "messages"]
        if wrong and self.within_timing and verdict.within_timing and verdict.timing is not None:
            self.within[seed] = [f"{row['workload']} as {'/'.join(row['kubeSchedulerAs'][:2])}"
                                 for row in verdict.timing["workloads"]]
        elif wrong:
            self.disagreeing[seed] = wrong

    def replay(self, seed: int, run: Callable[[], Verdict]) -> None:
        """Add the verdict of `run`; a replay the control plane could not finish (an object it refused, a
        scheduler that did not settle) counts as a disagreeing case naming why, and the suite goes on: the
        next case's verify starts by clearing the cluster."""
        try:
            verdict = run()
        except PhalanxError as exc:
            self.disagreeing[seed] = [f"replay failed: {exc}"]
            return
        self.add(seed, verdict)


def run_suite(what: str, cases: int, planes: int, here: Callable[[Sequence[int]], ShardResult],
              elsewhere: Callable[[Sequence[int]], ShardResult],
              counts: Callable[[list[str]], bool] = lambda wrong: True) -> ShardResult:
    """Seeds 0…cases-1 in `planes` shards: the first `here` (on the session's plane), each other `elsewhere` (on
    a plane of its own, in a process of its own), and the disagreeing ones whose differences `counts` once more
    `here`; the sum, also given as a warning, so that pytest's summary (and CI's log) shows the agreement when
    the test passes."""
    shards = [list(range(shard, cases, planes)) for shard in range(planes)]
    # spawn, not fork: this process has threads (a forked child could inherit a lock held by one of them)
    with ProcessPoolExecutor(max_workers=max(1, planes - 1), mp_context=multiprocessing.get_context("spawn")) as pool:
        others = [pool.submit(elsewhere, seeds) for seeds in shards[1:]]
        results = [here(shards[0]), *(other.result() for other in others)]
    total = ShardResult(within_timing=results[0].within_timing)
    for result in results:
        total.agree.update(result.agree)
        total.total.update(result.total)
        total.disagreeing.update(result.disagreeing)
        total.within.update(result.within)
    # A disagreeing case is replayed once more, on both sides: one that agrees then was decided by the control
    # plane's timing, and is named as such (the counts above stay the first replay's); one that disagrees twice
    # is a difference.
    replayed = sorted(seed for seed, wrong in total.disagreeing.items() if counts(wrong))
    if replayed:
        again = here(replayed)
        for seed in [s for s in replayed if s not in again.disagreeing]:
            total.timing[seed] = total.disagreeing.pop(seed)
            if seed in again.within:
                total.within[seed] = again.within[seed]
    summary = ", ".join(f"{c} {total.agree[c]}/{total.total[c]}" for c in CATEGORIES)
    details = "".join(f"\n  seed {seed}: {'; '.join(wrong[:5])}" for seed, wrong in sorted(total.disagreeing.items()))
    timing = "".join(f"\n  seed {seed} (agreed when replayed again): {'; '.join(wrong[:5])}"
                     for seed, wrong in sorted(total.timing.items()))
    within = "".join(f"\n  seed {seed} (as another interleaving ends it): {'; '.join(rows[:5])}"
                     for seed, rows in sorted(total.within.items()))
    counted = f", {len(total.within)} ending as the real one under another interleaving: {sorted(total.within)}" \
        if total.within_timing else ""
    warnings.warn(f"{cases} {what} on {planes} control plane(s): {summary}; {len(total.disagreeing)} "
                  f"disagreeing on two replays: {sorted(total.disagreeing)}, {len(total.timing)} on one only: "
                  f"{sorted(total.timing)}{counted}{details}{timing}{within}", stacklevel=2)
    return total


def run_shard(seeds: Sequence[int], oracle: Oracle, directory: Path) -> ShardResult:
    result = ShardResult()
    # By profile: the API server restarts when the gates it needs change.
    for seed in sorted(seeds, key=lambda s: generate_case(s).profile):
        case = generate_case(seed)
        path = directory / f"case-{seed}.yaml"
        path.write_text(yaml.dump_all(case.manifests, Dumper=yaml.CSafeDumper, sort_keys=False))
        result.replay(seed, partial(verify, [str(path)], builtin(case.profile), oracle, seed=seed))
    return result


def run_kueue_shard(seeds: Sequence[int], oracle: Oracle, directory: Path) -> ShardResult:
    """The Kueue differential suite's cases (phalanx.verify.kueue_generator) under `kueue`, on the real Kueue."""
    result = ShardResult()
    # By Kueue's Configuration among the inputs (fair sharing): Kueue restarts when a replay needs other settings.
    cases = {seed: generate_kueue_case(seed) for seed in seeds}
    for seed in sorted(seeds, key=lambda s: (_kueue_settings(cases[s]), s)):
        path = directory / f"kueue-case-{seed}.yaml"
        path.write_text(yaml.dump_all(cases[seed], Dumper=yaml.CSafeDumper, sort_keys=False))
        result.replay(seed, partial(verify, [str(path)], builtin("kueue"), oracle, seed=seed,
                                    scenario=scenario_for("kueue")))
    return result


def _kueue_settings(docs: Sequence[dict[str, Any]]) -> str:
    return json.dumps([d for d in docs if d.get("kind") in ("Configuration", "ConfigMap")], sort_keys=True)


def run_kueue_shard_on_own_plane(seeds: Sequence[int]) -> ShardResult:
    """`run_kueue_shard` on a control plane (and a Kueue) started for it, stopped at the end."""
    with tempfile.TemporaryDirectory(prefix="phalanx-kueue-differential-") as directory, ControlPlane() as plane:
        return run_kueue_shard(seeds, Oracle(plane), Path(directory))


def run_shard_on_own_plane(seeds: Sequence[int]) -> ShardResult:
    """`run_shard` on a control plane started for it (in a worker process), stopped at the end."""
    with tempfile.TemporaryDirectory(prefix="phalanx-differential-") as directory, ControlPlane() as plane:
        return run_shard(seeds, Oracle(plane), Path(directory))
