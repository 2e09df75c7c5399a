"""spec.topologySpreadConstraints and spec.affinity.podAffinity/podAntiAffinity: parsing, defaults, bad input."""

from collections.abc import Callable
from pathlib import Path

import pytest

from phalanx.api.objects import LabelSelector, PodAffinityTerm, Requirement, Source, SpreadConstraint, WeightedTerm
from phalanx.api.parse import parse_pod
from phalanx.cli import main
from phalanx.errors import InputError
from tests.builders import MakePod, write_manifests

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
SPREAD = "spec.topologySpreadConstraints"
AFFINITY = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution"
ANTI_PREFERRED = "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution"


def test_spread_defaults_as_the_scheduler_reads_them() -> None:
    """filterTopologySpreadConstraints: minDomains 1, nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore."""
    pod = MakePod("web-1").label("app", "web").spread(1, ZONE, match={"app": "web"}).req(cpu="1").obj()
    assert pod.placement.spread == (SpreadConstraint(
        max_skew=1, topology_key=ZONE, when_unsatisfiable="DoNotSchedule",
        selector=LabelSelector(match_labels=(("app", "web"),))),)


def test_spread_fields_and_match_label_keys() -> None:
    """matchLabelKeys joins the selector as `key In (the pod's value)`; a key the pod lacks adds nothing."""
    pod = (MakePod("web-1").label("app", "web").label("pod-template-hash", "abc")
           .spread(2, HOST, "ScheduleAnyway", match={"app": "web"},
                   matchLabelKeys=["pod-template-hash", "absent"], nodeAffinityPolicy="Ignore",
                   nodeTaintsPolicy="Honor")
           .spread(1, ZONE, match={"app": "web"}, minDomains=3).req(cpu="1").obj())
    soft, hard = pod.placement.spread
    assert soft.selector == LabelSelector(match_labels=(("app", "web"),),
                                          expressions=(Requirement("pod-template-hash", "In", ("abc",)),))
    assert (soft.when_unsatisfiable, soft.node_affinity_policy, soft.node_taints_policy) == \
        ("ScheduleAnyway", "Ignore", "Honor")
    assert hard.min_domains == 3 and hard.selector is not None


def test_no_label_selector_matches_nothing_an_empty_one_everything() -> None:
    none, empty = MakePod().spread(1, ZONE).spread(1, HOST, match={}).req(cpu="1").obj().placement.spread
    assert none.selector is None and empty.selector == LabelSelector()


def test_affinity_terms_resolve_their_namespaces() -> None:
    """getNamespacesFromPodAffinityTerm: no namespaces and no namespaceSelector means the pod's own;
    namespaceSelector {} means every namespace."""
    pod = (MakePod("api", "shop").label("app", "api").label("tier", "web")
           .pod_affinity(ZONE, {"app": "db"})
           .pod_affinity(ZONE, {"app": "cache"}, namespaces=["infra", "shop"])
           .pod_anti_affinity(HOST, {"app": "api"}, namespaceSelector={})
           .pod_anti_affinity(HOST, {"app": "api"}, weight=50, mismatchLabelKeys=["tier"], matchLabelKeys=["app2"])
           .req(cpu="1").obj())
    affinity = pod.placement.pod_affinity
    assert affinity is not None
    own, listed = affinity.required
    assert own.namespaces == frozenset({"shop"}) and not own.all_namespaces
    assert listed.namespaces == frozenset({"infra", "shop"})
    assert affinity.required_anti == (PodAffinityTerm(LabelSelector((("app", "api"),)), HOST, frozenset(), True),)
    assert affinity.preferred_anti == (WeightedTerm(50, PodAffinityTerm(
        LabelSelector((("app", "api"),), (Requirement("tier", "NotIn", ("web",)),)), HOST, frozenset({"shop"}))),)
    assert affinity.preferred == ()


def test_a_pod_without_pod_affinity_has_none() -> None:
    assert MakePod().req(cpu="1").obj().placement.pod_affinity is None
    assert MakePod().req(cpu="1").obj().placement.spread == ()


