"""Outcomes left to timing, against the real kube-scheduler v1.37.2: where Phalanx's run as listed differs from the
real one, `verify` replays Phalanx under the other interleavings (phalanx/sim/interleavings.py) and names the one
under which Phalanx ends each differing workload as the real scheduler did."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.scheduler.profiles import builtin
from phalanx.sim.interleavings import INTERLEAVINGS
from phalanx.verify.compare import verify
from phalanx.verify.oracle import Oracle

pytestmark = pytest.mark.kube

DATA = Path(__file__).resolve().parents[1] / "sim" / "data"


def test_a_gang_past_min_count_ends_as_one_interleaving_ends_it(oracle: Oracle) -> None:
    """The replay creates the PodGroup before its three members: the real GangScheduling may release it at two
    (minCount), and TAS then keeps the third in the first cycle's rack. Whichever way the real run went, it is one
    of the outcomes Phalanx names; where it is not Phalanx's as-listed run, the verdict says which it was."""
    profile = builtin("gang")
    profile.feature_gates["TopologyAwareWorkloadScheduling"] = True
    verdict = verify([str(DATA / "gang-past-min-count-in-one-rack.yaml")], profile, oracle)
    assert verdict.within_timing, [d.to_json() for d in verdict.differences]
    report = verdict.to_json()
    assert report["agreesWithinTiming"] is True
    if verdict.agrees:
        assert "timing" not in report
        return
    timing = report["timing"]
    assert timing["explained"] is True
    assert [row["workload"] for row in timing["workloads"]] == ["PodGroup ml/train"]
    assert timing["workloads"][0]["kubeSchedulerAs"]
    assert [i["name"] for i in timing["interleavings"]] == [i.name for i in INTERLEAVINGS]
    (row,) = timing["timingDependent"]
    assert row["workload"] == "PodGroup ml/train"
    assert row["kubeScheduler"] in {o for outcome in row["outcomes"] for o in outcome["interleavings"]}


def test_two_pods_of_one_instant_agree_outright_or_within_timing(oracle: Oracle) -> None:
    verdict = verify([str(DATA / "two-pods-one-node.yaml")], builtin("default"), oracle)
    assert verdict.within_timing, [d.to_json() for d in verdict.differences]
    real = {entry["name"]: entry["kubeScheduler"]["state"] for entry in verdict.pods}
    assert sorted(real.values()) == ["bound", "pending"]


def test_pods_that_end_together_free_their_node_one_at_a_time_on_the_real_cluster(oracle: Oracle) -> None:
    """The oracle's kubelet ends two pods one after the other: the small pod waiting behind the big one may take
    the first freed half of the node. Phalanx ends them together as listed; `ends-one-at-a-time` is the other."""
    verdict = verify([str(DATA / "pods-end-together.yaml")], builtin("default"), oracle)
    assert verdict.within_timing, [d.to_json() for d in verdict.differences]
    if not verdict.agrees:
        assert verdict.timing is not None
        rows = {row["workload"]: row["kubeSchedulerAs"] for row in verdict.timing["workloads"]}
        assert "ends-one-at-a-time" in rows["Pod default/big"]
