"""Engine throughput at 5,000 nodes on a realistic mix: 24 request shapes, with and without spread and
anti-affinity constraints (`benchmarks.mix`)."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.conftest import RESULTS
from benchmarks.mix import MIXES, MixRun, inputs, run
from phalanx.api.load import Inputs


@pytest.fixture(scope="session")
def mix_inputs() -> dict[str, Inputs]:
    return {name: inputs(mix) for name, mix in MIXES.items()}


@pytest.mark.parametrize("name", list(MIXES))
def test_mix(benchmark: Any, mix_inputs: dict[str, Inputs], rounds: int, name: str) -> None:
    mix = MIXES[name]
    runs: list[MixRun] = []

    def one_run() -> None:
        runs.append(run(mix, mix_inputs[name]))

    benchmark.group = "engine"
    benchmark.pedantic(one_run, rounds=rounds, iterations=1, warmup_rounds=0)
    RESULTS[f"engine:{name}"] = {
        "pods": runs[0].pods,
        "engine_pods_per_second": [r.engine_pods_per_second for r in runs],
        "scheduling_seconds": [r.scheduling_seconds for r in runs],
        "whole_seconds": [r.whole_seconds for r in runs],
        "whole_pods_per_second": [r.pods / r.whole_seconds for r in runs],
        "cpu_seconds": [r.cpu_seconds for r in runs],
    }
    benchmark.extra_info.update({"pods": runs[0].pods, "nodes": mix.nodes, "profile": mix.profile,
                                 "engine_pods_per_second": RESULTS[f"engine:{name}"]["engine_pods_per_second"],
                                 "scheduling_seconds": RESULTS[f"engine:{name}"]["scheduling_seconds"]})
