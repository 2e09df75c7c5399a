"""Loading 15,000 objects (5,000 Nodes, 10,000 Pods) from one multi-document YAML file."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks.conftest import RESULTS
from benchmarks.synthetic import SHAPES, manifests, write_yaml
from phalanx.inputs.load import load_paths


@pytest.fixture(scope="session")
def manifest_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("manifests") / "cluster.yaml"
    write_yaml(str(path), manifests(SHAPES["pod-at-a-time"]))
    return path


def test_load_15000_objects(benchmark: Any, manifest_file: Path, rounds: int) -> None:
    seconds: list[float] = []

    def load() -> None:
        started = time.perf_counter()
        loaded = load_paths([str(manifest_file)])
        seconds.append(time.perf_counter() - started)
        assert len(loaded.nodes) == 5000 and len(loaded.pods) == 10_000

    benchmark.group = "load"
    benchmark.pedantic(load, rounds=rounds, iterations=1, warmup_rounds=0)
    RESULTS["load"] = {"objects": 15_000, "bytes": os.path.getsize(manifest_file), "seconds": seconds}
    benchmark.extra_info.update({"objects": 15_000, "bytes": os.path.getsize(manifest_file)})
