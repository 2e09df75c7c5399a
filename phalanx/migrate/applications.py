"""Peers whose gang is an application's pods rather than an object (YuniKorn's task groups), for `phalanx
migrate`: each such peer names, in phalanx.api.peers (`applications`), the module that reads a pod's marks. That
module gives KEY (how the migration names the mark), DESCRIBED (how the translation count names it), OBJECT (how
a change names the application), `pointer(meta)` -> (application, gang minimum, minimum per group, policy) or
None, `notes(app, Application)` -> (notes, warnings), and `Application` (what is known of one application)."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from functools import cache
from types import ModuleType
from typing import Any, NamedTuple

from phalanx.api.peers import PEERS


class Member(NamedTuple):
    app: str
    whose: str
    key: str
    minimum: int
    groups: dict[str, int]
    policy: str
    module: ModuleType


@cache
def _modules() -> tuple[tuple[str, ModuleType], ...]:
    return tuple((peer.whose, importlib.import_module(peer.applications)) for peer in PEERS if peer.applications)


def pointer(meta: Mapping[str, Any]) -> Member | None:
    """The application gang a pod or pod template joins, or None."""
    for whose, module in _modules():
        found = module.pointer(meta)
        if found is not None:
            app, minimum, groups, policy = found
            return Member(app, whose, module.KEY, minimum, groups, policy, module)
    return None


def members_of(whose: str) -> ModuleType:
    return next(module for name, module in _modules() if name == whose)


def is_peer(whose: str) -> bool:
    """Whether `whose` (as pointer() names it) is a peer with application gangs."""
    return any(name == whose for name, _ in _modules())
