"""Phalanx's Go template renderer (phalanx.sim.go_template) with scheduler_perf's functions
(phalanx.sim.perf_funcs). Every expected output below is what Go 1.26's text/template writes for the same
template and data (the data as scheduler_perf's JSON decoding gives it: params are float64)."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.errors import InputError
from phalanx.sim.go_template import parse_template
from phalanx.sim.perf_funcs import FUNCS

DATA: dict[str, Any] = {"x": 3.0, "big": 1e6, "s": "3970m", "bool": True, "list": [1.0, "a", None],
                        "map": {"b": 1.0, "a": "<&>"}, "nul": None, "Index": 7, "Count": 10}


def render(text: str, data: dict[str, Any] | None = None) -> str:
    return parse_template(text, "t.yaml", FUNCS).render(DATA if data is None else data)


RENDERS = [
    # fields, constants, printing
    ("{{.Index}}/{{.Count}} {{.x}} {{.big}} {{.s}} {{.bool}}", "7/10 3 1e+06 3970m true"),
    ("{{ 3 }} {{ 1.5 }} {{ 1e6 }} {{ -3 }} {{ 0x10 }} {{ 017 }} {{ 1_000 }} {{ .5 }} {{ 'a' }}",
     "3 1.5 1e+06 -3 16 15 1000 0.5 97"),
    ('{{ "x\\ty" }} {{ `raw\\n` }}', "x\ty raw\\n"),
    ("{{.map.b}} {{$.x}} {{.missing.b | not}}", "1 3 true"),
    # trim markers and comments
    ("a {{- 3 -}} b|a {{-3}} b|{{/* c */}}x|a {{- /* c */ -}} b", "a3b|a -3 b|x|ab"),
    ("line\n  {{- .s }}\n", "line3970m\n"),
    # variables and scope
    ("{{$x := 1}}{{if true}}{{$x = 2}}{{$y := 3}}{{end}}{{$x}}", "2"),
    ("{{ $a := 2 }}{{ range 2 }}{{ $a = 5 }}{{ end }}{{ $a }}", "5"),
    # if / else if / else
    ("{{if .missing}}a{{else if .x}}b{{else}}c{{end}}", "b"),
    ("{{if .priority}}{{AddInt 0 .priority}}{{else}}8888888{{end}}", "8888888"),
    # range over int, list, map; else
    ("{{range 3}}[{{.}}]{{end}} {{range 0}}x{{else}}none{{end}} {{range .missing}}x{{else}}none{{end}}",
     "[0][1][2] none none"),
    ("{{range $i, $e := .list}}{{$i}}{{end}} {{range $k, $v := .map}}{{$k}}={{$v}};{{end}}", "012 a=<&>;b=1;"),
    ("{{ range 3 }}{{ if eq . 1 }}one{{ else }}{{ . }}{{ end }}{{ end }}", "0one2"),
    # builtins
    ('{{eq .missing "x"}} {{eq .s "x" "3970m"}} {{eq .Index 7 8}} {{lt .s "a"}} {{not .missing}}',
     "false true true true true"),
    ('{{and 1 0 2}} {{or 0 "" .s}} {{and 1 2}} {{eq 1.0 .x}} {{ne 1 2}} {{le "a" "a"}} {{gt 2.5 1.0}}',
     "0 3970m 2 false true true true"),
    ('{{ eq 1 1 "a" }} {{ "a" | eq "a" }} {{ eq .s "a" | not }}', "true true true"),
    # scheduler_perf's functions
    ("{{DivideInt .Index .x}} {{DivideInt -7 2}} {{Mod -7 3}} {{Mod 7.9 -3}} {{Int 2.9}} {{Int -2.9}}",
     "2 -3 -1 1 2 -2"),
    ('{{AddInt 0 .big}} {{MultiplyInt 3 .x "2"}} {{1 | AddInt 2 3}} {{AddInt}} {{AddInt 0.5 0.6}}',
     "1000000 18 6 0 1"),
    ('{{SubtractFloat 1 0.9}} {{DivideFloat 10 4}} {{AddFloat "1e3" 1}} {{SubtractInt 5 7.5}}',
     "0.09999999999999998 2.5 1001 -2"),
    ('{{JSON .list}} {{JSON .map}} {{ .x | JSON }} {{ (or .missing nil) | JSON }} {{ or .missing nil | JSON }}',
     '[1,"a",null] {"a":"<&>","b":1} 3 null null'),
    ("{{ AddInt 7000 (Mod .Index (DivideInt 10 2)) }}", "7002"),
]


@pytest.mark.parametrize(("text", "expected"), RENDERS, ids=[r[1][:30] for r in RENDERS])
def test_renders_as_go_does(text: str, expected: str) -> None:
    assert render(text) == expected


def test_an_upstream_resource_slice_template() -> None:
    """The shape of scheduler_perf's dra/templates/resourceslice-basic-devices.yaml."""
    text = ("{{$numDevices := or .numDevices 10}}\n{{$numPCIRoots := or .numPCIRoots 2}}\n\n"
            "name: resourceslice-{{.Index}}\ndevices:{{range ($numDevices | Int)}}\n- name: basic-device-{{.}}\n"
            "  pciRoot: \"0{{Mod . $numPCIRoots}}\"{{end}}\n")
    out = render(text, {"Index": 4, "numDevices": 3.0})
    assert out == ("\n\n\nname: resourceslice-4\ndevices:\n- name: basic-device-0\n  pciRoot: \"00\"\n"
                   "- name: basic-device-1\n  pciRoot: \"01\"\n- name: basic-device-2\n  pciRoot: \"00\"\n")


