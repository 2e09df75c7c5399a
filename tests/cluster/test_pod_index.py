"""PodIndex keeps per-node counts of matching pods up to date through adds, removals and evictions: they
equal a full recount after every step (seeded random sequences)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from phalanx.api.objects import Pod
from phalanx.cluster.pods import PodIndex
from tests.builders import MakePod


@pytest.mark.parametrize("seed", range(60))
def test_counts_equal_a_recount(seed: int) -> None:
    rnd = random.Random(seed)
    index = PodIndex()
    live: dict[str, tuple[Pod, int]] = {}
    terminating: set[str] = set()
    nodes = rnd.choice([2, 5, 20])
    apps = [f"a{i}" for i in range(rnd.randint(1, 6))]
    pods = [MakePod(f"p{i}", rnd.choice(["ns1", "ns2"])).label("app", rnd.choice(apps)).req(cpu="1").obj()
            for i in range(60)]
    for _ in range(200):
        roll = rnd.random()
        if roll < 0.5:
            pod = rnd.choice(pods)
            if pod.key not in live:
                node = rnd.randrange(nodes)
                index.add(pod, node)
                live[pod.key] = (pod, node)
        elif roll < 0.75 and live:
            key = rnd.choice(list(live))
            pod, node = live.pop(key)
            index.remove(pod, node)
            terminating.discard(key)
        elif roll < 0.85 and live:
            key = rnd.choice(list(live))
            index.set_terminating(key)
            terminating.add(key)
        else:
            app, namespace, skip = rnd.choice(apps), rnd.choice(["ns1", "ns2"]), rnd.random() < 0.5

            def matches(ns: str, labels: dict[str, str], app: str = app, namespace: str = namespace) -> bool:
                return ns == namespace and labels.get("app") == app

            got = index.counts(("t", app, namespace), matches, nodes, skip_terminating=skip)
            want = np.zeros(nodes, dtype=np.int64)
            for key, (pod, node) in live.items():
                if matches(pod.namespace, pod.labels) and not (skip and key in terminating):
                    want[node] += 1
            assert np.array_equal(got, want)
