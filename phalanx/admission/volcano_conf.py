"""Volcano's scheduler configuration (`volcano-scheduler.conf`), as the Volcano-style admission and profile use it.

The format (volcano-sh/volcano `pkg/scheduler/conf/scheduler_conf.go`, `SchedulerConfiguration`), restated:
`actions` is one comma-separated string run in that order each session; `tiers` is a list of
`{plugins: [{name, arguments, enableXxx flags}]}`; `configurations` holds per-action `{name, arguments}`.
The file may come bare, as YAML text, or inside a ConfigMap under `data["volcano-scheduler.conf"]`.
An action Volcano does not have is an error (Volcano refuses to start, `UnmarshalSchedulerConf`); a plugin or
action Volcano has but Phalanx does not model is named by `not_modelled()`. Volcano also refuses proportion
together with drf's `enableHierarchy`; so does this parser.

Plugin arguments are read as Volcano's plugins read them (`framework/arguments.go`): the binpack and nodeorder
weights with `GetInt`, whose type assertion passes only a YAML integer that fits Go's int (int64); anything
else (a float, NaN, inf, `1e30`, a quoted "10", true) Volcano ignores with "Could not parse argument" and keeps
its default, which is never what the author meant, so Phalanx refuses it naming the argument.
`overcommit-factor` is read with `GetFloat64` (a float or an int), and must be finite here. Weights above a
kube-scheduler score weight (int32) are capped at 2147483647 for Phalanx's scoring, with a note.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from phalanx.admission.crd import embedded_yaml, shown
from phalanx.api.fields import fail, mapping, object_name, sequence, text
from phalanx.errors import InputError

CONF_KEY = "volcano-scheduler.conf"
# Volcano's scheduler package default when no conf is given (pkg/scheduler/util.go, DefaultSchedulerConf).
DEFAULT_CONF_TEXT = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""

# Actions Volcano registers (pkg/scheduler/actions/*); the first group is modelled by Phalanx.
MODELLED_ACTIONS = ("enqueue", "allocate", "preempt", "reclaim", "backfill", "gangpreempt", "gangreclaim")
VOLCANO_ACTIONS = (*MODELLED_ACTIONS, "shuffle")
# Plugins Phalanx models: in admission (priority, gang, drf, proportion, overcommit, conformance) or through the
# placement profile the lead builds (binpack, predicates, nodeorder).
MODELLED_PLUGINS = ("gang", "priority", "drf", "proportion", "binpack", "predicates", "nodeorder", "conformance",
                    "overcommit")
VOLCANO_PLUGINS = (*MODELLED_PLUGINS, "capacity", "cdp", "deviceshare", "extender", "network-topology-aware",
                   "nodegroup", "numaaware", "pdb", "rescheduling", "resource-strategy-fit", "resourcequota", "sla",
                   "task-topology", "tdm", "usage")
DEFAULT_OVERCOMMIT_FACTOR = 1.2  # overcommit plugin, `overcommit-factor`
_GO_INT = (-(2**63), 2**63 - 1)  # Go's int on the 64-bit platforms Volcano ships for
MAX_SCORE_WEIGHT = 2**31 - 1  # kube-scheduler's score weights are int32


@dataclass(frozen=True, slots=True)
class PluginConf:
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    flags: Mapping[str, bool] = field(default_factory=dict)  # enableJobOrder, enableHierarchy, ... as written

    def enabled(self, flag: str) -> bool:
        """A plugin's extension point is on unless its flag says false (Volcano's defaults for most points)."""
        return self.flags.get(flag, True)


@dataclass(frozen=True, slots=True)
class VolcanoConf:
    actions: tuple[str, ...]
    tiers: tuple[tuple[PluginConf, ...], ...]
    configurations: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # action -> arguments

    def plugin(self, name: str) -> PluginConf | None:
        for tier in self.tiers:
            for plugin in tier:
                if plugin.name == name:
                    return plugin
        return None

    def has_plugin(self, name: str) -> bool:
        return self.plugin(name) is not None

    def has_action(self, name: str) -> bool:
        return name in self.actions

    @property
    def overcommit_factor(self) -> float | None:
        """The overcommit plugin's factor, None when the plugin is off. Below 1.0 falls back to 1.2, as Volcano."""
        plugin = self.plugin("overcommit")
        if plugin is None:
            return None
        raw = plugin.arguments.get("overcommit-factor", DEFAULT_OVERCOMMIT_FACTOR)
        factor = float(raw)
        return factor if factor >= 1.0 else DEFAULT_OVERCOMMIT_FACTOR

    def not_modelled(self) -> list[str]:
        out = [f"action {a} (Volcano's; not modelled)" for a in self.actions if a not in MODELLED_ACTIONS]
        for tier in self.tiers:
            for plugin in tier:
                if plugin.name in MODELLED_PLUGINS:
                    continue
                known = "Volcano's; not modelled" if plugin.name in VOLCANO_PLUGINS else "not a Volcano plugin"
                out.append(f"plugin {plugin.name} ({known})")
        return out


