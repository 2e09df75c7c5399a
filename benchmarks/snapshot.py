"""Snapshot loading: a 5,000-node, 50,000-pod `kubectl get ... -A -o yaml` List as a simulation's start.

Run from the repository root:

    python -m benchmarks.snapshot              # 5,000 nodes, 50,000 pods (target: under 10 s)
    python -m benchmarks.snapshot --quick      # a tenth of the size (a smoke run)
    python -m benchmarks.snapshot --profile    # plus a cProfile of the YAML load

The snapshot is one `kind: List` as `kubectl get nodes,pods,podgroups,workloads,priorityclasses,resourceslices
-A -o yaml` prints it: nodes dressed as kubelets report them (labels, addresses, conditions, nodeInfo),
90% of the pods running (`spec.nodeName`, `status.phase: Running`, startTime, podIP, containerStatuses:
kubectl's default output, without managedFields), 5% pending, 5% Succeeded (CronJob pods, ignored), plus
the two system PriorityClasses. `--managed-fields` adds a kubelet and a kube-controller-manager
managedFields entry to each object, as `--show-managed-fields` prints them.

Timed, each on its own: `phalanx.inputs.load.load_paths` on the YAML file (what `phalanx simulate` does) and,
to show where its time goes, its three stages apart: reading the text into dicts (load.py's reader), the
object parsers (KINDS, from those dicts) and `resolve`; then the simulation's first instant from the
loaded Inputs (`--until 0`: node arrays, 45,000 running pods bound, 2,500 pending pods scheduled).
`--json-too` times the same List as `-o json` output through `load_paths` and through `json.loads`;
`--pyyaml` times plain `yaml.load_all` (libyaml's CSafeLoader) on the YAML file.
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import json
import os
import platform
import pstats
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import yaml

from benchmarks.synthetic import CREATED, node_manifest, pod_manifest
from phalanx.api import documents as documents_module
from phalanx.api.kinds import KINDS
from phalanx.api.objects import Source
from phalanx.api.resolve import resolve
from phalanx.inputs.load import Inputs, load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.run import simulate

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
TARGET_SECONDS = 10.0
PRIORITY_CLASSES = [
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
     "description": text, "preemptionPolicy": "PreemptLowerPriority", "value": value}
    for name, value, text in (("system-cluster-critical", 2000000000, "Used for system critical pods."),
                              ("system-node-critical", 2000001000, "Used for system critical pods."))
]


def _managed(manager: str, subresource: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"apiVersion": "v1", "fieldsType": "FieldsV1", "manager": manager,
                             "operation": "Update", "time": CREATED,
                             "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                                          "f:spec": {"f:containers": {'k:{"name":"pause"}': {
                                              ".": {}, "f:image": {}, "f:name": {}, "f:resources": {}}}}}}
    if subresource:
        entry["subresource"] = subresource
    return entry


def running_pod(i: int, node: str, managed_fields: bool) -> dict[str, Any]:
    """scheduler_perf's default pod, bound and running as kubectl prints it."""
    pod = pod_manifest(i)
    pod["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "blockOwnerDeletion": True, "controller": True,
                                           "kind": "ReplicaSet", "name": f"app-{i // 10:05d}-7c9f",
                                           "uid": f"00000000-0000-4000-8000-{i // 10:012x}"}]
    pod["spec"]["nodeName"] = node
    ip = f"10.{100 + (i >> 16)}.{(i >> 8) & 255}.{i & 255}"
    pod["status"] = {
        "conditions": [{"lastProbeTime": None, "lastTransitionTime": CREATED, "status": "True", "type": t}
                       for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                                 "PodScheduled")],
        "containerStatuses": [{"containerID": f"containerd://{i:064x}", "image": "registry.k8s.io/pause:3.10.1",
                               "imageID": "registry.k8s.io/pause@sha256:" + "ab" * 32, "lastState": {},
                               "name": "pause", "ready": True, "restartCount": 0, "started": True,
                               "state": {"running": {"startedAt": CREATED}}}],
        "hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}], "phase": "Running", "podIP": ip,
        "podIPs": [{"ip": ip}], "qosClass": "Guaranteed", "startTime": CREATED,
    }
    if managed_fields:
        pod["metadata"]["managedFields"] = [_managed("kube-controller-manager"), _managed("kubelet", "status")]
    return pod


def snapshot(nodes: int, pods: int, managed_fields: bool = False) -> Iterator[dict[str, Any]]:
    """The List's items: nodes, pods (90% running, 5% pending, 5% Succeeded), PriorityClasses."""
    for i in range(nodes):
        node = node_manifest(i)
        if managed_fields:
            node["metadata"]["managedFields"] = [_managed("kubelet"), _managed("kubelet", "status")]
        yield node
    for i in range(pods):
        kind = i % 20
        if kind == 18:  # pending: no node yet
            pod = pod_manifest(i)
        else:
            pod = running_pod(i, f"node-{i % nodes:05d}", managed_fields)
            if kind == 19:  # a finished CronJob pod
                pod["status"]["phase"] = "Succeeded"
                pod["status"]["containerStatuses"][0]["state"] = {"terminated": {
                    "exitCode": 0, "finishedAt": CREATED, "reason": "Completed", "startedAt": CREATED}}
        yield pod
    yield from copy.deepcopy(PRIORITY_CLASSES)


