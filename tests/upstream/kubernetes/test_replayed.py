"""Every restated upstream case that `phalanx verify` can replay, through the real v1.37.2 kube-scheduler.

The restated tests check Phalanx against what upstream's cases assert; this one replays the same objects on
the real control plane and compares pod by pod (`phalanx.verify`), so a restatement that reads upstream wrong
shows up as the real scheduler disagreeing with it. Cases marked `replay` (steps verify cannot replay: pods
deleted mid-run, internal call orders) are left out. The cases run side by side on
PHALANX_DIFFERENTIAL_PLANES control planes, as the differential suites do.
"""

from __future__ import annotations

import copy
import importlib
import os
import pkgutil
import tempfile
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.scheduler.profiles import builtin
from phalanx.verify.compare import verify
from phalanx.verify.controlplane import ControlPlane
from phalanx.verify.oracle import Oracle
from tests.builders import _doc
from tests.kube import control_plane_session
from tests.upstream import kubernetes
from tests.upstream.kubernetes.restated import Case
from tests.verify.differential import ShardResult, run_suite

pytestmark = pytest.mark.kube

PRIORITISED = ("Pod", "PodGroup", "CompositePodGroup")
PLANES = max(1, int(os.environ.get("PHALANX_DIFFERENTIAL_PLANES", "2")))
# Cases whose real outcome differs from Phalanx's, each with why (docs/fidelity.md); none may be added silently.
KNOWN: dict[str, str] = {}


def restated_cases() -> list[Case]:
    """The cases of every restated module, in module then case order."""
    found: list[Case] = []
    for info in sorted(pkgutil.iter_modules(kubernetes.__path__), key=lambda m: m.name):
        if info.name.startswith("test_") and info.name not in ("test_replayed", "test_tally"):
            module = importlib.import_module(f"{kubernetes.__name__}.{info.name}")
            found.extend(getattr(module, "CASES", ()))
    return found


def replayable() -> list[Case]:
    return [case for case in restated_cases()
            if not (case.replay or case.deletions or case.updates or case.group_deletions)]


def with_priority_classes(docs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Upstream's integration API server runs without the Priority admission plugin, so its cases write
    `spec.priority` (and a PodGroup's) bare; a real API server refuses that. The same priorities through
    PriorityClasses, one per (value, preemptionPolicy), created first: the scheduler sees the same numbers."""
    classes: dict[str, dict[str, Any]] = {}
    out: list[dict[str, Any]] = []
    for doc in docs:
        spec = doc.get("spec") or {}
        if doc.get("kind") in PRIORITISED and "priority" in spec and not spec.get("priorityClassName"):
            doc = copy.deepcopy(doc)
            spec = doc["spec"]
            value = int(spec.pop("priority"))
            policy = spec.get("preemptionPolicy")  # kept: admission compares it with the class's
            name = f"priority-{value}".replace("--", "-m") + ("-never" if policy == "Never" else "")
            spec["priorityClassName"] = name
            classes[name] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                             "value": value, **({"preemptionPolicy": "Never"} if policy == "Never" else {})}
        out.append(doc)
    return [*classes.values(), *out]


def run_cases(indices: Sequence[int], oracle: Oracle, directory: Path) -> ShardResult:
    cases = replayable()
    result = ShardResult()
    # By profile and gates: the API server restarts when the gates it needs change.
    for index in sorted(indices, key=lambda i: (cases[i].profile, sorted(cases[i].gates.items()))):
        case = cases[index]
        path = directory / f"case-{index}.yaml"
        docs = with_priority_classes([_doc(item) for item in case.objects])
        path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
        profile = builtin(case.profile)
        profile.feature_gates.update(case.gates)
        result.replay(index, partial(verify, [str(path)], profile, oracle))
    return result


def run_cases_on_own_plane(indices: Sequence[int]) -> ShardResult:
    with tempfile.TemporaryDirectory(prefix="phalanx-restated-") as directory, ControlPlane() as plane:
        return run_cases(indices, Oracle(plane), Path(directory))


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    yield from control_plane_session()


def test_restated_cases_agree_with_the_real_kube_scheduler(plane: ControlPlane, tmp_path: Path) -> None:
    cases = replayable()
    assert len(cases) >= 100
    result = run_suite("restated upstream cases", len(cases), PLANES,
                       lambda indices: run_cases(indices, Oracle(plane), tmp_path), run_cases_on_own_plane)
    disagreeing = {cases[i].id: wrong for i, wrong in result.disagreeing.items()}
    unexplained = {name: wrong for name, wrong in disagreeing.items() if name not in KNOWN}
    assert not unexplained, unexplained
