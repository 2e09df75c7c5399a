"""Trials on ClusterState: whatever an abandoned trial does (pods assumed and forgotten, DRA claims allocated
and released, GPU shares taken and given back), the state after it is the state before it, extensions
included; a kept trial keeps its changes, unless its own outer trial is abandoned."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phalanx.cluster.gpus import device_table
from phalanx.cluster.state import ClusterState
from phalanx.scheduler.cycle import PodCycle
from phalanx.scheduler.profiles import builtin
from phalanx.scheduler.scheduler import Scheduler
from tests import dra_builders as b
from tests.traces.builders import cluster_of, gpu_node, gpu_pod, place


def fingerprint(cluster: ClusterState) -> tuple[Any, ...]:
    """Everything a trial may touch, as plain values."""
    from phalanx.cluster.devices import DeviceState
    from phalanx.cluster.gpus import GpuTable
    parts: list[Any] = [cluster.requested.tolist(), cluster.nonzero_requested.tolist(),
                        cluster.free_by_resource.tolist(), sorted((k, n) for k, (n, _) in cluster.bound.items()),
                        sorted(cluster.terminating), cluster.affinity_pods,
                        sorted((k, n) for n, keys in enumerate(_index_nodes(cluster)) for k in keys)]
    devices = cluster.extension(DeviceState)
    if devices is not None:
        parts += [devices.allocations.tolist(), devices.cap_used.tolist(),
                  sorted((k, c.allocation, sorted(c.reserved_for), c.claim.allocated)
                         for k, c in devices.claims.items())]
    table = cluster.extension(GpuTable)
    if table is not None:
        parts += [table.free.tolist(), table.tags.tolist(), sorted(table.assigned.items()), table.full.tolist(),
                  table.max_free.tolist()]
    return tuple(repr(p) for p in parts)


def _index_nodes(cluster: ClusterState) -> list[list[str]]:
    out: list[list[str]] = [[] for _ in range(len(cluster))]
    for key, (node, _) in cluster.bound.items():
        out[node].append(key)
    return [sorted(x) for x in out]


def dra_scheduler(tmp_path: Path) -> Scheduler:
    docs: list[dict[str, Any]] = [b.device_class()]
    for i in range(3):
        docs += [b.node(f"n{i}", cpu="8"), b.gpus(f"n{i}", 2)]
    docs.append(b.template("t", b.claim_spec(b.request("gpu", b.exactly(1)))))
    docs.append(b.claim("shared", b.claim_spec(b.request("gpu", b.exactly(1)))))
    for i in range(8):
        docs.append(b.pod(f"p{i}", cpu="1", **({"claim_name": "shared"} if i % 4 == 3 else {"template_name": "t"})))
    inputs = b.load(tmp_path, *docs)
    s = Scheduler(builtin("default"), inputs.nodes)
    s.add_device_objects(0.0, slices=inputs.resource_slices, classes=inputs.device_classes,
                         claims=inputs.resource_claims, templates=inputs.claim_templates)
    for pod in inputs.pods:
        s.add_pod(pod, 0.0)
    return s


Step = tuple[str, int, int]  # (assume|forget|terminate, pod, node)
steps = st.lists(st.tuples(st.sampled_from(["reserve", "unreserve", "terminate"]), st.integers(0, 7),
                           st.integers(0, 2)), max_size=25)


def apply_steps(cycle: PodCycle, pods: list[Any], todo: list[Step]) -> None:
    cluster = cycle.cluster
    for op, i, node in todo:
        pod = pods[i]
        if op == "reserve" and pod.key not in cluster.bound:
            if cluster.fits(pod, node) and bool(cycle.feasible(cycle.cycle_state(pod))[node]):
                cycle.reserve(pod, node)
        elif op == "unreserve" and pod.key in cluster.bound:
            cycle.unreserve(pod.key, pod)
        elif op == "terminate":
            cluster.mark_terminating(pod.key)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=steps, during=steps, nested=steps, keep_inner=st.booleans())
def test_an_abandoned_trial_leaves_pods_and_devices_exactly_as_they_were(
        tmp_path: Path, before: list[Step], during: list[Step], nested: list[Step], keep_inner: bool) -> None:
    s = dra_scheduler(tmp_path)
    pods = [s.pods[f"default/p{i}"] for i in range(8)]
    apply_steps(s.cycle, pods, before)
    start = fingerprint(s.cluster)
    with s.cluster.trial():
        apply_steps(s.cycle, pods, during)
        with s.cluster.trial() as inner:
            apply_steps(s.cycle, pods, nested)
            if keep_inner:
                inner.keep()
    assert fingerprint(s.cluster) == start
    assert s.devices is not None and not s.devices.overallocated()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(during=steps)
def test_a_kept_trial_keeps_exactly_what_it_did(tmp_path: Path, during: list[Step]) -> None:
    kept, plain = dra_scheduler(tmp_path), dra_scheduler(tmp_path)
    with kept.cluster.trial() as trial:
        apply_steps(kept.cycle, [kept.pods[f"default/p{i}"] for i in range(8)], during)
        trial.keep()
    apply_steps(plain.cycle, [plain.pods[f"default/p{i}"] for i in range(8)], during)
    assert fingerprint(kept.cluster) == fingerprint(plain.cluster)


def test_an_exception_inside_a_trial_still_undoes_it() -> None:
    cluster, _ = cluster_of(gpu_node("a", 2), gpu_node("b", 1))
    place(cluster, gpu_pod("x", count=1, milli=500), 0, [0])
    start = fingerprint(cluster)
    try:
        with cluster.trial():
            place(cluster, gpu_pod("y", count=1, milli=300), 0, [0])
            cluster.forget("openb/x")
            device_table(cluster).release("openb/x")
            raise RuntimeError("a plugin failed")
    except RuntimeError:
        pass
    assert fingerprint(cluster) == start
    assert device_table(cluster).free[0].tolist() == [500, 1000]


def test_gpu_shares_taken_and_given_back_in_a_trial_return_to_the_same_devices() -> None:
    cluster, table = cluster_of(gpu_node("a", 4))
    place(cluster, gpu_pod("x", count=2, milli=1000), 0, [1, 3])
    with cluster.trial():
        cluster.forget("openb/x")
        table.release("openb/x")
        place(cluster, gpu_pod("y", count=4, milli=1000), 0, [0, 1, 2, 3])
    assert table.assigned["openb/x"].gpus == (1, 3) and "openb/y" not in table.assigned
    assert np.array_equal(table.free[0], [1000, 0, 1000, 0])
