"""volcano-sh/volcano `pkg/scheduler/actions/allocate/recorder_test.go`, accounted for (see restated.py).

Every test builds the allocate action's Recorder (the HyperNode decisions it keeps per job and sub-job) by hand and
checks what it stores or how it rewrites a job's AllocatedHyperNode over a HyperNode tree. A Recorder is internal
to Volcano's allocate action, and Phalanx reads no HyperNode: no case can be said with its inputs. The tests run no
table; each is one case, named after its function (the node1, node2, ancestor1, ancestor2 in some are HyperNode
names, not cases).
"""

from __future__ import annotations

from tests.upstream.volcano.restated import Case, Unexpressed, check_names

FILE = "pkg/scheduler/actions/allocate/recorder_test.go"
WHY = ("it calls the allocate action's Recorder ({what}) on hand-built jobs and HyperNodes; the Recorder is "
       "internal to the action and Phalanx reads no HyperNode")

UPSTREAM_NAMES: dict[str, tuple[str, ...]] = {
    "TestNewRecorder": ("TestNewRecorder",),
    "TestSaveJobDecision": ("TestSaveJobDecision",),
    "TestSaveSubJobDecision": ("TestSaveSubJobDecision",),
    "TestUpdateDecisionToJob": ("TestUpdateDecisionToJob",),
    "TestUpdateDecisionToJob_SubJob": ("TestUpdateDecisionToJob_SubJob",),
    "TestUpdateDecisionToJob_SubJobNotFound": ("TestUpdateDecisionToJob_SubJobNotFound",),
    "TestUpdateDecisionToJob_NoHyperNode": ("TestUpdateDecisionToJob_NoHyperNode",),
    "TestUpdateDecisionToJob_NoSubJob": ("TestUpdateDecisionToJob_NoSubJob",),
}

WHAT = {
    "TestNewRecorder": "NewRecorder's empty maps",
    "TestSaveJobDecision": "SaveJobDecision",
    "TestSaveSubJobDecision": "SaveSubJobDecision",
    "TestUpdateDecisionToJob": "UpdateDecisionToJob: the job's hyperNode becomes the lowest common ancestor",
    "TestUpdateDecisionToJob_SubJob": "UpdateDecisionToJob with sub-job decisions",
    "TestUpdateDecisionToJob_SubJobNotFound": "UpdateDecisionToJob for a sub-job it never saw",
    "TestUpdateDecisionToJob_NoHyperNode": "UpdateDecisionToJob for a job without a hyperNode",
    "TestUpdateDecisionToJob_NoSubJob": "UpdateDecisionToJob for a job without sub-jobs",
}

CASES: list[Case] = []

UNEXPRESSED: list[Unexpressed] = [(test, name, WHY.format(what=WHAT[test]))
                                  for test, names in UPSTREAM_NAMES.items() for name in names]


def test_every_upstream_case_is_restated_or_unexpressed() -> None:
    check_names(CASES, UNEXPRESSED, UPSTREAM_NAMES)
