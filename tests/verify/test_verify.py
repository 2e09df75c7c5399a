"""Every manifest scenario and example, through the real kube-scheduler v1.37.2 and through Phalanx.

Agreement is required on what binds and what stays pending, on the node (where the real scheduler's node
is not among Phalanx's equally best ones), on when it binds, on preemption victims and on PodGroup
conditions. A known difference is listed here with the reason, and written up in docs/fidelity.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from phalanx.scheduler.profiles import builtin, load_profile
from phalanx.verify.compare import CATEGORIES, Verdict, verify
from phalanx.verify.oracle import Oracle

pytestmark = pytest.mark.kube

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted(p.parent.name for p in (ROOT / "tests" / "scenarios").glob("*/manifests.yaml"))
EXAMPLES: dict[str, list[str]] = {
    "bare-metal": ["examples/bare-metal"],
    "web-vs-batch-all": ["examples/web-vs-batch/common", "examples/web-vs-batch/all"],
    "web-vs-batch-single": ["examples/web-vs-batch/common", "examples/web-vs-batch/single"],
    "snapshot": ["examples/snapshot/cluster.yaml"],
    "gpu-fleet": ["examples/gpu-fleet"],
}
# (case, profile) -> the categories that may differ, and why (docs/fidelity.md, "Known differences").
JOB_ORDER = "the Job controller creates a Job's pods concurrently, so which completion index the real scheduler " \
            "tries first is random (job_controller.go manageJob)"
WALL_CLOCK = "tolerationSeconds of a NoExecute device taint runs on the eviction controller's wall clock, not " \
             "on the replay's simulated clock"
GRACEFUL_RACE = "the victims' graceful deletions end one by one on the real cluster, and a preemptor may take " \
                "room freed for another before its own victims are gone (schedule_one.go: a pod tries its " \
                "nominated node first, then any node); in Phalanx they end at the same simulated instant"
SAME_INSTANT = "the oracle's kubelet ends pods that finish together one at a time and the real scheduler retries a " \
               "waiting pod at the first freed node; in Phalanx they all end before it is tried (schedule_one.go)"
ALLOWED: dict[tuple[str, str], tuple[set[str], str]] = {
    ("composite-in-one-rack", "default"): ({"node"}, SAME_INSTANT),
    ("composite-in-one-rack", "gang"): ({"node"}, SAME_INSTANT),
    ("web-vs-batch-all", "default"): ({"node", "victims"}, GRACEFUL_RACE),
    ("web-vs-batch-all", "gang"): ({"node", "victims"}, GRACEFUL_RACE),
    ("web-vs-batch-single", "default"): ({"node", "victims"}, GRACEFUL_RACE),
    ("web-vs-batch-single", "gang"): ({"node", "victims"}, GRACEFUL_RACE),
    ("gpu-fleet", "default"): ({"outcome"}, WALL_CLOCK),
    ("gpu-fleet", "gang"): ({"outcome"}, WALL_CLOCK),
    ("job-gang", "default"): ({"node", "boundAt"}, JOB_ORDER),
    ("job-gang", "gang"): ({"node"}, JOB_ORDER),
}


def _differing(verdict: Verdict) -> set[str]:
    return {c for c in CATEGORIES if c != "messages" and verdict.agree[c] != verdict.total[c]}


def _check(name: str, profile: str, verdict: Verdict) -> None:
    allowed, why = ALLOWED.get((name, profile), (set(), ""))
    details = [d.to_json() for d in verdict.differences if d.category not in allowed | {"messages"}]
    assert _differing(verdict) <= allowed, f"{name} ({profile}): {details} {why}"


@pytest.mark.parametrize("profile", ["default", "gang"])
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scenario_agrees_with_kube_scheduler(scenario: str, profile: str, oracle: Oracle) -> None:
    path = ROOT / "tests" / "scenarios" / scenario / "manifests.yaml"
    _check(scenario, profile, verify([str(path)], builtin(profile), oracle))


@pytest.mark.parametrize("profile", ["default", "gang"])
@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_example_agrees_with_kube_scheduler(example: str, profile: str, oracle: Oracle) -> None:
    paths = [str(ROOT / p) for p in EXAMPLES[example]]
    _check(example, profile, verify(paths, builtin(profile), oracle))


def test_a_profile_file_configures_both_schedulers(oracle: Oracle) -> None:
    """examples/profiles/bin-packing.yaml (MostAllocated, no BalancedAllocation) runs in kube-scheduler too."""
    profile = load_profile(str(ROOT / "examples" / "profiles" / "bin-packing.yaml"))
    verdict = verify([str(ROOT / "examples" / "bare-metal")], profile, oracle)
    assert _differing(verdict) == set()
    assert verdict.total["node"] > 0


@pytest.mark.parametrize("job_first", [False, True])
def test_a_job_reaches_the_queue_in_its_document_turn(job_first: bool, tmp_path: Path, oracle: Oracle) -> None:
    """tests/scenarios/job-gang with the Job before or after the web pod that competes with its gang: the one
    listed first binds at time 0 on both schedulers, whether or not the oracle's Job controller was already
    running (the replay waits for the Job's pods before creating the pods listed after it)."""
    docs = list(yaml.safe_load_all((ROOT / "tests" / "scenarios" / "job-gang" / "manifests.yaml").read_text()))
    nodes, web, job = docs[:2], docs[2], docs[3]
    path = tmp_path / "manifests.yaml"
    path.write_text(yaml.safe_dump_all([*nodes, *([job, web] if job_first else [web, job])]))
    verdict = verify([str(path)], builtin("gang"), oracle)
    assert _differing(verdict) <= {"node"}, [d.to_json() for d in verdict.differences]
    first = {p["name"] for p in verdict.pods if p["kubeScheduler"]["boundAt"] == 0.0}
    assert first == ({"default/train-0", "default/train-1", "default/train-2"} if job_first else {"default/web"})
