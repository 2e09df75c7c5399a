"""KAI's GPU sharing under the `kai` profile: `gpu-fraction` and `gpu-memory` shares placed on devices by the
GpuShare plugin beside whole `nvidia.com/gpu` pods, the most used fitting GPU first (KAI's gpupack), shares
counted against the queue's GPU quota, and the annotations validated as KAI's binder validates them
(pkg/binder/plugins/gpusharing/gpu-request/gpu_request_validator_test.go, restated below)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.cli import main
from phalanx.cluster.gpus import gpu_memory
from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.report import build_report
from phalanx.sim.scenario import scenario_for
from phalanx.sim.simulation import Simulation

KAI_DATA = Path(__file__).parents[1] / "admission" / "data" / "kai"
Doc = dict[str, Any]


def _node(name: str, gpus: int, memory: str | None = "40960") -> Doc:
    labels = {} if memory is None else {"nvidia.com/gpu.memory": memory}
    capacity = {"cpu": "32", "memory": "128Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": capacity, "capacity": capacity}}


def _pod(name: str, annotations: dict[str, str] | None = None, whole: int = 0, queue: str = "default-queue") -> Doc:
    resources = {"limits": {"nvidia.com/gpu": str(whole)}, "requests": {"nvidia.com/gpu": str(whole)}} if whole else {}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"kai.scheduler/queue": queue},
                         "annotations": annotations or {}},
            "spec": {"schedulerName": "kai-scheduler", "containers": [
                {"name": "c", "image": "nvidia/cuda", "resources": resources}]}}


def _phases(tmp_path: Path, docs: list[Doc], *extra: Path) -> dict[str, str]:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    inputs = load_paths([str(path), *map(str, extra)])
    report = build_report(Simulation(inputs, builtin("kai"), scenario=scenario_for("kai")).run())
    return {p["name"].split("/")[1]: p["phase"] for p in report["pods"]}


def _share(name: str, fraction: str) -> Doc:
    return _pod(name, {"gpu-fraction": fraction})


def test_kais_gpu_sharing_example_unchanged_shares_one_gpu(tmp_path: Path) -> None:
    """docs/gpu-sharing/gpu-sharing.yaml (gpu-fraction 0.5) as KAI publishes it, beside a second half and a
    third: two halves share the node's one GPU, the third waits."""
    phases = _phases(tmp_path, [_node("gpu-0", 1), _share("second-half", "0.5"), _share("third", "0.5")],
                     KAI_DATA / "gpu-sharing.yaml")
    assert phases == {"gpu-sharing": "Running", "second-half": "Running", "third": "Pending"}


def test_kais_gpu_memory_example_unchanged_takes_its_share_of_the_nodes_gpu_memory(tmp_path: Path) -> None:
    """docs/gpu-sharing/gpu-memory.yaml (2000 MiB) unchanged: on 4000-MiB GPUs it takes half of one, so one more
    2000-MiB pod fits and a third does not; on 40960-MiB GPUs it takes 49 thousandths."""
    memory = [_pod(f"more-{i}", {"gpu-memory": "2000"}) for i in range(2)]
    phases = _phases(tmp_path, [_node("gpu-0", 1, "4000"), *memory], KAI_DATA / "gpu-memory.yaml")
    assert sorted(phases.values()) == ["Pending", "Running", "Running"]
    phases = _phases(tmp_path, [_node("gpu-0", 1), *memory, _share("rest", "0.85")], KAI_DATA / "gpu-memory.yaml")
    assert set(phases.values()) == {"Running"}  # 3 × 49 + 850 ≤ 1000


def test_a_node_without_the_gpu_memory_label_has_kais_default_100_mib() -> None:
    # node_info.getNodeGpuMemory: DefaultGpuMemory without a readable label; bytes past a TiB; floored to 100.
    assert gpu_memory(None) == 100 and gpu_memory("lots") == 100
    assert gpu_memory("40960") == 40900 and gpu_memory("81559") == 81500
    assert gpu_memory(str(16 * 1024**3)) == 16300  # 16 GiB written in bytes: 16384 MiB, floored


def test_a_gpu_memory_ask_waits_on_a_node_whose_gpus_have_no_memory_label(tmp_path: Path) -> None:
    phases = _phases(tmp_path, [_node("gpu-0", 1, None), _pod("mem", {"gpu-memory": "2000"})])
    assert phases == {"mem": "Pending"}


