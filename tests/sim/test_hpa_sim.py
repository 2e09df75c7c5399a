"""HorizontalPodAutoscalers in the simulator (phalanx.sim.hpa) and what scaling to zero costs (phalanx.sim.services),
on examples/autoscaling: an inference Deployment scaled by an External queue-depth metric to zero overnight."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "autoscaling"


def simulate(capsys: pytest.CaptureFixture[str], *paths: str, until: str = "24h",
             metrics: str | None = str(EXAMPLE / "metrics.csv")) -> tuple[dict[str, Any], str]:
    args = ["simulate", *paths, "--profile", "gang", "--until", until, "-o", "json"]
    if metrics is not None:
        args += ["--metrics", metrics]
    assert main(args) == 0
    out, err = capsys.readouterr()
    return json.loads(out), err


def test_the_service_scales_to_zero_overnight_and_the_first_morning_requests_wait(
        capsys: pytest.CaptureFixture[str]) -> None:
    report, _ = simulate(capsys, str(EXAMPLE))
    [service] = report["services"]
    assert service["scaledToZero"] == 1 and service["wokeFromZero"] == 1
    steps = [(s["time"], s["replicas"]) for s in service["replicas"]]
    # The queue empties at 04:00; after the 5-minute scale-down stabilization the HPA goes to zero.
    assert (14700.0, 0) in steps
    # At 12:00 requests come back: the next sync scales 0 -> 1; the pod serves 2 minutes later.
    assert (43200.0, 1) in steps
    assert service["requestsCold"] == pytest.approx(10 * 120)
    assert service["requestsDropped"] == 0
    assert 118 < service["addedLatencySeconds"]["max"] <= 120
    assert service["addedLatencySeconds"]["p99"] == 0.0  # 1,200 of 2.6 million requests
    assert service["replicaHoursSaved"] == pytest.approx((43200 - 14700) / 3600)
    assert service["gpuHoursSaved"] == service["replicaHoursSaved"]  # one GPU a replica
    # While at zero the ScaledToZero condition was True; the last sync left it False (scaled up since).
    assert {c["type"]: c["status"] for c in service["conditions"]}["ScaledToZero"] == "False"


def test_a_service_that_fails_requests_at_zero_drops_them(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "example"
    shutil.copytree(EXAMPLE, folder)
    path = folder / "02-inference.yaml"
    path.write_text(path.read_text().replace("phalanx.dev/when-at-zero: queue", "phalanx.dev/when-at-zero: fail"))
    report, _ = simulate(capsys, str(folder), metrics=str(folder / "metrics.csv"))
    [service] = report["services"]
    assert service["whenAtZero"] == "fail"
    assert service["requestsDropped"] == pytest.approx(1200)
    assert service["addedLatencySeconds"]["max"] == 0.0


def test_the_training_gang_waits_for_the_autoscaled_pool(capsys: pytest.CaptureFixture[str]) -> None:
    report, _ = simulate(capsys, str(EXAMPLE))
    assert report["autoscaler"]["nodesAdded"] == {"train-pool": 4}
    assert report["autoscaler"]["idleNodeHours"] == 0
    train = next(w for w in report["workloads"] if w["name"] == "ml/nightly-train")
    assert train["succeeded"] == 4
    # The 4-minute provisioning delay and a scan, then the group's next retry: a failed group is tried again
    # when its backoff ends (every 21 s by then: 10 s × √4 on whole-second windows), not when the nodes come.
    assert 240 <= train["waitSeconds"]["max"] <= 260 + 21


def test_without_metrics_an_hpa_leaves_its_target_alone(capsys: pytest.CaptureFixture[str]) -> None:
    report, err = simulate(capsys, str(EXAMPLE / "01-cluster.yaml"), str(EXAMPLE / "02-inference.yaml"),
                           until="1h", metrics=None)
    assert "1 HorizontalPodAutoscaler(s) but no --metrics FILE" in err
    [service] = report["services"]
    assert service["scaledToZero"] == 0 and service["requests"] is None
    assert report["summary"]["pods"]["running"] == 2


def test_a_target_a_user_set_to_zero_stays_paused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = list(yaml.safe_load_all((EXAMPLE / "02-inference.yaml").read_text()))
    docs[0]["spec"]["replicas"] = 0
    (tmp_path / "in.yaml").write_text(yaml.safe_dump_all(docs))
    report, _ = simulate(capsys, str(EXAMPLE / "01-cluster.yaml"), str(tmp_path / "in.yaml"), until="2h")
    [service] = report["services"]
    assert service["wokeFromZero"] == 0 and report["summary"]["pods"]["total"] == 0
    active = {c["type"]: c for c in service["conditions"]}["ScalingActive"]
    assert active["status"] == "False" and active["reason"] == "ScalingDisabled"


def test_min_replicas_zero_needs_an_object_or_external_metric(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": "web", "namespace": "default"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "minReplicas": 0, "maxReplicas": 4,
                    "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                        "type": "Utilization", "averageUtilization": 50}}}]}}
    (tmp_path / "hpa.yaml").write_text(yaml.safe_dump(hpa))
    assert main(["validate", str(tmp_path / "hpa.yaml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"phalanx: error: {tmp_path / 'hpa.yaml'}: HorizontalPodAutoscaler default/web: ")
    assert "must specify at least one Object or External metric to support scaling to zero replicas" in err[0]


def test_a_bad_metrics_file_fails_with_file_line_and_column(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "m.csv").write_text("time,metric,value\n0,queue_depth,ten\n")
    assert main(["simulate", str(EXAMPLE), "--metrics", str(tmp_path / "m.csv"), "--until", "1h"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"phalanx: error: {tmp_path / 'm.csv'}")
    assert "line 2" in err[-1]


def test_the_report_plots_hours_saved_against_latency(tmp_path: Path) -> None:
    out = tmp_path / "report"
    assert main(["simulate", str(EXAMPLE), "--metrics", str(EXAMPLE / "metrics.csv"), "--profile", "gang",
                 "--until", "24h", "--report", str(out)]) == 0
    assert (out / "services.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Scale to zero: hours saved" in (out / "index.html").read_text()


def _with_model(tmp_path: Path, model: str) -> Path:
    docs = list(yaml.safe_load_all((EXAMPLE / "02-inference.yaml").read_text()))
    docs[1]["metadata"]["annotations"]["phalanx.dev/request-rate-model"] = model
    docs[1]["spec"]["metrics"] = [docs[1]["spec"]["metrics"][1]]  # requests_per_second only
    (tmp_path / "inference.yaml").write_text(yaml.safe_dump_all(docs))
    return tmp_path / "inference.yaml"


def test_the_built_in_request_rate_model_drives_an_hpa_without_a_metrics_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """base 10, peak 100 requests per second, nothing from 22:00 to 06:00: a day of it (no --until), from
    midnight: to zero at once, back at 06:00, to zero again after 22:00."""
    path = _with_model(tmp_path, "base=10,peak=100,night=22h-6h")
    assert main(["simulate", str(EXAMPLE / "01-cluster.yaml"), str(path), "--profile", "gang", "-o", "json"]) == 0
    [service] = json.loads(capsys.readouterr().out)["services"]
    assert service["scaledToZero"] == 2 and service["wokeFromZero"] == 1
    assert max(s["replicas"] for s in service["replicas"]) == 5  # 100 per second / 20 a replica
    assert service["requestsCold"] > 0 and service["requests"] > 1e6


def test_a_bad_request_rate_model_names_the_annotation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _with_model(tmp_path, "base=10,peak=5")
    assert main(["simulate", str(EXAMPLE / "01-cluster.yaml"), str(path), "--profile", "gang"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"phalanx: error: {path}: HorizontalPodAutoscaler serving/llm: "
                          "metadata.annotations[phalanx.dev/request-rate-model]: ")
    assert "base <= peak" in err


def _service(tmp_path: Path, capsys: pytest.CaptureFixture[str], hpas: list[dict[str, Any]], rows: str,
             until: str = "10m") -> list[dict[str, Any]]:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"},
                  "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": {
                      "metadata": {"labels": {"app": "web"}},
                      "spec": {"containers": [{"name": "web", "image": "web", "resources": {"requests": {
                          "cpu": "100m"}}}]}}}}
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0"},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}
    (tmp_path / "in.yaml").write_text(yaml.safe_dump_all([node, deployment, *hpas]))
    (tmp_path / "m.csv").write_text("time,metric,value\n" + rows)
    report, _ = simulate(capsys, str(tmp_path / "in.yaml"), until=until, metrics=str(tmp_path / "m.csv"))
    services: list[dict[str, Any]] = report["services"]
    return services


def _hpa(name: str, target: str, max_replicas: int = 10, average: str = "10") -> dict[str, Any]:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
                     "minReplicas": 1, "maxReplicas": max_replicas,
                     "metrics": [{"type": "External", "external": {"metric": {"name": "q"}, "target": {
                         "type": "AverageValue", "averageValue": average}}}]}}


def test_an_hpa_on_a_missing_target_says_why_it_scales_nothing(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """kube-controller-manager: AbleToScale=False, FailedGetScale, with the scale subresource's error."""
    [service] = _service(tmp_path, capsys, [_hpa("web", "wbe")], "0,q,50\n")
    why = 'the HPA controller was unable to get the target\'s current scale: deployments.apps "wbe" not found'
    assert service["notes"] == [f"AbleToScale=False FailedGetScale: {why}"]
    assert main(["simulate", str(tmp_path / "in.yaml"), "--profile", "gang", "--until", "1h",
                 "--metrics", str(tmp_path / "m.csv")]) == 0
    assert (f"phalanx: gang: HorizontalPodAutoscaler {service['name']}: AbleToScale=False FailedGetScale: "
            f"{why}") in capsys.readouterr().err.splitlines()
    assert {c["type"]: (c["status"], c["reason"], c["message"]) for c in service["conditions"]}["AbleToScale"] == \
        ("False", "FailedGetScale", why)
    [event] = service["events"]
    assert event["message"] == 'FailedGetScale: deployments.apps "wbe" not found' and event["count"] == 41