def test_static_templates_are_marked() -> None:
    assert parse_template("a: 1\n{{/* only a comment */}}", "t", FUNCS).static
    assert not parse_template("a: {{.x}}", "t", FUNCS).static


ERRORS = [
    # Go's own errors, each naming the line
    ("a\n{{range .x}}{{.}}{{end}}", 2, "range can't iterate over 3"),
    ("{{range $i, $v := 3}}{{end}}", 1, "can't use 3 to iterate over more than one variable"),
    ("\n\n{{DivideInt .Index .missing}}", 3, "error calling DivideInt: cannot cast <nil> to float64 (.missing "
                                             "has no value)"),
    ("{{DivideInt 1 0}}", 1, "error calling DivideInt: division by zero"),
    ("{{Mod 1 0}}", 1, "error calling Mod: integer divide by zero"),
    ('{{Int "x"}}', 1, "error calling Int: cannot cast x to int"),
    ("{{ Int true }}", 1, "error calling Int: cannot cast true to int"),
    ("{{.x.y}}", 1, "can't evaluate field y in type float64"),
    ("{{ eq 1 \"a\" }}", 1, "incompatible types for comparison: int and string"),
    ("{{ eq .x 3 }}", 1, "incompatible types for comparison: float64 and int"),
    ("{{ ge true false }}", 1, "invalid type for comparison"),
    ("{{ eq .list .list }}", 1, "non-comparable types"),
    ("{{ 1e400 }}", 1, "bad number syntax"),
    ("{{ 9223372036854775808 }}", 1, "overflows int"),
    ("{{ Foo 1 }}", 1, "function 'Foo' not defined"),
    ("{{ $u }}", 1, "undefined variable '$u'"),
    ("{{ if 1 }}x\n", 1, "{{if}} has no {{end}}"),
    ("x\n{{ end }}", 2, "unexpected {{end}}"),
    ("{{ else }}", 1, "unexpected {{else}}"),
    ("{{ .x 1 }}", 1, "can't give argument to non-function .x"),
    ("{{ nil }}", 1, "nil is not a command"),
    ("{{ DivideInt 1 }}", 1, "wrong number of args for DivideInt: want 2 got 1"),
    ('x {{ "unterminated }}', 1, "unterminated quoted string"),
    ("{{ .x }", 1, "unclosed action"),
    ("{{/* open", 1, "unclosed comment"),
    # outside the subset
    ("{{ printf \"%d\" 1 }}", 1, "function 'printf' is a Go template builtin outside the subset"),
    ("a\nb\n{{ with .x }}{{ . }}{{ end }}", 3, "{{with}} is outside the Go template subset"),
    ("{{ define \"x\" }}{{ end }}", 1, "{{define}} is outside the Go template subset"),
    # Phalanx's one deliberate difference: Go writes <no value>, no manifest takes it
    ("minCount: {{ .podsPerGroup }}", 1, ".podsPerGroup has no value (Go would write <no value>)"),
    ("{{ .nul }}", 1, ".nul is nil"),
]


@pytest.mark.parametrize(("text", "line", "message"), ERRORS, ids=[e[2][:40] for e in ERRORS])
def test_errors_name_the_file_and_line(text: str, line: int, message: str) -> None:
    with pytest.raises(InputError) as err:
        render(text)
    assert (err.value.file, err.value.obj) == ("t.yaml", f"line {line}")
    assert message in err.value.detail
    assert "\n" not in str(err.value)
