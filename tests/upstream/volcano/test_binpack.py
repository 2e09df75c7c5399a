"""volcano-sh/volcano `pkg/scheduler/plugins/binpack/binpack_test.go` (TestArguments, TestNode), restated (see
restated.py).

TestArguments builds the binpack plugin from its arguments and checks the weights it keeps: binpack.weight,
binpack.cpu, binpack.memory, and one weight per resource named in binpack.resources (a negative one counts as 1).
Phalanx reads the same arguments from the conf into the node scoring its volcano profile uses (phalanx/admission/
volcano_conf.py placement_scoring): NodeResourcesFit's MostAllocated resource weights and its score weight, which
the restatement reads from the simulation's profile. TestNode asserts binpack's node scores, numbers Phalanx's
report does not show.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.upstream.volcano.restated import Case, Outcome, Unexpressed, check_names, conf, params, run

FILE = "pkg/scheduler/plugins/binpack/binpack_test.go"
ARGUMENTS = "TestArguments"


def weights(o: Outcome) -> None:
    """binpack.weight 10; cpu 5, memory 2, nvidia.com/gpu 7, example.com/foo 1 (given -3); no other resource."""
    fit: dict[str, Any] = o.sim.profile.plugin_args["NodeResourcesFit"]["scoringStrategy"]
    assert fit["type"] == "MostAllocated", fit
    assert {r["name"]: r["weight"] for r in fit["resources"]} == {
        "cpu": 5, "memory": 2, "nvidia.com/gpu": 7, "example.com/foo": 1}, fit
    assert o.sim.profile.scores["NodeResourcesFit"] == 10, o.sim.profile.scores


CASES = [
    # Upstream builds the plugin from its arguments alone, in no tier: the conf names binpack with those arguments
    # and no flag (as Volcano's shipped conf does); a conf needs actions, here Volcano's default ones.
    Case(ARGUMENTS, ARGUMENTS, (),
         conf("enqueue, allocate, backfill",
              {"name": "binpack", "arguments": {"binpack.weight": 10, "binpack.cpu": 5, "binpack.memory": 2,
                                                "binpack.resources": "nvidia.com/gpu, example.com/foo",
                                                "binpack.resources.nvidia.com/gpu": 7,
                                                "binpack.resources.example.com/foo": -3}}),
         weights),
]

SCORES = ("it asserts the binpack plugin's score of each task on each node (NodeOrderFn, e.g. 700 for c1/p1 on n1) "
          "on a session opened without running any action, with pods bound but Pending; Phalanx's report shows "
          "where pods bind, never a node's score, and its MostAllocated scoring is kube-scheduler's formula, not "
          "binpack's")

UNEXPRESSED: list[Unexpressed] = [
    ("TestNode", "single job", SCORES + " (weights 10; cpu 2, memory 3, gpu 7, foo 8)"),
    ("TestNode", "single job", SCORES + " (weights 1; cpu 1, memory 1, gpu 23)"),
]


@pytest.mark.parametrize("case", params(CASES))
def test_restated(case: Case) -> None:
    case.check(run(case))


UPSTREAM_NAMES: dict[str, tuple[str, ...]] = {
    ARGUMENTS: (
        "TestArguments",  # no named case: the function is one
    ),
    # Two table entries, both named "single job"; the function runs them in a loop without t.Run.
    "TestNode": (
        "single job",
        "single job",
    ),
}


def test_every_upstream_case_is_restated_or_unexpressed() -> None:
    check_names(CASES, UNEXPRESSED, UPSTREAM_NAMES)
