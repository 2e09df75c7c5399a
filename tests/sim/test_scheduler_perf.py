"""kube-scheduler's scheduler_perf configurations read unchanged (phalanx.sim.perf_config) and run into
manifests (phalanx.sim.scheduler_perf, `phalanx generate CONFIG --workload TESTCASE/WORKLOAD`).

The upstream files are read from the Go module cache, where tools/kube/build.sh's build of kubernetes puts
them; without it those tests skip. The rest write small configurations of their own: one per opcode, and one
per kind of bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.cli import main
from phalanx.errors import InputError
from phalanx.scheduler.profiles import load_profile
from phalanx.sim.perf_config import load_perf_config
from phalanx.sim.report import build_report
from phalanx.sim.scheduler_perf import SETTLE_SECONDS, PerfWorkloadManifests, generate_perf
from phalanx.sim.simulation import Simulation
from phalanx.sim.synthetic import to_inputs

SCHEDULER_PERF = Path.home() / "go/pkg/mod/k8s.io/kubernetes@v1.37.2/test/integration/scheduler_perf"
upstream = pytest.mark.skipif(not SCHEDULER_PERF.is_dir(), reason=f"{SCHEDULER_PERF} is absent: the Go module "
                              "cache holds it once kubernetes v1.37.2 is built from the module (tools/kube/build.sh)")
Manifest = dict[str, Any]


def _upstream(relative: str, selector: str) -> PerfWorkloadManifests:
    return generate_perf(load_perf_config(str(SCHEDULER_PERF / relative)), selector)


def _write(tmp_path: Path, ops: list[dict[str, Any]], params: dict[str, Any] | None = None,
           files: dict[str, str] | None = None, **case: Any) -> Path:
    """A configuration with one test case T of one workload w, and the template files `files`."""
    for name, text in (files or {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    path = tmp_path / "cfg" / "performance-config.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump([{"name": "T", **case, "workloadTemplate": ops,
                                     "workloads": [{"name": "w", "params": params or {}}]}], sort_keys=False))
    return path


def _run(path: Path, selector: str = "T/w") -> list[Manifest]:
    return generate_perf(load_perf_config(str(path)), selector).manifests


def _rows(manifests: list[Manifest]) -> list[tuple[str, str, str, str]]:
    """kind, namespace, name, arrival of each object."""
    return [(m["kind"], m["metadata"].get("namespace", ""), m["metadata"]["name"],
             m["metadata"].get("annotations", {}).get("phalanx.dev/arrival", "")) for m in manifests]


def _of(manifests: list[Manifest], kind: str) -> list[Manifest]:
    return [m for m in manifests if m["kind"] == kind]


POD = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p-{{.Index}}\nspec:\n  containers: [{name: c}]\n"


# --- upstream's own files ---

@upstream
def test_gang_scheduling_10_nodes_3_gangs() -> None:
    result = _upstream("podgroup/gangscheduling/performance-config.yaml", "GangScheduling/10Nodes_3Gangs")
    manifests = result.manifests
    assert result.feature_gates == {"GenericWorkload": True}
    nodes, groups, pods = _of(manifests, "Node"), _of(manifests, "PodGroup"), _of(manifests, "Pod")
    assert len(nodes) == 10 and len({n["metadata"]["name"] for n in nodes}) == 10
    assert all(n["metadata"]["labels"]["kubernetes.io/hostname"] == n["metadata"]["name"] for n in nodes)
    assert [g["metadata"]["name"] for g in groups] == ["gang-0", "gang-1", "gang-2"]
    assert all(g["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}} for g in groups)
    assert {m["metadata"]["namespace"] for m in groups + pods} == {"gang-ns-0"}
    assert [p["metadata"]["name"] for p in pods] == [f"test-gang-scheduling-{i}" for i in range(9)]
    assert [p["spec"]["schedulingGroup"]["podGroupName"] for p in pods] == [f"gang-{i // 3}" for i in range(9)]
    assert _of(manifests, "Namespace")[0]["metadata"]["name"] == "gang-ns-0"
    assert not any("annotations" in m["metadata"] for m in manifests)  # all at time 0: nothing waited on before


@upstream
def test_gang_scheduling_binds_all_nine_under_the_gang_profile() -> None:
    manifests = _upstream("podgroup/gangscheduling/performance-config.yaml", "GangScheduling/10Nodes_3Gangs").manifests
    report = build_report(Simulation(to_inputs(manifests), load_profile("gang")).run())
    assert report["summary"]["podGroups"] == {"total": 3, "scheduled": 3, "pending": 0}
    assert report["summary"]["pods"]["running"] == 9
    assert report["summary"]["pods"]["pending"] == 0


@upstream
def test_basic_scheduling_and_tas() -> None:
    basic = _upstream("podgroup/basicscheduling/performance-config.yaml", "BasicScheduling/10Nodes_3Groups").manifests
    assert [g["spec"] for g in _of(basic, "PodGroup")] == [{"schedulingPolicy": {"basic": {}}}] * 3
    assert [p["spec"]["schedulingGroup"]["podGroupName"] for p in _of(basic, "Pod")] == [
        f"basic-group-{i // 3}" for i in range(9)]
    tas = _upstream("podgroup/tas/performance-config.yaml", "TopologyAwareScheduling/10Nodes_3Gangs")
    assert tas.feature_gates == {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True}
    nodes = _of(tas.manifests, "Node")
    assert [n["metadata"]["name"] for n in nodes] == [f"node-{i}" for i in range(10)]
    assert nodes[3]["metadata"]["labels"] == {"kubernetes.io/hostname": "node-3", "topology.kubernetes.io/zone":
                                              "zone-0", "topology.kubernetes.io/rack": "rack-0"}
    assert _of(tas.manifests, "PodGroup")[0]["spec"]["schedulingConstraints"] == {
        "topology": [{"key": "topology.kubernetes.io/rack"}]}


@upstream
def test_preemptors_arrive_after_the_pods_scheduler_perf_waits_for() -> None:
    manifests = _upstream("workload_preemption/performance-config.yaml",
                          "GangPreemptionBasic/2Nodes_1PreemptorGang_2Pods_Evicting_10InitPods").manifests
    rows = _rows(manifests)
    assert {row[3] for row in rows if row[1] == "gang-preempt-1"} == {""}
    assert {row[3] for row in rows if row[1] == "gang-preempt-0"} == {"1m"}
    gang = [m for m in _of(manifests, "Pod") if m["metadata"]["namespace"] == "gang-preempt-0"]
    assert gang[0]["spec"]["priority"] == 8888888  # AddInt 0 of the float64 param: not 8.888888e+06
    assert gang[0]["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "3970m"
    report = build_report(Simulation(to_inputs(manifests), load_profile("gang")).run())
    assert report["summary"]["podGroups"]["scheduled"] == 1


@upstream
def test_the_list_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["generate", str(SCHEDULER_PERF / "podgroup/gangscheduling/performance-config.yaml"), "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 8
    assert lines[0].split() == ["GangScheduling/10Nodes_3Gangs", "integration-test,short"]
    assert lines[2].split() == ["GangScheduling/5000Nodes_1000Gangs_3000Pods", "performance"]


@upstream
def test_the_generate_command_names_the_feature_gates(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = SCHEDULER_PERF / "podgroup/tas/performance-config.yaml"
    assert main(["generate", str(config), "--workload", "TopologyAwareScheduling/10Nodes_3Gangs"]) == 0
    out, err = capsys.readouterr()
    assert err == ("phalanx: TopologyAwareScheduling/10Nodes_3Gangs: scheduler_perf runs it with feature gates "
                   "GenericWorkload=true,TopologyAwareWorkloadScheduling=true: pass --feature-gates "
                   "GenericWorkload=true,TopologyAwareWorkloadScheduling=true to simulate (compare has no "
                   "--feature-gates: give it a profile file with featureGates)\n")
    (tmp_path / "tas.yaml").write_text(out)
    assert main(["validate", str(tmp_path / "tas.yaml")]) == 0
    assert capsys.readouterr().out.startswith("valid: 10 node(s), 9 pod(s), 3 pod group(s)")
    assert main(["generate", str(config), "--workload", "TopologyAwareScheduling/10Nodes_3Gangs", "-o", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["kind"] == "List" and len(listed["items"]) == 23


@upstream
def test_every_small_workload_of_the_podgroup_preemption_dra_and_misc_files_generates_or_says_why() -> None:
    for folder in ("podgroup", "workload_preemption", "dra", "misc"):
        for path in sorted((SCHEDULER_PERF / folder).rglob("performance-config.yaml")):
            config = load_perf_config(str(path))
            for selector, labels in config.listing():
                if "integration-test" not in labels:
                    continue
                try:
                    assert generate_perf(config, selector).manifests
                except InputError as exc:
                    assert "\n" not in str(exc) and exc.file and exc.obj, selector
                    assert "not supported" in exc.detail, (selector, str(exc))


@upstream
def test_an_upstream_template_given_to_validate_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    template = SCHEDULER_PERF / "podgroup/gangscheduling/templates/gang-pod.yaml"
    assert main(["validate", str(template)]) == 2
    assert capsys.readouterr().err.startswith(f"phalanx: error: {template}: line 4: an unrendered Go template "
                                              "action")


# --- each opcode ---

def test_create_nodes_default_template_and_strategies(tmp_path: Path) -> None:
    path = _write(tmp_path, [
        {"opcode": "createNodes", "count": 2},
        {"opcode": "createNodes", "countParam": "$n", "nodeTemplatePath": "../node.yaml",
         "templateParams": {"cpu": "$cpu"},
         "labelNodePrepareStrategy": {"labelKey": "zone", "labelValues": ["a", "b"]}},
        {"opcode": "createNodes", "count": 2, "uniqueNodeLabelStrategy": {"labelKey": "u"}},
        {"opcode": "createNodes", "count": 1, "nodeTemplatePath": "../node.yaml", "templateParams": {"cpu": 2},
         "nodeAllocatableStrategy": {"nodeAllocatable": {"example.com/v": "39"},
                                     "csiNodeAllocatable": {"ebs": {"count": 39}}, "migratedPlugins": ["x"]}},
    ], {"n": 3, "cpu": 8}, {"node.yaml": "apiVersion: v1\nkind: Node\nmetadata:\n  generateName: big-\n"
                                         "status:\n  capacity: {cpu: '{{.cpu}}', pods: '{{.Count}}'}\n"})
    manifests = _run(path)
    nodes = _of(manifests, "Node")
    assert [n["metadata"]["name"] for n in nodes] == ["node-0-00000", "node-0-00001", "big-00000", "big-00001",
                                                      "big-00002", "node-2-00000", "node-2-00001", "big-00003"]
    assert nodes[0]["status"]["allocatable"] == {"pods": "110", "cpu": "4", "memory": "32Gi"}
    assert nodes[2]["status"]["capacity"] == {"cpu": "8", "pods": "3"}
    assert [n["metadata"]["labels"].get("zone") for n in nodes[2:5]] == ["a", "b", "a"]
    unique = [n["metadata"]["labels"]["u"] for n in nodes[5:7]]
    assert len(set(unique)) == 2 and unique == [n["metadata"]["labels"]["u"] for n in _of(_run(path), "Node")[5:7]]
    assert nodes[7]["status"]["allocatable"] == {"cpu": "2", "pods": "1", "example.com/v": "39"}
    csi = _of(manifests, "CSINode")[0]
    assert csi["metadata"]["name"] == "big-00003"
    assert csi["spec"]["drivers"] == [{"name": "ebs", "allocatable": {"count": 39}, "nodeID": "big-00003"}]


def test_create_namespaces(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"opcode": "createNamespaces", "prefix": "team", "count": 2,
                              "namespaceTemplatePath": "../ns.yaml"}],
                  files={"ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {labels: {tier: gold}}\n"})
    assert [(m["metadata"]["name"], m["metadata"]["labels"]) for m in _run(path)] == [
        ("team-0", {"tier": "gold"}), ("team-1", {"tier": "gold"})]


def test_create_pods_namespaces_templates_signatures_and_waits(tmp_path: Path) -> None:
    path = _write(tmp_path, [
        {"opcode": "createNodes", "count": 1},
        {"opcode": "createPods", "count": 2},
        {"opcode": "createPods", "countParam": "$groups", "countMultiplierParam": "$size", "namespace": "ns",
         "podTemplatePath": "../pod.yaml", "signatureBatchSize": 2, "skipWaitToCompletion": True},
        {"opcode": "createPods", "count": 1, "collectMetrics": True},
    ], {"groups": 2, "size": 2}, {"pod.yaml": POD})
    rows = _rows(_run(path))
    assert rows == [("Node", "", "node-0-00000", ""), ("Namespace", "", "namespace-1", ""),
                    ("Pod", "namespace-1", "pod-00000", ""), ("Pod", "namespace-1", "pod-00001", ""),
                    ("Namespace", "", "ns", "1m"), *[("Pod", "ns", f"p-{i}", "1m") for i in range(4)],
                    ("Namespace", "", "namespace-3", "1m"), ("Pod", "namespace-3", "pod-00000", "1m")]
    pods = _of(_run(path), "Pod")
    assert pods[0]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "100m", "memory": "500Mi"}
    assert "labels" not in pods[0]["metadata"]  # the built-in pod has no signature label, as upstream
    assert [p["metadata"]["labels"]["signature"] for p in pods[2:6]] == [
        "signature-label-0", "signature-label-0", "signature-label-1", "signature-label-1"]


def test_default_pod_template_and_paths_relative_to_the_configuration(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"opcode": "createPods", "count": 1}], files={"templates/pod.yaml": POD},
                  defaultPodTemplatePath="../templates/pod.yaml")
    assert _rows(_run(path))[1] == ("Pod", "namespace-0", "p-0", "")


def test_create_pod_sets_unrolls_into_namespaces(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"opcode": "createPodSets", "countParam": "$sets", "namespacePrefix": "set",
                              "createPodsOp": {"opcode": "createPods", "count": 1, "skipWaitToCompletion": True}},
                             {"opcode": "createPods", "count": 1, "skipWaitToCompletion": True}], {"sets": 2})
    assert [row[:3] for row in _rows(_run(path)) if row[0] == "Pod"] == [
        ("Pod", "set-0", "pod-00000"), ("Pod", "set-1", "pod-00000"), ("Pod", "namespace-2", "pod-00000")]


def test_create_pod_groups(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"opcode": "createPodGroups", "count": 2, "namespace": "g",
                              "templatePath": "../pg.yaml", "templateParams": {"min": "$min|4", "prio": 2}}],
                  files={"pg.yaml": "apiVersion: scheduling.k8s.io/v1alpha3\nkind: PodGroup\nmetadata:\n"
                                    "  name: gang-{{.Index}}\nspec:\n  priority: {{AddInt 0 .prio}}\n"
                                    "  schedulingPolicy: {gang: {minCount: {{.min}}}}\n"})
    groups = _of(_run(path), "PodGroup")
    assert [g["apiVersion"] for g in groups] == ["scheduling.k8s.io/v1beta1"] * 2  # the typed client's version
    assert groups[1]["spec"] == {"priority": 2, "schedulingPolicy": {"gang": {"minCount": 4}}}
    assert groups[1]["metadata"] == {"name": "gang-1", "namespace": "g"}


def test_create_any_and_resource_claims(tmp_path: Path) -> None:
    path = _write(tmp_path, [
        {"opcode": "createAny", "templatePath": "../class.yaml"},
        {"opcode": "createAny", "templatePath": "../slice.yaml", "count": 2, "templateParams": {"n": "$devices"}},
        {"opcode": "createAny", "templatePath": "../claim.yaml", "namespace": "init", "count": 1},
        {"opcode": "createResourceClaims", "count": 2, "namespace": "init", "templatePath": "../plain-claim.yaml"},
    ], {"devices": 2}, {
        "class.yaml": "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: c}\n",
        "slice.yaml": "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s-{{.Index}}}\n"
                      "spec:\n  devices:{{range (.n | Int)}}\n  - name: d-{{.}}{{end}}\n",
        "claim.yaml": "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: claim-{{.Index}}}\n",
        "plain-claim.yaml": "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {generateName: x-}\n",
    })
    manifests = _run(path)
    assert [row[:3] for row in _rows(manifests)] == [
        ("DeviceClass", "", "c"), ("ResourceSlice", "", "s-0"), ("ResourceSlice", "", "s-1"),
        ("Namespace", "", "init"), ("ResourceClaim", "init", "claim-0"), ("ResourceClaim", "init", "x-00000"),
        ("ResourceClaim", "init", "x-00001")]
    assert manifests[1]["spec"]["devices"] == [{"name": "d-0"}, {"name": "d-1"}]


def test_churn_creates_every_interval_until_the_workload_ends(tmp_path: Path) -> None:
    path = _write(tmp_path, [
        {"opcode": "createNodes", "count": 1},
        {"opcode": "churn", "mode": "create", "intervalMilliseconds": 20000, "templatePaths": ["../churn.yaml"]},
        {"opcode": "churn", "mode": "create", "number": 1, "namespace": "c", "templatePaths": ["../churn.yaml",
                                                                                             "../node.yaml"]},
        {"opcode": "createPods", "count": 1},
    ], files={"churn.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {generateName: churn-}\nspec: {}\n",
              "node.yaml": "apiVersion: v1\nkind: Node\nmetadata: {name: fixed}\n"})
    rows = [row for row in _rows(_run(path)) if "churn" in row[2] or row[2] == "fixed"]
    # the workload ends when the last createPods has been waited on: 60s; ticks at 20s and 40s (not 60s)
    assert rows == [("Pod", "namespace-1", "churn-00000", "20s"), ("Pod", "namespace-1", "churn-00001", "40s"),
                    ("Pod", "c", "churn-00000", "0.5"), ("Node", "", "fixed", "0.5")]


def test_barrier_and_sleep_move_the_clock(tmp_path: Path) -> None:
    path = _write(tmp_path, [
        {"opcode": "createPods", "count": 1, "namespace": "a", "skipWaitToCompletion": True},
        {"opcode": "barrier", "namespaces": ["a"], "stageRequirement": "Attempted"},
        {"opcode": "barrier"},  # nothing left to wait for
        {"opcode": "sleep", "duration": "30s"},
        {"opcode": "createPods", "count": 1, "namespace": "b"},
        {"opcode": "sleep", "durationParam": "$pause"},
        {"opcode": "startCollectingMetrics", "namespaces": ["b"]},
        {"opcode": "stopCollectingMetrics"},
        {"opcode": "createPods", "count": 1, "namespace": "c"},
    ], {"pause": "1h"})
    arrivals = {row[1]: row[3] for row in _rows(_run(path)) if row[0] == "Pod"}
    assert SETTLE_SECONDS == 60
    assert arrivals == {"a": "", "b": "1m30s", "c": "1h2m30s"}


def test_alloc_resource_claims_with_nothing_to_allocate_is_a_no_op(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"opcode": "createNodes", "count": 1}, {"opcode": "allocResourceClaims",
                                                                     "namespace": "init"}])
    assert len(_run(path)) == 1


def test_feature_gates_merge_and_output_is_deterministic(tmp_path: Path) -> None:
    path = tmp_path / "performance-config.yaml"
    path.write_text("- name: T\n  featureGates: {GenericWorkload: true, SchedulerAsyncAPICalls: true}\n"
                    "  workloadTemplate: [{opcode: createNodes, count: 2}]\n"
                    "  workloads:\n  - {name: w, featureGates: {SchedulerAsyncAPICalls: false}, labels: [short]}\n")
    result = generate_perf(load_perf_config(str(path)), "T/w")
    assert result.feature_gates == {"GenericWorkload": True, "SchedulerAsyncAPICalls": False}
    assert result.manifests == _run(path)


def test_the_command_names_gates_phalanx_does_not_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "performance-config.yaml"
    path.write_text("- name: T\n  featureGates: {SchedulerAsyncAPICalls: false}\n  schedulerConfigPath: s.yaml\n"
                    "  workloadTemplate: [{opcode: createNodes, countParam: $n}]\n"
                    "  workloads: [{name: w, params: {n: 1, hook: 3}}]\n")
    assert main(["generate", str(path), "--workload", "T/w"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "phalanx: T/w: scheduler_perf runs it with feature gates SchedulerAsyncAPICalls=false; "
        "SchedulerAsyncAPICalls is not modelled by Phalanx",
        "phalanx: T/w: no operation uses the param(s) hook: scheduler_perf fails such a workload unless its Go test "
        "code reads them (a hook Phalanx does not run, which may shape the cluster too)",
        f"phalanx: T/w: scheduler_perf runs it with the scheduler configuration {tmp_path / 's.yaml'}: pass "
        f"--config {tmp_path / 's.yaml'} to simulate"]


def test_phalanx_workload_files_still_generate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text("workloadTemplate: [{opcode: createNodes, count: 2}]\n")
    assert main(["generate", str(workload)]) == 0
    assert len(list(yaml.safe_load_all(capsys.readouterr().out))) == 2
    assert main(["generate", str(workload), "--list"]) == 2
    assert capsys.readouterr().err == (f"phalanx: error: {workload}: --list: applies to scheduler_perf configuration "
                                       "files (a YAML list of test cases); this is a Phalanx workload file\n")


# --- opcodes refused ---

REFUSED = [
    ({"opcode": "deletePods", "namespace": "a"}, "opcode", "deletePods is not supported: it deletes pods"),
    ({"opcode": "updateAny", "templatePath": "x.yaml"}, "opcode", "updateAny is not supported"),
    ({"opcode": "churn", "mode": "recreate", "number": 1, "templatePaths": ["x.yaml"]}, "mode",
     "churn with mode recreate is not supported"),
    ({"opcode": "createPods", "count": 1, "steadyState": True, "duration": "1s"}, "steadyState",
     "steadyState is not supported"),
    ({"opcode": "createPods", "count": 1, "persistentVolumeClaimTemplatePath": "pvc.yaml"},
     "persistentVolumeClaimTemplatePath", "persistent volumes are not supported"),
]


@pytest.mark.parametrize(("op", "field", "message"), REFUSED, ids=[r[2][:30] for r in REFUSED])
def test_refused_opcodes_say_why(tmp_path: Path, op: dict[str, Any], field: str, message: str) -> None:
    path = _write(tmp_path, [{"opcode": "createNodes", "count": 1}, op])
    with pytest.raises(InputError) as err:
        _run(path)
    assert (err.value.file, err.value.obj, err.value.field) == (str(path), f"T/w: workloadTemplate[1] ({op['opcode']})",
                                                                field)
    assert message in err.value.detail


def test_alloc_resource_claims_with_claims_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"opcode": "createResourceClaims", "count": 1, "namespace": "init",
                              "templatePath": "../c.yaml"}, {"opcode": "allocResourceClaims"}],
                  files={"c.yaml": "kind: ResourceClaim\nmetadata: {name: c}\n"})
    with pytest.raises(InputError, match="allocResourceClaims is not supported: it allocates the ResourceClaims"):
        _run(path)


# --- bad input: one line naming the file, the operation and the field ---

BAD: list[tuple[list[dict[str, Any]], dict[str, Any], dict[str, str], str | None, str | None, str]] = [
    # ops, params, files, obj (after "T/w: "), field, message
    ([{"opcode": "createNodes", "countParam": "$nodes"}], {}, {}, "workloadTemplate[0] (createNodes)", "countParam",
     "parameter nodes is undefined"),
    ([{"opcode": "createNodes", "countParam": "nodes"}], {"nodes": 1}, {}, "workloadTemplate[0] (createNodes)",
     "countParam", "must name a param as $NAME"),
    ([{"opcode": "createNodes", "countParam": "$n"}], {"n": "ten"}, {}, "workloadTemplate[0] (createNodes)",
     "countParam", "parameter n has the wrong type"),
    ([{"opcode": "createNodes", "count": -1}], {}, {}, "workloadTemplate[0] (createNodes)", "count",
     "must not be negative"),
    ([{"opcode": "createPods", "count": 1, "podTemplatePath": "../pod.yaml", "templateParams": {"a": "$nope"}}],
     {}, {}, "workloadTemplate[0] (createPods)", "templateParams.a", "parameter nope not found"),
    ([{"opcode": "createPods", "count": 1, "podTemplatePath": "../missing.yaml"}], {}, {},
     "workloadTemplate[0] (createPods)", "podTemplatePath", "cannot read"),
    ([{"opcode": "createPodGroups", "count": 0, "namespace": "a", "templatePath": "../pod.yaml"}], {}, {},
     "workloadTemplate[0] (createPodGroups)", "count", "count must be greater than 0"),
    ([{"opcode": "createPodGroups", "count": 1, "templatePath": "../pod.yaml"}], {}, {},
     "workloadTemplate[0] (createPodGroups)", "namespace", "namespace must be set"),
    ([{"opcode": "createAny", "count": 1}], {}, {}, "workloadTemplate[0] (createAny)", "templatePath",
     "templatePath must be set"),
    ([{"opcode": "createAny", "templatePath": "../pod.yaml"}], {}, {}, "workloadTemplate[0] (createAny)",
     "namespace", "namespace not set for"),
    ([{"opcode": "createPods", "count": 2, "namespace": "a", "podTemplatePath": "../fixed.yaml"}], {},
     {"fixed.yaml": "kind: Pod\nmetadata: {name: same}\n"}, "workloadTemplate[0] (createPods)", None,
     "creates Pod a/same, which already exists"),
    ([{"opcode": "barrier", "namespaces": ["ghost"]}], {}, {}, "workloadTemplate[0] (barrier)", "namespaces",
     "unknown namespace ghost"),
    ([{"opcode": "barrier", "stageRequirement": "Bound"}], {}, {}, "workloadTemplate[0] (barrier)",
     "stageRequirement", "invalid stageRequirement"),
    ([{"opcode": "sleep", "duration": "soon"}], {}, {}, "workloadTemplate[0] (sleep)", "duration",
     "invalid duration"),
    ([{"opcode": "churn", "mode": "sometimes", "templatePaths": ["../pod.yaml"]}], {}, {},
     "workloadTemplate[0] (churn)", "mode", "invalid mode"),
    ([{"opcode": "createPods", "count": 1, "skipWaitToCompletion": True, "collectMetrics": True}], {}, {},
     "workloadTemplate[0] (createPods)", "skipWaitToCompletion", "cannot be true at the same time"),
    ([{"opcode": "createNodes", "count": 200001}], {}, {}, "workloadTemplate[0] (createNodes)", "count",
     "more than 200000 objects"),
    ([{"opcode": "createNodes", "count": 1, "nodeAllocatableStrategy": {"nodeAllocatable": ["cpu"]}}], {}, {},
     "workloadTemplate[0] (createNodes)", "nodeAllocatableStrategy", "nodeAllocatable must be a mapping"),
    ([{"opcode": "createNodes", "count": 1, "labelNodePrepareStrategy": {"labelKey": "z", "labelValue": ["a"]}}], {},
     {}, "workloadTemplate[0] (createNodes)", "labelNodePrepareStrategy", "unknown field labelValue"),
]


@pytest.mark.parametrize(("ops", "params", "files", "obj", "field", "message"), BAD, ids=[b[5][:40] for b in BAD])
def test_bad_operations_name_the_operation_and_field(tmp_path: Path, ops: list[dict[str, Any]], params: dict[str, Any],
                                                     files: dict[str, str], obj: str, field: str | None,
                                                     message: str) -> None:
    path = _write(tmp_path, ops, params, {"pod.yaml": POD, **files})
    with pytest.raises(InputError) as err:
        _run(path)
    assert (err.value.file, err.value.obj, err.value.field) == (str(path), f"T/w: {obj}", field)
    assert message in err.value.detail


CONFIG_ERRORS = [
    # the file's text, obj, field, message
    ("{name: T}", None, None, "no test cases defined"),
    ("[{name: T, workloadTemplate: [], workloads: [{name: w}]}]", "T", "workloadTemplate", "no ops defined"),
    ("[{name: T, workloadTemplate: [{opcode: createNodes}]}]", "T", "workloads", "no workloads defined"),
    ("[{name: T, workloadTemplate: [{opcode: fly}], workloads: [{name: w}]}]", "T: workloadTemplate[0]", "opcode",
     "unknown opcode 'fly'"),
    ("[{name: T, workloadTemplate: [{opcode: createWorkloads}], workloads: [{name: w}]}]", "T: workloadTemplate[0]",
     "opcode", "unknown opcode 'createWorkloads'"),  # not an opcode of v1.37.2's scheduler_perf
    ("[{name: T, workloadTemplate: [{opcode: createNodes, cuont: 1}], workloads: [{name: w}]}]",
     "T: workloadTemplate[0] (createNodes)", None, "unknown field(s) cuont"),
    ("[{name: T, workloadTemplate: [{opcode: createNodes, count: many}], workloads: [{name: w}]}]",
     "T: workloadTemplate[0] (createNodes)", "count", "must be an integer"),
    ("[{name: T, workloadTemplate: [{opcode: createNodes}], workloads: [{name: w}, {name: w}]}]", "T: workloads[1]",
     "name", "workload name w is not unique"),
    ("[{name: T, workloadTemplate: [{opcode: createNodes}], workloads: [{name: w}]}, "
     "{name: T, workloadTemplate: [{opcode: createNodes}], workloads: [{name: w}]}]", "T", "name",
     "name is not unique"),
    ("[{name: T, workloadTemplate: [{opcode: createNodes}], workloads: [{name: w, params: [1]}]}]", "T/w", "params",
     "must be a mapping"),
    ("[{name: T, featureGates: {A: yes please}, workloadTemplate: [{opcode: createNodes}], workloads: [{name: w}]}]",
     "T", "featureGates", "must map feature gate names to true or false"),
]


@pytest.mark.parametrize(("text", "obj", "field", "message"), CONFIG_ERRORS, ids=[c[3][:40] for c in CONFIG_ERRORS])
def test_bad_configurations_name_the_test_case_and_field(tmp_path: Path, text: str, obj: str | None,
                                                         field: str | None, message: str) -> None:
    path = tmp_path / "performance-config.yaml"
    path.write_text(text + "\n")
    with pytest.raises(InputError) as err:
        load_perf_config(str(path))
    assert (err.value.file, err.value.obj, err.value.field) == (str(path), obj, field)
    assert message in err.value.detail


def test_keys_match_in_any_letter_case_as_go_decodes_them(tmp_path: Path) -> None:
    path = tmp_path / "performance-config.yaml"
    path.write_text("- Name: T\n  WorkloadTemplate: [{Opcode: createNodes, CountParam: $n}]\n"
                    "  Workloads: [{NAME: w, Params: {n: 2}}]\n")
    assert len(_run(path)) == 2


TEMPLATE_ERRORS = [
    # template text, line, message
    ("kind: Pod\nmetadata:\n  name: p-{{DivideInt .Index 0}}\n", "line 3", "error calling DivideInt: division by zero"),
    ("kind: Pod\nmetadata: {name: '{{.nope}}'}\n", "line 2", ".nope has no value"),
    ("kind: Pod\n{{with .x}}{{end}}\n", "line 2", "{{with}} is outside the Go template subset"),
    ("kind: Pod\nmetadata: {name: a}\nspec: [\n", "line 4 of the rendered text", "invalid YAML"),
]


@pytest.mark.parametrize(("text", "obj", "message"), TEMPLATE_ERRORS, ids=[t[2][:30] for t in TEMPLATE_ERRORS])
def test_template_errors_name_the_template_and_line(tmp_path: Path, text: str, obj: str, message: str) -> None:
    path = _write(tmp_path, [{"opcode": "createPods", "count": 1, "podTemplatePath": "../t.yaml"}],
                  files={"t.yaml": text})
    with pytest.raises(InputError) as err:
        _run(path)
    assert (err.value.file, err.value.obj) == (str(tmp_path / "t.yaml"), obj)
    assert message in err.value.detail
    assert "T/w: workloadTemplate[0] (createPods)" in err.value.detail


SELECTOR_ERRORS = [
    ("T", "name a workload as TESTCASE/WORKLOAD, got 'T'"),
    ("Nope/w", "no test case named 'Nope' (it has T; --list shows them all)"),
    ("T/nope", "test case T has no workload named 'nope' (it has w)"),
]


@pytest.mark.parametrize(("selector", "message"), SELECTOR_ERRORS)
def test_unknown_workloads(tmp_path: Path, capsys: pytest.CaptureFixture[str], selector: str, message: str) -> None:
    path = _write(tmp_path, [{"opcode": "createNodes", "count": 1}])
    assert main(["generate", str(path), "--workload", selector]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("phalanx: error: ") and err.rstrip().endswith(f"--workload: {message}")


def test_command_line_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, [{"opcode": "createPods", "count": 1, "podTemplatePath": "../missing.yaml"}])
    assert main(["generate", str(path), "--workload", "T/w"]) == 2
    assert capsys.readouterr().err == (
        f"phalanx: error: {path}: T/w: workloadTemplate[0] (createPods): podTemplatePath: cannot read "
        f"{tmp_path / 'missing.yaml'}: No such file or directory\n")
    assert main(["generate", str(path)]) == 2
    assert capsys.readouterr().err == (f"phalanx: error: {path}: name the workload to print: --workload "
                                       "TESTCASE/WORKLOAD (--list shows them)\n")
