"""HPAs synced as arrays (HpaBank) decide exactly as each HPA's own HpaController does, sync after sync."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.api.autoscaling import HorizontalPodAutoscaler, parse_hpa
from phalanx.autoscale.hpa import HpaController
from phalanx.autoscale.hpa_bank import HpaBank, eligible

PERIOD = 15.0


def make(metrics: list[dict[str, Any]], min_replicas: int, max_replicas: int,
         behavior: dict[str, Any] | None = None) -> HorizontalPodAutoscaler:
    spec: dict[str, Any] = {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": min_replicas,
                            "maxReplicas": max_replicas, "metrics": metrics}
    if behavior is not None:
        spec["behavior"] = behavior
    return parse_hpa({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                      "metadata": {"name": "web", "namespace": "default"}, "spec": spec})


def metric(kind: str, target: str, amount: str) -> dict[str, Any]:
    field = {"Value": "value", "AverageValue": "averageValue"}[target]
    body: dict[str, Any] = {"metric": {"name": f"m-{kind}-{target}-{amount}"},
                            "target": {"type": target, field: amount}}
    if kind == "Object":
        body["describedObject"] = {"apiVersion": "v1", "kind": "Service", "name": "queue"}
        return {"type": "Object", "object": body}
    return {"type": "External", "external": body}


metrics_st = st.lists(st.tuples(st.sampled_from(["Object", "External"]), st.sampled_from(["Value", "AverageValue"]),
                                st.sampled_from(["1", "10", "50", "500m", "2.5"])), min_size=1, max_size=3)
value_st = st.one_of(st.just(math.nan), st.just(0.0), st.floats(0.0, 200.0, allow_nan=False),
                     st.sampled_from([9.0, 10.0, 11.0, 0.0015, 49.9995, 100.0]))


@st.composite
def fleets(draw: st.DrawFn) -> tuple[list[HorizontalPodAutoscaler], list[list[list[float]]], list[int]]:
    hpas = []
    for _ in range(draw(st.integers(1, 4))):
        minimum = draw(st.integers(0, 3))
        hpas.append(make([metric(*m) for m in draw(metrics_st)], minimum, draw(st.integers(max(minimum, 1), 12))))
    ticks = draw(st.integers(1, 60))
    series = [[[draw(value_st) for _ in h.metrics] for h in hpas] for _ in range(ticks)]
    start = [draw(st.integers(0, 6)) for _ in hpas]
    return hpas, series, start


@settings(max_examples=150, deadline=None)
@given(fleets())
def test_a_bank_decides_as_each_controller_does(fleet: tuple[list[HorizontalPodAutoscaler],
                                                            list[list[list[float]]], list[int]]) -> None:
    hpas, series, start = fleet
    alone = [HpaController(h) for h in hpas]
    banked = [HpaController(h) for h in hpas]
    bank = HpaBank(banked, PERIOD)
    replicas_alone, replicas_banked = list(start), list(start)
    for tick, row in enumerate(series):
        now = tick * PERIOD
        for i, controller in enumerate(alone):
            by_metric = {id(spec): row[i][m] for m, spec in enumerate(controller.hpa.metrics)}
            decision = controller.sync(now, replicas_alone[i], lambda spec, _, v=by_metric: _value(v[id(spec)]))
            replicas_alone[i] = decision.desired
        width = bank.width
        values = np.full((len(hpas), width), np.nan)
        for i, one in enumerate(row):
            values[i, : len(one)] = one
        current = np.array(replicas_banked, dtype=np.int64)
        scalar = bank.sync(now, current, values, np.zeros(len(hpas), dtype=bool))
        for i in np.flatnonzero(scalar).tolist():
            controller = banked[i]
            by_metric = {id(spec): row[i][m] for m, spec in enumerate(controller.hpa.metrics)}
            bank.before_scalar(i)
            decision = controller.sync(now, replicas_banked[i], lambda spec, _, v=by_metric: _value(v[id(spec)]))
            bank.after_scalar(i, now)
            replicas_banked[i] = decision.desired
        assert replicas_banked == replicas_alone, f"tick {tick}"
    for i, controller in enumerate(banked):
        bank.flush(i)
        assert controller.conditions() == alone[i].conditions()
        assert controller.scaled_to_zero == alone[i].scaled_to_zero


def _value(found: float) -> float | None:
    return None if math.isnan(found) else found


def test_steady_syncs_stay_in_the_bank() -> None:
    """Within tolerance nothing changes: after the first sync the bank answers alone."""
    hpa = make([metric("External", "AverageValue", "10")], 1, 10)
    bank = HpaBank([HpaController(hpa)], PERIOD)
    current = np.array([3], dtype=np.int64)
    none = np.zeros(1, dtype=bool)
    assert bank.sync(0.0, current, np.array([[30.0]]), none).tolist() == [True]  # the first sync
    bank.after_scalar(0, 0.0)
    assert bank.sync(15.0, current, np.array([[31.0]]), none).tolist() == [False]
    assert bank.sync(30.0, current, np.array([[60.0]]), none).tolist() == [True]  # a rescale
    assert bank.sync(45.0, current, np.array([[math.nan]]), none).tolist() == [True]  # no value


@pytest.mark.parametrize(("metrics", "behavior", "ok"), [
    ([metric("External", "AverageValue", "10")], None, True),
    ([metric("Object", "Value", "10")], None, True),
    ([metric("External", "AverageValue", "10")], {"scaleDown": {"stabilizationWindowSeconds": 60}}, False),
    ([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                   "averageUtilization": 50}}}], None, False),
])
def test_eligible(metrics: list[dict[str, Any]], behavior: dict[str, Any] | None, ok: bool) -> None:
    assert eligible(HpaController(make(metrics, 1, 5, behavior))) is ok


def test_a_proposal_past_int64_stays_a_steady_sync_at_max() -> None:
    """8Ei over a target of 1m proposes 9.2e21 replicas: cast to int64 it wrapped to a negative count (TooFew
    instead of TooManyReplicas); now it is more than maxReplicas, as in the controller's own sync."""
    hpa = make([metric("External", "AverageValue", "1m")], 1, 10)
    alone, banked = HpaController(hpa), HpaController(hpa)
    bank = HpaBank([banked], PERIOD)
    none = np.zeros(1, dtype=bool)
    current = np.array([10], dtype=np.int64)
    value = float(8 * 2**60)
    for tick in range(3):
        now = tick * PERIOD
        decision = alone.sync(now, 10, lambda spec, _: value)
        if bank.sync(now, current, np.array([[value]]), none)[0]:
            bank.before_scalar(0)
            banked.sync(now, 10, lambda spec, _: value)
            bank.after_scalar(0, now)
        assert decision.desired == 10
    bank.flush(0)
    assert banked.conditions() == alone.conditions()
    assert {c["type"]: c["reason"] for c in alone.conditions()}["ScalingLimited"] == "TooManyReplicas"
