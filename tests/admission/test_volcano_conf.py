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
    assert err.value.obj == "volcano-scheduler.conf"


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
