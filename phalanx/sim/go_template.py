"""Rendering the part of Go's text/template that kube-scheduler's scheduler_perf templates use.

No Python library renders Go templates, so this is a small one of our own. What it renders, as Go does:

- text and actions `{{ … }}`, with the trim markers `{{- ` and ` -}}` and comments `{{/* … */}}`;
- pipelines: a field chain (`.Index`, `.a.b`), the dot `.`, a variable (`$x`, `$`, `$x.field`), a constant
  (`3` is a Go int, `3.0` and `1e6` a float64, `"text"`, `` `raw` ``, `'c'`, `true`, `false`, `nil`), a call
  (`DivideInt .Index .podsPerGroup`), a parenthesised pipeline, and `|` passing a value on as the last argument;
- variables: `{{$n := …}}` and `{{$n = …}}`, scoped to the enclosing `if` or `range` as in Go;
- `{{if}}` / `{{else if}}` / `{{else}}` / `{{end}}`, and `{{range}}` over an int (0 to n−1), a list or a map
  (by sorted key), with `$v :=` or `$i, $v :=`, and an `{{else}}` for nothing to iterate;
- Go's builtins `and`, `or` (short-circuiting, returning the deciding value), `not`, `eq` (against one or more
  values), `ne`, `lt`, `le`, `gt`, `ge`, with Go's rule that an int never compares with a float64;
- the functions a caller passes in (scheduler_perf's are phalanx.sim.perf_funcs).

Values are Go's as JSON decodes them (phalanx.sim.go_format): a param of 3 is float64 and prints as `3`, and a
float64 of a million prints as `1e+06`. Anything else (`with`, `define`, `template`, `block`, `break`,
`continue`, `printf`, `index`, `len`, other builtins) is an error naming the file and the line, as are Go's own
errors (an undefined variable or function, a bad comparison, a function that fails). One deliberate
difference: Go writes `<no value>` for a field the data lacks (a template param the operation does not set);
no manifest field takes that, so Phalanx stops there with an error naming the field instead.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from phalanx.errors import InputError
from phalanx.sim.go_format import GoValueError, format_value, go_type

INT64 = 2**63


class FuncError(Exception):
    """Raised by a template function: what Go reports as `error calling NAME: …`."""


@dataclass(frozen=True)
class Func:
    """A function a template may call: `params` arguments, or at least that many when `variadic`."""

    call: Callable[..., Any]
    params: int
    variadic: bool = False


class _Missing:
    """What a field the data lacks evaluates to (Go's invalid reflect.Value)."""

    def __repr__(self) -> str:
        return "<no value>"


class _Arity(Exception):
    """A call with the wrong number of arguments."""


MISSING: Any = _Missing()
_NOTHING: Any = object()  # no piped value
_CONTROL = {"if", "else", "end", "range"}
_REFUSED_CONTROL = {"with", "define", "template", "block", "break", "continue"}
_REFUSED_BUILTINS = {"call", "html", "index", "slice", "js", "len", "print", "printf", "println", "urlquery"}
_BUILTINS = ("and", "or", "not", "eq", "ne", "lt", "le", "gt", "ge")
_SPACE = " \t\r\n"
_IDENT = re.compile(r"[^\W\d]\w*")
_NUMBER = re.compile(r"[+-]?(?:\d\w*(?:\.\w*)?|\.\d\w*)(?:(?<=[eEpP])[+-]\w*)?")
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}
_ESCAPE = re.compile(r"\\(?:([abfnrtv\\\"'])|x([0-9a-fA-F]{2})|([0-7]{3})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8}))")


# --- lexing -------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Tok:
    kind: str  # field, dot, var, number, string, ident, declare, assign, pipe, lparen, rparen, comma
    value: Any
    line: int
    spaced: bool  # whitespace before it


class _Source:
    def __init__(self, text: str, file: str) -> None:
        self.text = text
        self.file = file
        self.breaks = [m.start() for m in re.finditer("\n", text)]

    def line(self, pos: int) -> int:
        return bisect.bisect_left(self.breaks, pos) + 1

    def error(self, pos: int, message: str) -> InputError:
        return InputError(message, file=self.file, obj=f"line {self.line(pos)}")


