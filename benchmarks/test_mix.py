"""Engine throughput at 5,000 nodes on a realistic mix: 24 request shapes, with and without spread and
anti-affinity constraints (`benchmarks.mix`)."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.conftest import record_engine
from benchmarks.mix import MIXES, MixRun, inputs, run
from phalanx.inputs.load import Inputs


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
    record_engine(benchmark, name, runs, mix.nodes, mix.profile, cpu_seconds=[r.cpu_seconds for r in runs])
