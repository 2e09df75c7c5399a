"""The wide differential suite: cases of the second generator (phalanx.verify.wide_generator) through the real
kube-scheduler v1.37.2 and through Phalanx.

The generator draws, independently of the first one, 20-60 node clusters labelled by zone, block and rack
(some nodes unlabelled), with: gangs with a required topology level (TAS); flat and nested CompositePodGroup
trees; DRA devices (ResourceSlices with tainted devices, DeviceClass, ResourceClaimTemplates) claimed per pod
and per PodGroup; preemption waves against gangs with `disruptionMode` all or single and PodGroups with
`preemptionPolicy: Never`; batch/v1 Jobs as gangs (`spec.scheduling.schedulingPolicy.gang`); `nvidia.com/gpu`
gangs of mixed-size members. Each case runs under `gang` (most) or `default`, with only the gates it uses.

Run it (the control plane's binaries built by tools/kube/build.sh):

    PHALANX_REQUIRE_KUBE=1 PHALANX_WIDE_CASES=60 PHALANX_DIFFERENTIAL_PLANES=2 \\
        python -m pytest tests/verify/test_differential_wide.py -p no:cacheprovider -W always

PHALANX_WIDE_CASES sets how many cases (seeds 0…N-1); without it the suite is skipped: CI does not run it yet,
since it measures a gap still open (docs/fidelity.md, "The second generator"). PHALANX_DIFFERENTIAL_PLANES
(default 2) sets how many control planes replay them side by side. The warning run_suite emits gives the
agreement per category and every disagreeing seed with its differences. The fast test (`-m "not kube"`)
checks that the first 300 cases load and that they draw every feature family.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import pytest
import yaml

from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.verify.compare import verify
from phalanx.verify.controlplane import ControlPlane
from phalanx.verify.oracle import Oracle
from phalanx.verify.wide_generator import FAMILIES, MAX_PODS, generate_wide_case
from tests.verify.differential import ShardResult, run_suite

CASES = int(os.environ.get("PHALANX_WIDE_CASES", "60"))
PLANES = max(1, int(os.environ.get("PHALANX_DIFFERENTIAL_PLANES", "2")))
MAX_DISAGREEING_CASES = 0.05


def run_wide_shard(seeds: Sequence[int], oracle: Oracle, directory: Path) -> ShardResult:
    # A case agrees, or ends as the real one under another interleaving of events (issue criterion: "fall inside
    # the set of outcomes Phalanx flags as timing-dependent").
    result = ShardResult(within_timing=True)
    cases = {seed: generate_wide_case(seed) for seed in seeds}
    # By profile and gates: the API server restarts when the gates it needs change.
    for seed in sorted(seeds, key=lambda s: (cases[s].profile, sorted(cases[s].gates.items()), s)):
        case = cases[seed]
        path = directory / f"wide-case-{seed}.yaml"
        path.write_text(yaml.safe_dump_all(case.manifests, sort_keys=False))
        profile = builtin(case.profile)
        profile.feature_gates.update(case.gates)
        result.replay(seed, partial(verify, [str(path)], profile, oracle, seed=seed))
    return result


def run_wide_shard_on_own_plane(seeds: Sequence[int]) -> ShardResult:
    with tempfile.TemporaryDirectory(prefix="phalanx-wide-") as directory, ControlPlane() as plane:
        return run_wide_shard(seeds, Oracle(plane), Path(directory))


@pytest.mark.kube
@pytest.mark.skipif("PHALANX_WIDE_CASES" not in os.environ,
                    reason="runs on demand (set PHALANX_WIDE_CASES): it measures a gap still open, docs/fidelity.md")
def test_wide_generated_clusters_agree(oracle: Oracle, tmp_path: Path) -> None:
    result = run_suite("wide generated clusters", CASES, PLANES,
                       lambda seeds: run_wide_shard(seeds, oracle, tmp_path), run_wide_shard_on_own_plane)
    assert result.total["outcome"] > 0
    assert len(result.disagreeing) <= MAX_DISAGREEING_CASES * CASES, \
        f"{len(result.disagreeing)} of {CASES} cases disagree: {sorted(result.disagreeing)}"


def test_wide_cases_load_and_cover_every_family(tmp_path: Path) -> None:
    families: Counter[str] = Counter()
    profiles: Counter[str] = Counter()
    gates: Counter[str] = Counter()
    for seed in range(300):
        case = generate_wide_case(seed)
        assert case == generate_wide_case(seed)  # seeded: the same case again
        path = tmp_path / f"case-{seed}.yaml"
        path.write_text(yaml.dump_all(case.manifests, Dumper=yaml.CSafeDumper, sort_keys=False))  # libyaml: 5× faster
        inputs = load_paths([str(path)])
        assert 20 <= len(inputs.nodes) <= 60
        assert case.pods() <= MAX_PODS
        families.update(case.families)
        profiles[case.profile] += 1
        gates.update(gate for gate, on in case.gates.items() if on)
    assert set(families) == set(FAMILIES), families
    assert set(profiles) == {"gang", "default"}, profiles
    assert set(gates) == {"TopologyAwareWorkloadScheduling", "CompositePodGroup", "PodGroupPreemptionPolicy",
                          "DRAWorkloadResourceClaims"}, gates
