"""The Kueue differential suite: generated queueing cases through the real Kueue v0.17.0 in front of the real
kube-scheduler, and through Phalanx's kueue profile (phalanx.verify.kueue_generator: quota, cohorts with
borrowing and lending limits, reclaim, priority preemption within a ClusterQueue, two flavors with node labels,
StrictFIFO and BestEffortFIFO, PriorityClasses).

PHALANX_KUEUE_CASES sets how many (default 24; CI runs 200: a case takes 7-27 s alone, most of it waiting
for Kueue and the scheduler to settle); PHALANX_KUEUE_PLANES (default 3; CI 8) control planes, each with its own
Kueue, replay them side by side. Fails past the thresholds of the kube-scheduler suite, counting a case as
disagreeing when anything but a pod's node differs (node choices are kube-scheduler's, which the kube suite
judges; they are printed with every disagreeing seed, and such a case is not replayed again).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from phalanx.verify.kueue_plane import find_kueue
from phalanx.verify.oracle import Oracle
from tests.kube import require
from tests.verify.differential import run_kueue_shard, run_kueue_shard_on_own_plane, run_suite

pytestmark = pytest.mark.kube

CASES = int(os.environ.get("PHALANX_KUEUE_CASES", "24"))
PLANES = max(1, int(os.environ.get("PHALANX_KUEUE_PLANES", "3")))
MAX_DISAGREEING_CASES = 0.05
MIN_ADMISSION_AGREEMENT = 0.95


def kueue_decisions_differ(wrong: list[str]) -> bool:
    """Whether a case's differences count here: anything but the node of a pod (which the kube suite judges; a
    case differing in nodes only is not replayed again)."""
    return any(not w.startswith("node ") for w in wrong)


def test_generated_queueing_cases_agree_with_the_real_kueue(oracle: Oracle, tmp_path: Path) -> None:
    require(find_kueue)
    result = run_suite("generated queueing cases with Kueue", CASES, PLANES,
                       lambda seeds: run_kueue_shard(seeds, oracle, tmp_path), run_kueue_shard_on_own_plane,
                       counts=kueue_decisions_differ)
    assert result.total["admission"] > 0
    assert result.agree["admission"] >= MIN_ADMISSION_AGREEMENT * result.total["admission"], dict(result.agree)
    # Kueue's decisions are what this suite judges: a case counts as disagreeing when anything but the node of a
    # pod differs (node choices are kube-scheduler's, judged by the kube suite; they are in the summary above).
    counted = {seed for seed, wrong in result.disagreeing.items() if kueue_decisions_differ(wrong)}
    assert len(counted) <= MAX_DISAGREEING_CASES * CASES, f"{len(counted)} of {CASES} cases disagree: {sorted(counted)}"
