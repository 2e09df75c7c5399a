"""Profiles: the built-in ones and profile files shaped like a KubeSchedulerConfiguration."""

from pathlib import Path

import pytest
import yaml

from phalanx.errors import InputError
from phalanx.scheduler.profiles import builtin, load_profile, parse_feature_gates
from phalanx.sim.simulation import Simulation
from tests.builders import MakeNode, MakePod, inputs_of


def test_built_in_profiles() -> None:
    default, gang = builtin("default"), builtin("gang")
    assert not default.gang and gang.gang
    kube_order = ["NodeName", "NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodeResourcesFit",
                  "PodTopologySpread", "InterPodAffinity"]
    assert [f for f in default.filters if f in kube_order] == kube_order
    # kube-scheduler's default score weights
    assert default.scores == {"TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1,
                              "PodTopologySpread": 2, "InterPodAffinity": 2, "NodeResourcesBalancedAllocation": 1}
    assert default.percentage_of_nodes_to_score == 0  # adaptive
    assert "PodTopologySpread" not in default.missing_plugins and "InterPodAffinity" not in default.missing_plugins


def test_feature_gates() -> None:
    assert parse_feature_gates("") == {}
    assert parse_feature_gates("GenericWorkload=true, PodGroupPreemptionPolicy=False") == {
        "GenericWorkload": True, "PodGroupPreemptionPolicy": False}
    for bad in ("GenericWorkload", "GenericWorkload=on", "NoSuchGate=true"):
        with pytest.raises(InputError) as err:
            parse_feature_gates(bad)
        assert err.value.field == "--feature-gates"


def test_a_profile_file(tmp_path: Path) -> None:
    path = tmp_path / "bin-packing.yaml"
    path.write_text("""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 30
featureGates: {GenericWorkload: true}
profiles:
- schedulerName: bin-packing
  plugins:
    score:
      disabled: [{name: NodeResourcesBalancedAllocation}]
      enabled: [{name: NodeResourcesFit, weight: 5}]
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources: [{name: cpu, weight: 2}, {name: memory, weight: 1}]
""")
    profile = load_profile(str(path))
    assert profile.name == "bin-packing"
    assert profile.gang
    assert profile.percentage_of_nodes_to_score == 30
    assert profile.scores == {"TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 5, "PodTopologySpread": 2,
                              "InterPodAffinity": 2}
    assert profile.plugin_args["NodeResourcesFit"]["scoringStrategy"]["type"] == "MostAllocated"
    assert profile.group_retry == "backoff"  # v1.37.2's, unless the file says otherwise
    path.write_text("featureGates: {GenericWorkload: true}\ngroupRetry: event\n")
    assert load_profile(str(path)).group_retry == "event"
    assert not load_profile(str(path)).consolidation
    path.write_text("profiles: [{schedulerName: movers, consolidation: true}]\n")
    assert load_profile(str(path)).consolidation  # KAI's consolidation, a Phalanx extension any profile may set


@pytest.mark.parametrize(("text", "field"), [
    ("percentageOfNodesToScore: 150\n", "percentageOfNodesToScore"),
    ("groupRetry: sometimes\n", "groupRetry"),
    ("consolidation: sometimes\n", "consolidation"),
    ("profiles: [{plugins: {filter: {enabled: [{name: Magic}]}}}]\n", "profiles[0].plugins.filter.enabled"),
    ("profiles: [{pluginConfig: [{name: Nope, args: {}}]}]\n", "profiles[0].pluginConfig[0].name"),
    ("profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: Fastest}}}]}]\n",
     "pluginConfig[NodeResourcesFit].args.scoringStrategy.type"),
])
def test_bad_profile_files_name_the_field(tmp_path: Path, text: str, field: str) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_profile(str(path))
    assert err.value.field == field
    assert err.value.file == str(path)


def test_an_unknown_profile_name() -> None:
    with pytest.raises(InputError, match="unknown profile 'fast'"):
        load_profile("fast")


def _profile_file(tmp_path: Path, post_filter: dict[str, object]) -> str:
    path = tmp_path / "profile.yaml"
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "profiles": [{"schedulerName": "quiet", "plugins": {"postFilter": post_filter}}]}
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return str(path)


def test_default_preemption_is_a_post_filter_a_profile_can_disable(tmp_path: Path) -> None:
    """DefaultPreemption runs unless `plugins.postFilter.disabled` names it (or `*`); `volcano` runs without it:
    Volcano's allocate never evicts, only its preempt and reclaim actions do. With it off, a higher-priority pod
    that fits nowhere waits instead of evicting."""
    assert builtin("gang").preemption and not builtin("volcano").preemption
    assert not load_profile(_profile_file(tmp_path, {"disabled": [{"name": "DefaultPreemption"}]})).preemption
    assert not load_profile(_profile_file(tmp_path, {"disabled": [{"name": "*"}]})).preemption
    with pytest.raises(InputError, match="unknown postFilter plugin 'Evict'") as err:
        load_profile(_profile_file(tmp_path, {"disabled": [{"name": "Evict"}]}))
    assert err.value.field == "profiles[0].plugins.postFilter.disabled"
    inputs = inputs_of(MakeNode("a").alloc(cpu="4"), MakePod("low").req(cpu="4").priority(1).grace(0),
                       MakePod("high").req(cpu="4").priority(100).arrival("10s"))
    for profile, evicted in (("gang", True), ("volcano", False)):
        sim = Simulation(inputs, builtin(profile))
        sim.run()
        assert (sim.pods["default/low"].preempted_count == 1) is evicted, profile
