"""Every fuzz surface: PHALANX_FUZZ_INPUTS seeds each (200 by default, 1,000 in CI), in worker processes with
a 10 s timeout and a 1 GiB memory bound; no input may fail, crash, hang or blow up memory.
`python -m benchmarks.fuzz` runs more, with the counts."""

from __future__ import annotations

import os
import time

import pytest

from tests.fuzz import runner
from tests.fuzz.surface import surfaces

INPUTS = int(os.environ.get("PHALANX_FUZZ_INPUTS", "200"))


@pytest.mark.parametrize("name", sorted(surfaces()))
def test_no_input_fails_crashes_hangs_or_blows_up(name: str) -> None:
    results = runner.run([name], range(INPUTS), workers=2)
    counts = results.outcomes[name]
    assert sum(counts.values()) == INPUTS
    assert results.findings == [], f"{name}: {dict(counts)}; first findings: {results.findings[:5]}"


def test_the_runner_counts_hangs_memory_and_failures(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.fuzz import surface

    def generate(rng: object) -> int:
        return int(rng.randrange(4))  # type: ignore[attr-defined]

    def run(case: int, directory: str) -> str:
        if case == 0:
            return surface.OK
        if case == 1:
            raise ValueError("boom")
        if case == 2:
            # Written bytes (a zeroed bytearray may stay unmapped and never show in RSS), grown slowly enough
            # for the parent's polls, then held: past 512 MiB it must be killed as a blow-up.
            hoard = []
            for _ in range(24):
                hoard.append(b"\x01" * (64 << 20))
                time.sleep(0.02)
            time.sleep(10)
            return str(len(hoard))
        while True:
            pass

    fake = surface.Surface("fake", generate, run)
    monkeypatch.setattr(runner, "surfaces", lambda: {"fake": fake})
    results = runner.run(["fake"], range(12), workers=2, timeout=2.0, memory_mb=512)
    counts = results.outcomes["fake"]
    assert counts["failure"] > 0 and counts["hang"] > 0 and counts["memory"] > 0 and counts["ok"] > 0
