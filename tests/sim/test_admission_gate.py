"""The kueue and volcano profiles in the simulator (phalanx.sim.admission_gate): workloads held until admitted,
flavors applied, whole workloads evicted and readmitted, quota returned when they end, and the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.cli import main
from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.admission_gate import check_queue_objects, held_lines, load_queue_files
from phalanx.sim.report import build_report
from phalanx.sim.scenario import scenario_for
from phalanx.sim.simulation import Simulation

Doc = dict[str, Any]


def node(name: str, cpu: str = "8", **labels: str) -> Doc:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": cpu, "memory": "32Gi", "pods": "110"}}}


def flavor(name: str, **node_labels: str) -> Doc:
    spec = {"nodeLabels": node_labels} if node_labels else {}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": name},
            "spec": spec}


def cluster_queue(name: str, quotas: dict[str, str], cohort: str | None = None, **preemption: str) -> Doc:
    """A ClusterQueue with one resource group over cpu: `quotas` maps flavor -> cpu nominalQuota."""
    spec: Doc = {"namespaceSelector": {}, "resourceGroups": [{
        "coveredResources": ["cpu"],
        "flavors": [{"name": f, "resources": [{"name": "cpu", "nominalQuota": q}]} for f, q in quotas.items()]}]}
    if cohort:
        spec["cohortName"] = cohort
    if preemption:
        spec["preemption"] = preemption
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def local_queue(namespace: str, name: str, cq: str) -> Doc:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": namespace}, "spec": {"clusterQueue": cq}}


def volcano_queue(name: str, weight: int = 1) -> Doc:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
            "spec": {"weight": weight, "reclaimable": True}}


def job(namespace: str, name: str, *, cpu: str, pods: int, arrival: str = "0s", duration: str = "1h",
        queue: str | None = None, volcano: str | None = None) -> Doc:
    meta: Doc = {"name": name, "namespace": namespace,
                 "annotations": {"phalanx.dev/arrival": arrival, "phalanx.dev/duration": duration}}
    if queue:
        meta["labels"] = {"kueue.x-k8s.io/queue-name": queue}
    if volcano:
        meta["annotations"]["scheduling.volcano.sh/queue-name"] = volcano
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
            "spec": {"parallelism": pods, "completions": pods, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "trainer:v1", "resources": {"requests": {"cpu": cpu}}}]}}}}


def run(tmp_path: Path, docs: list[Doc], profile: str) -> dict[str, Any]:
    path = tmp_path / "input.yaml"
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
    return build_report(Simulation(load_paths([str(path)]), builtin(profile), scenario=scenario_for(profile)).run())


def bound_at(report: dict[str, Any], prefix: str) -> list[float]:
    return sorted(p["boundAt"] for p in report["pods"] if p["name"].startswith(prefix) and p["boundAt"] is not None)


def test_a_job_waits_for_quota_that_the_cluster_has(tmp_path: Path) -> None:
    """Kueue admits within nominalQuota even when nodes are free: the second Job waits for the first."""
    docs = [node("n1", "16"), flavor("default"), cluster_queue("team", {"default": "4"}),
            local_queue("ml", "team", "team"),
            job("ml", "first", cpu="2", pods=2, queue="team"),
            job("ml", "second", cpu="2", pods=2, arrival="1m", queue="team")]
    kueue, gang = run(tmp_path, docs, "kueue"), run(tmp_path, docs, "gang")
    assert bound_at(gang, "ml/second") == [60.0, 60.0]
    assert bound_at(kueue, "ml/second") == [3600.0, 3600.0]
    queues = {q["name"]: q for q in kueue["queues"]}
    assert queues["team"]["admitted"] == 2 and queues["team"]["pending"] == 0
    waits = {w["name"]: w["admissionWaits"] for w in kueue["admission"]["workloads"]}
    assert waits == {"Job ml/first": [0.0], "Job ml/second": [3540.0]}
    # The second Job's pods count the time the Job waited for admission.
    second = next(w for w in kueue["workloads"] if w["name"] == "ml/second")
    assert second["waitSeconds"]["max"] == 3540.0


def test_jobs_without_a_queue_name_are_not_managed_by_kueue(tmp_path: Path) -> None:
    docs = [node("n1", "16"), flavor("default"), cluster_queue("team", {"default": "1"}),
            local_queue("ml", "team", "team"), job("ml", "free", cpu="2", pods=4)]
    report = run(tmp_path, docs, "kueue")
    assert bound_at(report, "ml/free") == [0.0] * 4
    assert report["admission"]["workloads"] == []


def test_a_cohort_reclaims_what_another_queue_borrowed(tmp_path: Path) -> None:
    """Restates Kueue's docs (Cohort, reclaimWithinCohort): team-a borrows team-b's idle quota; when team-b's
    Job arrives, team-a's borrowing Job is evicted whole, its pods wait again and rerun from scratch."""
    docs = [node("n1", "8"), node("n2", "8"), flavor("default"),
            cluster_queue("team-a", {"default": "8"}, "org", reclaimWithinCohort="Any"),
            cluster_queue("team-b", {"default": "8"}, "org", reclaimWithinCohort="Any"),
            local_queue("a", "q", "team-a"), local_queue("b", "q", "team-b"),
            job("a", "big", cpu="2", pods=8, queue="q"),
            job("b", "small", cpu="2", pods=4, arrival="10m", duration="30m", queue="q")]
    report = run(tmp_path, docs, "kueue")
    assert report["admission"]["evicted"] == 1
    big = next(w for w in report["admission"]["workloads"] if w["name"] == "Job a/big")
    assert big["evictions"] == 1 and len(big["admissionWaits"]) == 2
    assert bound_at(report, "b/small") == [630.0] * 4  # after the victims' 30 s grace period
    assert report["summary"]["evictions"] == 8
    finished = [p["finishedAt"] for p in report["pods"] if p["name"].startswith("a/big")]
    assert min(finished) > 3600.0  # an hour of work restarted after the eviction
    rows = {(q["kind"], q["name"]): q for q in report["queues"]}
    assert rows[("ClusterQueue", "team-a")]["borrowed"] >= 1
    assert rows[("ClusterQueue", "team-a")]["reclaimed"] == 1


