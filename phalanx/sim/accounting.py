"""Resource accounting over virtual time: allocated, useful and stranded requests and their hours."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping


class Accounting:
    """Running totals of requests held by running pods, split into useful and stranded, integrated over time.

    A running pod is *useful* while it can make progress; a gang member waiting for peers holds its
    requests for nothing, and that part is *stranded*.
    """

    def __init__(self) -> None:
        self.allocated: dict[str, float] = defaultdict(float)
        self.useful: dict[str, float] = defaultdict(float)
        self.allocated_hours: dict[str, float] = defaultdict(float)
        self.useful_hours: dict[str, float] = defaultdict(float)
        # What the nodes offer (the simulator's running total of allocatable), and its integral over time.
        self.capacity: Mapping[str, float] = {}
        self.capacity_hours: dict[str, float] = defaultdict(float)
        self.now = 0.0

    def advance(self, time: float) -> None:
        dt = time - self.now
        if dt > 0:
            hours = dt / 3600.0
            for name, value in self.allocated.items():
                self.allocated_hours[name] += value * hours
            for name, value in self.useful.items():
                self.useful_hours[name] += value * hours
            for name, value in self.capacity.items():
                self.capacity_hours[name] += value * hours
        self.now = max(self.now, time)

    def hold(self, requests: Mapping[str, int], sign: int = 1) -> None:
        for name, value in requests.items():
            self.allocated[name] += sign * value

    def work(self, requests: Mapping[str, int], sign: int = 1) -> None:
        for name, value in requests.items():
            self.useful[name] += sign * value

    def stranded_hours(self) -> dict[str, float]:
        return {name: self.allocated_hours[name] - self.useful_hours.get(name, 0.0) for name in self.allocated_hours}
