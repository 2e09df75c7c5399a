"""Snapshot loading with workload controllers: 5,000 nodes and 50,000 pods that Deployments (through their
ReplicaSets), StatefulSets and DaemonSets own, as `kubectl get nodes,deployments,replicasets,statefulsets,
daemonsets,pods,priorityclasses -A -o yaml` prints them.

Run from the repository root:

    python -m benchmarks.controller_snapshot             # the controllers and their 50,000 pods (target: under 10 s)
    python -m benchmarks.controller_snapshot --no-pods   # the controllers alone: the simulator makes the pods
    python -m benchmarks.controller_snapshot --quick     # a tenth of the size (a smoke run)

The load: 3,500 Deployments of 10 replicas (35,000 pods, each with its ReplicaSet `<deployment>-<hash>`),
200 StatefulSets of 25 (5,000 pods), and two DaemonSets on every node (10,000 pods: a kube-proxy-like one
at `system-node-critical` in kube-system, a node exporter in monitoring). With pods, 95% of the Deployments'
pods and all the others are running on their nodes, with the controlling ownerReference, the
`pod-template-hash` label and kubectl's status fields; the rest are pending. Pods go round the nodes.

Timed: `phalanx.inputs.load.load_paths` on the YAML file (what `phalanx simulate` does) and the simulation's
first instant (`--until 0`: the controllers adopt their pods or make the missing ones, running pods are
bound, pending ones scheduled). Memory, measured apart with `tracemalloc` (not in the timed runs): the
bytes the loaded `Inputs` keep per object, and the peak while loading.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import platform
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from typing import Any

import yaml

from benchmarks.snapshot import PRIORITY_CLASSES, running_pod, write
from benchmarks.synthetic import CREATED, node_manifest, pod_manifest
from phalanx.api.apps import DaemonSet, Deployment, ReplicaSet, StatefulSet
from phalanx.inputs.load import Inputs, load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.run import simulate

TARGET_SECONDS = 10.0
Manifest = dict[str, Any]


def _uid(kind: str, name: str) -> str:
    h = hashlib.sha256(f"{kind}/{name}".encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"


def _template(app: str, cpu: str, memory: str, **spec: Any) -> Manifest:
    """A pod template as the API server stores it (defaults filled in)."""
    return {
        "metadata": {"creationTimestamp": None, "labels": {"app": app}},
        "spec": {
            "containers": [{"image": "registry.example.com/app:v1", "imagePullPolicy": "IfNotPresent",
                            "name": "main", "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                            "resources": {"limits": {"cpu": cpu, "memory": memory},
                                          "requests": {"cpu": cpu, "memory": memory}},
                            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
            "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
            "securityContext": {}, "terminationGracePeriodSeconds": 30, **spec,
        },
    }


def _meta(kind: str, name: str, namespace: str, **extra: Any) -> Manifest:
    return {"creationTimestamp": CREATED, "generation": 1, "name": name, "namespace": namespace,
            "resourceVersion": str(int(_uid(kind, name)[:7], 16)), "uid": _uid(kind, name), **extra}


def _owner(kind: str, name: str) -> list[Manifest]:
    return [{"apiVersion": "apps/v1", "blockOwnerDeletion": True, "controller": True, "kind": kind,
             "name": name, "uid": _uid(kind, name)}]


def _pod(serial: int, name: str, namespace: str, template: Manifest, owner: list[Manifest], node: str | None,
         labels: dict[str, str]) -> Manifest:
    """A pod stamped from `template` as kubectl prints it: running on `node`, or pending when it is None."""
    pod = running_pod(serial, node, False) if node is not None else pod_manifest(serial)
    spec = template["spec"]
    pod["metadata"].update(name=name, namespace=namespace, labels=labels, ownerReferences=owner,
                           generateName=name.rsplit("-", 1)[0] + "-")
    pod["spec"]["containers"][0].update(name="main", image=spec["containers"][0]["image"],
                                        resources=spec["containers"][0]["resources"])
    for key in ("priorityClassName", "priority", "tolerations", "hostNetwork"):
        if key in spec:
            pod["spec"][key] = spec[key]
    return pod


def workloads(nodes: int, deployments: int, statefulsets: int, with_pods: bool) -> Iterator[Manifest]:
    """Nodes, DaemonSets, StatefulSets, Deployments with their ReplicaSets and, `with_pods`, the pods."""
    node_names = [f"node-{i:05d}" for i in range(nodes)]
    for i in range(nodes):
        yield node_manifest(i)
    yield from PRIORITY_CLASSES
    serial = 0
    daemon = (("kube-proxy", "kube-system", "100m", "128Mi",
               {"priorityClassName": "system-node-critical", "priority": 2000001000, "hostNetwork": True}),
              ("node-exporter", "monitoring", "50m", "64Mi", {}))
    for name, namespace, cpu, memory, spec in daemon:
        template = _template(name, cpu, memory, **spec)
        yield {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": _meta("DaemonSet", name, namespace),
               "spec": {"selector": {"matchLabels": {"app": name}}, "template": template,
                        "updateStrategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
                                           "type": "RollingUpdate"}, "revisionHistoryLimit": 10},
               "status": {"currentNumberScheduled": nodes, "desiredNumberScheduled": nodes,
                          "numberAvailable": nodes, "numberMisscheduled": 0, "numberReady": nodes,
                          "observedGeneration": 1, "updatedNumberScheduled": nodes}}
        if with_pods:
            for n, node in enumerate(node_names):
                serial += 1
                yield _pod(serial, f"{name}-{n:05x}", namespace, template, _owner("DaemonSet", name), node,
                           {"app": name, "controller-revision-hash": "6b7c9d8f5", "pod-template-generation": "1"})
    for s in range(statefulsets):
        name, replicas = f"db-{s:04d}", 25
        template = _template(name, "200m", "1Gi")
        yield {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": _meta("StatefulSet", name, "data"),
               "spec": {"replicas": replicas, "serviceName": name, "podManagementPolicy": "OrderedReady",
                        "selector": {"matchLabels": {"app": name}}, "template": template,
                        "updateStrategy": {"rollingUpdate": {"partition": 0}, "type": "RollingUpdate"}},
               "status": {"availableReplicas": replicas, "currentReplicas": replicas, "readyReplicas": replicas,
                          "replicas": replicas, "observedGeneration": 1}}
        if with_pods:
            for r in range(replicas):
                serial += 1
                yield _pod(serial, f"{name}-{r}", "data", template, _owner("StatefulSet", name),
                           node_names[serial % nodes],
                           {"app": name, "apps.kubernetes.io/pod-index": str(r),
                            "statefulset.kubernetes.io/pod-name": f"{name}-{r}"})
    for d in range(deployments):
        name, replicas = f"web-{d:04d}", 10
        template_hash = hashlib.sha256(name.encode()).hexdigest()[:9]
        template = _template(name, "100m", "256Mi")
        labels = {"app": name, "pod-template-hash": template_hash}
        yield {"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": _meta("Deployment", name, "apps", annotations={"deployment.kubernetes.io/revision": "1"}),
               "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": template,
                        "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
                                     "type": "RollingUpdate"}, "progressDeadlineSeconds": 600},
               "status": {"availableReplicas": replicas, "readyReplicas": replicas, "replicas": replicas,
                          "updatedReplicas": replicas, "observedGeneration": 1}}
        rs_name = f"{name}-{template_hash}"
        rs_template = {**template, "metadata": {**template["metadata"], "labels": labels}}
        yield {"apiVersion": "apps/v1", "kind": "ReplicaSet",
               "metadata": _meta("ReplicaSet", rs_name, "apps", labels=labels,
                                 ownerReferences=_owner("Deployment", name)),
               "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": rs_template},
               "status": {"availableReplicas": replicas, "fullyLabeledReplicas": replicas,
                          "readyReplicas": replicas, "replicas": replicas, "observedGeneration": 1}}
        if with_pods:
            for r in range(replicas):
                serial += 1
                node = node_names[serial % nodes] if serial % 20 else None
                yield _pod(serial, f"{rs_name}-{_uid('pod', f'{rs_name}/{r}')[:5]}", "apps", rs_template,
                           _owner("ReplicaSet", rs_name), node, labels)


def _memory(path: str) -> tuple[int, int]:
    """Bytes the loaded Inputs keep, and the peak while loading (tracemalloc: slow, so never timed)."""
    gc.collect()
    tracemalloc.start()
    inputs = load_paths([path])
    gc.collect()
    kept, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del inputs
    return kept, peak


def _objects(inputs: Inputs) -> int:
    return (len(inputs.nodes) + len(inputs.pods) + len(inputs.priority_classes)
            + sum(len(inputs.of(kind)) for kind in (Deployment, ReplicaSet, StatefulSet, DaemonSet)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.controller_snapshot",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the size")
    parser.add_argument("--no-pods", action="store_true", help="the controllers alone: the simulator makes the pods")
    parser.add_argument("--no-memory", action="store_true", help="skip the tracemalloc pass")
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    args = parser.parse_args(argv)
    scale = 10 if args.quick else 1
    nodes, deployments, statefulsets = 5000 // scale, 3500 // scale, 200 // scale
    # Each object its own copy: shared dicts would be written as YAML anchors, which kubectl never prints.
    items = [json.loads(json.dumps(doc)) for doc in workloads(nodes, deployments, statefulsets, not args.no_pods)]
    results: dict[str, Any] = {"nodes": nodes, "deployments": deployments, "statefulSets": statefulsets,
                               "daemonSets": 2, "withPods": not args.no_pods}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "snapshot.yaml")
        results["yamlBytes"] = write(path, items, as_json=False)
        del items
        started, cpu = time.perf_counter(), time.process_time()
        inputs = load_paths([path])
        results["load"] = {"wall": time.perf_counter() - started, "cpu": time.process_time() - cpu}
        started, cpu = time.perf_counter(), time.process_time()
        sim = simulate(inputs, builtin("default"), until=0.0).sim
        results["simulationAt0"] = {"wall": time.perf_counter() - started, "cpu": time.process_time() - cpu}
        phases: dict[str, int] = {}
        for record in sim.pods.values():
            phases[record.phase] = phases.get(record.phase, 0) + 1
        results["objects"] = _objects(inputs)
        results["podsInInput"] = len(inputs.pods)
        results["podsAfterControllers"] = phases
        del sim, inputs
        if not args.no_memory:
            kept, peak = _memory(path)
            results["keptBytes"], results["peakBytes"] = kept, peak
    print(f"# {platform.python_implementation()} {platform.python_version()}, PyYAML {yaml.__version__} "
          f"(libyaml: {yaml.__with_libyaml__}), {platform.machine()}, {os.cpu_count()} cpu")
    print(f"# {nodes} nodes, {deployments} Deployments (+ReplicaSets), {statefulsets} StatefulSets, 2 DaemonSets; "
          f"{results['podsInInput']} pods in the input; YAML {results['yamlBytes'] / 2**20:.1f} MiB")
    print(f"{'':<24} {'wall':>8} {'CPU':>8}")
    for key in ("load", "simulationAt0"):
        print(f"{key:<24} {results[key]['wall']:7.2f}s {results[key]['cpu']:7.2f}s")
    phases = sorted(results["podsAfterControllers"].items())
    print("pods after the first instant: " + ", ".join(f"{n} {k}" for k, n in phases))
    if "keptBytes" in results:
        print(f"memory: {results['keptBytes'] / results['objects']:.0f} bytes kept per loaded object "
              f"({results['objects']} objects, {results['keptBytes'] / 2**20:.0f} MiB), "
              f"peak while loading {results['peakBytes'] / 2**20:.0f} MiB")
    seconds = results["load"]["wall"]
    print(f"load {'meets' if seconds < TARGET_SECONDS else 'misses'} the {TARGET_SECONDS:.0f} s target")
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
