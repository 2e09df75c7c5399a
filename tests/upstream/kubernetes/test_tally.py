"""docs/fidelity.md's table of restated upstream cases says what the modules hold."""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections import Counter, defaultdict
from pathlib import Path

from tests.upstream import kubernetes
from tests.upstream.kubernetes.restated import Unexpressed
from tests.upstream.kubernetes.test_replayed import restated_cases

DOC = Path(__file__).resolve().parents[3] / "docs" / "fidelity.md"
ROW = re.compile(r"^\| `([^`]+)` \| (\d+) \| (\d+) \| (\d+) of (\d+) \| (\d+) \|$")
ALL = re.compile(r"^\| \*\*all\*\* \| \*\*(\d+)\*\* \| \*\*(\d+)\*\* \| \*\*(\d+) of (\d+)\*\* \| \*\*(\d+)\*\* \|$")


def unexpressed() -> list[Unexpressed]:
    found: list[Unexpressed] = []
    for info in sorted(pkgutil.iter_modules(kubernetes.__path__), key=lambda m: m.name):
        if info.name.startswith("test_") and info.name not in ("test_replayed", "test_tally"):
            found.extend(getattr(importlib.import_module(f"{kubernetes.__name__}.{info.name}"), "UNEXPRESSED", ()))
    return found


def test_the_fidelity_page_counts_the_restated_cases_as_they_are() -> None:
    counted: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for case in restated_cases():
        row = counted[case.file]
        row["restated"] += 1
        row["hold"] += not case.differs
        row["replayed"] += not case.replay and not case.deletions
    for left in unexpressed():
        counted[left.file]["unexpressed"] += 1
    lines = DOC.read_text(encoding="utf-8").splitlines()
    written = {m[1]: (int(m[2]), int(m[3]), int(m[5]), int(m[6])) for line in lines if (m := ROW.match(line))}
    expected = {file: (row["restated"], row["hold"], row["replayed"], row["unexpressed"])
                for file, row in counted.items()}
    assert written == expected
    total = next((int(m[1]), int(m[2]), int(m[4]), int(m[5])) for line in lines if (m := ALL.match(line)))
    assert total == tuple(sum(column) for column in zip(*expected.values(), strict=True))
