"""Profiles: a set of plugins, weights, scoring arguments and feature gates that make a policy.

Built-in: `default` (pod-at-a-time, as a plain v1.37 cluster), `gang` (GenericWorkload on: the v1.37
PodGroup cycle), and the peers on the same engine: `kueue` (Kueue-style admission in front of `gang`) and
`volcano` (Volcano-style queues in front of `gang`, packing nodes as Volcano's binpack plugin does); and
`phalanx`: `gang` plus exact placement of the gangs its PodGroup cycle cannot seat, scoring with
`fgd-stranding` on inputs with GPU-share requests (the openb trace replays, `for_gpu_sharing`). The queueing in
front of `kueue` and `volcano` is the simulator's (its Scenario, phalanx/sim/scenario.py), not the profile's.
A file shaped like a KubeSchedulerConfiguration (or one of its profiles) makes a custom one; Phalanx adds
a `featureGates` map, since kube-scheduler takes gates as a flag.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from phalanx.api.peers import PEERS
from phalanx.api.reading import read_yaml
from phalanx.errors import InputError
from phalanx.extras import require
from phalanx.scheduler.plugins.registry import (
    FILTERS,
    GPU_FILTERS,
    GPU_SCORERS,
    NOT_IMPLEMENTED,
    PLUGINS,
    RESERVERS,
    SCORERS,
    build,
    reserve_plugins,
)

KNOWN_GATES = ("GenericWorkload", "PodGroupPreemptionPolicy", "TopologyAwareWorkloadScheduling",
               "CompositePodGroup", "DRAWorkloadResourceClaims")
# v1.37 defaults: GenericWorkload (gang scheduling, workload-aware preemption) is beta but off.
# TopologyAwareWorkloadScheduling is alpha and off in v1.37.2 (pkg/features/kube_features.go), so no built-in
# profile turns it on; it needs GenericWorkload, as upstream.
DEFAULT_GATES: dict[str, bool] = {"GenericWorkload": False}
TOPOLOGY_GATE = "TopologyAwareWorkloadScheduling"
COMPOSITE_GATE = "CompositePodGroup"
# PodGroup-level ResourceClaims: beta and off in v1.37.2, needs GenericWorkload (and DynamicResourceAllocation).
WORKLOAD_CLAIMS_GATE = "DRAWorkloadResourceClaims"
# The gates of the built-in workload profiles (gang, kueue, volcano): a v1.37.2 cluster with gang scheduling
# turned on. `phalanx` also turns on PodGroup claims.
WORKLOAD_GATES: dict[str, bool] = {"GenericWorkload": True}
# PlacementScore plugins and weights that the TopologyAwareWorkloadScheduling gate adds (default_plugins.go).
PLACEMENT_SCORERS = ("NodeResourcesFit", "PodGroupPodsCount")
DEFAULT_PLACEMENT_SCORE_WEIGHTS: dict[str, int] = {"NodeResourcesFit": 1, "PodGroupPodsCount": 1}
DEFAULT_SCORE_WEIGHTS: dict[str, int] = {
    "TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1, "PodTopologySpread": 2, "InterPodAffinity": 2,
    "NodeResourcesBalancedAllocation": 1,
}


@dataclass(frozen=True)
class ExactPlacement:
    """Exact gang placement (phalanx/scheduler/placement/exact.py): when the PodGroup cycle cannot seat a gang,
    a greedy of its own and then a CP-SAT search place it whenever a placement exists."""

    budget: float = 0.1  # CP-SAT deterministic time per gang (about seconds of one core); 0: no search
    seed: int = 0


@dataclass
class Profile:
    name: str
    feature_gates: dict[str, bool] = field(default_factory=lambda: dict(DEFAULT_GATES))
    filters: list[str] = field(default_factory=lambda: list(FILTERS))
    scores: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_SCORE_WEIGHTS))
    plugin_args: dict[str, dict[str, Any]] = field(default_factory=dict)
    percentage_of_nodes_to_score: int = 0  # 0 = adaptive, as kube-scheduler
    # Among equal best scores: "random" (seeded; kube-scheduler picks uniformly) or "first" (lowest node index).
    tie_break: str = "random"
    reserve: list[str] = field(default_factory=lambda: list(RESERVERS))  # Reserve plugins, in order
    exact_placement: ExactPlacement | None = None  # the `phalanx` profile's exact gang placement
    # When a PodGroup whose cycle failed is tried again: "backoff" (v1.37.2: when its backoff ends, whatever the
    # events, since requeuePodGroup records no rejecting plugin) or "event" (Phalanx's own: parked until an event
    # that may help, as a pod is, then at once).
    group_retry: str = "backoff"
    # PlacementScore plugins and weights, used with TopologyAwareWorkloadScheduling on (absent or 0: not run).
    placement_scores: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_PLACEMENT_SCORE_WEIGHTS))
    # A built-in GPU-sharing policy whose filters, scores and Reserve this profile runs on inputs with
    # GPU-share requests (see `for_gpu_sharing`); None: the profile as it is.
    gpu_sharing: str | None = None
    # PostFilter: DefaultPreemption (pod, PodGroup and tree preemption) runs; a profile's
    # `plugins.postFilter.disabled` turns it off, and so does `volcano` (Volcano's allocate never evicts; only its
    # preempt and reclaim actions do, in the admission policy).
    preemption: bool = True
    # KAI's consolidation (phalanx/scheduler/consolidation.py): a pod that fits nowhere moves running pods first.
    consolidation: bool = False

    @property
    def gang(self) -> bool:
        return self.feature_gates.get("GenericWorkload", False)

    @property
    def topology_aware(self) -> bool:
        """The placement phase of KEP-5732 runs: its gate on, and GenericWorkload (which it depends on)."""
        return self.gang and self.feature_gates.get(TOPOLOGY_GATE, False)

    @property
    def composite(self) -> bool:
        """CompositePodGroup trees are scheduled (KEP-6012): its gate on, with the two it depends on in
        kube_features.go, GenericWorkload and TopologyAwareWorkloadScheduling."""
        return self.topology_aware and self.feature_gates.get(COMPOSITE_GATE, False)

    @property
    def workload_claims(self) -> bool:
        """A PodGroup's spec.resourceClaims are its members' shared claims (DRAWorkloadResourceClaims on, with
        GenericWorkload). Off, the API server drops the field and every pod entry is the pod's own claim."""
        return self.gang and self.feature_gates.get(WORKLOAD_CLAIMS_GATE, False)

    @property
    def missing_plugins(self) -> list[str]:
        """kube-scheduler default plugins this profile would run in a real cluster but Phalanx lacks."""
        return list(NOT_IMPLEMENTED)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "featureGates": dict(self.feature_gates), "filters": list(self.filters),
                "scores": dict(self.scores), "reserve": list(self.reserve),
                "percentageOfNodesToScore": self.percentage_of_nodes_to_score, "tieBreak": self.tie_break,
                "notImplemented": self.missing_plugins, "placementScores": dict(self.placement_scores),
                "gpuSharing": self.gpu_sharing, "groupRetry": self.group_retry, "preemption": self.preemption,
                "consolidation": self.consolidation,
                "exactPlacement": None if self.exact_placement is None else
                {"budgetSeconds": self.exact_placement.budget, "seed": self.exact_placement.seed}}