def test_the_next_flavor_places_pods_on_its_nodes(tmp_path: Path) -> None:
    """A ResourceFlavor's nodeLabels become the pods' nodeSelector: when on-demand quota is used up the Job
    gets the spot flavor and lands on spot nodes."""
    docs = [node("od-1", "8", pool="on-demand"), node("spot-1", "8", pool="spot"),
            flavor("on-demand", pool="on-demand"), flavor("spot", pool="spot"),
            cluster_queue("team", {"on-demand": "4", "spot": "8"}), local_queue("ml", "team", "team"),
            job("ml", "one", cpu="4", pods=1, queue="team"), job("ml", "two", cpu="4", pods=2, queue="team")]
    report = run(tmp_path, docs, "kueue")
    nodes = {p["name"]: p["node"] for p in report["pods"]}
    assert nodes["ml/one-0"] == "od-1"
    assert nodes["ml/two-0"] == nodes["ml/two-1"] == "spot-1"


def test_a_bare_pod_with_a_queue_name_waits_for_admission(tmp_path: Path) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "ml", "labels": {"kueue.x-k8s.io/queue-name": "missing"}},
           "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}
    report = run(tmp_path, [node("n1"), pod], "kueue")
    [entry] = report["pods"]
    # Kueue's pod webhook gates it: kube-scheduler's own words for a gated pod
    assert entry["phase"] == "Pending" and entry["message"] == "Scheduling is blocked due to non-empty scheduling gates"
    missing = [q for q in report["queues"] if q["name"] == "ml/missing"]
    assert missing and missing[0]["pending"] == 1


