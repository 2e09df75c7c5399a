"""The YuniKorn-style admission: queues.yaml parsing and its refusals (each naming the field), YuniKorn's own
example configurations, placement, admission against max and maxapplications, gangs, preemption toward
guaranteed resources, the report rows and the factory."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from phalanx.admission.base import Admit, EvictWorkload, PodSet, QueuedWorkload
from phalanx.admission.yunikorn import (
    MAX_APPS_REACHED,
    NOT_ENOUGH_QUEUE_QUOTA,
    REJECTED,
    load_yunikorn,
    parse_task_groups,
)
from phalanx.admission.yunikorn_conf import parse_yunikorn_conf
from phalanx.admission.yunikorn_factory import YunikornFactory
from phalanx.api.objects import Queueing, Source
from phalanx.api.yunikorn_peer import is_conf as is_yunikorn_conf
from phalanx.errors import InputError

DATA = Path(__file__).parent / "data" / "yunikorn"
GI = 2**30


def wl(key: str, queue: str = "", cpu: int = 1000, *, t: float = 0.0, prio: int = 0, count: int = 1,
       min_count: int | None = None, ns: str = "ns") -> QueuedWorkload:
    return QueuedWorkload(key, ns, queue, prio, t, (PodSet("main", count, {"cpu": cpu}, min_count),))


def admitted(decisions: list[Admit | EvictWorkload]) -> list[str]:
    return [d.key for d in decisions if isinstance(d, Admit)]


def two_queues(extra_a: str = "", extra_b: str = "") -> str:
    return f"""
partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            resources: {{guaranteed: {{vcore: 4}}}}{extra_a}
          - name: b
            resources: {{guaranteed: {{vcore: 4}}}}{extra_b}
"""


# --- parsing ---

def test_configmap_and_bare_forms_parse_alike() -> None:
    text = two_queues()
    bare = parse_yunikorn_conf(text)
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "yunikorn-configs"},
          "data": {"queues.yaml": text}}
    assert is_yunikorn_conf(cm) and is_yunikorn_conf(yaml.safe_load(text))
    assert parse_yunikorn_conf(cm) == bare
    a = bare.partitions[0].queues()["root.a"]
    assert a.guaranteed == {"vcore": 4000} and a.leaf


def test_quantities_follow_yunikorns_grammar() -> None:
    conf = parse_yunikorn_conf("""
partitions:
  - queues:
      - name: q
        resources: {max: {vcore: 500m, memory: 2Gi, nvidia.com/gpu: 2, pods: " 25 k"}}
