"""The admission policies a profile can put in front of the scheduler (`admission: <name>`), by name. A new
policy is its module(s) and one line here (and its builtin profile in phalanx/scheduler/profiles.py)."""

from __future__ import annotations

from phalanx.admission.base import PolicyFactory
from phalanx.admission.kai_factory import KaiFactory
from phalanx.admission.kueue_factory import KueueFactory
from phalanx.admission.volcano_factory import VolcanoFactory
from phalanx.admission.yunikorn_factory import YunikornFactory

POLICIES: dict[str, PolicyFactory] = {factory.name: factory for factory in (
    KueueFactory(),
    VolcanoFactory(),
    KaiFactory(),
    YunikornFactory(),
)}