def default_conf() -> VolcanoConf:
    return parse_volcano_conf(DEFAULT_CONF_TEXT)


def parse_volcano_conf(source: str | Mapping[str, Any]) -> VolcanoConf:
    """A conf from its YAML text, its parsed mapping, or a ConfigMap holding it under `volcano-scheduler.conf`.
    InputError names the object (the ConfigMap, else `volcano-scheduler.conf`) and the field."""
    try:
        doc = embedded_yaml(source, "(text)") if isinstance(source, str) else source
        doc = mapping(doc, "(document)", required=True)
    except InputError as exc:
        raise exc.at(obj="volcano-scheduler.conf") from None
    if doc.get("kind") != "ConfigMap":
        try:
            return _conf(doc)
        except InputError as exc:
            raise exc.at(obj="volcano-scheduler.conf") from None
    try:
        conf = _config_map_text(doc)
        try:
            return _conf(conf)
        except InputError as exc:
            raise InputError(exc.detail, field=f"data[{CONF_KEY}].{exc.field}") from None
    except InputError as exc:
        raise exc.at(obj=object_name(doc)) from None


def _config_map_text(doc: Mapping[str, Any]) -> Any:
    data = mapping(doc.get("data"), "data", required=True)
    if CONF_KEY not in data:
        raise fail("data", f"has no {CONF_KEY!r} key")
    raw = text(data[CONF_KEY], f"data[{CONF_KEY}]", required=True)
    return mapping(embedded_yaml(raw, f"data[{CONF_KEY}]"), f"data[{CONF_KEY}]", required=True)



def _conf(doc: Mapping[str, Any]) -> VolcanoConf:
    actions_text = text(doc.get("actions"), "actions", required=True)
    actions = tuple(a.strip() for a in actions_text.split(","))
    for action in actions:
        if action not in VOLCANO_ACTIONS:
            raise fail("actions", f"unknown action {action!r} (Volcano's: {', '.join(VOLCANO_ACTIONS)})")
    tiers: list[tuple[PluginConf, ...]] = []
    for i, raw_tier in enumerate(sequence(doc.get("tiers"), "tiers")):
        tier = mapping(raw_tier, f"tiers[{i}]")
        plugins: list[PluginConf] = []
        for j, raw_plugin in enumerate(sequence(tier.get("plugins"), f"tiers[{i}].plugins")):
            where = f"tiers[{i}].plugins[{j}]"
            item = mapping(raw_plugin, where)
            name = text(item.get("name"), f"{where}.name", required=True)
            arguments = dict(mapping(item.get("arguments"), f"{where}.arguments"))
            flags: dict[str, bool] = {}
            for key, value in item.items():
                if key in ("name", "arguments"):
                    continue
                if not str(key).startswith("enable"):
                    raise fail(f"{where}.{key}", "unknown field (want name, arguments or an enableXxx flag)")
                if not isinstance(value, bool):
                    raise fail(f"{where}.{key}", f"must be true or false, got {value!r}")
                flags[str(key)] = value
            plugins.append(PluginConf(name, arguments, flags))
        tiers.append(tuple(plugins))
    configurations: dict[str, Mapping[str, Any]] = {}
    for i, raw_conf in enumerate(sequence(doc.get("configurations"), "configurations")):
        item = mapping(raw_conf, f"configurations[{i}]")
        name = text(item.get("name"), f"configurations[{i}].name", required=True)
        configurations[name] = dict(mapping(item.get("arguments"), f"configurations[{i}].arguments"))
    conf = VolcanoConf(actions, tuple(tiers), configurations)
    _check_arguments(conf)
    return conf


