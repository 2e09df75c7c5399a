"""`verify` on anything `simulate` takes (issue 24): other schedulers' objects are replayed as `simulate` translates
them, queueing objects are left out with a note, and what the oracle cannot replay is one line, exit 2, before a
control plane starts (a Volcano Job ended verify with a 404 traceback; a Deployment read as a disagreement)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.inputs.load import documents_as_read
from phalanx.scheduler.profiles import builtin
from phalanx.verify.compare import verify
from phalanx.verify.oracle import Oracle
from phalanx.verify.replayable import replayable
from tests.builders import MakeNode
from tests.test_cli_errors import fails_with

ROOT = Path(__file__).resolve().parents[2]


def _vcjob(name: str = "vc", replicas: int = 2) -> dict[str, Any]:
    """A Volcano Job as Volcano's examples write one (batch.volcano.sh/v1alpha1, minAvailable, one task)."""
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name},
            "spec": {"minAvailable": replicas, "schedulerName": "volcano", "queue": "default", "tasks": [
                {"replicas": replicas, "name": "worker", "template": {"spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]}}}]}}


def _write(tmp_path: Path, *docs: dict[str, Any]) -> Path:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all([MakeNode("n1").manifest(), *docs], sort_keys=False))
    return path


def test_a_volcano_job_is_replayed_as_simulate_translates_it(tmp_path: Path) -> None:
    kept, notes = replayable(documents_as_read([str(_write(tmp_path, _vcjob()))]))
    kinds = sorted(f"{doc['apiVersion']} {doc['kind']}" for _, doc in kept)
    assert "batch.volcano.sh/v1alpha1 Job" not in kinds
    assert kinds == ["batch/v1 Job", "v1 Node"] and notes == []  # a one-task vcjob: a Job with native gang scheduling


def test_queueing_objects_are_left_out_with_a_note() -> None:
    kept, notes = replayable(documents_as_read([str(ROOT / "examples" / "peers")]))
    assert not [doc for _, doc in kept if "kueue" in str(doc.get("apiVersion"))]
    assert any("ClusterQueue object(s)" in note for note in notes)


@pytest.mark.parametrize(("doc", "detail"), [
    ({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "pt"},
      "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {"spec": {
          "containers": [{"name": "pytorch", "image": "i"}]}}}}}},
     "PyTorchJob pt: kind: verify cannot replay PyTorchJob (kubeflow.org/v1): the oracle's control plane "
     "serves no custom resources but JobSet and LeaderWorkerSet"),
])
def test_what_cannot_be_replayed_is_one_line_before_a_control_plane(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                   doc: dict[str, Any], detail: str) -> None:
    path = _write(tmp_path, doc)
    fails_with(capsys, ["verify", str(path), "--profile", "gang", "--kube-bin", str(tmp_path / "no-binaries")],
               str(path), detail)


@pytest.mark.kube
def test_a_volcano_job_agrees_with_kube_scheduler(tmp_path: Path, oracle: Oracle) -> None:
    verdict = verify([str(_write(tmp_path, _vcjob(replicas=2), _vcjob("big", replicas=9)))], builtin("gang"), oracle)
    assert verdict.agrees, verdict.differences
    assert verdict.total["podGroups"] == 2 and verdict.total["outcome"] == 11


def test_a_workload_an_hpa_scales_cannot_be_replayed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    web = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}}, "template": {
               "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": "web", "namespace": "default"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "minReplicas": 1, "maxReplicas": 3, "metrics": [{"type": "Resource", "resource": {
                        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]}}
    path = _write(tmp_path, web, hpa)
    fails_with(capsys, ["verify", str(path), "--profile", "gang", "--kube-bin", str(tmp_path / "no-binaries")],
               str(path), "HorizontalPodAutoscaler default/web: spec.scaleTargetRef: verify cannot replay what this "
               "HorizontalPodAutoscaler scales (Deployment default/web): the oracle runs no HPA controller")