def _unquote(src: _Source, pos: int, body: str, quote: str) -> str:
    def replace(match: re.Match[str]) -> str:
        simple, hex2, octal, u4, u8 = match.groups()
        if simple is not None:
            if simple in "\"'" and simple != quote:
                raise src.error(pos, f"unknown escape sequence \\{simple}")
            return _ESCAPES.get(simple, simple)
        code = int(hex2 or u4 or u8, 16) if octal is None else int(octal, 8)
        if code > 0x10FFFF:
            raise src.error(pos, "escape sequence is invalid Unicode code point")
        return chr(code)

    stray = re.sub(_ESCAPE, "", body)
    if "\\" in stray:
        raise src.error(pos, "unknown escape sequence in a string")
    return re.sub(_ESCAPE, replace, body)


def _quoted_end(text: str, pos: int, quote: str) -> int:
    """The index just past the string that opens at `pos`, or -1 if it does not close on its line."""
    i = pos + 1
    while i < len(text):
        c = text[i]
        if c == "\\" and quote != "`":
            i += 2
            continue
        if c == quote:
            return i + 1
        if c == "\n" and quote != "`":
            return -1
        i += 1
    return -1


def _number(src: _Source, pos: int, text: str) -> int | float:
    body = text.lstrip("+-")
    negative = text.startswith("-")
    try:
        if re.fullmatch(r"0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|\d[\d_]*", body):
            octal = re.fullmatch(r"0[0-7_]+", body) is not None
            value: int | float = int(body.replace("_", ""), 8 if octal else 0)
        elif re.fullmatch(r"(?:\d[\d_]*)?(?:\.[\d_]*)?(?:[eE][+-]?\d[\d_]*)?", body) and re.search(r"\d", body):
            value = float(body.replace("_", ""))
            if value == float("inf"):
                raise ValueError
        else:
            raise ValueError
    except ValueError:
        raise src.error(pos, f"bad number syntax: {text!r}") from None
    value = -value if negative else value
    if isinstance(value, int) and not -INT64 <= value < INT64:
        raise src.error(pos, f"{text} overflows int")
    return value


def _tokens(src: _Source, start: int, end: int) -> list[_Tok]:
    """The tokens of the action text src.text[start:end]."""
    text, out, i, spaced = src.text, [], start, False
    punct = {":=": "declare", "=": "assign", "|": "pipe", "(": "lparen", ")": "rparen", ",": "comma"}
    while i < end:
        c = text[i]
        if c in _SPACE:
            i, spaced = i + 1, True
            continue
        line = src.line(i)
        two = text[i:i + 2]
        if two == ":=" or c in "=|(),":
            op = two if two == ":=" else c
            out.append(_Tok(punct[op], op, line, spaced))
            i += len(op)
        elif c in "\"`'":
            close = _quoted_end(text, i, c)
            if close < 0 or close > end:
                raise src.error(i, "unterminated quoted string")
            body = _unquote(src, i, text[i + 1:close - 1], c) if c != "`" else text[i + 1:close - 1]
            if c == "'":
                if len(body) != 1:
                    raise src.error(i, f"malformed character constant {text[i:close]}")
                out.append(_Tok("number", ord(body), line, spaced))
            else:
                out.append(_Tok("string", body, line, spaced))
            i = close
        elif c == "$":
            match = _IDENT.match(text, i + 1, end)
            name = "$" + (match.group() if match else "")
            out.append(_Tok("var", name, line, spaced))
            i += len(name)
        elif c == "." and not (i + 1 < end and text[i + 1].isdigit()):
            match = _IDENT.match(text, i + 1, end)
            if match:
                out.append(_Tok("field", match.group(), line, spaced))
                i = match.end()
            else:
                out.append(_Tok("dot", ".", line, spaced))
                i += 1
        elif c in "+-." or c.isdigit():
            match = _NUMBER.match(text, i, end)
            if not match:
                raise src.error(i, f"bad number syntax: {text[i:i + 10]!r}")
            out.append(_Tok("number", _number(src, i, match.group()), line, spaced))
            i = match.end()
        elif _IDENT.match(text, i, end):
            match = _IDENT.match(text, i, end)
            assert match is not None
            out.append(_Tok("ident", match.group(), line, spaced))
            i = match.end()
        else:
            raise src.error(i, f"unexpected {c!r} in an action")
        spaced = False
    return out