def _factor(plugin: PluginConf, key: str, where: str) -> None:
    """A float argument (Arguments.GetFloat64: a float or an int), finite."""
    value = plugin.arguments.get(key)
    if value is None:
        return
    number: float | None = None
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        try:
            number = float(value)
        except (ValueError, OverflowError):
            number = None
    if number is None or not math.isfinite(number):
        raise fail(f"{where}.arguments.{key}", f"must be a finite number, got {shown(value)}")


def _whole(plugin: PluginConf, key: str, where: str) -> None:
    """An int argument (Arguments.GetInt): a YAML integer within Go's int."""
    value = plugin.arguments.get(key)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not _GO_INT[0] <= value <= _GO_INT[1]:
        raise fail(f"{where}.arguments.{key}",
                   f"must be a whole number that fits a 64-bit int, got {shown(value)} (Volcano reads it with "
                   "GetInt and ignores anything else with \"Could not parse argument\")")


def _check_arguments(conf: VolcanoConf) -> None:
    for i, tier in enumerate(conf.tiers):
        for j, plugin in enumerate(tier):
            where = f"tiers[{i}].plugins[{j}]"
            if plugin.name == "overcommit":
                _factor(plugin, "overcommit-factor", where)
            elif plugin.name == "binpack":
                _check_binpack(plugin, where)
            elif plugin.name == "nodeorder":
                for key in plugin.arguments:
                    if str(key).endswith(".weight"):
                        _whole(plugin, str(key), where)
            elif plugin.name == "drf" and plugin.flags.get("enableHierarchy") and conf.has_plugin("proportion"):
                raise fail(f"{where}.enableHierarchy", "drf with hierarchy conflicts with proportion (as Volcano)")


def _check_binpack(plugin: PluginConf, where: str) -> None:
    names = plugin.arguments.get("binpack.resources")
    if names is not None and not isinstance(names, str):
        raise fail(f"{where}.arguments.binpack.resources",
                   f"must be a string of resource names separated by commas, got {shown(names)}")
    for key in plugin.arguments:
        if key != "binpack.resources" and str(key).startswith("binpack."):
            _whole(plugin, str(key), where)


@dataclass(frozen=True, slots=True)
class PlacementScoring:
    """The Phalanx node scoring a conf implies: a NodeResourcesFit strategy, its resource weights and the score
    weights of NodeResourcesFit and NodeResourcesBalancedAllocation."""

    strategy: str  # "MostAllocated" (binpack, nodeorder mostrequested) or "LeastAllocated" (nodeorder default)
    resources: Mapping[str, int]
    fit_weight: int
    balanced_weight: int
    notes: tuple[str, ...] = ()

    def plugin_args(self) -> dict[str, dict[str, Any]]:
        """`Profile.plugin_args` entries for this scoring."""
        return {"NodeResourcesFit": {"scoringStrategy": {
            "type": self.strategy,
            "resources": [{"name": name, "weight": weight} for name, weight in self.resources.items()]}}}

    def score_weights(self) -> dict[str, int]:
        """`Profile.scores` entries for this scoring (a zero weight drops the plugin)."""
        out = {"NodeResourcesFit": self.fit_weight, "NodeResourcesBalancedAllocation": self.balanced_weight}
        return {name: weight for name, weight in out.items() if weight > 0}


