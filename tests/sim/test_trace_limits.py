"""Trace files past what the simulator takes: DRA objects created mid-run, deep nesting, huge numbers, JSON
constants Kubernetes does not read. Each is one InputError naming the file and the line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from phalanx.errors import InputError
from phalanx.inputs.load import load_paths
from phalanx.sim.trace_file import load_traces
from tests import dra_builders as dra
from tests.builders import MakeNode, write_manifests


def _load(tmp_path: Path, line: str) -> None:
    snapshot = write_manifests(tmp_path / "snapshot.yaml", MakeNode("node-a").alloc(cpu="4"))
    trace = tmp_path / "day.jsonl"
    trace.write_text(line + "\n", encoding="utf-8")
    load_traces([str(trace)], load_paths([str(snapshot)]))


@pytest.mark.parametrize("doc", [dra.device_class(), dra.gpus("node-a", 1),
                                 dra.claim("c", dra.claim_spec(dra.request("gpu", dra.exactly(1))))])
def test_creating_dra_objects_from_a_trace_is_refused(tmp_path: Path, doc: dict[str, object]) -> None:
    with pytest.raises(InputError, match=rf"day.jsonl: line 1: op: creating a {doc['kind']} from a trace is not "
                                         "simulated"):
        _load(tmp_path, json.dumps({"time": 5, "op": "create", "object": doc}))


@pytest.mark.parametrize(("line", "message"), [
    ("[" * 60_000 + "]" * 60_000, "nests deeper than 200 levels"),
    ('{"time": ' + "9" * 5000 + "}", "a number has too many digits"),
    ('{"time": NaN, "op": "create", "object": {}}', "NaN is not a JSON number"),
    ('{"time": ' + "9" * 400 + ', "op": "create", "object": {"kind": "Node"}}', "longer than Go's maximum"),
    ('{"time": 1e999, "op": "create", "object": {"kind": "Node"}}', "invalid duration"),
])
def test_trace_lines_past_the_limits(tmp_path: Path, line: str, message: str) -> None:
    with pytest.raises(InputError, match=rf"day.jsonl: line 1: .*{message}"):
        _load(tmp_path, line)
