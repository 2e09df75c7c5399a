"""The loader's fast block-YAML reader must read exactly what PyYAML's SafeLoader reads, or give up."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx import InputError, load_paths
from phalanx.api.fast_yaml import GiveUp, read_documents

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-10**12, 10**12),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12),
    st.sampled_from(["500m", "16Gi", "1e3", "true", "no", "~", "null", "0x1F", "2026-11-30", "1.5", "-",
                     "a: b", "# x", "x #y", "'q'", '"d"', "[1]", "{a: 1}", "*ref", "&a", "!tag", "key:"]),
)
keys = st.text(st.characters(codec="ascii", categories=("L", "N")), min_size=1, max_size=8)
documents = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                          st.dictionaries(keys, inner, max_size=4)), max_leaves=25)


def _same_as_pyyaml(text: str) -> None:
    try:
        expected = list(yaml.load_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError:
        with pytest.raises(GiveUp):  # what PyYAML rejects, PyYAML must report (with its line numbers)
            read_documents(text)
        return
    try:
        got = read_documents(text)
    except GiveUp:
        return  # the caller falls back to PyYAML itself
    assert got == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(documents, min_size=1, max_size=3), st.booleans())
def test_block_yaml_reads_as_pyyaml_reads_it(docs: list[Any], flow_leaves: bool) -> None:
    style = None if flow_leaves else False  # None: PyYAML writes leaf collections on one line
    text = yaml.safe_dump_all(docs, default_flow_style=style, allow_unicode=True, sort_keys=False)
    _same_as_pyyaml(text)


@pytest.mark.parametrize("text", [
    "a: &x 1\nb: *x\n",                 # anchors and aliases
    "a: |\n  line one\n  line two\n",   # block scalars
    "a:\n\t- 1\n",                      # tabs (PyYAML rejects them: its error must come through)
    "a: !!str 3\n",                     # tags
    "%YAML 1.1\n---\na: 1\n",          # directives
    "a: [1,\n  2]\n",                   # multi-line flow collections
    "a: 'x\n  y'\n",                   # multi-line quoted scalars
    "? complex\n: key\n",               # explicit keys
    "kind: Pod\nmetadata:\n  name: p\n  labels: {app: web, tier: \"1\"}\n---\n# c\nkind: Node\n",
])
def test_unusual_yaml_is_left_to_pyyaml_or_read_the_same(text: str) -> None:
    _same_as_pyyaml(text)


def test_a_flow_collection_is_a_fresh_object_each_time() -> None:
    docs = read_documents("a: {}\nb: {}\nc: [x]\nd: [x]\n")
    assert docs == [{"a": {}, "b": {}, "c": ["x"], "d": ["x"]}]
    docs[0]["a"]["k"] = 1
    docs[0]["c"].append("y")
    assert docs[0]["b"] == {} and docs[0]["d"] == ["x"]


def test_broken_yaml_still_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("apiVersion: v1\nkind: Node\nmetadata:\n  name: a\n  labels: [oops\n")
    with pytest.raises(InputError) as err:
        load_paths([str(path)])
    assert err.value.file == str(path) and "line" in (err.value.obj or "")


def test_json_files_are_read_as_json(tmp_path: Path) -> None:
    nodes = {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a"}, "status": {"allocatable": {"cpu": "4"}}}]}
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(nodes))
    assert [n.name for n in load_paths([str(path)]).nodes] == ["a"]
    path.write_text('{"kind": "List",\n "items": [}')
    with pytest.raises(InputError) as err:
        load_paths([str(path)])
    assert err.value.detail.startswith("invalid JSON") and err.value.obj == "line 2"