# The FGD paper's GPU-sharing policies (FGD-PROTOCOL §4): fit + GpuShare filters, one score plugin,
# every node scored, ties to the lowest node index, and the device choice each policy uses at Reserve.
GPU_POLICIES: dict[str, tuple[str, str]] = {
    "random": ("RandomScore", "random"),
    "dotprod": ("DotProductScore", "best"),
    "clustering": ("GpuClusteringScore", "best"),
    "packing": ("GpuPackingScore", "best"),
    "bestfit": ("BestFitScore", "best"),
    "fgd": ("FGDScore", "fgd"),
    "fgd-stranding": ("StrandingScore", "fgd"),  # Phalanx's: FGD plus GPUs stranded without CPU or memory
}


def gpu_profile(name: str) -> Profile:
    scorer, selection = GPU_POLICIES[name]
    return Profile(name, filters=["NodeResourcesFit", "GpuShare"], scores={scorer: 1},
                   plugin_args={"GpuShare": {"deviceSelection": selection}}, percentage_of_nodes_to_score=100,
                   tie_break="first", reserve=reserve_plugins(["GpuShare"]))


BUILTIN = ("default", "gang", "kueue", "volcano", *(peer.name for peer in PEERS), "phalanx", *GPU_POLICIES)
GROUP_RETRIES = ("backoff", "event")


def builtin(name: str) -> Profile:
    if name == "default":
        return Profile("default")
    if name == "gang":
        return Profile("gang", feature_gates=dict(WORKLOAD_GATES))
    if name == "kueue":  # Kueue's queues in front of v1.37 gang placement
        return Profile(name, feature_gates=dict(WORKLOAD_GATES))
    peer = next((peer for peer in PEERS if peer.name == name), None)
    if peer is not None:  # a later peer's queues in front of the engine, with the profile it describes
        return profile_from_config({"featureGates": dict(WORKLOAD_GATES), **peer.profile, "schedulerName": name},
                                   f"the {name} profile")
    if name == "volcano":
        # Volcano's default tiers score with binpack: pack nodes (MostAllocated) rather than spread.
        # Volcano's scheduler runs a session each second over every pending job: a job is tried again as soon as
        # room frees, not on kube-scheduler's group backoff.
        return Profile("volcano", feature_gates=dict(WORKLOAD_GATES),
                       plugin_args={"NodeResourcesFit": {"scoringStrategy": {"type": "MostAllocated"}}},
                       group_retry="event", preemption=False)
    if name == "phalanx":  # `gang`, gates and all, plus exact placement of the gangs its cycle cannot seat
        return replace(builtin("gang"), name="phalanx", exact_placement=ExactPlacement(),
                       feature_gates={**WORKLOAD_GATES, WORKLOAD_CLAIMS_GATE: True},
                       gpu_sharing="fgd-stranding", group_retry="event")
    if name in GPU_POLICIES:
        return gpu_profile(name)
    raise InputError(f"unknown profile {name!r} (built-in: {', '.join(BUILTIN)}; or a path to a profile file)",
                     field="--profile")


