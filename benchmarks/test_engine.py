"""Engine throughput at 5,000 nodes: 10,000 pods one at a time, in gangs of 3 and in gangs of 500."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.conftest import record_engine
from benchmarks.measure import EngineRun, run_engine
from benchmarks.synthetic import SHAPES
from phalanx.inputs.load import Inputs


@pytest.mark.parametrize("name", list(SHAPES))
def test_engine(benchmark: Any, shape_inputs: dict[str, Inputs], rounds: int, name: str) -> None:
    shape = SHAPES[name]
    runs: list[EngineRun] = []

    def one_run() -> None:
        runs.append(run_engine(shape, shape_inputs[name]))

    benchmark.group = "engine"
    benchmark.pedantic(one_run, rounds=rounds, iterations=1, warmup_rounds=0)
    record_engine(benchmark, name, runs, shape.nodes, shape.profile)
