"""Fuzzing the loader: random mutations of valid Node, Pod, PodGroup, Job and ResourceClaim manifests (wrong
types, huge numbers, deep nesting, unicode digits, missing fields) either load or raise InputError, never
another exception; what loads also simulates without one. `PHALANX_FUZZ_EXAMPLES=5000` runs more examples;
`python -m benchmarks.fuzz` runs the same inputs with a per-input timeout."""

from __future__ import annotations

import json
import os
import random
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.manifests import SCENARIOS, load_one, manifests, render

EXAMPLES = int(os.environ.get("PHALANX_FUZZ_EXAMPLES", "200"))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False))
def test_mutated_manifests_load_or_raise_input_error(rng: random.Random) -> None:
    name, text = render(manifests(rng), rng)
    with tempfile.TemporaryDirectory() as directory:
        assert load_one(directory, name, text, simulate=True) in ("ok", "input-error")


def test_the_unmutated_scenarios_load() -> None:
    with tempfile.TemporaryDirectory() as directory:
        for scenario in SCENARIOS:
            assert load_one(directory, "input.json", json.dumps({"apiVersion": "v1", "kind": "List",
                                                                  "items": scenario()})) == "ok"
