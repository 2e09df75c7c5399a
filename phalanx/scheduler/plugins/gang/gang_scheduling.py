"""GangScheduling: a gang's quorum rule (minCount pods or none) where the PodGroup cycle asks for it.

- PreEnqueue: a gang's members wait until minCount of them exist (`pre_enqueue`; group_cycle.py);
- PlacementFeasible: a cycle that leaves a gang short of minCount places none of it (gang.py; its words and
  each member's message in group_status.py), and only a gang short of minCount gets exact placement's second
  attempt (gang.py);
- Unreserve after a failed Binding: a gang left below minCount takes back its other assumed members (events.py).

A basic PodGroup always has its quorum. The rule reads only the PodGroup and a count, so the plugin holds no state.
"""

from __future__ import annotations

from phalanx.api.objects import PodGroup


class GangScheduling:
    name = "GangScheduling"

    def quorum(self, group: PodGroup, count: int) -> bool:
        """`count` pods (existing, running or placed, as the caller counts) are enough for the group to run."""
        return not group.is_gang or count >= group.min_count

    def pre_enqueue(self, group: PodGroup, members: int) -> str | None:
        """Why the group's pods stay behind PreEnqueue with `members` of them in existence, or None."""
        if self.quorum(group, members):
            return None
        return f"waiting for pod group {group.key}: {members} of the {group.min_count} pods (minCount) exist"


GANG_SCHEDULING = GangScheduling()
