"""Engine throughput at 5,000 nodes: 10,000 pods one at a time, in gangs of 3 and in gangs of 500."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.conftest import RESULTS
from benchmarks.measure import EngineRun, run_engine
from benchmarks.synthetic import SHAPES
from phalanx.api.load import Inputs


@pytest.mark.parametrize("name", list(SHAPES))
def test_engine(benchmark: Any, shape_inputs: dict[str, Inputs], rounds: int, name: str) -> None:
    shape = SHAPES[name]
    runs: list[EngineRun] = []

    def one_run() -> None:
        runs.append(run_engine(shape, shape_inputs[name]))

    benchmark.group = "engine"
    benchmark.pedantic(one_run, rounds=rounds, iterations=1, warmup_rounds=0)
    RESULTS[f"engine:{name}"] = {
        "pods": runs[0].pods,
        "engine_pods_per_second": [r.engine_pods_per_second for r in runs],
        "scheduling_seconds": [r.scheduling_seconds for r in runs],
        "whole_seconds": [r.whole_seconds for r in runs],
        "whole_pods_per_second": [r.whole_pods_per_second for r in runs],
    }
    benchmark.extra_info.update({"pods": runs[0].pods, "nodes": shape.nodes, "profile": shape.profile,
                                 "engine_pods_per_second": RESULTS[f"engine:{name}"]["engine_pods_per_second"],
                                 "scheduling_seconds": RESULTS[f"engine:{name}"]["scheduling_seconds"]})
