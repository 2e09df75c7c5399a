"""The fuzz suite's manifest scenarios load unmutated (tests/fuzz/surface_manifests.py mutates them; the
surface runs in tests/fuzz/test_surfaces.py and `python -m benchmarks.fuzz --surface manifests`)."""

from __future__ import annotations

import json
import tempfile

from tests.fuzz.manifests import SCENARIOS, load_one


def test_the_unmutated_scenarios_load() -> None:
    with tempfile.TemporaryDirectory() as directory:
        for scenario in SCENARIOS:
            assert load_one(directory, "input.json", json.dumps({"apiVersion": "v1", "kind": "List",
                                                                  "items": scenario()})) == "ok"
