"""`volcano-scheduler.conf` parsing (volcano-sh/volcano `pkg/scheduler/conf/scheduler_conf.go`,
`pkg/scheduler/util.go` UnmarshalSchedulerConf) and the placement scoring a conf implies."""

from __future__ import annotations

import pytest

from phalanx.admission.volcano_conf import (
    DEFAULT_OVERCOMMIT_FACTOR,
    default_conf,
    parse_volcano_conf,
    placement_scoring,
)
from phalanx.errors import InputError
from phalanx.scheduler.plugins.node_resources import NodeResourcesFit

# The shape of the helm chart's ConfigMap (installer/helm/chart/volcano/templates/scheduler.yaml), restated.
CONFIGMAP = {
    "apiVersion": "v1", "kind": "ConfigMap",
    "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
    "data": {"volcano-scheduler.conf": """
actions: "enqueue, allocate, backfill, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
    arguments:
      overcommit-factor: 1.5
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
    arguments:
      binpack.weight: 10
      binpack.cpu: 5
      binpack.memory: 1
      binpack.resources: nvidia.com/gpu
      binpack.resources.nvidia.com/gpu: 2
configurations:
- name: reclaim
  arguments:
    enablePredicateErrorCache: true
"""},
}


def test_default_conf() -> None:
    """pkg/scheduler/util.go DefaultSchedulerConf: enqueue, allocate, backfill; tiers priority, gang, conformance |
    overcommit, drf, predicates, proportion, nodeorder."""
    conf = default_conf()
    assert conf.actions == ("enqueue", "allocate", "backfill")
    assert [[p.name for p in tier] for tier in conf.tiers] == [
        ["priority", "gang", "conformance"], ["overcommit", "drf", "predicates", "proportion", "nodeorder"]]
    assert conf.overcommit_factor == DEFAULT_OVERCOMMIT_FACTOR == 1.2
    assert conf.not_modelled() == []


def test_configmap_wrapped() -> None:
    """The conf as deployed: a ConfigMap's `data["volcano-scheduler.conf"]`, with plugin arguments, enable flags
    and per-action configurations."""
    conf = parse_volcano_conf(CONFIGMAP)
    assert conf.actions == ("enqueue", "allocate", "backfill", "reclaim")
    gang = conf.plugin("gang")
    assert gang is not None and not gang.enabled("enablePreemptable") and gang.enabled("enableJobReady")
    assert conf.overcommit_factor == 1.5
    assert conf.configurations == {"reclaim": {"enablePredicateErrorCache": True}}
    assert conf.has_action("reclaim") and not conf.has_action("preempt")


def test_text_and_overcommit_floor() -> None:
    """overcommit.go: a factor below 1.0 falls back to the default 1.2; without the plugin there is none."""
    conf = parse_volcano_conf('actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: overcommit\n'
                              '    arguments:\n      overcommit-factor: 0.5\n')
    assert conf.overcommit_factor == 1.2
    assert parse_volcano_conf({"actions": "allocate", "tiers": []}).overcommit_factor is None


def test_not_modelled_names_plugins_and_actions() -> None:
    conf = parse_volcano_conf({"actions": "enqueue, allocate, shuffle",
                               "tiers": [{"plugins": [{"name": "capacity"}, {"name": "my-plugin"}]}]})
    assert conf.not_modelled() == ["action shuffle (Volcano's; not modelled)",
                                   "plugin capacity (Volcano's; not modelled)",
                                   "plugin my-plugin (not a Volcano plugin)"]


