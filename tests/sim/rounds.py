"""An observer for simulations that should settle: it fails a run past a number of engine rounds."""

from __future__ import annotations

from phalanx.sim.simulation import Simulation


class RoundLimit:
    """Fails the run past `limit` engine rounds (a loop per tick or a sync every 15 s would go on for ever)."""

    def __init__(self, limit: int) -> None:
        self.count, self.limit = 0, limit

    def __call__(self, sim: Simulation) -> None:
        self.count += 1
        assert self.count <= self.limit, f"more than {self.limit} rounds by t={sim.now}"