def test_volcano_queues_everything_and_proportion_caps_a_queue_at_its_share(tmp_path: Path) -> None:
    """Volcano's proportion plugin: two queues of weight 1 share 16 cpu as 8 + 8 while both ask; a queue's
    job beyond its deserved share waits although nodes are free (allocate admits within deserved)."""
    docs = [node("n1", "8"), node("n2", "8"), volcano_queue("a"), volcano_queue("b"),
            job("a", "one", cpu="2", pods=4, volcano="a"), job("a", "two", cpu="2", pods=4, volcano="a"),
            job("b", "three", cpu="2", pods=4, volcano="b")]
    report = run(tmp_path, docs, "volcano")
    assert bound_at(report, "b/three") == [0.0] * 4
    started = sorted([bound_at(report, "a/one")[0], bound_at(report, "a/two")[0]])
    assert started == [0.0, 3600.0]
    rows = {q["name"]: q for q in report["queues"]}
    assert rows["a"]["admitted"] == 2 and rows["b"]["admitted"] == 1 and rows["default"]["admitted"] == 0


def test_a_translated_volcano_podgroup_keeps_its_queue(tmp_path: Path) -> None:
    group = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "g", "namespace": "a"}, "spec": {"minMember": 2, "queue": "a"}}
    pods = [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"g-{i}", "namespace": "a", "annotations": {"scheduling.k8s.io/group-name": "g"}},
             "spec": {"schedulerName": "volcano",
                      "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}
            for i in range(2)]
    report = run(tmp_path, [node("n1"), volcano_queue("a"), group, *pods], "volcano")
    [workload] = report["admission"]["workloads"]
    assert workload["name"] == "PodGroup a/g" and workload["queue"] == "a" and workload["admitted"]
    assert bound_at(report, "a/g-") == [0.0, 0.0]


@pytest.fixture()
def peers_dir(tmp_path: Path) -> Path:
    docs = [node("n1", "8"), node("n2", "8"), flavor("default"),
            cluster_queue("team-a", {"default": "8"}, "org", reclaimWithinCohort="Any"),
            cluster_queue("team-b", {"default": "8"}, "org", reclaimWithinCohort="Any"),
            local_queue("a", "q", "team-a"), local_queue("b", "q", "team-b"), volcano_queue("a"), volcano_queue("b"),
            job("a", "big", cpu="2", pods=8, queue="q", volcano="a"),
            job("b", "small", cpu="2", pods=4, arrival="10m", queue="q", volcano="b")]
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "all.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
    return tmp_path / "in"


def test_compare_runs_the_three_profiles_with_per_queue_rows(peers_dir: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(peers_dir), "--profiles", "gang,kueue,volcano", "-o", "json"]) == 0
    out, err = capsys.readouterr()
    results = {r["profile"]: r for r in json.loads(out)["results"]}
    assert "queues" not in results["gang"]
    assert {q["kind"] for q in results["kueue"]["queues"]} == {"ClusterQueue", "LocalQueue"}
    assert {q["kind"] for q in results["volcano"]["queues"]} == {"Queue"}
    assert results["kueue"]["admission"]["policy"] == "kueue"
    assert len({r["endTime"] for r in results.values()}) == 1  # one horizon
    assert "read 7 queueing object(s) for the peer profiles (kueue, volcano, kai, yunikorn)" in err


