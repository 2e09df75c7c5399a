"""The cluster autoscaler model in the simulator (phalanx.sim.autoscaling): node groups from template Nodes,
scale-up per pod or per gang after the provisioning delay, scale-down of idle nodes, and the books."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.cli import main
from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.autoscaling import NodeAutoscaling
from phalanx.sim.report import build_report
from phalanx.sim.scenario import Scenario
from phalanx.sim.simulation import Simulation
from tests.sim.rounds import RoundLimit

Doc = dict[str, Any]


def template(max_size: int, min_size: int = 0, delay: str = "3m", cost: str = "32.77") -> Doc:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-pool-template", "annotations": {
        "phalanx.dev/node-group": "gpu-pool",
        "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": str(min_size),
        "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": str(max_size),
        "phalanx.dev/provisioning-delay": delay, "phalanx.dev/cost-per-hour": cost}},
        "status": {"allocatable": {"cpu": "96", "memory": "1Ti", "nvidia.com/gpu": "8", "pods": "110"}}}


SYSTEM = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "system-0"},
          "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}
TRAINING = {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "train", "namespace": "ml", "annotations": {"phalanx.dev/duration": "2h"}},
            "spec": {"parallelism": 4, "completions": 4,
                     "scheduling": {"schedulingPolicy": {"gang": {"minCount": 4}}},
                     "template": {"spec": {"restartPolicy": "Never", "containers": [{
                         "name": "trainer", "image": "trainer:v1",
                         "resources": {"requests": {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8"},
                                       "limits": {"nvidia.com/gpu": "8"}}}]}}}}


def run(tmp_path: Path, docs: list[Doc], mode: str, until: float | None = None) -> dict[str, Any]:
    (tmp_path / "in.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    sim = Simulation(load_paths([str(tmp_path / "in.yaml")]), builtin("gang"), scenario=Scenario(scale_up=mode),
                     until=until)
    return build_report(sim.run())


def test_per_pod_scale_up_adds_nodes_a_gang_cannot_use_and_gang_mode_adds_none(tmp_path: Path) -> None:
    """cluster-autoscaler's FAQ: scale-up considers pods one by one. A 4-node gang on a group of max-size 3 gets
    3 nodes that sit idle until scale-down removes them (and the next scan adds them again); gang-aware
    scale-up adds nothing and says why."""
    docs = [template(max_size=3), SYSTEM, TRAINING]
    per_pod, gang = run(tmp_path, docs, "pod", until=3600.0), run(tmp_path, docs, "gang", until=3600.0)
    assert per_pod["autoscaler"]["nodesAdded"]["gpu-pool"] >= 3
    assert per_pod["autoscaler"]["idleNodeHours"] > 1.0
    assert per_pod["autoscaler"]["totalCost"] > 0
    assert per_pod["summary"]["pods"]["pending"] == 4
    assert gang["autoscaler"]["nodesAdded"] == {} and gang["autoscaler"]["totalCost"] == 0
    [miss] = gang["autoscaler"]["unhelped"]
    assert miss["name"] == "ml/train" and "max-size 3 leaves 3" in miss["reason"]


def test_a_gang_waits_for_its_nodes_runs_and_the_idle_nodes_go(tmp_path: Path) -> None:
    report = run(tmp_path, [template(max_size=4), SYSTEM, TRAINING], "gang")
    scaler = report["autoscaler"]
    assert scaler["nodesAdded"] == {"gpu-pool": 4} and scaler["nodesRemoved"] == 4
    assert report["summary"]["pods"]["succeeded"] == 4
    # Unschedulable at 0 (the scan at 0 ran before the scheduler tried); the next scan, 10 s later, asks for 4
    # nodes, which arrive after the 3-minute provisioning delay, at 190 s. The group is tried again when its
    # backoff ends, whatever the events: at 2, 5, 10, 19, 36 s, then every 21 s (10 s × √4), so at 204 s.
    assert report["summary"]["groupWaitSeconds"]["max"] == 204.0
    # Each node: requested at 10 s, removed 10 minutes after the job's end (2h 3m 24s), at a scan.
    hours = scaler["nodeHours"]["gpu-pool"]
    assert round(4 * (2 * 3600 + 194 + 600) / 3600, 6) <= hours <= 4 * (2 * 3600 + 194 + 620) / 3600  # 6 places
    assert scaler["totalCost"] == pytest.approx(32.77 * hours, rel=1e-6)
    assert scaler["idleNodeHours"] == 0


def test_min_size_nodes_exist_from_the_start_and_stay(tmp_path: Path) -> None:
    report = run(tmp_path, [template(max_size=4, min_size=1), SYSTEM], "pod")
    assert report["autoscaler"]["nodesAdded"] == {} and report["autoscaler"]["nodesRemoved"] == 0
    inputs = load_paths([str(tmp_path / "in.yaml")])
    assert [n.name for n in inputs.nodes] == ["gpu-pool-0", "system-0"]
    assert len(inputs.node_groups) == 1


def test_compare_runs_each_profile_under_each_scale_up_mode(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "in.yaml").write_text(yaml.safe_dump_all([template(max_size=3), SYSTEM, TRAINING]))
    assert main(["compare", str(tmp_path / "in.yaml"), "--profiles", "gang", "--scale-up", "pod,gang",
                 "--until", "1h", "-o", "json"]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    assert [r["profile"] for r in results] == ["gang/pod-scale-up", "gang/gang-scale-up"]
    assert [r["autoscaler"]["scaleUp"] for r in results] == ["pod", "gang"]


def affine_pod(app: str) -> Doc:
    """A pod the template check lets through but no node will take: it must share a host with a pod of `app`."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "web",
                                                            "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "web:v1", "resources": {
                "requests": {"cpu": "16", "memory": "32Gi"}}}],
                "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                    "topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": app}}}]}}}}