@pytest.mark.parametrize(("source", "field"), [
    ({"actions": "enqueue, allocat"}, "actions"),  # UnmarshalSchedulerConf: "failed to find Action"
    ({"tiers": []}, "actions"),
    ({"actions": "allocate", "tiers": {"plugins": []}}, "tiers"),
    ({"actions": "allocate", "tiers": [{"plugins": [{"arguments": {}}]}]}, "tiers[0].plugins[0].name"),
    ({"actions": "allocate", "tiers": [{"plugins": [{"name": "gang", "enableJobReady": "yes"}]}]},
     "tiers[0].plugins[0].enableJobReady"),
    ({"actions": "allocate", "tiers": [{"plugins": [{"name": "gang", "weight": 3}]}]},
     "tiers[0].plugins[0].weight"),
    ({"actions": "allocate", "tiers": [{"plugins": [{"name": "overcommit",
                                                     "arguments": {"overcommit-factor": "lots"}}]}]},
     "tiers[0].plugins[0].arguments.overcommit-factor"),
    ({"actions": "allocate", "tiers": [{"plugins": [{"name": "binpack", "arguments": {"binpack.cpu": "x"}}]}]},
     "tiers[0].plugins[0].arguments.binpack.cpu"),
    ({"actions": "allocate", "tiers": [{"plugins": [{"name": "drf", "enableHierarchy": True},
                                                    {"name": "proportion"}]}]},
     "tiers[0].plugins[0].enableHierarchy"),  # util.go: proportion and hierarchical drf conflict
    ({"kind": "ConfigMap", "data": {"other.conf": "x"}}, "data"),
    ({"kind": "ConfigMap", "data": {"volcano-scheduler.conf": "actions: [unclosed"}}, "data[volcano-scheduler.conf]"),
    ("- just\n- a list\n", "(document)"),
])
def test_bad_conf_names_the_field(source: object, field: str) -> None:
    with pytest.raises(InputError) as err:
        parse_volcano_conf(source)  # type: ignore[arg-type]
    assert err.value.field == field
    config_map = isinstance(source, dict) and source.get("kind") == "ConfigMap"
    assert err.value.obj == ("ConfigMap (unnamed)" if config_map else "volcano-scheduler.conf")


def test_binpack_implies_most_allocated() -> None:
    """binpack.go calculateWeight: binpack.weight, binpack.cpu, binpack.memory and binpack.resources.<name>."""
    scoring = placement_scoring(parse_volcano_conf(CONFIGMAP))
    assert scoring.strategy == "MostAllocated"
    assert dict(scoring.resources) == {"cpu": 5, "memory": 1, "nvidia.com/gpu": 2}
    assert scoring.score_weights() == {"NodeResourcesFit": 10, "NodeResourcesBalancedAllocation": 1}
    fit = NodeResourcesFit(scoring.plugin_args()["NodeResourcesFit"])  # a valid Phalanx plugin configuration
    assert fit.strategy == "MostAllocated"


def test_nodeorder_default_is_least_allocated_and_balanced() -> None:
    """nodeorder.go calculateWeight defaults: leastrequested 1, mostrequested 0, balancedresource 1 (as the
    kube-scheduler defaults)."""
    scoring = placement_scoring(default_conf())
    assert (scoring.strategy, scoring.fit_weight, scoring.balanced_weight) == ("LeastAllocated", 1, 1)
    assert NodeResourcesFit(scoring.plugin_args()["NodeResourcesFit"]).strategy == "LeastAllocated"


def test_nodeorder_mostrequested_and_nothing() -> None:
    conf = parse_volcano_conf({"actions": "allocate", "tiers": [{"plugins": [{"name": "nodeorder", "arguments": {
        "leastrequested.weight": 0, "mostrequested.weight": 2, "balancedresource.weight": 0}}]}]})
    scoring = placement_scoring(conf)
    assert (scoring.strategy, scoring.score_weights()) == ("MostAllocated", {"NodeResourcesFit": 2})
    bare = placement_scoring(parse_volcano_conf({"actions": "allocate", "tiers": [{"plugins": [{"name": "gang"}]}]}))
    assert bare.score_weights() == {} and bare.notes


def _binpack(**arguments: object) -> dict[str, object]:
    return {"actions": "allocate", "tiers": [{"plugins": [{"name": "binpack", "arguments": arguments}]}]}


def _nodeorder(**arguments: object) -> dict[str, object]:
    return {"actions": "allocate", "tiers": [{"plugins": [{"name": "nodeorder", "arguments": arguments}]}]}


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), "1e30", 1e30, 2.5, 4.0, "10", True,
                                   2**63, -(2**63) - 1, 10**400, [1], {"a": 1}])