def test_two_hpas_on_one_target_both_stop_and_say_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """kube-controller-manager's validateAndParseSelector: pods that more than one HPA selects make each of them
    fail with AmbiguousSelector (ScalingActive=False), so neither scales."""
    services = _service(tmp_path, capsys, [_hpa("a", "web"), _hpa("b", "web")], "0,q,50\n")
    why = "pods by selector app=web are controlled by multiple HPAs: [shop/a shop/b]"
    for service in services:
        assert service["notes"] == [f"ScalingActive=False AmbiguousSelector: {why}"]
        assert [r["replicas"] for r in service["replicas"]] == [2]
        active = {c["type"]: c for c in service["conditions"]}["ScalingActive"]
        assert (active["status"], active["reason"], active["message"]) == ("False", "AmbiguousSelector", why)
        assert {e["message"] for e in service["events"]} == {f"AmbiguousSelector: {why}",
                                                            f"FailedComputeMetricsReplicas: {why}"}


def test_a_max_replicas_beyond_the_pod_cap_is_capped_and_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """maxReplicas 2^31-1 and a metric asking for a billion replicas grew the Deployment without bound (1.3 GB in
    83 s). The HPA is held to the replicas Phalanx simulates (here lowered to 40 to keep the test small)."""
    from phalanx.sim.hpa import MAX_HPA_REPLICAS, Autoscalers

    assert MAX_HPA_REPLICAS == 100_000
    monkeypatch.setattr(Autoscalers, "replica_cap", 40)
    [service] = _service(tmp_path, capsys, [_hpa("web", "web", max_replicas=2**31 - 1, average="1n")],
                         "0,q,1000000000\n")
    assert service["maxReplicas"] == 2**31 - 1
    assert service["notes"] == ["spec.maxReplicas 2147483647 is more than 40, the most replicas Phalanx simulates: "
                                "capped at 40"]
    assert max(r["replicas"] for r in service["replicas"]) == 40


@pytest.mark.parametrize(("model", "words"), [
    ("base=10,peak=100,period=8d", "longer than a week"),
    ("base=10,peak=1e400", "want a number of requests per second"),
    ("base=10,peak=1e300", "want a number of requests per second"),
    ("base=nan,peak=10", "want a number of requests per second"),
    ("base=\uff11,peak=10", "want a number of requests per second"),
    ("base=1_0,peak=10", "want a number of requests per second"),
])
def test_a_rate_model_that_would_run_for_ever_or_overflow_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], model: str, words: str) -> None:
    """period=292y made one run of 15-s syncs for 292 years; a peak of 1e300 overflowed the milli-value."""
    path = _with_model(tmp_path, model)
    assert main(["simulate", str(EXAMPLE / "01-cluster.yaml"), str(path), "--profile", "gang"]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith(f"phalanx: error: {path}: HorizontalPodAutoscaler serving/llm: "
                           "metadata.annotations[phalanx.dev/request-rate-model]: ")
    assert words in line