""")
    q = conf.partitions[0].queues()["root.q"]
    assert q.max == {"vcore": 500, "memory": 2 * GI, "nvidia.com/gpu": 2, "pods": 25_000}
    assert conf.partitions[0].name == "default"


BAD = [
    ("partitions: [", "(text)", "is not valid YAML"),
    ("partitions:\n  - name: default\n", "partitions[0].queues", "queue config is not set"),
    ("partitions:\n  - queues: [{name: root, maxApplications: 3}]\n", "partitions[0].queues[0].maxApplications",
     "not found"),
    ("partitions:\n  - queues: [{name: root}]\n    placementRules: []\n", "partitions[0].placementRules",
     "not found"),
    ("partitions:\n  - queues: [{name: root, queues: [{name: a, resources: {max: {memory: -5}}}]}]\n",
     "partitions[0].queues[0].queues[0].resources.max.memory", "invalid quantity"),
    ("partitions:\n  - queues: [{name: root, queues: [{name: a, resources: {max: {memory: 1.5Gi}}}]}]\n",
     "partitions[0].queues[0].queues[0].resources.max.memory", "invalid quantity"),
    ("partitions:\n  - queues: [{name: root, queues: [{name: a, resources: {max: {memory: 500m}}}]}]\n",
     "partitions[0].queues[0].queues[0].resources.max.memory", "invalid suffix"),
    ("partitions:\n  - queues: [{name: root, queues: [{name: a, resources: {guaranteed: {vcore: 2}, "
     "max: {vcore: 1}}}]}]\n", "partitions[0].queues[0].queues[0].resources.guaranteed", "larger than maximum"),
    ("partitions:\n  - queues: [{name: root, queues: [{name: p, resources: {max: {vcore: 1}}, "
     "queues: [{name: c, resources: {max: {vcore: 2}}}]}]}]\n",
     "partitions[0].queues[0].queues[0].queues[0].resources.max", "max resource of parent"),
    ("partitions:\n  - queues: [{name: root, queues: [{name: a}, {name: A}]}]\n",
     "partitions[0].queues[0].queues[1].name", "duplicate child name"),
    ("partitions:\n  - queues: [{name: root, queues: [{name: a.b}]}]\n", "partitions[0].queues[0].queues[0].name",
     "invalid queue name"),
    ("partitions:\n  - queues: [{name: root, resources: {max: {vcore: 1}}}]\n", "partitions[0].queues[0].resources",
     "root queue must not have resource limits set"),
    ("partitions:\n  - queues: [{name: root, queues: [{name: a, maxapplications: -1}]}]\n",
     "partitions[0].queues[0].queues[0].maxapplications", "uint64"),
    ("partitions:\n  - queues: [{name: root}]\n  - name: DEFAULT\n    queues: [{name: root}]\n",
     "partitions[1].name", "duplicate partition name"),
    ("partitions:\n  - queues: [{name: root}]\n    placementrules: [{name: fixed, value: nowhere}]\n",
     "partitions[0].placementrules[0]", "non-existing queues"),
    ("partitions:\n  - queues: [{name: root}]\n    placementrules: [{name: magic}]\n",
     "partitions[0].placementrules[0].name", "unknown rule name"),
    ("partitions:\n  - queues: [{name: root}]\n    placementrules: [{name: tag, create: true}]\n",
     "partitions[0].placementrules[0].value", "must have a tag name set"),
    ("partitions:\n  - queues: [{name: root, submitacl: 'a b c'}]\n", "partitions[0].queues[0].submitacl",
     "multiple spaces"),
    ("partitions:\n  - queues: [{name: root}]\n    nodesortpolicy: {type: random}\n",
     "partitions[0].nodesortpolicy.type", "undefined policy"),
    ("partitions:\n  - queues: [{name: root, queues: [{name: a, parent: yes-please}]}]\n",
     "partitions[0].queues[0].queues[0].parent", "true or false"),
]


@pytest.mark.parametrize(("text", "where", "message"), BAD)
def test_bad_input_names_the_field(text: str, where: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        parse_yunikorn_conf(text)
    assert err.value.field == where and message in err.value.detail
    assert err.value.obj == "queues.yaml"


def test_a_bad_configmap_names_the_configmap_and_its_key() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "yunikorn-configs", "namespace": "yk"},
          "data": {"queues.yaml": "partitions:\n  - queues: [{name: root, queues: [{name: 'x y'}]}]\n"}}
    with pytest.raises(InputError) as err:
        parse_yunikorn_conf(cm)
    assert err.value.obj == "ConfigMap yk/yunikorn-configs"
    assert err.value.field == "data[queues.yaml].partitions[0].queues[0].queues[0].name"


def test_the_factory_names_the_file() -> None:
    doc = yaml.safe_load("partitions:\n  - queues: [{name: root, bad: 1}]\n")
    with pytest.raises(InputError) as err:
        YunikornFactory().load([(doc, Source("q.yaml", 0))], {})
    assert err.value.file == "q.yaml" and err.value.field == "partitions[0].queues[0].bad"


# --- YuniKorn's own examples ---

def _load(name: str) -> object:
    return yaml.safe_load((DATA / name).read_text())


def test_example_namespace_queues() -> None:
    conf = parse_yunikorn_conf(_load("namespace-queues.yaml"))  # type: ignore[arg-type]
    part = conf.partitions[0]
    assert part.queues()["root.development"].guaranteed == {"memory": 500000, "vcore": 50_000_000}
    assert part.rules[0].name == "tag" and part.rules[0].value == "namespace" and part.rules[0].create
    policy = load_yunikorn(conf, {"cpu": 10**9, "memory": 10**12})
    assert policy.place("", {"namespace": "production"}) == ("root.production", "")


def test_example_preemption_config() -> None:
    conf = parse_yunikorn_conf(_load("preemption-yunikorn-configs.yaml"))  # type: ignore[arg-type]
    queues = conf.partitions[0].queues()
    assert queues["root.sandbox"].max == {"memory": 1000 * 2**20, "vcore": 1000}
    assert queues["root.sandbox.tenants.tenant-high"].guaranteed == {"memory": 300 * 2**20, "vcore": 300}
    policy = load_yunikorn(conf, {"cpu": 4000, "memory": 8 * GI})
    tenants = policy.queues["root.sandbox.tenants"]
    assert tenants.preemption_policy == "fence" and tenants.preemption_delay == 30.0  # a parent keeps the default
    assert policy.queues["root.sandbox.tenants.tenant-high"].preemption_delay == 10.0  # inherited by leaves
    assert policy.queues["root.sandbox.tenants.tenant-high"].priority_offset == 1000
    assert policy.queues["root.sandbox.tenants.tenant-high"].preemption_policy == "default"  # fence not inherited


def test_example_priority_config() -> None:
    conf = parse_yunikorn_conf(_load("priority-yunikorn-configs.yaml"))  # type: ignore[arg-type]
    policy = load_yunikorn(conf, {"cpu": 4000})
    assert policy.queues["root.tenants"].priority_policy == "fence"
    assert policy.queues["root.tenants.group-a"].priority_policy == "default"
    assert policy.queues["root.system.low-priority"].priority_offset == -1000
    assert policy.queues["root.system.low-priority"].sort_policy == "fifo"


def test_example_resource_limits_config() -> None:
    conf = parse_yunikorn_conf(_load("resource-limits-yunikorn-configs.yaml"))  # type: ignore[arg-type]
    queues = conf.partitions[0].queues()
    assert queues["root.system"].max == {"memory": 6 * 10**9, "vcore": 6000}
    assert queues["root.tenants.group-a"].max == {"memory": 2 * 10**9, "vcore": 4000}


def test_example_fixed_placement_config() -> None:
    conf = parse_yunikorn_conf(_load("placements-fixed-config.yaml"))  # type: ignore[arg-type]
    policy = load_yunikorn(conf, {"cpu": 4000})
    assert policy.place("root.other", {"namespace": "x"}) == ("root.last_resort", "")


# --- admission ---

def test_max_and_parent_max_hold() -> None:
    policy = load_yunikorn("""
