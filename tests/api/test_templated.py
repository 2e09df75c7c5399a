"""Unrendered Go template actions in manifests (phalanx.api.templated): an error naming the line for a file given
by name, a skipped file inside a folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx.api.templated import unrendered_action_line
from phalanx.cli import main
from phalanx.errors import InputError
from phalanx.inputs.load import load_paths

GANG_POD = """apiVersion: v1
kind: Pod
metadata:
  name: test-gang-scheduling-{{.Index}}
spec:
  schedulingGroup:
    podGroupName: gang-{{DivideInt .Index .podsPerGroup}}
  containers: [{name: pause}]
"""

FOUND = [
    (GANG_POD, 4),
    ("apiVersion: v1\nkind: PodGroup\nspec:\n  minCount: {{.podsPerGroup}}\n", 4),  # YAML: two flow mappings
    ("{{$numDevices := or .numDevices 10}}\nkind: ResourceSlice\n", 1),  # not YAML at all
    ("kind: Pod\nmetadata: {name: a}\n---\n# {{ a comment }}\nkind: Pod\nmetadata:\n  name: b-{{ .x }}\n", 7),
    ("kind: Pod\n{{- if .Values.x }}\nmetadata: {name: a}\n{{- end }}\n", 2),  # Helm's
]
LITERAL = [
    "kind: ConfigMap\ndata:\n  alert: '{{ $labels.instance }} is down'\n",  # quoted
    'kind: Pod\nmetadata:\n  annotations: {a: "{{ .Name }}"}\n',
    "kind: ConfigMap\ndata:\n  rule: |\n    {{ $value }} above\n",  # a block scalar
    "kind: Pod # {{ a comment }}\nmetadata: {name: a}\n",
    "kind: Pod\nmetadata: {name: a}\n",
]


@pytest.mark.parametrize(("text", "line"), FOUND)
def test_actions_are_found_with_their_line(text: str, line: int) -> None:
    assert unrendered_action_line(text) == line


@pytest.mark.parametrize("text", LITERAL)
def test_braces_in_quoted_and_block_values_and_comments_are_literal(text: str) -> None:
    assert unrendered_action_line(text) is None


def test_a_template_named_on_the_command_line_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    template = tmp_path / "gang-pod.yaml"
    template.write_text(GANG_POD)
    for command in ("validate", "simulate"):
        assert main([command, str(template)]) == 2
        assert capsys.readouterr().err == (
            f"phalanx: error: {template}: line 4: an unrendered Go template action ({{{{ … }}}}): render the template "
            "first (phalanx generate renders scheduler_perf's), or quote the value if the braces are meant "
            "literally\n")
    json_file = tmp_path / "pod.json"  # JSON strings are always quoted: braces in them are literal
    json_file.write_text('{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "annotations": '
                         '{"t": "{{.Name}}"}}, "spec": {"containers": [{"name": "c"}]}}')
    assert len(load_paths([str(json_file)]).pods) == 1


def test_a_template_inside_a_folder_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "gang-pod.yaml").write_text(GANG_POD)
    (tmp_path / "pod.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: real}\n"
                                       "spec: {containers: [{name: c}]}\n")
    inputs = load_paths([str(tmp_path)])
    assert [p.name for p in inputs.pods] == ["real"]
    assert any("gang-pod.yaml" in notice for notice in inputs.notices)
    with pytest.raises(InputError, match="line 4: an unrendered Go template action"):
        load_paths([str(tmp_path / "templates" / "gang-pod.yaml")])