@pytest.mark.parametrize("key", ["binpack.weight", "binpack.cpu", "binpack.memory"])
def test_binpack_weights_are_whole_numbers_as_volcano_reads_them(key: str, value: object) -> None:
    """binpack.go calculateWeight reads its weights with Arguments.GetInt (framework/arguments.go): only a YAML
    integer that fits Go's int passes its type assertion; NaN, inf, 1e30, 2.5, "10" and true do not (Volcano
    logs "Could not parse argument" and keeps 1). Phalanx refuses them, naming the argument."""
    with pytest.raises(InputError) as err:
        parse_volcano_conf(_binpack(**{key: value}))
    assert err.value.field == f"tiers[0].plugins[0].arguments.{key}"
    assert "whole number" in err.value.detail


@pytest.mark.parametrize("key", ["leastrequested.weight", "mostrequested.weight", "balancedresource.weight",
                                 "nodeaffinity.weight", "tainttoleration.weight"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), "1e30", 1e30, "3"])
def test_nodeorder_weights_are_whole_numbers(key: str, value: object) -> None:
    """nodeorder.go calculateWeight: every `<score>.weight` through Arguments.GetInt."""
    with pytest.raises(InputError) as err:
        parse_volcano_conf(_nodeorder(**{key: value}))
    assert err.value.field == f"tiers[0].plugins[0].arguments.{key}"


def test_a_named_resources_weight_is_a_whole_number_too() -> None:
    with pytest.raises(InputError) as err:
        parse_volcano_conf(_binpack(**{"binpack.resources": "nvidia.com/gpu",
                                       "binpack.resources.nvidia.com/gpu": float("nan")}))
    assert err.value.field == "tiers[0].plugins[0].arguments.binpack.resources.nvidia.com/gpu"
    with pytest.raises(InputError) as err:
        parse_volcano_conf(_binpack(**{"binpack.resources": ["nvidia.com/gpu"]}))
    assert err.value.field == "tiers[0].plugins[0].arguments.binpack.resources"


@pytest.mark.parametrize("value", [float("nan"), float("inf"), "inf", "nan", True, [2]])
def test_overcommit_factor_is_a_finite_number(value: object) -> None:
    """overcommit.go reads the factor with GetFloat64 (a float or an int); NaN would compare false with every
    idle amount (nothing ever enqueued) and inf would enqueue everything: refused."""
    conf = {"actions": "enqueue", "tiers": [{"plugins": [{"name": "overcommit",
                                                          "arguments": {"overcommit-factor": value}}]}]}
    with pytest.raises(InputError) as err:
        parse_volcano_conf(conf)
    assert err.value.field == "tiers[0].plugins[0].arguments.overcommit-factor"


def test_huge_weights_are_capped_with_a_note() -> None:
    """A weight Volcano takes (any int64) but larger than a kube-scheduler score weight (int32) is capped at
    2147483647 for Phalanx's scoring, and the note says so; the run does not overflow."""
    scoring = placement_scoring(parse_volcano_conf(_binpack(**{"binpack.weight": 2**62, "binpack.cpu": 2**40})))
    assert scoring.fit_weight == 2**31 - 1 and scoring.resources["cpu"] == 2**31 - 1
    assert any("2147483647" in note for note in scoring.notes)
    NodeResourcesFit(scoring.plugin_args()["NodeResourcesFit"])


def test_conf_text_that_nests_too_deep_or_has_huge_numbers_is_bad_input() -> None:
    deep = "actions: allocate\ntiers: " + "[" * 5000 + "]" * 5000 + "\n"
    with pytest.raises(InputError) as err:
        parse_volcano_conf({"kind": "ConfigMap", "data": {"volcano-scheduler.conf": deep}})
    assert err.value.field == "data[volcano-scheduler.conf]"
    digits = "actions: allocate\ntiers:\n- plugins:\n  - name: binpack\n    arguments: {binpack.weight: " \
             + "9" * 5000 + "}\n"
    with pytest.raises(InputError) as err:
        parse_volcano_conf({"kind": "ConfigMap", "data": {"volcano-scheduler.conf": digits}})
    assert err.value.field == "data[volcano-scheduler.conf]"