partitions:
  - queues:
      - name: root
        submitacl: '*'
        queues:
          - name: p
            resources: {max: {vcore: 3}}
            queues: [{name: x}, {name: y}]
""", {"cpu": 100_000})
    for i in range(4):
        policy.submit(wl(f"w{i}", "root.p.x" if i % 2 == 0 else "root.p.y"), 0)
    assert len(admitted(policy.cycle(0))) == 3
    assert policy.pending_reason("w3").startswith(NOT_ENOUGH_QUEUE_QUOTA)
    policy.finished("w0", 1)
    assert admitted(policy.cycle(1)) == ["w3"]


def test_maxapplications_blocks_with_yunikorns_words() -> None:
    policy = load_yunikorn(two_queues("\n            maxapplications: 1"), {"cpu": 100_000})
    policy.submit(wl("a0", "a"), 0)
    policy.submit(wl("a1", "a", t=1), 1)
    assert admitted(policy.cycle(1)) == ["a0"]
    assert policy.pending_reason("a1").startswith(MAX_APPS_REACHED)


def test_the_cluster_is_roots_max() -> None:
    policy = load_yunikorn(two_queues(), {"cpu": 2000})
    policy.submit(wl("a0", "a", 2000), 0)
    policy.submit(wl("b0", "b", 1000, t=1), 1)
    assert admitted(policy.cycle(1)) == ["a0"]
    policy.nodes_changed({"cpu": 3000})
    assert admitted(policy.cycle(2)) == ["b0"]


def test_a_gang_starts_on_its_minimum() -> None:
    policy = load_yunikorn(two_queues(), {"cpu": 3000})
    policy.submit(wl("g", "a", 1000, count=5, min_count=3), 0)
    decisions = policy.cycle(0)
    assert decisions == [Admit("g", "root.a", counts={"main": 3})]
    policy.submit(wl("h", "b", 1000, count=2, min_count=2), 1)
    assert admitted(policy.cycle(1)) == []


def test_unplaced_applications_are_rejected() -> None:
    policy = load_yunikorn("partitions:\n  - queues: [{name: root, submitacl: '*', queues: [{name: a}]}]\n",
                           {"cpu": 1000})
    policy.submit(wl("x", "nowhere"), 0)
    assert policy.cycle(0) == [] and policy.pending_reason("x") == REJECTED
    policy.submit(wl("y", "a"), 0)
    assert admitted(policy.cycle(0)) == ["y"]


def test_without_a_submit_acl_nobody_may_submit() -> None:
    policy = load_yunikorn("partitions:\n  - queues: [{name: root, queues: [{name: a}]}]\n", {"cpu": 1000})
    policy.submit(wl("x", "a"), 0)
    assert policy.pending_reason("x") == REJECTED


def test_the_default_configuration_places_by_namespace() -> None:
    policy = load_yunikorn(None, {"cpu": 1000})
    policy.submit(wl("x", ns="team"), 0)
    assert policy.cycle(0) == [Admit("x", "root.team")]
    assert policy.queues["root.team"].dynamic


def test_preemption_toward_guaranteed() -> None:
    policy = load_yunikorn(two_queues(), {"cpu": 8000})
    for i in range(8):
        policy.submit(wl(f"a{i}", "a", t=float(i)), float(i))
    assert len(admitted(policy.cycle(8))) == 8
    policy.submit(wl("b0", "b", 2000, t=10), 10)
    assert policy.cycle(10) == []  # within preemption.delay (30s)
    decisions = policy.cycle(41)
    evicted = [d for d in decisions if isinstance(d, EvictWorkload)]
    assert [e.key for e in evicted] == ["a7", "a6"] and all(e.reason == "Preempted" and e.by == "b0" for e in evicted)
    assert admitted(decisions) == ["b0"]
    rows = {r["queue"]: r for r in policy.queue_rows()}
    assert rows["root.a"]["preempted"] == 2 and rows["root.b"]["admitted"] == 1


def test_no_preemption_when_disabled_or_below_guarantee() -> None:
    disabled = load_yunikorn(two_queues("\n            properties: {preemption.policy: disabled}"), {"cpu": 8000})
    for i in range(8):
        disabled.submit(wl(f"a{i}", "a"), 0)
    disabled.cycle(0)
    disabled.submit(wl("b0", "b", 2000), 0)
    assert disabled.cycle(100) == []
    off = load_yunikorn(two_queues().replace("    queues:\n      - name: root",
                                             "    preemption: {enabled: false}\n    queues:\n      - name: root"),
                        {"cpu": 8000})
    for i in range(8):
        off.submit(wl(f"a{i}", "a"), 0)
    off.cycle(0)
    off.submit(wl("b0", "b", 2000), 0)
    assert off.cycle(100) == []


def test_unreadable_properties_are_named() -> None:
    policy = load_yunikorn(two_queues("\n            properties: {application.sort.policy: random}"), {"cpu": 1})
    assert policy.queues["root.a"].sort_policy == "fifo"
    assert any("application.sort.policy" in note for note in policy.not_modelled())


def test_factory_queue_and_rows() -> None:
    factory = YunikornFactory()
    assert factory.queue((None, Queueing(peer=(("yunikorn.queue", "root.a"),)))) == "root.a"
    assert factory.queue((Queueing(kueue="x"),)) == ""
    policy = factory.load([], {"cpu": 1000})
    assert {r["queue"] for r in policy.queue_rows()} == {"root"}


# --- annotations ---

def test_task_groups_annotation() -> None:
    groups = parse_task_groups('[{"name": "w", "minMember": 3, "minResource": {"cpu": "500m", "memory": "1Gi"}}]')
    assert groups[0].min_member == 3 and groups[0].min_resource == {"cpu": 500, "memory": GI}
    for bad in ('[{"minMember": 1, "minResource": {}}]', '[{"name": "w", "minResource": {"cpu": "1"}}]',
                '[{"name": "w", "minMember": -1, "minResource": {"cpu": "1"}}]', '[{"name": "w", "minMember": 1}]',
                '[{"name": "w", "minMember": 1, "minResource": {"cpu": "1", "vcore": "1"}}]'):
        with pytest.raises(ValueError):
            parse_task_groups(bad)