def write(path: str, items: list[dict[str, Any]], as_json: bool, **_: Any) -> int:
    document = {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}
    with open(path, "w", encoding="utf-8") as handle:
        if as_json:
            json.dump(document, handle, indent=4)
        else:
            yaml.dump(document, handle, Dumper=_Dumper, default_flow_style=False, sort_keys=True)
    return os.path.getsize(path)


class Timings:
    """Wall and CPU seconds per measurement (the wall time suffers when other jobs share the machine)."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    def run(self, name: str, fn: Callable[[], Any]) -> Any:
        started, cpu = time.perf_counter(), time.process_time()
        value = fn()
        self.wall[name] = time.perf_counter() - started
        self.cpu[name] = time.process_time() - cpu
        return value


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _parse(docs: list[dict[str, Any]], path: str) -> Inputs:
    inputs = Inputs()
    buckets: dict[str, list[Any]] = {"Node": inputs.nodes, "Pod": inputs.pods, "PriorityClass": inputs.priority_classes}
    for index, doc in enumerate(docs, start=1):
        obj = KINDS[doc["kind"]].parse(doc, Source(path, index))
        if obj is not None:
            buckets[doc["kind"]].append(obj)
    return inputs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.snapshot", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the size")
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--managed-fields", action="store_true", help="include managedFields on every object")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of load_paths on the YAML")
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    parser.add_argument("--json-too", action="store_true",
                        help="also time the same List as `-o json` output (load_paths and json.loads)")
    parser.add_argument("--pyyaml", action="store_true",
                        help="also time plain yaml.load_all (CSafeLoader) on the YAML file (slow)")
    args = parser.parse_args(argv)
    nodes, pods = (args.nodes // 10, args.pods // 10) if args.quick else (args.nodes, args.pods)
    items = list(snapshot(nodes, pods, args.managed_fields))
    results: dict[str, Any] = {"nodes": nodes, "pods": pods, "managedFields": args.managed_fields}
    timings = Timings()
    with tempfile.TemporaryDirectory() as tmp:
        yaml_path, json_path = os.path.join(tmp, "snapshot.yaml"), os.path.join(tmp, "snapshot.json")
        results["yamlBytes"] = write(yaml_path, items, as_json=False)
        inputs = timings.run("load_paths(yaml)", lambda: load_paths([yaml_path]))
        docs = timings.run("  read + YAML", lambda: [doc for _, doc in documents_module._documents(yaml_path)])
        items_parsed = docs[0]["items"]
        parsed = timings.run("  parsers", lambda: _parse(items_parsed, yaml_path))
        timings.run("  resolve", lambda: resolve(parsed))
        timings.run("simulation at t=0", lambda: simulate(inputs, builtin("default"), until=0.0))
        if args.pyyaml:
            timings.run("yaml.load_all", lambda: list(yaml.load_all(_read(yaml_path), Loader=_Loader)))
        if args.json_too:
            results["jsonBytes"] = write(json_path, items, as_json=True)
            timings.run("load_paths(json)", lambda: load_paths([json_path]))
            timings.run("json.loads", lambda: json.loads(_read(json_path)))
        if args.profile:
            profile = cProfile.Profile()
            profile.runcall(load_paths, [yaml_path])
            pstats.Stats(profile).sort_stats("cumulative").print_stats(15)
    loaded = (len(inputs.nodes), len(inputs.pods), inputs.terminated_pods)
    print(f"# {platform.python_implementation()} {platform.python_version()}, PyYAML {yaml.__version__} "
          f"(libyaml: {yaml.__with_libyaml__}), {platform.machine()}, {os.cpu_count()} cpu")
    sizes = ", ".join(f"{k[:-5].upper()} {v / 2**20:.1f} MiB" for k, v in results.items() if k.endswith("Bytes"))
    print(f"# {nodes} nodes, {pods} pods (loaded: {loaded[0]} nodes, {loaded[1]} pods, {loaded[2]} terminated "
          f"ignored); {sizes}")
    print(f"{'':<22} {'wall':>8} {'CPU':>8}")
    for key, wall in timings.wall.items():
        print(f"{key:<22} {wall:7.2f}s {timings.cpu[key]:7.2f}s")
    seconds = timings.wall["load_paths(yaml)"]
    print(f"load_paths(yaml) {'meets' if seconds < TARGET_SECONDS else 'misses'} the {TARGET_SECONDS:.0f} s target")
    if args.json:
        results["seconds"] = {k.strip(): {"wall": round(v, 4), "cpu": round(timings.cpu[k], 4)}
                              for k, v in timings.wall.items()}
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
