"""The Kueue differential suite: generated queueing cases through the real Kueue v0.17.0 in front of the real
kube-scheduler, and through Phalanx's kueue profile (phalanx.verify.kueue_generator: quota, cohorts with
borrowing and lending limits, reclaim, priority preemption within a ClusterQueue, two flavors with node labels,
StrictFIFO and BestEffortFIFO, PriorityClasses).

PHALANX_KUEUE_CASES sets how many (default 24, as CI runs: a case takes 15-40 s, most of it waiting for Kueue
and the scheduler to settle; docs/fidelity.md has a run of 200); PHALANX_KUEUE_PLANES (default 3) control
planes, each with its own Kueue, replay them side by side. Fails past the thresholds of the kube-scheduler
suite; every disagreeing seed is printed.
"""

from __future__ import annotations

import multiprocessing
import os
import warnings
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from phalanx.verify.compare import CATEGORIES
from phalanx.verify.controlplane import ControlPlaneError
from phalanx.verify.kueue_plane import find_kueue
from phalanx.verify.oracle import Oracle
from tests.verify.differential import run_kueue_shard, run_kueue_shard_on_own_plane

pytestmark = pytest.mark.kube

CASES = int(os.environ.get("PHALANX_KUEUE_CASES", "24"))
PLANES = max(1, int(os.environ.get("PHALANX_KUEUE_PLANES", "3")))
MAX_DISAGREEING_CASES = 0.05
MIN_ADMISSION_AGREEMENT = 0.95


def test_generated_queueing_cases_agree_with_the_real_kueue(oracle: Oracle, tmp_path: Path) -> None:
    try:
        find_kueue()
    except ControlPlaneError as exc:
        if os.environ.get("PHALANX_REQUIRE_KUBE") == "1":
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    shards = [list(range(shard, CASES, PLANES)) for shard in range(PLANES)]
    with ProcessPoolExecutor(max_workers=max(1, PLANES - 1), mp_context=multiprocessing.get_context("spawn")) as pool:
        others = [pool.submit(run_kueue_shard_on_own_plane, seeds) for seeds in shards[1:]]
        results = [run_kueue_shard(shards[0], oracle, tmp_path), *(other.result() for other in others)]
    agree: Counter[str] = Counter()
    total: Counter[str] = Counter()
    disagreeing: dict[int, list[str]] = {}
    for result in results:
        agree.update(result.agree)
        total.update(result.total)
        disagreeing.update(result.disagreeing)
    summary = ", ".join(f"{c} {agree[c]}/{total[c]}" for c in CATEGORIES)
    details = "".join(f"\n  seed {seed}: {'; '.join(wrong[:5])}" for seed, wrong in sorted(disagreeing.items()))
    warnings.warn(f"{CASES} generated queueing cases on {PLANES} control plane(s) with Kueue: {summary}; "
                  f"{len(disagreeing)} disagreeing: {sorted(disagreeing)}{details}", stacklevel=1)
    assert total["admission"] > 0
    assert agree["admission"] >= MIN_ADMISSION_AGREEMENT * total["admission"], summary
    assert len(disagreeing) <= MAX_DISAGREEING_CASES * CASES, f"{len(disagreeing)} of {CASES} cases disagree"
