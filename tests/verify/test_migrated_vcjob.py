"""What `phalanx migrate` writes for a Volcano Job is accepted by the real v1.37.2 API server and scheduled
by the real kube-scheduler as Phalanx simulates it: a one-task Volcano Job (minAvailable 3 of 4) becomes a
batch/v1 Job with `spec.scheduling`, whose PodGroup the real Job controller makes; with 1 cpu taken, 3 of its
4 pods (2 cpu each, two nodes of 4 cpu) bind at once and the 4th when one ends, without it all 4 at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.migrate.output import migrate_paths, render_yaml
from phalanx.scheduler.profiles import builtin
from phalanx.verify.compare import CATEGORIES, verify
from phalanx.verify.oracle import Oracle
from tests.peer_manifests import HIGH, NODES, ONE_TASK, STRANGER
from tests.verify.test_verify import JOB_ORDER

pytestmark = pytest.mark.kube



@pytest.mark.parametrize(("stranger", "at_once"), [(False, 4), (True, 3)])
def test_the_migrated_job_runs_on_the_real_control_plane_as_simulated(tmp_path: Path, oracle: Oracle,
                                                                      stranger: bool, at_once: int) -> None:
    (tmp_path / "vcjob.yaml").write_text(ONE_TASK)
    pairs, _ = migrate_paths([str(tmp_path / "vcjob.yaml")])
    [job] = [doc for doc, _ in pairs]
    assert job["kind"] == "Job" and job["spec"]["scheduling"] == {"schedulingPolicy": {"gang": {"minCount": 3}}}
    (tmp_path / "cluster.yaml").write_text(NODES + HIGH + (STRANGER if stranger else ""))
    (tmp_path / "migrated.yaml").write_text(render_yaml(pairs))
    verdict = verify([str(tmp_path / "cluster.yaml"), str(tmp_path / "migrated.yaml")], builtin("gang"), oracle)
    differing = {c for c in CATEGORIES if c != "messages" and verdict.agree[c] != verdict.total[c]}
    assert differing <= {"node"}, ([d.to_json() for d in verdict.differences], JOB_ORDER)
    pods = [p for p in verdict.pods if p["name"].startswith("ml/train-")]
    assert len(pods) == 4, verdict.to_json()
    for side in ("phalanx", "kubeScheduler"):  # all bind in the end: the first gang's pods finish after 1h
        assert all(p[side]["state"] == "bound" for p in pods)
        assert sum(1 for p in pods if p[side]["boundAt"] == 0) == at_once, (side, pods)
