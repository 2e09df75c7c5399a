"""volcano-sh/volcano `pkg/scheduler/plugins/gang/gang_test.go` (TestShouldSkipUnschedulableForReleasing), accounted
for (see restated.py).

Each case calls the gang plugin's shouldSkipUnschedulableForReleasing on a job built from task records in the
states Running, Releasing, Pending and Pipelined, with and without a node, and asserts its boolean: whether the
plugin skips marking the PodGroup Unschedulable while members are being released. The function's input is a
session's task states (a Releasing task is one being evicted inside a session; Pipelined, one placed on resources
still being freed) and its output a flag Phalanx has no counterpart for, so no case can be restated.
"""

from __future__ import annotations

from tests.upstream.volcano.restated import Case, Unexpressed, check_names

FILE = "pkg/scheduler/plugins/gang/gang_test.go"
TEST = "TestShouldSkipUnschedulableForReleasing"
WHY = ("it calls the gang plugin's shouldSkipUnschedulableForReleasing on hand-built task records ({tasks}, "
       "minAvailable {min}) and asserts the flag it returns; no input says a task's session status, and Phalanx "
       "reports no such flag")

UPSTREAM_NAMES: dict[str, tuple[str, ...]] = {
    TEST: (
        "partial termination",
        "pending replacement still needs condition",
        "pipelined replacement still needs condition",
        "never scheduled releasing task is not counted",
        "scheduled tasks below minAvailable",
    ),
}

CASES: list[Case] = []

UNEXPRESSED: list[Unexpressed] = [
    (TEST, "partial termination", WHY.format(tasks="Running on a node, Releasing on a node", min=2)),
    (TEST, "pending replacement still needs condition",
     WHY.format(tasks="Running, Releasing, and a Pending replacement", min=2)),
    (TEST, "pipelined replacement still needs condition",
     WHY.format(tasks="Running, Releasing, and a Pipelined replacement", min=2)),
    (TEST, "never scheduled releasing task is not counted", WHY.format(tasks="one Releasing without a node", min=1)),
    (TEST, "scheduled tasks below minAvailable", WHY.format(tasks="Running, Releasing", min=3)),
]


def test_every_upstream_case_is_restated_or_unexpressed() -> None:
    check_names(CASES, UNEXPRESSED, UPSTREAM_NAMES)
