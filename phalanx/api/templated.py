"""Finding unrendered Go template actions (`{{ … }}`) in a YAML manifest file.

A template such as scheduler_perf's `gang-pod.yaml` (`name: test-gang-scheduling-{{.Index}}`) or a Helm
chart's often parses as YAML, so reading it would quietly give objects named after the template's actions.
An action shows where YAML takes `{{` as syntax or as part of an unquoted value: a plain scalar holding
`{{`, or two flow mappings opening at once (`minCount: {{.podsPerGroup}}`). A quoted or block scalar, and a
comment, may hold `{{` literally (an alerting rule's message, say): those are left alone. Only the documents
that hold `{{` at all are scanned, so large snapshots cost nothing.
"""

from __future__ import annotations

import itertools
import re

import yaml

_DOCUMENT_START = re.compile(r"^(?:---|\.\.\.)(?=[ \t\r\n]|$)", re.MULTILINE)


def _documents(text: str) -> list[tuple[int, str]]:
    """The text of each document with the offset it starts at (`---` and `...` at the start of a line split)."""
    starts = [0, *(m.start() for m in _DOCUMENT_START.finditer(text)), len(text)]
    return [(a, text[a:b]) for a, b in itertools.pairwise(starts) if b > a]


def _scan(chunk: str) -> int | None:
    """The offset in `chunk` of the first `{{` that YAML reads as syntax or in a plain scalar, if any."""
    previous: yaml.Token | None = None
    try:
        for token in yaml.scan(chunk, Loader=yaml.SafeLoader):
            if isinstance(token, yaml.ScalarToken) and token.plain and "{{" in token.value:
                return chunk.find("{{", token.start_mark.index)
            if (isinstance(token, yaml.FlowMappingStartToken) and isinstance(previous, yaml.FlowMappingStartToken)
                    and token.start_mark.index == previous.start_mark.index + 1):
                return int(previous.start_mark.index)
            previous = token
    except yaml.YAMLError:
        # Not YAML as it stands: the first `{{` outside a comment is the likeliest culprit.
        for match in re.finditer(r"\{\{", chunk):
            line_start = chunk.rfind("\n", 0, match.start()) + 1
            if "#" not in chunk[line_start:match.start()]:
                return match.start()
    return None


def unrendered_action_line(text: str) -> int | None:
    """The 1-based line of the first unrendered template action in YAML `text`, or None."""
    if "{{" not in text:
        return None
    for offset, chunk in _documents(text):
        if "{{" not in chunk:
            continue
        found = _scan(chunk)
        if found is not None:
            return text.count("\n", 0, offset + found) + 1
    return None
