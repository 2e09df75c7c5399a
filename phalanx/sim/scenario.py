"""The simulator-only settings of a run: what a simulation models around the scheduler, which the live driver
never reads (the scheduler's own settings are its Profile)."""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.admission.registry import POLICIES

SCALE_UP_MODES = ("pod", "gang")


@dataclass(frozen=True)
class Scenario:
    # Queueing in front of the scheduler queue: None, or a policy of phalanx/admission/registry.py by name.
    admission: str | None = None
    # How the cluster autoscaler model adds nodes when the input has node groups: "pod" (per pod, as
    # cluster-autoscaler does) or "gang" (a whole gang's minCount at once, or nothing).
    scale_up: str = "pod"
    # How long pods without phalanx.dev/duration run, by owner kind (sim/durations.py; the CLI's defaults or
    # --default-duration); none here: such pods run for the whole horizon.
    durations: tuple[tuple[str, float], ...] = ()


def scenario_for(spec: str, *, scale_up: str = "pod", durations: tuple[tuple[str, float], ...] = ()) -> Scenario:
    """The scenario a profile spec (a built-in name or a profile file) runs in: a built-in profile named like an
    admission policy (`kueue`, `volcano`) queues its workloads in front of the scheduler, as that project does."""
    return Scenario(admission=spec if spec in POLICIES else None, scale_up=scale_up, durations=durations)