def test_what_the_template_check_ignores_is_named_in_the_report_and_on_stderr(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "in.yaml").write_text(yaml.safe_dump_all([template(max_size=2), SYSTEM, affine_pod("cache")],
                                                         sort_keys=False))
    assert main(["simulate", str(tmp_path / "in.yaml"), "--profile", "gang", "--until", "1h", "-o", "json"]) == 0
    captured = capsys.readouterr()
    [line] = json.loads(captured.out)["autoscaler"]["notModelled"]
    assert line == "inter-pod affinity of 1 pending pod(s) (web/web-0): scale-up's template check does not see them"
    assert f"phalanx: gang: not modelled: {line}" in captured.err
    # Nothing ignored, nothing named.
    assert run(tmp_path, [template(max_size=4), SYSTEM, TRAINING], "gang")["autoscaler"]["notModelled"] == []


def test_without_until_nodes_that_went_unused_are_not_added_again_for_ever(tmp_path: Path) -> None:
    """cluster-autoscaler adds nodes for a pod that cannot use them, removes them once unneeded, and adds them
    again. With --until the run shows that; without it the run must still end, so once nothing but the
    autoscaler can change anything, the same pods get no more nodes."""
    docs = [template(max_size=2), SYSTEM, affine_pod("cache")]
    bounded = run(tmp_path, docs, "pod", until=6 * 3600.0)["autoscaler"]
    assert bounded["nodesRemoved"] > 4  # thrash: added, unneeded for 10 minutes, removed, added again
    report = run(tmp_path, docs, "pod")
    scaler = report["autoscaler"]
    assert report["endTime"] < 3600.0
    assert scaler["nodesRemoved"] == sum(scaler["nodesAdded"].values()) > 0
    assert scaler["unhelped"] == [{"name": "web/web-0", "reason": "nodes added for it were removed unused; "
                                                                  "without --until they are not added again"}]


def test_a_new_node_carries_its_hostname_label_as_a_kubelet_sets_it(tmp_path: Path) -> None:
    spread = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "web",
                                                              "labels": {"app": "web"}},
              "spec": {"containers": [{"name": "web", "image": "web:v1", "resources": {
                  "requests": {"cpu": "16", "memory": "32Gi"}}}],
                  "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                                 "whenUnsatisfiable": "DoNotSchedule",
                                                 "labelSelector": {"matchLabels": {"app": "web"}}}]}}
    report = run(tmp_path, [template(max_size=2), SYSTEM, spread], "pod", until=3600.0)
    [pod] = report["pods"]
    assert pod["node"] == "gpu-pool-0"


