"""One scheduling attempt per pod on a cluster, with no queue: Filter → Score → select → Reserve, the pod cycle
the Scheduler runs, for a replay that places each pod once and never retries (the FGD fragmentation protocol,
phalanx/traces/fragmentation.py). Nothing is explained: a pod no node fits is only reported as not placed."""

from __future__ import annotations

from phalanx.api.objects import Pod
from phalanx.cluster.state import ClusterState
from phalanx.scheduler.cycle import PodCycle
from phalanx.scheduler.profiles import Profile


class SingleAttempts:
    def __init__(self, profile: Profile, cluster: ClusterState, seed: int = 0) -> None:
        self._cycle = PodCycle(profile, cluster, seed, explain=False)

    def place(self, pod: Pod) -> int | None:
        """Schedule `pod` once: its node (reserved for it in the cluster), or None when no node fits."""
        node = self._cycle.schedule(pod).node
        if node is not None:
            self._cycle.reserve(pod, node)
        return node