def test_queue_objects_can_come_from_a_separate_file(peers_dir: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    docs = list(yaml.safe_load_all((peers_dir / "all.yaml").read_text()))
    queues = [d for d in docs if d["apiVersion"].startswith(("kueue", "scheduling.volcano"))]
    (peers_dir / "all.yaml").write_text(yaml.safe_dump_all([d for d in docs if d not in queues]))
    (tmp_path / "queues.yaml").write_text(yaml.safe_dump_all(queues))
    assert main(["simulate", str(peers_dir), "--profile", "kueue", "--queues", str(tmp_path / "queues.yaml"),
                 "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["admission"]["evicted"] == 1


def test_queues_file_with_other_objects_is_refused(peers_dir: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "q.yaml").write_text(yaml.safe_dump(node("stray")))
    assert main(["simulate", str(peers_dir), "--profile", "kueue", "--queues", str(tmp_path / "q.yaml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"phalanx: error: {tmp_path / 'q.yaml'}: Node stray: kind: is not a Kueue or Volcano")


@pytest.mark.parametrize(("doc", "expected"), [
    (cluster_queue("bad", {"default": "-1"}),
     "ClusterQueue bad: spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: must be greater than"),
    (volcano_queue("bad", weight=0), "Queue bad: spec.weight: should be greater than or equal to 1"),
])
def test_a_bad_queue_object_fails_before_any_profile_runs(peers_dir: Path, doc: Doc, expected: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    (peers_dir / "bad.yaml").write_text(yaml.safe_dump(doc))
    assert main(["compare", str(peers_dir), "--profiles", "gang,kueue"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip().splitlines()[-1].startswith(f"phalanx: error: {peers_dir / 'bad.yaml'}: {expected}")


def test_the_report_plots_each_queues_share_over_time(peers_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    assert main(["compare", str(peers_dir), "--profiles", "gang,kueue,volcano", "--report", str(out)]) == 0
    document = json.loads((out / "report.json").read_text())
    shares = {r["profile"]: r["series"].get("queueShare") for r in document["results"]}
    assert shares["gang"] is None
    kueue = shares["kueue"]
    assert set(kueue) == {"team-a", "team-b"}
    times = document["results"][1]["series"]["time"]
    assert all(len(column) == len(times) for column in kueue.values())
    assert kueue["team-a"][0] == 1.0  # team-a borrows the whole cluster until team-b's Job arrives
    assert (out / "queues.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (out / "index.html").read_text()
    assert "<h2>Queues</h2>" in page and "ClusterQueue team-a" in page


def test_the_peers_example_tells_the_story_docs_peers_md_reads() -> None:
    """examples/peers, as docs/peers.md reads it: kueue reclaims one borrowing sweep whole and production starts
    after the victims' grace period; volcano's task-level reclaim leaves the whole-gang sweeps alone and
    production waits for them; native gangs get production in by priority, breaking research gangs."""
    inputs = load_paths(["examples/peers"])
    reports = {p: build_report(Simulation(inputs, builtin(p), scenario=scenario_for(p)).run())
               for p in ("gang", "kueue", "volcano")}
    waits = {p: {w["name"]: w["waitSeconds"]["max"] for w in r["workloads"]} for p, r in reports.items()}
    # 30 s of grace, then the retrain group's next retry (it is tried again when its backoff ends, at 36 s)
    assert waits["kueue"]["production/retrain"] == 36.0
    assert waits["volcano"]["production/retrain"] == 5400.0
    assert waits["gang"]["production/retrain"] == 36.0
    assert reports["kueue"]["admission"]["evicted"] == 1 and reports["kueue"]["summary"]["evictions"] == 4
    assert reports["volcano"]["summary"]["evictions"] == 0
    assert reports["gang"]["summary"]["evictions"] == 6
    assert reports["gang"]["summary"]["lostResourceHours"]["nvidia.com/gpu"] > \
        reports["kueue"]["summary"]["lostResourceHours"]["nvidia.com/gpu"] > 0


def test_a_jobset_naming_a_local_queue_is_one_kueue_workload(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
              "metadata": {"name": "train", "namespace": "ml", "labels": {"kueue.x-k8s.io/queue-name": "team"}},
              "spec": {"replicatedJobs": [{"name": "workers", "replicas": 1, "template": {"spec": {
                  "parallelism": 1, "completions": 1, "template": {"spec": {"restartPolicy": "Never", "containers": [
                      {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}}}}]}}
    docs = [node("n1"), flavor("default"), cluster_queue("team", {"default": "4"}), local_queue("ml", "team", "team"),
            jobset]
    (tmp_path / "in.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    assert main(["simulate", str(tmp_path / "in.yaml"), "--profile", "kueue", "-o", "json"]) == 0
    out, err = capsys.readouterr()
    admission = json.loads(out)["admission"]
    assert admission["notModelled"] == [] and "not modelled" not in err
    [row] = admission["workloads"]
    assert row["name"] == "JobSet ml/train" and row["admittedBy"] == "team"


def test_the_volcano_conf_decides_how_nodes_are_scored(tmp_path: Path) -> None:
    """binpack packs (MostAllocated); a conf with nodeorder and no binpack spreads as kube-scheduler does."""
    conf = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
            "data": {"volcano-scheduler.conf": 'actions: "enqueue, allocate, backfill"\n'
                                               "tiers:\n- plugins:\n  - name: gang\n  - name: nodeorder\n"}}
    (tmp_path / "in.yaml").write_text(yaml.safe_dump_all([node("n1"), volcano_queue("a"), conf]))
    volcano = scenario_for("volcano")
    sim = Simulation(load_paths([str(tmp_path / "in.yaml")]), builtin("volcano"), scenario=volcano)
    assert sim.profile.plugin_args["NodeResourcesFit"]["scoringStrategy"]["type"] == "LeastAllocated"
    assert sim.profile.scores["NodeResourcesBalancedAllocation"] == 1
    packed = Simulation(load_paths(["examples/peers"]), builtin("volcano"), scenario=volcano)  # binpack in its conf
    assert packed.profile.plugin_args["NodeResourcesFit"]["scoringStrategy"]["type"] == "MostAllocated"


def volcano_conf(arguments: str, plugin: str = "binpack") -> Doc:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
            "data": {"volcano-scheduler.conf": 'actions: "enqueue, allocate, backfill"\n'
                                               f"tiers:\n- plugins:\n  - name: {plugin}\n"
                                               f"    arguments: {{{arguments}}}\n"}}


@pytest.mark.parametrize("command", ["validate", "simulate"])
@pytest.mark.parametrize(("arguments", "key"), [
    ("binpack.weight: .nan", "binpack.weight"), ("binpack.weight: .inf", "binpack.weight"),
    ("binpack.cpu: 1e30", "binpack.cpu"), ("binpack.memory: 2.5", "binpack.memory")])
def test_a_weight_volcano_cannot_read_ends_the_run_naming_the_argument(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, arguments: str, key: str) -> None:
    """Issue 28: NaN, inf or 1e30 binpack/nodeorder weights crashed the run and `validate --queues` called them
    valid. Volcano's GetInt reads a whole number only: exit 2, one line naming the file, the ConfigMap and the
    argument."""
    (tmp_path / "in.yaml").write_text(yaml.safe_dump(node("n1")))
    (tmp_path / "q.yaml").write_text(yaml.safe_dump(volcano_conf(arguments)))
    argv = [command, str(tmp_path / "in.yaml"), "--queues", str(tmp_path / "q.yaml")]
    assert main(argv + (["--profile", "volcano"] if command == "simulate" else [])) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith(f"phalanx: error: {tmp_path / 'q.yaml'}: ConfigMap volcano-system/volcano-scheduler-"
                          f"configmap: data[volcano-scheduler.conf].tiers[0].plugins[0].arguments.{key}: must be "
                          "a whole number")


def _reasons(report: dict[str, Any]) -> dict[str, Any]:
    return {w["name"]: w["reason"] for w in report["admission"]["workloads"]}


def test_every_held_kueue_workload_has_a_reason_in_kueues_words(tmp_path: Path) -> None:
    """Issue 28: a cohort cycle, a ClusterQueue naming a missing ResourceFlavor and a Job naming a missing
    LocalQueue got no reason anywhere. Each held workload's row says why, as Kueue's Workload condition
    (QuotaReserved=False, Inadmissible) and ClusterQueue Active=False condition say it."""
    cycle = [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": a},
              "spec": {"parentName": b}} for a, b in (("a", "b"), ("b", "a"))]
    docs = [node("n1", "16"), flavor("default"),
            cluster_queue("looped", {"default": "4"}, cohort="a"), local_queue("ml", "looped", "looped"),
            cluster_queue("gpus", {"gpu-flavor": "4"}), local_queue("ml", "gpus", "gpus"),
            cluster_queue("small", {"default": "1"}), local_queue("ml", "small", "small"),
            *cycle,
            job("ml", "in-cycle", cpu="1", pods=1, queue="looped"),
            job("ml", "no-flavor", cpu="1", pods=1, queue="gpus"),
            job("ml", "no-queue", cpu="1", pods=1, queue="nope"),
            job("ml", "too-big", cpu="2", pods=1, queue="small"),
            job("ml", "fine", cpu="1", pods=1, queue="small")]
    report = run(tmp_path, docs, "kueue")
    assert _reasons(report) == {
        "Job ml/in-cycle": "ClusterQueue looped is inactive: cohort has a cycle: a → b → a",
        "Job ml/no-flavor": "ClusterQueue gpus is inactive: FlavorNotFound: Can't admit new workloads: references "
                            "missing ResourceFlavor(s): gpu-flavor.",
        "Job ml/no-queue": "LocalQueue nope doesn't exist",
        "Job ml/too-big": "pod set main: no flavor of cpu fits",
        "Job ml/fine": None}


def test_every_held_volcano_workload_has_a_reason(tmp_path: Path) -> None:
    docs = [node("n1", "4"), volcano_queue("a"),
            job("ml", "lost", cpu="1", pods=1, volcano="nope"),
            job("ml", "first", cpu="4", pods=1, volcano="a"),
            job("ml", "second", cpu="8", pods=1, volcano="a")]
    reasons = _reasons(run(tmp_path, docs, "volcano"))
    assert reasons["Job ml/first"] is None
    assert reasons["Job ml/lost"].startswith("queue nope is not defined")
    assert reasons["Job ml/second"].startswith(("Pending: not enqueued", "Inqueue: "))


def test_held_reasons_are_one_line_each_for_stderr() -> None:
    rows: list[dict[str, object]] = [{"name": f"Job ml/j{i}", "reason": "LocalQueue lq doesn't exist"}
                                     for i in range(5)]
    rows += [{"name": "Job ml/k", "reason": "ClusterQueue cq is stopped (Hold)"}, {"name": "Job ml/ok", "reason": None}]
    assert held_lines(rows) == [
        "5 workload(s) held: LocalQueue lq doesn't exist (Job ml/j0, Job ml/j1, Job ml/j2 and 2 more)",
        "1 workload(s) held: ClusterQueue cq is stopped (Hold) (Job ml/k)"]


def test_validate_names_what_leaves_a_queue_admitting_nothing(tmp_path: Path) -> None:
    """Valid objects that Kueue would still mark inactive: said before any run (for stderr)."""
    cycle = [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": a},
              "spec": {"parentName": b}} for a, b in (("a", "b"), ("b", "a"))]
    docs = [flavor("default"), cluster_queue("looped", {"default": "4"}, cohort="a"),
            cluster_queue("gpus", {"gpu-flavor": "4"}), local_queue("ml", "orphan", "missing"), *cycle]
    (tmp_path / "q.yaml").write_text(yaml.safe_dump_all(docs))
    warnings = check_queue_objects(load_queue_files([str(tmp_path / "q.yaml")]))
    assert warnings == [
        "ClusterQueue looped is inactive: cohort has a cycle: a → b → a",
        "ClusterQueue gpus is inactive: FlavorNotFound: Can't admit new workloads: references missing "
        "ResourceFlavor(s): gpu-flavor.",
        "LocalQueue ml/orphan: ClusterQueue missing doesn't exist"]


def test_simulate_says_what_is_held_and_what_admits_nothing(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """The queue objects' warnings before the run, and each held reason after it, on stderr."""
    docs = [node("n1"), flavor("default"), cluster_queue("cq", {"default": "4"}), local_queue("ml", "lq", "cq"),
            local_queue("ml", "orphan", "missing"), job("ml", "a", cpu="1", pods=1, queue="nowhere")]
    (tmp_path / "in.yaml").write_text(yaml.safe_dump_all(docs))
    assert main(["simulate", str(tmp_path / "in.yaml"), "--profile", "kueue", "-o", "json"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert "phalanx: warning: LocalQueue ml/orphan: ClusterQueue missing doesn't exist" in err
    assert any(line.startswith("phalanx: kueue: 1 workload(s) held: ") and "(Job ml/a)" in line for line in err), err


def namespace(name: str, **labels: str) -> Doc:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def test_a_namespace_selector_matches_the_namespace_objects_labels(tmp_path: Path) -> None:
    """A ClusterQueue selecting `team: a` admits the Job in the Namespace labelled so, as the real Kueue does
    (it reads the Namespace's labels); the Namespace without the label is not selected, with Kueue's reason."""
    selective = cluster_queue("cq", {"default": "8"})
    selective["spec"]["namespaceSelector"] = {"matchLabels": {"team": "a"}}
    docs = [node("n1", "8"), namespace("team-a", team="a"), namespace("team-b", team="b"), flavor("default"),
            selective, local_queue("team-a", "q", "cq"), local_queue("team-b", "q", "cq"),
            job("team-a", "in", cpu="1", pods=2, queue="q"), job("team-b", "out", cpu="1", pods=2, queue="q")]
    report = run(tmp_path, docs, "kueue")
    assert bound_at(report, "team-a/in") == [0.0, 0.0]
    assert bound_at(report, "team-b/out") == []
    held = {w["name"]: w for w in report["admission"]["workloads"]}
    assert "namespace doesn't match ClusterQueue selector" in str(held["Job team-b/out"])


def test_a_namespace_with_a_bad_label_is_an_input_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "input.yaml"
    path.write_text(yaml.safe_dump_all([node("n1"), namespace("team-a", **{"team": "a b"})]), encoding="utf-8")
    assert main(["simulate", str(path), "--profile", "kueue"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert str(path) in err and "Namespace team-a" in err and "metadata.labels" in err


def one_team(*jobs: Doc) -> list[Doc]:
    """A 16-cpu node, PriorityClasses high (1000) and low (100), and ClusterQueue `team` (4 cpu, preempting lower
    priorities within it) behind LocalQueue team/q, with `jobs`."""
    classes = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n}, "value": v}
               for n, v in (("high", 1000), ("low", 100))]
    return [node("n1", "16"), *classes, flavor("default"),
            cluster_queue("team", {"default": "4"}, withinClusterQueue="LowerPriority"),
            local_queue("team", "q", "team"), *jobs]


def test_a_partially_admitted_job_admitted_again_runs_with_the_new_count(tmp_path: Path) -> None:
    """Kueue restores a Job's parallelism when it evicts it and sets the new admission's (RestorePodSetsInfo,
    RunWithPodSetsInfo): `partial` starts with 2 of its 4 pods (a filler holds the rest of the quota), is preempted
    whole by `urgent`, and once that ends is admitted with all 4, which then run at once."""
    filler = job("team", "filler", cpu="2", pods=1, duration="15m", queue="q")
    partial = job("team", "partial", cpu="1", pods=4, arrival="1s", duration="2h", queue="q")
    partial["metadata"]["annotations"]["kueue.x-k8s.io/job-min-parallelism"] = "1"
    urgent = job("team", "urgent", cpu="4", pods=1, arrival="1000s", duration="10m", queue="q")
    urgent["spec"]["template"]["spec"]["priorityClassName"] = "high"
    report = run(tmp_path, one_team(filler, partial, urgent), "kueue")
    pods = {p["name"]: p for p in report["pods"] if p["name"].startswith("team/partial")}
    assert sorted(pods) == [f"team/partial-{i}" for i in range(4)]
    # the two it ran with come back at 1600 with two more made then; all four end two hours later
    assert [pods[f"team/partial-{i}"]["preemptedCount"] for i in range(4)] == [1, 1, 0, 0]
    assert [pods[f"team/partial-{i}"]["boundAt"] for i in (2, 3)] == [1600.0, 1600.0]
    assert all(p["phase"] == "Succeeded" and p["finishedAt"] == 1600.0 + 7200 for p in pods.values())
    [row] = [w for w in report["admission"]["workloads"] if w["name"] == "Job team/partial"]
    assert row["evictions"] == 1 and len(row["admissionWaits"]) == 2


def test_a_job_admitted_again_with_fewer_pods_deletes_the_rest(tmp_path: Path) -> None:
    """The other way: admitted whole first, preempted, admitted again with 2 of 4 while a newer Job holds half the
    quota: two of its pods are deleted before they run, made again under their names once the first two end (as
    the Job controller replaces them and `verify` names them), so it runs 2 at a time to its 4 completions."""
    whole = job("team", "whole", cpu="1", pods=4, duration="1h", queue="q")
    whole["metadata"]["annotations"]["kueue.x-k8s.io/job-min-parallelism"] = "1"
    whole["spec"]["completions"] = 4
    urgent = job("team", "urgent", cpu="4", pods=1, arrival="600s", duration="10m", queue="q")
    urgent["spec"]["template"]["spec"]["priorityClassName"] = "high"
    later = job("team", "later", cpu="2", pods=1, arrival="700s", duration="3h", queue="q")
    later["spec"]["template"]["spec"]["priorityClassName"] = "high"
    report = run(tmp_path, one_team(whole, urgent, later), "kueue")
    pods = {p["name"]: p for p in report["pods"] if p["name"].startswith("team/whole")}
    assert sorted(pods) == [f"team/whole-{i}" for i in range(4)]
    assert all(p["phase"] == "Succeeded" for p in pods.values())
    # 0 and 1 run from 0 s, are preempted at 600 s and run again from 1200 s (with 2 cpu: `later` holds the rest);
    # 2 and 3, deleted at 1200 s, are made again as 0 and 1 end and run the last hour
    assert [pods[f"team/whole-{i}"]["finishedAt"] for i in range(4)] == [4800.0, 4800.0, 8400.0, 8400.0]
    assert [pods[f"team/whole-{i}"]["boundAt"] for i in (2, 3)] == [4800.0, 4800.0]


def test_an_evicted_job_is_tried_again_once_its_eviction_completes(tmp_path: Path) -> None:
    """Kueue requeues an evicted workload when its eviction completes and tries it at once: `batch` (3 of 1 cpu,
    min-parallelism 1), evicted at 100 s for `urgent`, comes back when its pods have terminated (30 s of grace)
    with the 1 cpu left, not when some later change happens to ask the queue again."""
    batch = job("team", "batch", cpu="1", pods=3, duration="2h", queue="q")
    batch["metadata"]["annotations"]["kueue.x-k8s.io/job-min-parallelism"] = "1"
    batch["spec"]["template"]["spec"]["priorityClassName"] = "low"
    filler = job("team", "filler", cpu="1", pods=1, duration="3h", queue="q")
    filler["spec"]["template"]["spec"]["priorityClassName"] = "low"
    urgent = job("team", "urgent", cpu="2", pods=1, arrival="100s", duration="1h", queue="q")
    urgent["spec"]["template"]["spec"]["priorityClassName"] = "high"
    report = run(tmp_path, one_team(batch, filler, urgent), "kueue")
    [row] = [w for w in report["admission"]["workloads"] if w["name"] == "Job team/batch"]
    assert row["evictions"] == 1 and row["admissionWaits"] == [0.0, 130.0]
    # admitted again with 1 pod (parallelism 1): its three completions one after the other from 130 s
    assert sorted(p["finishedAt"] for p in report["pods"] if p["name"].startswith("team/batch")) == \
        [130.0 + 7200, 130.0 + 2 * 7200, 130.0 + 3 * 7200]