@pytest.mark.parametrize(("build", "field"), [
    (lambda: MakePod().spread(0, ZONE), f"{SPREAD}[0].maxSkew"),
    (lambda: MakePod().spread("1", ZONE), f"{SPREAD}[0].maxSkew"),  # type: ignore[arg-type]
    (lambda: MakePod().spread(1, ""), f"{SPREAD}[0].topologyKey"),
    (lambda: MakePod().spread(1, ZONE, "Sometimes"), f"{SPREAD}[0].whenUnsatisfiable"),
    (lambda: MakePod().spread(1, ZONE, minDomains=0), f"{SPREAD}[0].minDomains"),
    (lambda: MakePod().spread(1, ZONE, "ScheduleAnyway", minDomains=2), f"{SPREAD}[0].minDomains"),
    (lambda: MakePod().spread(1, ZONE, nodeAffinityPolicy="Maybe"), f"{SPREAD}[0].nodeAffinityPolicy"),
    (lambda: MakePod().spread(1, ZONE, nodeTaintsPolicy="honor"), f"{SPREAD}[0].nodeTaintsPolicy"),
    (lambda: MakePod().spread(1, ZONE, matchLabelKeys=["app"]), f"{SPREAD}[0].matchLabelKeys"),
    (lambda: MakePod().spread(1, ZONE, match={"app": "a"}, matchLabelKeys=["app"]), f"{SPREAD}[0].matchLabelKeys[0]"),
    (lambda: MakePod().spread(1, ZONE, labelSelector={"matchExpressions": [{"key": "a", "operator": "Gt",
                                                                             "values": ["1"]}]}),
     f"{SPREAD}[0].labelSelector.matchExpressions[0].operator"),
    (lambda: MakePod().spread(1, ZONE).spread(2, ZONE), f"{SPREAD}[1]"),
    (lambda: MakePod().pod_affinity(""), f"{AFFINITY}[0].topologyKey"),
    (lambda: MakePod().pod_affinity(ZONE, {"app": "a"}, namespaceSelector={"matchLabels": {"team": "x"}}),
     f"{AFFINITY}[0].namespaceSelector"),
    (lambda: MakePod().pod_affinity(ZONE, matchLabelKeys=["app"]), f"{AFFINITY}[0].matchLabelKeys"),
    (lambda: MakePod().pod_affinity(ZONE, mismatchLabelKeys=["app"]), f"{AFFINITY}[0].mismatchLabelKeys"),
    (lambda: MakePod().pod_affinity(ZONE, {"app": "a"}, matchLabelKeys=["app"]), f"{AFFINITY}[0].matchLabelKeys[0]"),
    (lambda: MakePod().pod_affinity(ZONE, {"a": "b"}, matchLabelKeys=["k"], mismatchLabelKeys=["k"]),
     f"{AFFINITY}[0].matchLabelKeys[0]"),
    (lambda: MakePod().pod_affinity(ZONE, namespaces=[""]), f"{AFFINITY}[0].namespaces[0]"),
    (lambda: MakePod().pod_anti_affinity(HOST, {"a": "b"}, weight=0), f"{ANTI_PREFERRED}[0].weight"),
    (lambda: MakePod().pod_anti_affinity(HOST, {"a": "b"}, weight=101), f"{ANTI_PREFERRED}[0].weight"),
])
def test_bad_fields_are_named(build: Callable[[], MakePod], field: str) -> None:
    with pytest.raises(InputError) as err:
        build().req(cpu="1").obj()
    assert err.value.field == field


def test_a_preferred_term_needs_its_pod_affinity_term() -> None:
    doc = MakePod().req(cpu="1").manifest()
    doc["spec"]["affinity"] = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5}]}}
    with pytest.raises(InputError) as err:
        parse_pod(doc, Source("f", 1))
    assert err.value.field == ("spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
                               ".podAffinityTerm")


def test_cli_exit_status_2_names_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(write_manifests(tmp_path / "pods.yaml", MakePod("web-0", "shop").req(cpu="1")
                               .pod_anti_affinity(HOST, {"app": "web"}, namespaceSelector={"matchLabels": {"a": "b"}})))
    assert main(["validate", path]) == 2
    err = capsys.readouterr().err
    assert err.startswith("phalanx: error: ") and "Pod shop/web-0" in err
    assert f"{'spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaceSelector'}" \
        in err and "Traceback" not in err