@dataclass
class _Item:
    """A piece of a template: text, or the tokens of one action."""

    text: str | None
    tokens: list[_Tok]
    line: int


def _items(src: _Source) -> list[_Item]:
    text, items, pos = src.text, [], 0
    while True:
        open_at = text.find("{{", pos)
        if open_at < 0:
            items.append(_Item(text[pos:], [], src.line(pos)))
            return items
        inner = open_at + 2
        lead = text[pos:open_at]
        if text.startswith("-", inner) and inner + 1 < len(text) and text[inner + 1] in _SPACE:
            lead, inner = lead.rstrip(_SPACE), inner + 2
        items.append(_Item(lead, [], src.line(pos)))
        close, trim_right = _action_end(src, open_at, inner)
        body_end = close
        if trim_right:
            body_end = close - 1
        stripped = text[inner:body_end].strip(_SPACE)
        if stripped.startswith("/*"):
            if not stripped.endswith("*/"):
                raise src.error(open_at, "comment ends before closing delimiter")
        else:
            tokens = _tokens(src, inner, body_end)
            if not tokens:
                raise src.error(open_at, "missing value for command")
            items.append(_Item(None, tokens, src.line(open_at)))
        pos = close + 2
        if trim_right:
            rest = len(text) - len(text[pos:].lstrip(_SPACE))
            pos = rest


def _action_end(src: _Source, open_at: int, inner: int) -> tuple[int, bool]:
    """Where the action opened at `open_at` closes (the index of its `}}`), and whether it trims after."""
    text, i = src.text, inner
    comment = text[inner:].lstrip(_SPACE).startswith("/*")
    if comment:
        end = text.find("*/", inner)
        if end < 0:
            raise src.error(open_at, "unclosed comment")
        i = end + 2
    while i < len(text):
        if text.startswith("}}", i):
            trim = i - 2 >= inner and text[i - 1] == "-" and text[i - 2] in _SPACE
            return i, trim
        c = text[i]
        if c in "\"`'" and not comment:
            close = _quoted_end(text, i, c)
            if close < 0:
                raise src.error(i, "unterminated quoted string")
            i = close
            continue
        i += 1
    raise src.error(open_at, "unclosed action")


# --- parsing ------------------------------------------------------------------------------------------------

@dataclass
class _Operand:
    kind: str  # field, dot, var, const, func, pipe
    value: Any
    line: int
    fields: tuple[str, ...] = ()

    def describe(self) -> str:
        base = {"field": "", "dot": ".", "var": str(self.value), "const": repr(self.value),
                "func": str(self.value), "pipe": "(…)"}[self.kind]
        return base + "".join("." + f for f in self.fields)


@dataclass
class _Pipe:
    line: int
    decl: list[str] = field(default_factory=list)
    assign: bool = False
    cmds: list[list[_Operand]] = field(default_factory=list)


@dataclass
class _Node:
    kind: str  # text, action, if, range
    line: int
    text: str = ""
    pipe: _Pipe | None = None
    body: list[_Node] = field(default_factory=list)
    orelse: list[_Node] = field(default_factory=list)


