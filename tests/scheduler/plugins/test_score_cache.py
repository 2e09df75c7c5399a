"""The per-shape score tables of NodeResourcesFit and BalancedAllocation give exactly the scores the vector
formula gives, pod by pod, as pods of many shapes are assumed and forgotten (seeded random clusters)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from phalanx.scheduler.plugins.node_resources import NodeResourcesBalancedAllocation, NodeResourcesFit
from tests.builders import MakeNode, MakePod, cycle_state, make_cluster


@pytest.mark.parametrize("seed", range(30))
def test_cached_scores_equal_the_formula(seed: int) -> None:
    rnd = random.Random(seed)
    n = rnd.choice([3, 10, 40, 200])
    extended = rnd.random() < 0.3
    nodes = []
    for i in range(n):
        alloc = {"cpu": str(rnd.choice([1, 2, 4, 8, 64])), "memory": f"{rnd.choice([1, 4, 32, 512])}Gi", "pods": "110"}
        if extended:
            alloc["example.com/foo"] = str(rnd.choice([0, 4, 8]) if rnd.random() < 0.5 else 4)
        if rnd.random() < 0.1:
            alloc["ephemeral-storage"] = str(rnd.choice([10**9, 10**12, 2**60]))
        nodes.append(MakeNode(f"n{i}").alloc(alloc))
    cluster = make_cluster(nodes)
    resources = rnd.choice([None, [{"name": "cpu", "weight": rnd.randint(1, 5)},
                                   {"name": "memory", "weight": rnd.randint(1, 5)}],
                            [{"name": "cpu"}, {"name": "memory"}, {"name": "example.com/foo", "weight": 3}],
                            [{"name": "cpu"}, {"name": "ephemeral-storage", "weight": 2}]])
    strategy: dict[str, object] = {"type": rnd.choice(["LeastAllocated", "MostAllocated"])}
    if resources:
        strategy["resources"] = resources
    balanced = {"resources": resources} if resources and len(resources) == 2 and rnd.random() < 0.5 else {}
    pairs = [(NodeResourcesFit({"scoringStrategy": strategy}), NodeResourcesFit({"scoringStrategy": strategy})),
             (NodeResourcesBalancedAllocation(balanced), NodeResourcesBalancedAllocation(balanced))]
    shapes = []
    for _ in range(rnd.choice([1, 3, 12, 40])):
        req: dict[str, str] = {}
        if rnd.random() < 0.9:
            req["cpu"] = f"{rnd.choice([0, 1, 50, 100, 250, 999, 3000])}m"
        if rnd.random() < 0.9:
            req["memory"] = f"{rnd.choice([0, 1, 100, 700, 4000])}Mi"
        if extended and rnd.random() < 0.3:
            req["example.com/foo"] = str(rnd.randint(1, 3))
        shapes.append(req)
    bound: list[str] = []
    for step in range(150):
        pod = MakePod(f"p{step}").req(rnd.choice(shapes)).obj()
        state = cycle_state(pod, cluster)
        candidates = np.array(sorted(rnd.sample(range(n), rnd.randint(1, n))), dtype=np.int64)
        for cached, reference in pairs:
            assert np.array_equal(cached.score(state, cluster, candidates),
                                  reference._score(state, cluster, candidates)), (seed, step, cached.name)
        if rnd.random() < 0.7:
            cluster.assume(pod, rnd.randrange(n))
            bound.append(pod.key)
        else:
            for _ in range(rnd.randint(1, 30)):
                if bound:
                    cluster.forget(bound.pop(rnd.randrange(len(bound))))