@pytest.mark.parametrize(("args", "expected"), [
    (["--scale-up", "gangs"], "phalanx: error: --scale-up: unknown mode 'gangs' (pod or gang)"),
    (["--scale-up", "pod,gang"], "phalanx: error: --scale-up: simulate takes one mode (compare takes a list)"),
])
def test_bad_scale_up_modes_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                        expected: str) -> None:
    (tmp_path / "in.yaml").write_text(yaml.safe_dump_all([template(max_size=3), SYSTEM]))
    assert main(["simulate", str(tmp_path / "in.yaml"), *args]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == expected


def test_a_bad_node_group_template_fails_with_file_object_and_field(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    doc = template(max_size=1, min_size=2)
    (tmp_path / "in.yaml").write_text(yaml.safe_dump(doc))
    assert main(["simulate", str(tmp_path / "in.yaml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"phalanx: error: {tmp_path / 'in.yaml'}: Node gpu-pool-template: metadata.annotations[")
    assert "min-size 2 is larger than max-size 1" in err


def test_the_gang_pool_example_reads_as_docs_autoscaling_md_says(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "examples/gang-pool", "--profiles", "gang", "--scale-up", "pod,gang", "-o", "json"]) == 0
    per_pod, gang = (r["autoscaler"] for r in json.loads(capsys.readouterr().out)["results"])
    assert gang["nodesAdded"] == {"h100-pool": 4} and gang["idleNodeHours"] == 0
    assert per_pod["nodesAdded"]["h100-pool"] > 6 and per_pod["idleNodeHours"] > 6
    assert per_pod["totalCost"] > 1.2 * gang["totalCost"]


@pytest.mark.parametrize(("min_size", "max_size", "words"), [
    ("100000000", "100000000", "min-size 100000000 is more than 5000, the most nodes Kubernetes supports"),
    ("+-5", "10", "must be a whole number, got '+-5'"),
    ("9" * 5000, "10", "is out of range"),
], ids=["min-size-1e8", "plus-minus", "5000-digits"])
def test_node_group_sizes_that_would_blow_up_or_crash_end_with_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], min_size: str, max_size: str, words: str) -> None:
    """min-size 1e8 made 10^8 nodes at load (7.9 GB in 60 s); `+-5` and 5,000 digits were tracebacks."""
    doc = template(max_size=0)
    annotations = doc["metadata"]["annotations"]
    annotations["cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"] = min_size
    annotations["cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"] = max_size
    (tmp_path / "in.yaml").write_text(yaml.safe_dump(doc))
    assert main(["simulate", str(tmp_path / "in.yaml")]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"phalanx: error: {tmp_path / 'in.yaml'}: Node gpu-pool-template: metadata.annotations[")
    assert words in line


def test_a_max_size_above_the_cap_is_capped_with_a_line_in_the_report_and_on_stderr(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "in.yaml").write_text(yaml.safe_dump_all([template(max_size=2**31 - 1), SYSTEM, TRAINING]))
    assert main(["simulate", str(tmp_path / "in.yaml"), "--profile", "gang", "--until", "1h", "-o", "json"]) == 0
    captured = capsys.readouterr()
    line = ("node group gpu-pool: max-size 2147483647 is more than 5000 nodes, the most Kubernetes supports in a "
            "cluster: capped at 5000")
    assert json.loads(captured.out)["autoscaler"]["notModelled"] == [line]
    assert f"phalanx: gang: not modelled: {line}" in captured.err



def test_a_provisioning_delay_of_292_years_ends_in_a_few_rounds(tmp_path: Path) -> None:
    """Scans every 10 s while a node was provisioning: a delay of 292 years (Go's longest duration) never
    ended. The scans that could change nothing are skipped; the node arrives and the pod runs there."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
           "spec": {"containers": [{"name": "c", "image": "c", "resources": {"requests": {"cpu": "4"}}}]}}
    (tmp_path / "in.yaml").write_text(yaml.safe_dump_all([template(max_size=1, delay="2562047h"), pod]))
    sim = Simulation(load_paths([str(tmp_path / "in.yaml")]), builtin("gang"))
    sim.observers.append(RoundLimit(100))
    report = build_report(sim.run())
    assert report["autoscaler"]["nodesAdded"] == {"gpu-pool": 1}
    assert report["pods"][0]["node"] == "gpu-pool-0"
    assert report["endTime"] >= 2562047 * 3600


@pytest.mark.parametrize("delay", ["4m", "3601s", "1h", "17m3s"])
@pytest.mark.parametrize("mode", ["pod", "gang"])
def test_skipping_quiet_scans_changes_no_outcome(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, delay: str,
                                                 mode: str) -> None:
    docs = [template(max_size=6, delay=delay), SYSTEM, TRAINING, affine_pod("cache")]
    skipped = run(tmp_path, docs, mode, until=6 * 3600.0)
    monkeypatch.setattr(NodeAutoscaling, "skip_quiet_scans", False)
    every = run(tmp_path, docs, mode, until=6 * 3600.0)
    assert skipped["autoscaler"] == every["autoscaler"]
    assert skipped["pods"] == every["pods"]
    assert _close(skipped["summary"], every["summary"])  # the books add up over fewer steps: rounding differs


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        return bool(a == pytest.approx(b, rel=1e-12))
    return bool(a == b)


def test_scale_up_runs_the_node_static_filters_the_profile_enables(tmp_path: Path) -> None:
    """The simulator hands the profile's Filters to the autoscaler, which asks the registry for their node-static
    ones: a template's taint stops scale-up under the default Filters, and not under a profile without
    TaintToleration, whose scheduler then places the pod on the tainted node too."""
    tainted = template(max_size=1)
    tainted["spec"] = {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}
    big = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "c", "resources": {"requests": {"cpu": "16"}}}]}}
    (tmp_path / "in.yaml").write_text(yaml.safe_dump_all([tainted, SYSTEM, big], sort_keys=False))
    reports = {}
    for name, drop in (("default", ()), ("untainted", ("TaintToleration",))):
        profile = builtin("default")
        profile.filters = [f for f in profile.filters if f not in drop]
        reports[name] = build_report(Simulation(load_paths([str(tmp_path / "in.yaml")]), profile, until=600.0).run())
    assert reports["default"]["autoscaler"]["nodesAdded"] == {}
    assert reports["default"]["summary"]["pods"]["pending"] == 1
    assert reports["untainted"]["autoscaler"]["nodesAdded"] == {"gpu-pool": 1}
    assert reports["untainted"]["summary"]["pods"]["pending"] == 0
