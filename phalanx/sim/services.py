"""What scaling a service to zero costs and saves, per HorizontalPodAutoscaler (the report's `services`).

A pod serves once it has started: `phalanx.dev/startup-time` after it is bound (image pull, init, warm-up),
by default 30 s, plus 60 s of accelerator warm-up when it asks for a GPU. The service is cold while none of its
target's pods serves. Requests come from the metrics file: the series of the metric the HPA's annotation
`phalanx.dev/request-metric` names (requests per second), else of its first External, else Object metric; or
from the HPA's built-in rate model (`phalanx.dev/request-rate-model`), sampled once a minute. What
a cold service does with a request is stated per HPA by `phalanx.dev/when-at-zero`: `queue` (the default: it
waits until the first pod serves; one still waiting at the end counts as dropped) or `fail` (dropped).

Reported: requests, requests that met a cold service, requests dropped, the latency cold starts added (p50,
p99, max over all served requests), replica-hours and GPU-hours used, and those saved against keeping one
replica through the hours the target spent at zero. The service is counted from the moment its first pod
serves or the HPA first scaled it to zero, whichever comes first (its first start is its deployment, not a cold
start).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from phalanx.api.autoscaling import HorizontalPodAutoscaler, MetricSpec
from phalanx.api.objects import Pod
from phalanx.autoscale.metrics import RateModels, RequestRateModel
from phalanx.sim.report_schema import AddedLatency, Requests, Service

if TYPE_CHECKING:
    from phalanx.sim.hpa import _State
    from phalanx.sim.simulation import Simulation

DEFAULT_STARTUP = 30.0
GPU_WARM_UP = 60.0
GPU = "nvidia.com/gpu"
WHEN_AT_ZERO = "phalanx.dev/when-at-zero"
REQUEST_METRIC = "phalanx.dev/request-metric"
_SLICES = 64  # latency is linear over a cold window's piece: this many slices per piece


def startup_seconds(pod: Pod) -> float:
    if pod.startup is not None:
        return pod.startup
    return DEFAULT_STARTUP + (GPU_WARM_UP if pod.requests.get(GPU, 0) > 0 else 0.0)


def _merge(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for start, stop in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], stop))
        else:
            merged.append((start, stop))
    return merged


def _complement(intervals: list[tuple[float, float]], start: float, end: float) -> list[tuple[float, float]]:
    out, at = [], start
    for a, b in intervals:
        if a > at:
            out.append((at, min(a, end)))
        at = max(at, b)
    if at < end:
        out.append((at, end))
    return [(a, b) for a, b in out if b > a]


def _request_spec(hpa: HorizontalPodAutoscaler) -> MetricSpec | None:
    named = hpa.annotations.get(REQUEST_METRIC)
    for spec in hpa.metrics:
        if named is not None and spec.name == named:
            return spec
    if named is not None:
        return None
    return next((s for s in hpa.metrics if s.type == "External"), None) or \
        next((s for s in hpa.metrics if s.type == "Object"), None)


def service_report(sim: Simulation, state: _State, end: float) -> Service:
    hpa = state.hpa
    owner = sim.workloads.scaled_owner(hpa.target.kind, f"{hpa.namespace}/{hpa.target.name}")
    pods = [r for r in sim.pods.values() if owner is not None and (r.pod.controller, r.pod.owner) == owner]
    serving, replica_seconds, gpu_seconds = [], 0.0, 0.0
    for record in pods:
        if record.bound_at is None:
            continue
        stop = record.finished_at if record.finished_at is not None else end
        replica_seconds += max(stop - record.bound_at, 0.0)
        gpu_seconds += max(stop - record.bound_at, 0.0) * record.pod.requests.get(GPU, 0)
        ready = record.bound_at + startup_seconds(record.pod)
        if ready < stop:
            serving.append((ready, stop))
    # The service counts from the moment its first pod serves, or the HPA first scaled it to zero if that came
    # first: a cold start before either is its deployment, not the price of scaling to zero.
    merged = _merge(serving)
    first = merged[0][0] if merged else end
    first = min([first, *(t for t, n in state.replicas if n == 0)])
    cold = _complement(merged, first, end)
    zero_seconds = _zero_seconds(state, end)
    gpus_per_pod = max((r.pod.requests.get(GPU, 0) for r in pods), default=0)
    mode = hpa.annotations.get(WHEN_AT_ZERO, "queue")
    spec = _request_spec(hpa)
    model = sim.hpas.models.get(hpa.key) if sim.hpas is not None else None
    traffic: Requests = {"requests": None, "requestsCold": None, "requestsDropped": None,
                         "addedLatencySeconds": None}
    if spec is not None and model is not None and spec.name == model.metric:
        traffic = _requests(_Sampled(model, first, end), spec, cold, first, end, mode)
    elif spec is not None and sim.hpas is not None and sim.hpas.metrics is not None:
        traffic = _requests(sim.hpas.metrics, spec, cold, first, end, mode)
    return {
        "name": hpa.key, "target": f"{hpa.target.kind} {hpa.namespace}/{hpa.target.name}", "whenAtZero": mode,
        "minReplicas": state.spec.min_replicas, "maxReplicas": state.spec.max_replicas,
        "scaledToZero": state.scaled_to_zero, "wokeFromZero": state.woke_from_zero,
        "replicas": [{"time": round(t, 6), "replicas": n} for t, n in state.replicas],
        "conditions": list(state.conditions), "events": state.events.report(),
        "coldSeconds": round(sum(b - a for a, b in cold), 6),
        "replicaHours": round(replica_seconds / 3600, 6), "gpuHours": round(gpu_seconds / 3600, 6),
        "replicaHoursSaved": round(zero_seconds / 3600, 6),
        "gpuHoursSaved": round(zero_seconds / 3600 * gpus_per_pod, 6),
        "requests": traffic["requests"], "requestsCold": traffic["requestsCold"],
        "requestsDropped": traffic["requestsDropped"], "addedLatencySeconds": traffic["addedLatencySeconds"],
        "notes": list(state.notes),
    }


class _Sampled:
    """A rate model read as a step series, one step a minute (enough for a diurnal curve), or MAX_STEPS steps
    over a run longer than that many minutes."""

    STEP = 60.0
    MAX_STEPS = 1 << 20

    def __init__(self, model: RequestRateModel, start: float, end: float) -> None:
        self.model, self.start, self.end = model, start, end
        self.step = max(self.STEP, (end - start) / self.MAX_STEPS)

    def times(self, metric: str, selector: object = None) -> list[float]:
        return np.arange(self.start, self.end, self.step).tolist()

    def total(self, metric: str, selector: object, time: float) -> float | None:
        return self.model.rate(time)

    def totals(self, metric: str, selector: object, times: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        return np.asarray(RateModels([self.model]).rates(times[:, None])[:, 0], dtype=np.float64)


def _zero_seconds(state: _State, end: float) -> float:
    total, since = 0.0, None
    for time, replicas in state.replicas:
        if replicas == 0 and since is None:
            since = time
        elif replicas > 0 and since is not None:
            total += time - since
            since = None
    if since is not None:
        total += max(end - since, 0.0)
    return total


def _sequential_sum(values: npt.NDArray[np.float64]) -> float:
    """The sum added up in order from 0.0, as a Python loop would (np.sum adds pairwise)."""
    return float(np.cumsum(values)[-1]) if len(values) else 0.0


def _requests(metrics: Any, spec: MetricSpec, cold: list[tuple[float, float]], start: float, end: float,
              mode: str) -> Requests:
    """Requests over [start, end] from a step series of requests per second, and what cold windows did to them."""
    edges = np.array(sorted({start, end, *(t for t in metrics.times(spec.name, spec.selector) if start < t < end),
                             *(t for window in cold for t in window)}), dtype=np.float64)
    a, b = edges[:-1], edges[1:]
    rates = np.nan_to_num(metrics.totals(spec.name, spec.selector, a), nan=0.0)
    counts = rates * (b - a)
    total = _sequential_sum(counts)
    # Each piece lies inside one cold window or outside all of them: the windows' ends are edges.
    inside = np.zeros(len(a), dtype=bool)
    window_end = np.full(len(a), np.nan)
    if cold:
        ends = np.array([y for _, y in cold], dtype=np.float64)
        which = np.searchsorted(np.array([x for x, _ in cold], dtype=np.float64), a, side="right") - 1
        window_end = ends[np.maximum(which, 0)]
        inside = (which >= 0) & (b <= window_end)
    chilled = inside & (counts > 0)
    cold_requests = _sequential_sum(counts[chilled])
    lost = chilled if mode == "fail" else chilled & (window_end >= end)
    dropped = _sequential_sum(counts[lost])
    waited = chilled & ~lost
    pieces_a, pieces_b, pieces_end = a[waited], b[waited], window_end[waited]
    mids = pieces_a[:, None] + (np.arange(_SLICES) + 0.5)[None, :] * (pieces_b - pieces_a)[:, None] / _SLICES
    latencies = (pieces_end[:, None] - mids).ravel().tolist()
    weights = np.repeat(counts[waited] / _SLICES, _SLICES)
    served = total - dropped
    stats: AddedLatency = {"p50": 0.0, "p99": 0.0, "max": 0.0}
    if served > 0 and latencies:
        order = np.argsort(latencies)
        values = np.asarray(latencies)[order]
        unaffected = served - _sequential_sum(weights)  # requests that found a serving pod: nothing added
        cumulative = unaffected + np.cumsum(weights[order])

        def quantile(q: float) -> float:
            if q * served <= unaffected:
                return 0.0
            i = min(int(np.searchsorted(cumulative, q * served)), len(values) - 1)
            return round(float(values[i]), 6)

        stats = {"p50": quantile(0.5), "p99": quantile(0.99), "max": round(float(values[-1]), 6)}
    return {"requests": round(total, 6), "requestsCold": round(cold_requests, 6), "requestsDropped": round(dropped, 6),
            "addedLatencySeconds": stats}