def test_whole_gpu_pods_and_shares_never_share_a_device(tmp_path: Path) -> None:
    """A whole-GPU pod holds its device in the share table: on one GPU a share then waits, and on two the share
    takes the other; a whole-GPU pod does not take a GPU that shares use."""
    assert _phases(tmp_path, [_node("gpu-0", 1), _pod("a-whole", whole=1), _share("b-half", "0.5")]) == \
        {"a-whole": "Running", "b-half": "Pending"}
    assert _phases(tmp_path, [_node("gpu-0", 2), _pod("a-whole", whole=1), _share("b-half", "0.5"),
                              _share("c-half", "0.5")]) == \
        {"a-whole": "Running", "b-half": "Running", "c-half": "Running"}
    assert _phases(tmp_path, [_node("gpu-0", 2), _share("a", "0.2"), _share("b", "0.2"), _pod("c-whole", whole=2)]) \
        == {"a": "Running", "b": "Running", "c-whole": "Pending"}


def test_shares_pack_onto_the_most_used_gpu_that_fits(tmp_path: Path) -> None:
    """KAI's gpupack (plugins/gpupack/gpupack_test.go: a GPU's score is its used portion; the fitting GPU with the
    highest is taken): 0.5 then 0.3 share GPU 0, 0.6 goes to GPU 1, 0.2 fills GPU 0; then 0.4 fits (GPU 1) and
    a 0.5 does not. Spreading instead would have left no room for the 0.6."""
    docs = [_node("gpu-0", 2), *(_share(f"s{i}", f) for i, f in enumerate(["0.5", "0.3", "0.6", "0.2", "0.4", "0.5"]))]
    assert _phases(tmp_path, docs) == {"s0": "Running", "s1": "Running", "s2": "Running", "s3": "Running",
                                       "s4": "Running", "s5": "Pending"}


def test_gpu_fractions_count_against_the_queues_gpu_limit(tmp_path: Path) -> None:
    """KAI's docs/priority/example/limited-queue.yaml unchanged (queue `test`, GPU limit 1): three half-GPU
    pods on a node with four GPUs; two fit the queue's limit, the third waits for the queue, not for a GPU."""
    docs = [_node("gpu-0", 4), *(_pod(f"half-{i}", {"gpu-fraction": "0.5"}, queue="test") for i in range(3))]
    phases = _phases(tmp_path, docs, KAI_DATA / "limited-queue.yaml")
    assert sorted(phases.values()) == ["Pending", "Running", "Running"]


