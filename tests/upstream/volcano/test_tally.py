"""docs/peers.md's table of Volcano's restated tests says what the modules hold."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

from tests.upstream import volcano

DOC = Path(__file__).resolve().parents[3] / "docs" / "peers.md"
ROW = re.compile(r"^\| `[a-z]+/[a-z]+/(\w+)_test\.go` \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$")


def test_the_peers_page_counts_volcanos_restated_cases_as_they_are() -> None:
    counted: dict[str, tuple[int, int, int, int, int]] = {}
    for info in pkgutil.iter_modules(volcano.__path__):
        if info.name.startswith("test_") and info.name != "test_tally":
            module = importlib.import_module(f"{volcano.__name__}.{info.name}")
            cases, left = module.CASES, module.UNEXPRESSED
            differ = sum(1 for case in cases if case.differs)
            counted[info.name.removeprefix("test_")] = (len(cases) + len(left), len(cases), len(cases) - differ,
                                                        differ, len(left))
    written = {m[1]: tuple(int(m[i]) for i in range(2, 7))
               for line in DOC.read_text(encoding="utf-8").splitlines() if (m := ROW.match(line))}
    assert written == counted