def for_gpu_sharing(profile: Profile) -> Profile:
    """The profile to run on inputs with GPU-share requests: with `gpu_sharing` set, that GPU policy's
    filters, scores, plugin arguments, node scoring and Reserve under this profile's name, gates and
    placement; otherwise the profile itself."""
    if profile.gpu_sharing is None:
        return profile
    policy = gpu_profile(profile.gpu_sharing)
    return replace(profile, filters=policy.filters, scores=policy.scores, plugin_args=policy.plugin_args,
                   percentage_of_nodes_to_score=policy.percentage_of_nodes_to_score, tie_break=policy.tie_break,
                   reserve=policy.reserve)


def parse_feature_gates(text: str) -> dict[str, bool]:
    """`GenericWorkload=true,PodGroupPreemptionPolicy=false` → a map, as kube components read it."""
    gates: dict[str, bool] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        if not sep or value.lower() not in ("true", "false"):
            raise InputError(f"invalid feature gate {part!r}: want Name=true|false", field="--feature-gates")
        if name not in KNOWN_GATES:
            raise InputError(f"unrecognized feature gate {name!r} (known: {', '.join(KNOWN_GATES)})",
                             field="--feature-gates")
        gates[name] = value.lower() == "true"
    return gates


def _names(section: Mapping[str, Any], key: str, where: str) -> list[tuple[str, int | None]]:
    items = section.get(key) or []
    if not isinstance(items, list):
        raise InputError("must be a list", field=f"{where}.{key}")
    out: list[tuple[str, int | None]] = []
    for i, item in enumerate(items):
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise InputError("must be an object with a name", field=f"{where}.{key}[{i}]")
        weight = item.get("weight")
        out.append((item["name"], int(weight) if weight is not None else None))
    return out


def profile_from_config(doc: Mapping[str, Any], path: str) -> Profile:
    """A Profile from a KubeSchedulerConfiguration (its first profile) or a bare profile object."""
    try:
        return _profile_from_config(doc, path)
    except InputError as exc:
        raise exc.at(file=path, obj="KubeSchedulerConfiguration") from None