def _int_arg(plugin: PluginConf, key: str, default: int, notes: list[str]) -> int:
    """A checked int argument (or its default), capped at a kube-scheduler score weight."""
    value = plugin.arguments.get(key)
    if not isinstance(value, int):
        return default
    if abs(value) > MAX_SCORE_WEIGHT:
        capped = MAX_SCORE_WEIGHT if value > 0 else -MAX_SCORE_WEIGHT
        notes.append(f"{plugin.name} argument {key} {value} is beyond a kube-scheduler score weight (int32): "
                     f"{capped} is used")
        return capped
    return value


def placement_scoring(conf: VolcanoConf) -> PlacementScoring:
    """Which node scoring the conf implies. binpack scores by most-allocated with `binpack.weight` and per-resource
    weights (`binpack.cpu`, `binpack.memory`, `binpack.resources.<name>`; a negative cpu or memory weight
    counts as 1, as binpack.go `calculateWeight`); without binpack, nodeorder's weights choose (defaults
    leastrequested 1, mostrequested 0, balancedresource 1: kube-scheduler's least-allocated plus balance).
    Without either, no resource scoring at all. A negative score weight (Volcano then favours the other end)
    cannot be given to a Phalanx score: that score is dropped, with a note."""
    binpack = conf.plugin("binpack")
    nodeorder = conf.plugin("nodeorder")
    notes: list[str] = []
    if binpack is not None:
        return _binpack_scoring(binpack, nodeorder, notes)
    if nodeorder is not None:
        least = _score_weight(nodeorder, "leastrequested.weight", 1, notes)
        most = _score_weight(nodeorder, "mostrequested.weight", 0, notes)
        balanced = _score_weight(nodeorder, "balancedresource.weight", 1, notes)
        if most > 0 and least > 0:
            notes.append("nodeorder weights both leastrequested and mostrequested; the larger weight is used")
        strategy, weight = ("MostAllocated", most) if most > least else ("LeastAllocated", least)
        return PlacementScoring(strategy, {"cpu": 1, "memory": 1}, weight, balanced, tuple(notes))
    return PlacementScoring("LeastAllocated", {"cpu": 1, "memory": 1}, 0, 0,
                            ("neither binpack nor nodeorder is on: nodes are not scored by resources",))


def _binpack_scoring(binpack: PluginConf, nodeorder: PluginConf | None, notes: list[str]) -> PlacementScoring:
    cpu = _int_arg(binpack, "binpack.cpu", 1, notes)
    memory = _int_arg(binpack, "binpack.memory", 1, notes)
    resources = {"cpu": cpu if cpu >= 0 else 1, "memory": memory if memory >= 0 else 1}
    for name in str(binpack.arguments.get("binpack.resources") or "").split(","):
        name = name.strip()
        if name:
            weight = _int_arg(binpack, f"binpack.resources.{name}", 1, notes)
            resources[name] = weight if weight >= 0 else 1
    resources = {k: v for k, v in resources.items() if v > 0} or {"cpu": 1, "memory": 1}
    balanced = _score_weight(nodeorder, "balancedresource.weight", 1, notes) if nodeorder is not None else 0
    if nodeorder is not None and _int_arg(nodeorder, "leastrequested.weight", 1, []) > 0:
        notes.append("nodeorder's leastrequested score is dropped: binpack's most-allocated takes its place")
    fit = _score_weight(binpack, "binpack.weight", 1, notes)
    return PlacementScoring("MostAllocated", resources, fit, balanced, tuple(notes))


def _score_weight(plugin: PluginConf, key: str, default: int, notes: list[str]) -> int:
    weight = _int_arg(plugin, key, default, notes)
    if weight < 0:
        notes.append(f"{plugin.name} argument {key} {weight} is negative (Volcano then favours the nodes this "
                     "score ranks last): not modelled, the score is dropped")
        return 0
    return weight