class _Parser:
    def __init__(self, src: _Source, items: list[_Item], funcs: Mapping[str, Func]) -> None:
        self.src, self.items, self.funcs, self.at = src, items, funcs, 0
        self.scopes: list[set[str]] = [{"$"}]

    def error(self, line: int, message: str) -> InputError:
        return InputError(message, file=self.src.file, obj=f"line {line}")

    def parse(self) -> list[_Node]:
        nodes, stop = self.list_until(set())
        if stop is not None:
            raise self.error(stop.line, f"unexpected {{{{{stop.tokens[0].value}}}}}")
        return nodes

    def list_until(self, stops: set[str]) -> tuple[list[_Node], _Item | None]:
        """Nodes up to an action whose first word is in `stops` (returned, not consumed into the list)."""
        nodes: list[_Node] = []
        while self.at < len(self.items):
            item = self.items[self.at]
            self.at += 1
            if item.text is not None:
                if item.text:
                    nodes.append(_Node("text", item.line, text=item.text))
                continue
            first = item.tokens[0]
            word = first.value if first.kind == "ident" else None
            if word in ("else", "end"):
                if word not in stops:
                    raise self.error(item.line, f"unexpected {{{{{word}}}}}")
                return nodes, item
            if word in _REFUSED_CONTROL:
                raise self.error(item.line, f"{{{{{word}}}}} is outside the Go template subset Phalanx renders "
                                            "(if, else, range, end, variables, pipelines)")
            if word in ("if", "range"):
                nodes.append(self.control(word, item))
            else:
                nodes.append(_Node("action", item.line, pipe=self.pipeline(item.tokens, item.line, word=None)))
        return nodes, None

    def control(self, word: str, item: _Item) -> _Node:
        self.scopes.append(set())
        pipe = self.pipeline(item.tokens[1:], item.line, word=word)
        node = _Node(word, item.line, pipe=pipe)
        node.body, stop = self.list_until({"else", "end"})
        if stop is None:
            raise self.error(item.line, f"{{{{{word}}}}} has no {{{{end}}}}")
        rest = stop.tokens[1:]
        if stop.tokens[0].value == "else":
            if rest and rest[0].kind == "ident" and rest[0].value == "if" and word == "if":
                node.orelse = [self.control("if", _Item(None, rest, stop.line))]
            elif rest:
                raise self.error(stop.line, "{{else}} takes nothing after it here (only {{else if …}} in an if)")
            else:
                node.orelse, end = self.list_until({"end"})
                if end is None:
                    raise self.error(item.line, f"{{{{{word}}}}} has no {{{{end}}}}")
                if len(end.tokens) > 1:
                    raise self.error(end.line, "{{end}} takes nothing after it")
        elif rest:
            raise self.error(stop.line, "{{end}} takes nothing after it")
        self.scopes.pop()
        return node

    def pipeline(self, tokens: list[_Tok], line: int, word: str | None) -> _Pipe:
        pipe = _Pipe(line)
        toks = list(tokens)
        decl = self.declaration(toks, word)
        if decl is not None:
            names, assign, toks = decl
            pipe.decl, pipe.assign = names, assign
        if not toks:
            raise self.error(line, "missing value for command" if word is None else f"missing value for {word}")
        pos = 0
        while True:
            cmd, pos = self.command(toks, pos, line)
            pipe.cmds.append(cmd)
            if pos >= len(toks):
                break
            if toks[pos].kind != "pipe":
                raise self.error(toks[pos].line, f"unexpected {toks[pos].value!r} in a pipeline")
            pos += 1
            if pos >= len(toks):
                raise self.error(line, "missing command after |")
        for name in pipe.decl:
            if pipe.assign:
                self.check_var(name, line)
            else:
                self.scopes[-1].add(name)
        return pipe

    def declaration(self, toks: list[_Tok], word: str | None) -> tuple[list[str], bool, list[_Tok]] | None:
        kinds = [t.kind for t in toks[:4]]
        if kinds[:2] in (["var", "declare"], ["var", "assign"]):
            return [toks[0].value], kinds[1] == "assign", toks[2:]
        if kinds[:4] == ["var", "comma", "var", "declare"]:
            if word != "range":
                raise self.error(toks[0].line, "too many declarations (two variables only in a range)")
            return [toks[0].value, toks[2].value], False, toks[4:]
        return None

    def check_var(self, name: str, line: int) -> None:
        if not any(name in scope for scope in self.scopes):
            raise self.error(line, f"undefined variable {name!r}")

    def command(self, toks: list[_Tok], pos: int, line: int) -> tuple[list[_Operand], int]:
        cmd: list[_Operand] = []
        while pos < len(toks) and toks[pos].kind not in ("pipe", "rparen"):
            operand, pos = self.operand(toks, pos, first=not cmd)
            cmd.append(operand)
        if not cmd:
            raise self.error(line, "missing value for command")
        return cmd, pos

    def operand(self, toks: list[_Tok], pos: int, first: bool) -> tuple[_Operand, int]:
        tok = toks[pos]
        pos += 1
        if tok.kind == "field":
            fields = [tok.value]
            while pos < len(toks) and toks[pos].kind == "field" and not toks[pos].spaced:
                fields.append(toks[pos].value)
                pos += 1
            return _Operand("field", None, tok.line, tuple(fields)), pos
        if tok.kind == "dot":
            operand = _Operand("dot", None, tok.line)
        elif tok.kind == "var":
            self.check_var(tok.value, tok.line)
            operand = _Operand("var", tok.value, tok.line)
        elif tok.kind in ("number", "string"):
            operand = _Operand("const", tok.value, tok.line)
        elif tok.kind == "lparen":
            sub = _Pipe(tok.line)
            while True:
                cmd, pos = self.command(toks, pos, tok.line)
                sub.cmds.append(cmd)
                if pos < len(toks) and toks[pos].kind == "pipe":
                    pos += 1
                    continue
                break
            if pos >= len(toks) or toks[pos].kind != "rparen":
                raise self.error(tok.line, "unclosed left paren")
            pos += 1
            operand = _Operand("pipe", sub, tok.line)
        elif tok.kind == "ident":
            operand = self.identifier(tok)
        else:
            raise self.error(tok.line, f"unexpected {tok.value!r} in an operand")
        fields = []
        while pos < len(toks) and toks[pos].kind == "field" and not toks[pos].spaced:
            if operand.kind in ("func", "const"):
                raise self.error(tok.line, f"unexpected . after term {operand.describe()}")
            fields.append(toks[pos].value)
            pos += 1
        operand.fields = tuple(fields)
        return operand, pos

    def identifier(self, tok: _Tok) -> _Operand:
        name = tok.value
        if name in ("true", "false"):
            return _Operand("const", name == "true", tok.line)
        if name == "nil":
            return _Operand("const", None, tok.line)
        if name in _CONTROL or name in _REFUSED_CONTROL:
            raise self.error(tok.line, f"unexpected {name!r} in an operand")
        if name in _REFUSED_BUILTINS:
            raise self.error(tok.line, f"function {name!r} is a Go template builtin outside the subset Phalanx "
                                       f"renders ({', '.join(_BUILTINS)})")
        if name not in _BUILTINS and name not in self.funcs:
            known = ", ".join(sorted(self.funcs))
            raise self.error(tok.line, f"function {name!r} not defined (the template functions are "
                                       f"{', '.join(_BUILTINS)}{', ' + known if known else ''})")
        return _Operand("func", name, tok.line)