def _profile_from_config(doc: Mapping[str, Any], path: str) -> Profile:
    gates = dict(DEFAULT_GATES)
    top_gates = doc.get("featureGates") or {}
    pct = doc.get("percentageOfNodesToScore")
    raw_profile: Mapping[str, Any] = doc
    if isinstance(doc.get("profiles"), list) and doc["profiles"]:
        raw_profile = doc["profiles"][0]
    name = str(raw_profile.get("schedulerName") or os.path.splitext(os.path.basename(path))[0])
    for source in (top_gates, raw_profile.get("featureGates") or {}):
        if not isinstance(source, Mapping):
            raise InputError("must be a map of gate: true|false", field="featureGates")
        for gate, value in source.items():
            if gate not in KNOWN_GATES:
                raise InputError(f"unrecognized feature gate {gate!r}", field=f"featureGates.{gate}")
            gates[str(gate)] = bool(value)
    if raw_profile.get("percentageOfNodesToScore") is not None:
        pct = raw_profile["percentageOfNodesToScore"]
    profile = Profile(name=name, feature_gates=gates)
    if pct is not None:
        if not isinstance(pct, int) or not 0 <= pct <= 100:
            raise InputError("must be an integer from 0 to 100", field="percentageOfNodesToScore")
        profile.percentage_of_nodes_to_score = pct
    exact = raw_profile.get("exactPlacement", doc.get("exactPlacement"))
    if exact is not None:
        profile.exact_placement = _exact_placement(exact)
    consolidation = raw_profile.get("consolidation", doc.get("consolidation"))
    if consolidation is not None:
        if not isinstance(consolidation, bool):
            raise InputError("must be true or false", field="consolidation")
        profile.consolidation = consolidation
    retry = raw_profile.get("groupRetry", doc.get("groupRetry"))
    if retry is not None:
        if retry not in GROUP_RETRIES:
            raise InputError(f"must be one of {', '.join(GROUP_RETRIES)}, got {retry!r}", field="groupRetry")
        profile.group_retry = retry
    plugins = raw_profile.get("plugins") or {}
    for point, known in (("filter", FILTERS + GPU_FILTERS), ("score", SCORERS + GPU_SCORERS)):
        section = plugins.get(point) or {}
        where = f"profiles[0].plugins.{point}"
        for plugin, _ in _names(section, "disabled", where):
            if plugin == "*":
                if point == "filter":
                    profile.filters.clear()
                else:
                    profile.scores.clear()
            elif point == "filter":
                profile.filters = [p for p in profile.filters if p != plugin]
            else:
                profile.scores.pop(plugin, None)
        for plugin, weight in _names(section, "enabled", where):
            if plugin not in known:
                raise InputError(f"unknown or unimplemented {point} plugin {plugin!r} "
                                 f"(known: {', '.join(known)})", field=f"{where}.enabled")
            if point == "filter":
                if plugin not in profile.filters:
                    profile.filters.append(plugin)
            else:
                profile.scores[plugin] = weight if weight is not None else DEFAULT_SCORE_WEIGHTS.get(plugin, 1)
    section = plugins.get("postFilter") or {}
    where = "profiles[0].plugins.postFilter"
    for plugin, _ in _names(section, "disabled", where):
        if plugin not in ("*", "DefaultPreemption"):
            raise InputError(f"unknown postFilter plugin {plugin!r} (known: DefaultPreemption)",
                             field=f"{where}.disabled")
        profile.preemption = False
    for plugin, _ in _names(section, "enabled", where):
        if plugin != "DefaultPreemption":
            raise InputError(f"unknown postFilter plugin {plugin!r} (known: DefaultPreemption)",
                             field=f"{where}.enabled")
        profile.preemption = True
    section = plugins.get("placementScore") or {}
    where = "profiles[0].plugins.placementScore"
    for plugin, _ in _names(section, "disabled", where):
        if plugin == "*":
            profile.placement_scores.clear()
        profile.placement_scores.pop(plugin, None)
    for plugin, weight in _names(section, "enabled", where):
        if plugin not in PLACEMENT_SCORERS:
            raise InputError(f"unknown placement score plugin {plugin!r} (known: {', '.join(PLACEMENT_SCORERS)})",
                             field=f"{where}.enabled")
        profile.placement_scores[plugin] = weight or 1  # as upstream: a weight of 0 (or none) counts as 1
    for i, item in enumerate(raw_profile.get("pluginConfig") or []):
        if not isinstance(item, Mapping) or item.get("name") not in PLUGINS:
            raise InputError("names no known plugin", field=f"profiles[0].pluginConfig[{i}].name")
        profile.plugin_args[str(item["name"])] = dict(item.get("args") or {})
    profile.reserve = reserve_plugins(profile.filters)  # a Reserve half runs with its Filter
    # Build once so that bad plugin arguments fail here, not mid-simulation.
    for plugin in {*profile.filters, *profile.scores}:
        build(plugin, profile.plugin_args.get(plugin, {}))
    return profile


def _exact_placement(value: Any) -> ExactPlacement | None:
    """`exactPlacement: {budgetSeconds: 0.1, seed: 0}` (a Phalanx extension; `{}` or true: the defaults,
    false: off)."""
    if isinstance(value, bool):
        return ExactPlacement() if value else None
    if not isinstance(value, Mapping) or set(value) - {"budgetSeconds", "seed"}:
        raise InputError("must be true, false or a map of budgetSeconds and seed", field="exactPlacement")
    budget, seed = value.get("budgetSeconds", ExactPlacement.budget), value.get("seed", ExactPlacement.seed)
    if isinstance(budget, bool) or not isinstance(budget, int | float) or budget < 0:
        raise InputError("must be a number of seconds, 0 or more", field="exactPlacement.budgetSeconds")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError("must be an integer", field="exactPlacement.seed")
    return ExactPlacement(float(budget), seed)


def load_profile(spec: str) -> Profile:
    """A built-in profile by name, or a profile file by path; MissingExtra when it asks for exact placement and
    OR-Tools is not installed."""
    profile = builtin(spec) if spec in BUILTIN or not os.path.exists(spec) else _profile_file(spec)
    if profile.exact_placement is not None:
        require("ortools", f"profile {profile.name!r} (exact gang placement)")
    return profile


def _profile_file(spec: str) -> Profile:
    try:
        doc = read_yaml(spec)
    except InputError as exc:
        raise InputError(f"cannot read profile: {exc.detail}", file=spec, obj=exc.obj) from None
    if not isinstance(doc, Mapping):
        raise InputError("a profile file must hold one object", file=spec)
    return profile_from_config(doc, spec)
