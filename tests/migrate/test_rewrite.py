"""The rewrite's Kueue pod groups: the total count annotation read as Kueue's pod webhook reads it."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest
import yaml

from phalanx.cli import main
from tests.migrate.test_foreign import pods, write

TOTAL = "kueue.x-k8s.io/pod-group-total-count"


def kueue_group(total: str, n: int = 2) -> str:
    return pods(n, labels="{kueue.x-k8s.io/pod-group-name: train, kueue.x-k8s.io/queue-name: q}",
                annotations=f"{{{TOTAL}: '{total}'}}", scheduler="default-scheduler")


@pytest.mark.parametrize(("total", "problem"), [
    ("9" * 5_000, "must be an integer (strconv.Atoi)"),
    ("abc", "must be an integer"), ("4.0", "must be an integer"), (" 4", "must be an integer"),
    ("٤", "must be an integer"), ("1_000", "must be an integer"), ("", "must be an integer"),
    ("9223372036854775808", "must be an integer"),
    ("0", "group total count should be greater than zero"), ("-3", "should be greater than zero"),
    ("2147483648", "more than a v1.37 gang's minCount"),
])
def test_a_total_count_kueue_refuses_is_refused_naming_the_pod(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                total: str, problem: str) -> None:
    """Issue 28: a total count of 5,000 digits crashed `migrate`. Kueue's pod webhook reads it with
    strconv.Atoi (an optional sign and ASCII digits, within int64) and wants it ≥ 1; the native gang it
    becomes is an int32."""
    path = write(tmp_path, kueue_group(total))
    assert main(["migrate", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith(f"phalanx: error: {path}: Pod ml/w-0: metadata.annotations[{TOTAL}]: ")
    assert problem in err


def test_a_signed_total_count_is_read_as_atoi_reads_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate", str(write(tmp_path, kueue_group("+2")))]) == 0
    assert "minCount: 2" in capsys.readouterr().out


def test_refusing_a_huge_job_takes_no_memory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    text = ("\n---\napiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j, namespace: ml}\n"
            "spec:\n  tasks:\n  - name: w\n    replicas: 2000000000\n")
    assert main(["migrate", str(write(tmp_path, text))]) == 2
    capsys.readouterr()
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50_000  # KiB


@pytest.mark.parametrize(("text", "error"), [
    ("\n---\napiVersion: scheduling.k8s.io/v1alpha1\nkind: Workload\nmetadata: {name: aw, namespace: ml}\nspec: 7\n",
     "Workload ml/aw: spec: must be an object, got int"),
    ("\n---\napiVersion: scheduling.k8s.io/v1alpha1\nkind: Workload\nmetadata: {name: aw, namespace: ml}\n"
     "spec: {podGroups: true}\n", "Workload ml/aw: spec.podGroups: must be a list, got bool"),
    ("\n---\napiVersion: scheduling.k8s.io/v1alpha2\nkind: PodGroup\nmetadata: [1]\nspec: {}\n",
     "PodGroup (unnamed): metadata: must be an object, got list"),
    ("\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ml, annotations: {pod-group-name: g}}\n"
     "spec: 1.5\n", "Pod ml/p: spec: must be an object, got float"),
])
def test_a_shape_migrate_must_rewrite_but_cannot_read_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                  text: str, error: str) -> None:
    """Fuzz (migrate surface): a metadata, spec or list of the wrong type in an object migrate rewrites was a
    TypeError or ValueError; it is the one-line error the loader would give."""
    path = write(tmp_path, text)
    assert main(["migrate", str(path)]) == 2
    assert capsys.readouterr().err.strip() == f"phalanx: error: {path}: {error}"


def test_a_kueue_pod_groups_priority_class_goes_on_its_native_pod_group(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """v1.37 refuses a gang whose pods' priority is not its PodGroup's ("all pods in a single pod group should
    have the same priority as the pod group's priority", the real kube-scheduler in the Kueue differential suite's
    seed 19): the members' priorityClassName goes on the PodGroup template the pod group becomes."""
    text = kueue_group("2").replace("spec:\n", "spec:\n  priorityClassName: high\n")
    assert "priorityClassName: high" in text
    assert main(["migrate", str(write(tmp_path, text))]) == 0
    docs = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    [group] = [d for d in docs if d["kind"] == "PodGroup"]
    assert group["spec"]["priorityClassName"] == "high"
