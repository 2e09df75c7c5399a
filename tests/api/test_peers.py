"""The later peers' table (phalanx.api.peers): what KAI and YuniKorn are to the readers that are not their own.

The contract of issue "KAI Scheduler and Apache YuniKorn as profiles": each new profile plugs in through the
admission protocol touching at most three existing files. Read from the source, as tests/test_architecture.py
reads imports: outside a peer's own modules, only the files listed in SHARED may name it (its modules, its
names, its API group, its label and annotation keys) in code; docstrings and comments may cite it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from phalanx.api import peers
from phalanx.api.fields import Meta
from phalanx.scheduler.profiles import BUILTIN, builtin
from phalanx.snapshot.kinds import CAPTURED

ROOT = Path(__file__).resolve().parents[2] / "phalanx"

MARKS = {
    "kai": re.compile(r"(?i)\bkai\b|kai_|kai[A-Z]|Kai[A-Z]|scheduling\.run\.ai|kai\.scheduler|kai-scheduler|runai"
                      r"|gpu-fraction|gpu-memory|GpuSharingOrder|sharing_order"),
    "yunikorn": re.compile(r"(?i)yunikorn|task.?groups?\b|task_group"),
}
# A peer's own modules: its name in the file's, or one of these.
OWN = {
    "kai": {"scheduler/plugins/gpu_share/sharing_order.py"},
    "yunikorn": {"migrate/task_groups.py"},
}
# The existing files each peer touches: the table, the admission registry and, for KAI, the scheduler plugin
# registry (its GpuSharingOrder score plugin).
SHARED = {
    "kai": {"api/peers.py", "admission/registry.py", "scheduler/plugins/registry.py"},
    "yunikorn": {"api/peers.py", "admission/registry.py"},
}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def code_words(source: str) -> list[str]:
    """The names, imported modules and string constants of `source`, docstrings left out."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    words: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            words.append(node.id)
        elif isinstance(node, ast.Attribute):
            words.append(node.attr)
        elif isinstance(node, ast.alias):
            words += [node.name, node.asname or ""]
        elif isinstance(node, ast.ImportFrom):
            words.append(node.module or "")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            words.append(node.value)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            words.append(node.name)
        elif isinstance(node, ast.arg):
            words.append(node.arg)
        elif isinstance(node, ast.keyword):
            words.append(node.arg or "")
    return words


def naming(peer: str) -> set[str]:
    """The files outside the peer's own modules whose code names it."""
    mark = MARKS[peer]
    found = set()
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        if peer in path.name or rel in OWN[peer]:
            continue
        if any(mark.search(word) for word in code_words(path.read_text(encoding="utf-8"))):
            found.add(rel)
    return found


@pytest.mark.parametrize("peer", sorted(SHARED))
def test_a_peer_touches_at_most_three_existing_files(peer: str) -> None:
    assert naming(peer) == SHARED[peer] and len(SHARED[peer]) <= 3


def test_the_scan_sees_code_and_not_docstrings() -> None:
    assert any(MARKS["kai"].search(w) for w in code_words('x = {"kai.scheduler/queue": 1}\n'))
    assert any(MARKS["yunikorn"].search(w) for w in code_words("from phalanx.admission.yunikorn import f\n"))
    assert not any(MARKS["kai"].search(w) for w in code_words('"""As KAI does."""\n# kai\nx = 1\n'))


def test_every_peer_in_the_table_is_a_builtin_profile_with_its_captured_kinds() -> None:
    for peer in peers.PEERS:
        assert peer.name in BUILTIN and builtin(peer.name).name == peer.name
        assert {(c.kind, c.group) for c in peer.captured} <= {(c.kind, c.group) for c in CAPTURED}
    assert builtin("kai").consolidation and "GpuShare" in builtin("kai").filters
    assert builtin("kai").filters.index("GpuShare") == builtin("kai").filters.index("NodeResourcesFit") + 1


def test_the_table_reads_each_peers_marks() -> None:
    meta = Meta({"metadata": {"name": "p", "labels": {"kai.scheduler/queue": "team-a", "queue": "root.b"},
                              "annotations": {"yunikorn.apache.org/app-id": "app-1"}}}, namespaced=True)
    q = peers.queueing(meta)
    assert q is not None and q.kueue is None and q.volcano is None
    assert (q.value("kai.queue"), q.value("yunikorn.queue"), q.value("yunikorn.app")) == ("team-a", "root.b", "app-1")
    assert q.value("yunikorn.taskGroups") is None
    assert peers.queueing(Meta({"metadata": {"name": "p"}}, namespaced=True)) is None
