"""Read manifests (files, directories, multi-document YAML and JSON, `kind: List`) into documents, each with the
Source that names its file and its place in document order."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import yaml

from phalanx.api.fast_yaml import GiveUp, read_documents
from phalanx.api.kinds import VOLCANO_CONF_KEY, is_bare_conf
from phalanx.api.objects import Source
from phalanx.api.reading import MAX_NESTING, check_nesting, parse_json, read_text
from phalanx.api.templated import unrendered_action_line
from phalanx.errors import InputError

_YAML_SUFFIXES = (".yaml", ".yml", ".json")
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# Files a folder of manifests often holds beside them that are not Kubernetes objects: Helm's chart and values
# files, kustomize's, package managers'. In a folder they are passed over; named on the command line they fail.
_NOT_MANIFESTS = re.compile(r"Chart\.ya?ml|values(?:[-._][^/]*)?\.ya?ml|values\.schema\.json|kustomization\.ya?ml"
                            r"|package(?:-lock)?\.json|composer\.json|tsconfig\.json|\.pre-commit-config\.ya?ml"
                            r"|(?:docker-)?compose\.ya?ml|\.gitlab-ci\.ya?ml|mkdocs\.ya?ml|renovate\.json")


def _listed(paths: Sequence[str]) -> list[tuple[str, bool]]:
    """The files to read, each with whether it was found in a folder (rather than named)."""
    files: list[tuple[str, bool]] = []
    for path in paths:
        if os.path.isdir(path):
            found = sorted(
                os.path.join(root, name)
                for root, _, names in os.walk(path)
                for name in names
                if name.endswith(_YAML_SUFFIXES) or name == VOLCANO_CONF_KEY
            )
            files.extend((name, True) for name in found)
        elif os.path.exists(path):
            files.append((path, False))
        else:
            raise InputError("no such file or directory", file=path)
    return files


def _parse(path: str, text: str) -> list[Any]:
    if path.endswith(".json"):
        # `kubectl get -o json` output: one JSON value per file, read by the JSON parser (YAML's is 30× slower).
        return [parse_json(text, file=path)]
    try:
        return read_documents(text)  # it nests no deeper than the bound (or gives up)
    except GiveUp:
        pass
    check_nesting(text, file=path)
    try:
        return list(yaml.load_all(text, Loader=_Loader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "YAML"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"invalid YAML: {problem}", file=path, obj=where) from None
    except ValueError:  # an integer past Python's digit limit
        raise InputError("invalid YAML: a number has too many digits (Kubernetes integers are int64)",
                         file=path) from None
    except RecursionError:
        raise InputError(f"nests deeper than {MAX_NESTING} levels", file=path) from None


def _documents(path: str) -> Iterator[tuple[int, Any]]:
    text = read_text(path)
    line = None if path.endswith(".json") else unrendered_action_line(text)
    if line is not None:
        raise InputError("an unrendered Go template action ({{ … }}): render the template first (phalanx generate "
                         "renders scheduler_perf's), or quote the value if the braces are meant literally",
                         file=path, obj=f"line {line}")
    for number, doc in enumerate(_parse(path, text), start=1):
        if doc is not None:
            yield number, doc


def _in_chart_templates(path: str) -> bool:
    """Under a Helm chart's `templates/`: manifests only once Helm renders them, even where they parse as YAML."""
    parts = os.path.normpath(path).split(os.sep)
    return any(part == "templates" and os.path.isfile(os.path.join(os.sep.join(parts[:i]) or ".", "Chart.yaml"))
               for i, part in enumerate(parts[:-1]))


def _looks_like_manifest(doc: Any) -> bool:
    return (isinstance(doc, Mapping) and ("apiVersion" in doc or "kind" in doc)) or is_bare_conf(doc)


def _folder_documents(path: str) -> list[tuple[int, Any]] | None:
    """The documents of a file found in a folder, or None when it holds no Kubernetes object: a known
    non-manifest name, documents without apiVersion and kind, or a template (Helm's or scheduler_perf's
    `{{ … }}`) that is no manifest until rendered, whether or not it parses as YAML."""
    if _NOT_MANIFESTS.fullmatch(os.path.basename(path)) or _in_chart_templates(path):
        return None
    text = read_text(path)
    try:
        docs = [(number, doc) for number, doc in enumerate(_parse(path, text), start=1) if doc is not None]
    except InputError:
        if "{{" in text:
            return None
        raise
    if docs and not any(_looks_like_manifest(doc) for _, doc in docs):
        return None
    if not path.endswith(".json") and unrendered_action_line(text) is not None:
        return None
    return docs


def _flatten(doc: Any, path: str, number: int) -> Iterable[Mapping[str, Any]]:
    if not isinstance(doc, Mapping):
        raise InputError(f"document {number} is not an object (got {type(doc).__name__})", file=path)
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(doc.get("items"), list):
        for i, item in enumerate(doc["items"]):
            if not isinstance(item, Mapping):
                raise InputError(f"is not an object (got {type(item).__name__})", file=path,
                                 obj=f"document {number}", field=f"items[{i}]")
            yield from _flatten(item, path, number)
    else:
        yield doc


def raw_documents(paths: Sequence[str], skipped_files: list[str] | None = None
                  ) -> Iterator[tuple[Source, Mapping[str, Any]]]:
    """Every object under `paths` as read, `List`s flattened, with the Source that `load_paths` gives it.

    Files in folders that hold no Kubernetes object are passed over (and appended to `skipped_files`)."""
    index = 0
    for path, in_folder in _listed(paths):
        docs = _folder_documents(path) if in_folder else list(_documents(path))
        if docs is None:
            if skipped_files is not None:
                skipped_files.append(path)
            continue
        for number, doc in docs:
            for item in _flatten(doc, path, number):
                index += 1
                yield Source(path, index), item
