"""The Kueue differential suite's generator (phalanx.verify.kueue_generator), in the fast tier: its cases load and
run under the kueue profile, and the 24 that CI replays draw what the suite claims; with PHALANX_KUEUE_PODS=1,
Kueue's pod integration (plain pods and pod groups) among it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.run import simulate
from phalanx.sim.scenario import scenario_for
from phalanx.verify import kueue_generator
from phalanx.verify.kueue_generator import generate_kueue_case

CI_CASES = 24


@pytest.fixture
def with_pods(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kueue_generator, "PODS", 0.35)


def test_ci_draws_jobs_only() -> None:
    assert not any(d["kind"] == "Pod" for seed in range(CI_CASES) for d in generate_kueue_case(seed))


@pytest.mark.usefixtures("with_pods")
def test_the_cases_draw_jobs_plain_pods_and_pod_groups() -> None:
    kinds = {"plain": 0, "group": 0, "partial": 0, "fair": 0}
    for seed in range(CI_CASES):
        docs = generate_kueue_case(seed)
        pods = [d for d in docs if d["kind"] == "Pod"]
        kinds["plain"] += any("kueue.x-k8s.io/pod-group-name" not in d["metadata"]["labels"] for d in pods)
        kinds["group"] += any("kueue.x-k8s.io/pod-group-name" in d["metadata"]["labels"] for d in pods)
        kinds["partial"] += any("kueue.x-k8s.io/job-min-parallelism" in d["metadata"].get("annotations", {})
                                for d in docs if d["kind"] == "Job")
        kinds["fair"] += any(d["kind"] in ("Configuration", "ConfigMap") for d in docs)
        assert all(d["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] for d in pods)
    assert all(count >= 2 for count in kinds.values()), kinds


@pytest.mark.usefixtures("with_pods")
def test_a_case_with_pods_runs_under_kueue_with_every_workload_queued(tmp_path: Path) -> None:
    seed = next(s for s in range(CI_CASES) if any(d["kind"] == "Pod" for d in generate_kueue_case(s)))
    path = tmp_path / "case.yaml"
    path.write_text(yaml.safe_dump_all(generate_kueue_case(seed), sort_keys=False), encoding="utf-8")
    report = simulate(load_paths([str(path)]), builtin("kueue"), scenario=scenario_for("kueue"), seed=seed).report()
    names = {row["name"].split(" ", 1)[0] for row in report["admission"]["workloads"]}
    assert names >= {"Job"} and names & {"Pod", "PodGroup"}