# --- executing ----------------------------------------------------------------------------------------------

def truth(value: Any) -> bool:
    """Go's truth: false, 0, "", nil, an empty list or map, or no value at all are false."""
    if value is None or value is MISSING:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    if isinstance(value, str | list | tuple | Mapping):
        return len(value) > 0
    return True


def _kind(value: Any) -> str | None:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    return None


def _nil(value: Any) -> bool:
    return value is None or value is MISSING


def _equal(a: Any, b: Any) -> bool:
    if _nil(a) or _nil(b):
        return _nil(a) and _nil(b)
    ka, kb = _kind(a), _kind(b)
    if ka is None or kb is None:
        raise FuncError(f"non-comparable types {go_type(a)} and {go_type(b)}")
    if ka != kb:
        raise FuncError(f"incompatible types for comparison: {go_type(a)} and {go_type(b)}")
    return bool(a == b)


def _order(a: Any, b: Any) -> int:
    ka, kb = _kind(a), _kind(b)
    if _nil(a) or _nil(b) or ka in (None, "bool") or kb in (None, "bool"):
        raise FuncError(f"invalid type for comparison: {go_type(None if a is MISSING else a)}")
    if ka != kb:
        raise FuncError(f"incompatible types for comparison: {go_type(a)} and {go_type(b)}")
    return -1 if a < b else (1 if a > b else 0)