# gpu_request_validator_test.go's refused cases, each with the field it is named by.
@pytest.mark.parametrize(("annotations", "whole", "field", "words"), [
    ({"gpu-fraction": "0.5"}, 2, "metadata.annotations[gpu-fraction]",
     "cannot have both GPU fraction request and whole GPU resource request/limit"),  # request mismatch
    ({"gpu-fraction": "1.5"}, 0, "metadata.annotations[gpu-fraction]", "positive number smaller than 1.0"),
    ({"gpu-fraction": "0.5", "gpu-memory": "1000"}, 0, "metadata.annotations[gpu-memory]",
     "cannot request both GPU and GPU memory"),
    ({"gpu-memory": "1000"}, 1, "metadata.annotations[gpu-memory]", "cannot request both GPU and GPU memory"),
    ({"gpu-memory": "-1"}, 0, "metadata.annotations[gpu-memory]", "positive integer greater than 0"),
    ({"gpu-fraction": "-1"}, 0, "metadata.annotations[gpu-fraction]", "positive number smaller than 1.0"),
    ({"gpu-fraction": "1.2"}, 0, "metadata.annotations[gpu-fraction]", "positive number smaller than 1.0"),
    ({"gpu-fraction-num-devices": "1"}, 0, "metadata.annotations[gpu-fraction-num-devices]",
     "without specifying fraction portion"),
    ({"gpu-fraction-num-devices": "1.2", "gpu-fraction": "0.2"}, 0,
     "metadata.annotations[gpu-fraction-num-devices]", "positive integer greater than 0"),
])
def test_kais_refused_gpu_requests_exit_2_naming_file_object_and_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], annotations: dict[str, str], whole: int, field: str,
        words: str) -> None:
    path = tmp_path / "pods.yaml"
    path.write_text(yaml.safe_dump_all([_node("gpu-0", 1), _pod("bad", annotations, whole)]))
    assert main(["simulate", str(path), "--profile", "kai"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "default/bad" in err[0] and field in err[0] \
        and words in err[0] and "Traceback" not in err[0], err


@pytest.mark.parametrize("annotations", [  # the validator's allowed cases
    {"gpu-fraction-num-devices": "2", "gpu-memory": "1000"}, {"gpu-fraction-num-devices": "2", "gpu-fraction": "0.3"}])
def test_kais_allowed_multi_device_shares_take_a_share_of_each_of_n_gpus(tmp_path: Path,
                                                                        annotations: dict[str, str]) -> None:
    assert _phases(tmp_path, [_node("gpu-0", 2, "4000"), _pod("multi", annotations)]) == {"multi": "Running"}
    assert _phases(tmp_path, [_node("gpu-0", 1, "4000"), _pod("multi", annotations)]) == {"multi": "Pending"}


@pytest.mark.parametrize("annotations", [{"gpu-memory": "9" * 30}, {"gpu-fraction-num-devices": "9" * 30,
                                                                     "gpu-fraction": "0.5"}])
def test_an_ask_larger_than_any_node_waits(tmp_path: Path, annotations: dict[str, str]) -> None:
    assert _phases(tmp_path, [_node("gpu-0", 8), _pod("huge", annotations)]) == {"huge": "Pending"}


def test_kai_packs_nodes_as_its_default_binpack_placement(tmp_path: Path) -> None:
    """KAI's default placementStrategy (gpu and cpu: binpack, docs/operator/README.md): a second 1-GPU pod goes to
    the node the first already uses; v1.37's default scoring (LeastAllocated) spreads it."""
    path = tmp_path / "cluster.yaml"
    pods = [_pod("a", whole=1), _pod("b", whole=1)]
    for pod in pods:  # and 4 cpu each, so that v1.37's default spreading sees the first on its node
        pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "4"
    path.write_text(yaml.safe_dump_all([_node("gpu-0", 8), _node("gpu-1", 8), *pods]))
    nodes = {}
    for profile in ("kai", "gang"):
        sim = Simulation(load_paths([str(path)]), builtin(profile), scenario=scenario_for(profile))
        report = build_report(sim.run())
        nodes[profile] = {p["name"]: p["node"] for p in report["pods"]}
    assert nodes["kai"]["default/a"] == nodes["kai"]["default/b"]
    assert nodes["gang"]["default/a"] != nodes["gang"]["default/b"]


def test_a_share_fills_a_gpu_other_pods_share(tmp_path: Path) -> None:
    """KAI's gpusharingorder (plugins/gpusharingorder/gpusharingorder.go nodeOrderFn): a node whose shared GPUs have
    room for the share scores above KAI's binpack, so a half-GPU pod joins the half used on node `shared` although
    cpu binpacking prefers the busier node `busy`, whose one GPU is free."""
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
         "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "1"}}}
        for name in ("busy", "shared")]
    docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "cpu-load", "namespace": "default"},
                 "spec": {"nodeName": "busy", "containers": [{"name": "c", "image": "x",
                                                              "resources": {"requests": {"cpu": "12"}}}]}})
    for name, arrival in (("first-half", 0), ("second-half", 10)):
        docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": name, "namespace": "default", "annotations": {"gpu-fraction": "0.5",
                                                                   "phalanx.dev/arrival": f"{arrival}s"}},
            "spec": {"schedulerName": "kai-scheduler", "nodeSelector": {"kubernetes.io/hostname": "shared"}
                     if name == "first-half" else {},
                     "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}})
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    report = build_report(Simulation(load_paths([str(path)]), builtin("kai"), scenario=scenario_for("kai"),
                                     until=60).run())
    where = {p["name"]: p["node"] for p in report["pods"]}
    assert where["default/first-half"] == "shared" and where["default/second-half"] == "shared"
    without = builtin("kai")
    without.scores.pop("GpuSharingOrder")
    report = build_report(Simulation(load_paths([str(path)]), without, scenario=scenario_for("kai"), until=60).run())
    assert {p["name"]: p["node"] for p in report["pods"]}["default/second-half"] == "busy"
