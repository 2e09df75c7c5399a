"""Kueue's own configuration (`config.kueue.x-k8s.io` Configuration), as far as admission reads it: whether fair
sharing is on and with which preemption strategies. It comes bare (the `controller_manager_config.yaml` a Kueue
release ships) or inside its ConfigMap (`kueue-manager-config`, key `controller_manager_config.yaml`).

Read as Kueue v0.17.0 reads it (apis/config, pkg/config/validation.go):
- v1beta2: `fairSharing` present turns fair sharing on; its `preemptionStrategies` must be one of
  [LessThanOrEqualToFinalShare], [LessThanInitialShare] or [LessThanOrEqualToFinalShare, LessThanInitialShare]
  (validateFairSharing: an empty list is "Required", another list "Unsupported value").
- v1beta1: `fairSharing.enable: true` turns it on; an empty strategy list defaults to both, in that order
  (v1beta1 defaults.go); `enable: false` is off whatever the strategies (the conversion drops them).
`admissionFairSharing` (usageHalfLifeTime, usageSamplingInterval 5m by default, resourceWeights) is read for the
ClusterQueues with `admissionScope` (phalanx.admission.kueue_afs). What the configuration sets that admission
here does not model is named by `not_modelled` (waitForPodsReady, manageJobsWithoutQueueName, feature gates).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from phalanx.api.fields import boolean, fail, mapping, object_name, sequence, text
from phalanx.api.kinds import is_kueue_config
from phalanx.api.quantity import parse_duration
from phalanx.api.reading import MAX_NESTING, check_nesting
from phalanx.errors import InputError

GROUP = "config.kueue.x-k8s.io"
VERSIONS = ("v1beta1", "v1beta2")
CONFIG_KEY = "controller_manager_config.yaml"
LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"
VALID_STRATEGIES = ((LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,), (LESS_THAN_INITIAL_SHARE,),
                    (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE))


@dataclass(frozen=True, slots=True)
class AdmissionFairSharing:
    """`admissionFairSharing`: seconds, and resourceWeights (a resource not named weighs 1)."""

    half_life: float
    sampling: float = 300.0
    weights: tuple[tuple[str, float], ...] = ()

    def weight(self, resource: str) -> float:
        return next((w for name, w in self.weights if name == resource), 1.0)


@dataclass(frozen=True, slots=True)
class KueueConfig:
    """`fair_sharing`: the preemption strategies in order when fair sharing is on, else None;
    `admission_fair_sharing` when the Configuration sets it."""

    fair_sharing: tuple[str, ...] | None = None
    not_modelled: tuple[str, ...] = field(default_factory=tuple)
    name: str = "Configuration"
    admission_fair_sharing: AdmissionFairSharing | None = None

    def oracle_fields(self) -> dict[str, Any]:
        """The fields to hand the real Kueue (v1beta2) for the same behaviour."""
        out: dict[str, Any] = {}
        if self.fair_sharing is not None:
            out["fairSharing"] = {"preemptionStrategies": list(self.fair_sharing)}
        afs = self.admission_fair_sharing
        if afs is not None:
            out["admissionFairSharing"] = {"usageHalfLifeTime": f"{afs.half_life:g}s",
                                           "usageSamplingInterval": f"{afs.sampling:g}s",
                                           **({"resourceWeights": dict(afs.weights)} if afs.weights else {})}
        return out


def parse_kueue_config(doc: Mapping[str, Any]) -> KueueConfig:
    """The configuration of a Configuration or of its ConfigMap; InputError names the object and the field."""
    if doc.get("kind") != "ConfigMap":
        try:
            return _config(doc)
        except InputError as exc:
            raise exc.at(obj=object_name(doc)) from None
    where = f"data[{CONFIG_KEY}]"
    try:
        data = mapping(doc.get("data"), "data", required=True)
        raw = text(data.get(CONFIG_KEY), where, required=True)
        try:
            check_nesting(raw, file="")
            inner = yaml.safe_load(raw)
        except InputError:
            raise fail(where, f"nests deeper than {MAX_NESTING} levels") from None
        except yaml.YAMLError as exc:
            raise fail(where, f"is not valid YAML: {str(exc).splitlines()[0]}") from None
        inner = mapping(inner, where, required=True)
        if not (inner.get("kind") == "Configuration" and is_kueue_config(inner)):
            raise fail(f"{where}.kind", f"is not a {GROUP} Configuration")
        try:
            config = _config(inner)
        except InputError as exc:
            raise InputError(exc.detail, field=f"{where}.{exc.field}") from None
    except InputError as exc:
        raise exc.at(obj=object_name(doc)) from None
    return dataclasses.replace(config, name=object_name(doc))


def _config(doc: Mapping[str, Any]) -> KueueConfig:
    version = str(doc.get("apiVersion")).partition("/")[2]
    if version not in VERSIONS:
        raise fail("apiVersion", f"{doc.get('apiVersion')!r} is not read (Phalanx reads {GROUP}/"
                                 f"{' and '.join(VERSIONS)})")
    fair: tuple[str, ...] | None = None
    fs = mapping(doc.get("fairSharing"), "fairSharing")
    if doc.get("fairSharing") is not None:
        strategies = tuple(text(s, f"fairSharing.preemptionStrategies[{i}]")
                           for i, s in enumerate(sequence(fs.get("preemptionStrategies"),
                                                          "fairSharing.preemptionStrategies")))
        enabled = True
        if version == "v1beta1":
            enabled = boolean(fs.get("enable", False), "fairSharing.enable")
            if enabled and not strategies:
                strategies = VALID_STRATEGIES[2]
        if enabled:
            if not strategies:
                raise fail("fairSharing.preemptionStrategies", "Required value: must be specified")
            if strategies not in VALID_STRATEGIES:
                raise fail("fairSharing.preemptionStrategies",
                           f"Unsupported value: {list(strategies)}: supported values: "
                           + ", ".join(f'"{",".join(s)}"' for s in VALID_STRATEGIES))
            fair = strategies
    notes: list[str] = []
    afs = _admission_fair_sharing(doc.get("admissionFairSharing")) if doc.get("admissionFairSharing") is not None \
        else None
    wait = mapping(doc.get("waitForPodsReady"), "waitForPodsReady")
    if wait and (version == "v1beta2" or boolean(wait.get("enable", False), "waitForPodsReady.enable")):
        notes.append("waitForPodsReady: not modelled (a workload is admitted without waiting for its pods)")
    if boolean(doc.get("manageJobsWithoutQueueName", False), "manageJobsWithoutQueueName"):
        notes.append("manageJobsWithoutQueueName: true is not modelled (only workloads naming a LocalQueue are "
                     "queued)")
    gates = mapping(doc.get("featureGates"), "featureGates")
    if gates:
        notes.append(f"featureGates ({', '.join(sorted(gates))}): not modelled (Kueue v0.17.0's defaults)")
    return KueueConfig(fair, tuple(notes), object_name(doc), afs)


def _admission_fair_sharing(raw: Any) -> AdmissionFairSharing:
    """pkg/config/validation.go validateAdmissionFairSharing: half-life not negative, sampling above 0 (5m by
    default), weights not negative."""
    afs = mapping(raw, "admissionFairSharing")
    durations: dict[str, float] = {}
    for name, default in (("usageHalfLifeTime", 0.0), ("usageSamplingInterval", 300.0)):
        where = f"admissionFairSharing.{name}"
        value = afs.get(name)
        if value is None or value == "":
            durations[name] = default
            continue
        if isinstance(value, str) and value.strip().startswith("-"):
            raise fail(where, "must be greater than or equal to 0")
        try:
            durations[name] = parse_duration(value)
        except ValueError as exc:
            raise fail(where, str(exc)) from None
    if durations["usageSamplingInterval"] <= 0:
        raise fail("admissionFairSharing.usageSamplingInterval", "must be greater than 0")
    weights: list[tuple[str, float]] = []
    for name, value in mapping(afs.get("resourceWeights"), "admissionFairSharing.resourceWeights").items():
        where = f"admissionFairSharing.resourceWeights[{name}]"
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise fail(where, f"must be a number, got {value!r}")
        if value < 0:
            raise fail(where, "must be greater than or equal to 0")
        weights.append((str(name), float(value)))
    return AdmissionFairSharing(durations["usageHalfLifeTime"], durations["usageSamplingInterval"],
                                tuple(sorted(weights)))