_COMPARE: dict[str, Callable[[int], bool]] = {
    "lt": lambda c: c < 0, "le": lambda c: c <= 0, "gt": lambda c: c > 0, "ge": lambda c: c >= 0}


class _Run:
    def __init__(self, template: Template, data: Mapping[str, Any]) -> None:
        self.template, self.data = template, data
        self.vars: list[list[Any]] = [["$", data]]
        self.out: list[str] = []

    def error(self, line: int, message: str) -> InputError:
        return InputError(message, file=self.template.file, obj=f"line {line}")

    def nodes(self, nodes: Sequence[_Node], dot: Any) -> None:
        for node in nodes:
            if node.kind == "text":
                self.out.append(node.text)
                continue
            assert node.pipe is not None
            if node.kind == "action":
                value = self.pipe(node.pipe, dot)
                if not node.pipe.decl:
                    self.out.append(self.printed(node.pipe, value))
            elif node.kind == "if":
                mark = len(self.vars)
                branch = node.body if truth(self.pipe(node.pipe, dot)) else node.orelse
                self.nodes(branch, dot)
                del self.vars[mark:]
            else:
                self.range(node, dot)

    def printed(self, pipe: _Pipe, value: Any) -> str:
        if _nil(value):
            last = pipe.cmds[-1]
            what = last[0].describe() if len(last) == 1 else f"the result of {last[0].describe()}"
            if value is MISSING:
                raise self.error(pipe.line, f"{what} has no value (Go would write <no value>): the operation sets "
                                            "no such template param")
            raise self.error(pipe.line, f"{what} is nil (Go would write <no value>)")
        return format_value(value)

    def range(self, node: _Node, dot: Any) -> None:
        assert node.pipe is not None
        pipe = node.pipe
        value = self.commands(pipe, dot)
        if isinstance(value, bool | float | str):
            raise self.error(pipe.line, f"range can't iterate over {format_value(value)}")
        pairs: list[tuple[Any, Any]]
        if _nil(value):
            pairs = []
        elif isinstance(value, int):
            if len(pipe.decl) > 1:
                raise self.error(pipe.line, f"can't use {value} to iterate over more than one variable")
            pairs = [(i, i) for i in range(value)]
        elif isinstance(value, Mapping):
            pairs = [(k, value[k]) for k in sorted(value)]
        else:
            pairs = list(enumerate(value))
        if not pairs:
            self.nodes(node.orelse, dot)
            return
        mark = len(self.vars)
        for key, element in pairs:
            del self.vars[mark:]
            if len(pipe.decl) == 1:
                self.vars.append([pipe.decl[0], element])
            elif len(pipe.decl) == 2:
                self.vars += [[pipe.decl[0], key], [pipe.decl[1], element]]
            self.nodes(node.body, element)
        del self.vars[mark:]

    def pipe(self, pipe: _Pipe, dot: Any) -> Any:
        value = self.commands(pipe, dot)
        for name in pipe.decl:
            if pipe.assign:
                self.lookup(name, pipe.line)[1] = value
            else:
                self.vars.append([name, value])
        return value

    def commands(self, pipe: _Pipe, dot: Any) -> Any:
        value = _NOTHING
        for cmd in pipe.cmds:
            value = self.command(cmd, dot, value)
        return value

    def lookup(self, name: str, line: int) -> list[Any]:
        """The [name, value] entry of the innermost variable called `name`."""
        for i in range(len(self.vars) - 1, -1, -1):
            if self.vars[i][0] == name:
                return self.vars[i]
        raise self.error(line, f"undefined variable {name!r}")

    def command(self, cmd: list[_Operand], dot: Any, piped: Any) -> Any:
        head = cmd[0]
        if head.kind == "func":
            return self.call(head, cmd[1:], dot, piped)
        if len(cmd) > 1 or piped is not _NOTHING:
            raise self.error(head.line, f"can't give argument to non-function {head.describe()}")
        if head.kind == "const" and head.value is None:
            raise self.error(head.line, "nil is not a command")
        return self.operand(head, dot)

    def operand(self, op: _Operand, dot: Any) -> Any:
        if op.kind == "func":  # a function named as an argument is called with no arguments
            return self.call(op, [], dot, _NOTHING)
        if op.kind in ("field", "dot"):
            value = dot
        elif op.kind == "var":
            value = self.lookup(op.value, op.line)[1]
        elif op.kind == "const":
            value = op.value
        else:
            value = self.commands(op.value, dot)
        for name in op.fields:
            if isinstance(value, Mapping):
                value = value.get(name, MISSING)
            elif value is MISSING:  # a field of no value has no value either
                continue
            elif value is None:
                raise self.error(op.line, f"nil pointer evaluating interface {{}}.{name}")
            else:
                raise self.error(op.line, f"can't evaluate field {name} in type {go_type(value)}")
        return value

    def call(self, head: _Operand, args: list[_Operand], dot: Any, piped: Any) -> Any:
        name = head.value
        extra = [] if piped is _NOTHING else [piped]
        try:
            if name in ("and", "or"):
                if not args and not extra:
                    raise _Arity(f"wrong number of args for {name}: want at least 1 got 0")
                value: Any = None
                for arg in args:
                    value = self.operand(arg, dot)
                    if truth(value) == (name == "or"):
                        return value
                return extra[0] if extra else value
            values = [self.operand(arg, dot) for arg in args] + extra
            if name == "not":
                self.arity(name, values, 1)
                return not truth(values[0])
            if name in ("eq", "ne"):
                if len(values) < 2:
                    raise FuncError("missing argument for comparison")
                if name == "ne":
                    self.arity(name, values, 2)
                    return not _equal(values[0], values[1])
                return any(_equal(values[0], other) for other in values[1:])
            if name in _COMPARE:
                self.arity(name, values, 2)
                return _COMPARE[name](_order(values[0], values[1]))
            func = self.template.funcs[name]
            self.arity(name, values, func.params, func.variadic)
            missing = [arg.describe() for arg, value in zip(args, values, strict=False) if value is MISSING]
            try:
                return func.call(*[None if v is MISSING else v for v in values])
            except (FuncError, GoValueError) as exc:
                hint = f" ({', '.join(missing)} has no value)" if missing else ""
                raise FuncError(f"{exc}{hint}") from None
        except _Arity as exc:
            raise self.error(head.line, str(exc)) from None
        except FuncError as exc:
            raise self.error(head.line, f"error calling {name}: {exc}") from None

    @staticmethod
    def arity(name: str, values: list[Any], want: int, variadic: bool = False) -> None:
        if len(values) < want or (not variadic and len(values) != want):
            raise _Arity(f"wrong number of args for {name}: want {'at least ' if variadic else ''}{want} "
                         f"got {len(values)}")


@dataclass
class Template:
    """A parsed template: `render(data)` gives its text for one object."""

    file: str
    nodes: list[_Node]
    funcs: Mapping[str, Func]
    static: bool  # holds no action at all: renders to the same text whatever the data

    def render(self, data: Mapping[str, Any]) -> str:
        run = _Run(self, data)
        try:
            run.nodes(self.nodes, data)
        except RecursionError:
            raise InputError("nests too deeply to render", file=self.file) from None
        return "".join(run.out)


def parse_template(text: str, file: str, funcs: Mapping[str, Func]) -> Template:
    """Parse `text` (read from `file`, which errors name with the line) with `funcs` callable in it."""
    src = _Source(text, file)
    items = _items(src)
    try:
        nodes = _Parser(src, items, funcs).parse()
    except RecursionError:
        raise InputError("nests too deeply to parse", file=file) from None
    return Template(file, nodes, funcs, static=all(node.kind == "text" for node in nodes))
