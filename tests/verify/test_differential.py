"""The differential suite: generated small clusters through the real kube-scheduler and through Phalanx.

PHALANX_DIFFERENTIAL_CASES sets how many (default 500, as CI runs; seeds 0…N-1). The goal is agreement on
every case; what the suite measures today, and the open disagreements, are in docs/fidelity.md. The test
fails when the share of disagreeing cases or of disagreeing pod outcomes grows past what was measured, and
prints every disagreeing seed: `python -m benchmarks.fidelity --seeds N` replays one with its differences.

PHALANX_DIFFERENTIAL_PLANES (default 2) control planes replay the cases side by side: the session's, and one
more per extra plane in a process of its own, each taking every Nth seed. A case spends most of its time
waiting for the real scheduler to settle, not computing, so two planes halve the suite on two cores.
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
from phalanx.verify.oracle import Oracle
from tests.verify.differential import run_shard, run_shard_on_own_plane

pytestmark = pytest.mark.kube

CASES = int(os.environ.get("PHALANX_DIFFERENTIAL_CASES", "500"))
PLANES = max(1, int(os.environ.get("PHALANX_DIFFERENTIAL_PLANES", "2")))
# Measured (docs/fidelity.md): 7 of seeds 0-499 disagree anywhere but in messages, and 7,021 of 7,022 pod
# outcomes agree. With a margin for the oracle's timing under load, at most this share of cases may disagree,
# and pod outcomes must agree at least this often.
MAX_DISAGREEING_CASES = 0.05
MIN_OUTCOME_AGREEMENT = 0.995


def test_generated_clusters_agree(oracle: Oracle, tmp_path: Path) -> None:
    shards = [list(range(shard, CASES, PLANES)) for shard in range(PLANES)]
    # spawn, not fork: this process has threads (a forked child could inherit a lock held by one of them)
    with ProcessPoolExecutor(max_workers=max(1, PLANES - 1), mp_context=multiprocessing.get_context("spawn")) as pool:
        others = [pool.submit(run_shard_on_own_plane, seeds) for seeds in shards[1:]]
        results = [run_shard(shards[0], oracle, tmp_path), *(other.result() for other in others)]
    agree: Counter[str] = Counter()
    total: Counter[str] = Counter()
    disagreeing: dict[int, list[str]] = {}
    for result in results:
        agree.update(result.agree)
        total.update(result.total)
        disagreeing.update(result.disagreeing)
    summary = ", ".join(f"{c} {agree[c]}/{total[c]}" for c in CATEGORIES)
    # A warning, so that pytest's summary (and CI's log) shows the agreement also when the test passes.
    details = "".join(f"\n  seed {seed}: {'; '.join(wrong[:5])}" for seed, wrong in sorted(disagreeing.items()))
    warnings.warn(f"{CASES} generated clusters on {PLANES} control plane(s): {summary}; {len(disagreeing)} "
                  f"disagreeing: {sorted(disagreeing)}{details}", stacklevel=1)
    assert total["outcome"] > 0
    assert agree["outcome"] >= MIN_OUTCOME_AGREEMENT * total["outcome"], summary
    assert len(disagreeing) <= MAX_DISAGREEING_CASES * CASES, f"{len(disagreeing)} of {CASES} cases disagree"

