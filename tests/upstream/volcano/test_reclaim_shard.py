"""volcano-sh/volcano `pkg/scheduler/actions/reclaim/reclaim_shard_test.go` (TestReclaimWithShard),
accounted for (see restated.py).

Each case sets the scheduler's node sharding (ShardingMode hard or soft, a shard name and the nodes in the shard:
the scheduler server's options, which a NodeShard object feeds in a cluster) and checks that the action prefers, or
keeps to, the shard's nodes. Phalanx reads no NodeShard and has no sharding option: no case can be said with its
inputs, and all are in UNEXPRESSED.
"""

from __future__ import annotations

from tests.upstream.volcano.restated import Case, Unexpressed, check_names

FILE = "pkg/scheduler/actions/reclaim/reclaim_shard_test.go"
TEST = "TestReclaimWithShard"
WHY = ("it runs the action with the scheduler's {mode} sharding mode over a shard of nodes given to the session "
       "(ShardingMode, NodesInShard); Phalanx has no node sharding and reads no NodeShard")

UPSTREAM_NAMES: dict[str, tuple[str, ...]] = {
    TEST: (
        "hard sharding mode - only reclaim from nodes in shard",
        "soft sharding mode - prefer reclaiming from node in shard",
    ),
}

CASES: list[Case] = []

UNEXPRESSED: list[Unexpressed] = [(TEST, name, WHY.format(mode=name.split(" ", 1)[0])) for name in UPSTREAM_NAMES[TEST]]


def test_every_upstream_case_is_restated_or_unexpressed() -> None:
    check_names(CASES, UNEXPRESSED, UPSTREAM_NAMES)
