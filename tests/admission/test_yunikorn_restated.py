"""Cases from YuniKorn's own tests, restated against Phalanx's YuniKorn model. Each test names the upstream
file (apache/yunikorn-core at be3bb487, apache/yunikorn-k8shim) and the test function or case it restates.

Not restated, with the reason: config_test.go limits and user/group cases (limits are parsed for syntax only,
not modelled), TestConfigSerde* (YAML round trips, no model), placement user-rule cases (no user identity),
recovery and forced placement (TestForcePlaceApp: no restarts), queue_test.go reservation, quota preemption and
state-machine cases (not modelled), preemption_test.go per-node victim selection (nodes are the engine's)."""

from __future__ import annotations

from collections import Counter

import pytest

from phalanx.admission.base import PodSet, QueuedWorkload
from phalanx.admission.yunikorn import (
    YQueue,
    fair_share,
    load_yunikorn,
    merge_properties,
    parse_scheduling_policy,
    sort_queue_key,
)
from phalanx.admission.yunikorn_conf import (
    QUEUE_NAME,
    PlacementRule,
    check_hierarchy_for_placement,
    longest_static_path,
    parse_yunikorn_conf,
    quantity,
)
from phalanx.errors import InputError

CONFIGS = "pkg/common/configs/config_test.go"
VALIDATOR = "pkg/common/configs/configvalidator_test.go"


def fails(text: str) -> bool:
    try:
        parse_yunikorn_conf(text)
    except InputError:
        return True
    return False


# --- pkg/common/configs/config_test.go ---

def test_parse_partition_fail() -> None:
    """config_test.go TestParsePartitionFail: no queues; two default partitions; two part1 partitions."""
    assert fails("partitions:\n  - name: default\n")
    assert fails("partitions:\n  - {name: default, queues: [{name: root}]}\n  - {name: default, queues: "
                 "[{name: root}]}\n  - {name: part1, queues: [{name: root}]}\n")
    assert fails("partitions:\n  - {name: default, queues: [{name: root}]}\n  - {name: part1, queues: [{name: root}]}"
                 "\n  - {name: part1, queues: [{name: root}]}\n  - {name: part2, queues: [{name: root}]}\n")


def test_parse_queue_every_allowed_character() -> None:
    """config_test.go TestParseQueue: a 64-character name of every allowed character parses."""
    name = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
    conf = parse_yunikorn_conf(f"partitions:\n  - name: default\n    queues:\n      - name: {name}\n")
    assert f"root.{name.lower()}" in conf.partitions[0].queues()


@pytest.mark.parametrize("queues", [
    "[{name: root, resources: {max: {memory: 10000, vcore: 100}}}]",  # limits on root
    "[{name: test}, {name: test}]",  # duplicates under the inserted root
    "[{name: this-name-is-longer-than-sixtyfour-characters-and-thus-fails-parsing}]",
    "[{name: no.in-name}]",
    "[{name: special-$-name}]",
])
def test_parse_queue_fail(queues: str) -> None:
    """config_test.go TestParseQueueFail: each of its five refused configurations."""
    assert fails(f"partitions:\n  - name: default\n    queues: {queues}\n")


@pytest.mark.parametrize("resources", ["{max: {memory: text}}", "{max: {memory: }}", "{max: {memory: , vcore: }}"])
def test_parse_resource_fail(resources: str) -> None:
    """config_test.go TestParseResourceFail: a word, and empty values, are no quantities."""
    assert fails(f"partitions:\n  - queues: [{{name: test, resources: {resources}}}]\n")


@pytest.mark.parametrize("acl", ['"users groups something_to_fail_it"', "*", '"user""'])
def test_parse_acl_fail(acl: str) -> None:
    """config_test.go TestParseACLFail: three fields; an unquoted `*` (a YAML alias); unbalanced quotes."""
    assert fails(f"partitions:\n  - name: default\n    queues:\n      - name: root\n        adminacl: {acl}\n")


def test_deep_queue_hierarchy() -> None:
    """config_test.go TestDeepQueueHierarchy: six levels parse; a `$$$$` name at the bottom fails."""
    deep = "partitions:\n  - queues: [{name: root, queues: [{name: level1, queues: [{name: level2, queues: [{name: " \
           "level3, queues: [{name: level4, queues: [{name: LEAF}]}]}]}]}]}]\n"
    assert "root.level1.level2.level3.level4.level5" in parse_yunikorn_conf(
        deep.replace("LEAF", "level5")).partitions[0].queues()
    assert fails(deep.replace("LEAF", "'$$$$'"))


def test_load_queue_config() -> None:
    """config_test.go TestLoadQueueConfig: two partitions, resources, properties, ACLs and maxapplications."""
    conf = parse_yunikorn_conf("""
partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: production
            resources: {guaranteed: {memory: 1000, vcore: 10}, max: {memory: 10000, vcore: 100}}
          - name: test
            properties: {something: withAvalue}
            resources: {guaranteed: {memory: 200, vcore: 2}, max: {memory: 3000, vcore: 30}}
          - name: sandbox
            parent: true
            submitacl: " sandbox"
            resources: {guaranteed: {memory: 400, vcore: 4}, max: {memory: 5000, vcore: 50}}
  - name: gpu
    queues:
      - {name: production, adminacl: "admin admin", maxapplications: 10}
      - {name: test, submitacl: "*", resources: {max: {memory: 1000, vcore: 10}}}
""")
    default, gpu = conf.partitions
    queues = default.queues()
    assert default.name == "default" and [q.name for q in default.root.children] == ["production", "test", "sandbox"]
    assert queues["root.production"].guaranteed["memory"] == 1000 and queues["root.test"].max["vcore"] == 30_000
    assert queues["root.test"].properties == {"something": "withAvalue"} and not queues["root.sandbox"].leaf
    assert gpu.root.children[0].max_applications == 10 and gpu.root.children[0].admin_acl == "admin admin"
    assert gpu.root.children[1].submit_acl == "*"


def test_partition_preemption_parameter() -> None:
    """config_test.go TestPartitionPreemptionParameter: unset, enabled and disabled."""
    base = "partitions:\n  - name: default\n    queues: [{name: root}]\n"
    assert parse_yunikorn_conf(base).partitions[0].preemption_enabled is None
    on = parse_yunikorn_conf(base + "    preemption: {enabled: true, quotapreemptionenabled: true}\n").partitions[0]
    off = parse_yunikorn_conf(base + "    preemption: {enabled: false, quotapreemptionenabled: false}\n").partitions[0]
    assert on.preemption_enabled and on.quota_preemption_enabled
    assert off.preemption_enabled is False and off.quota_preemption_enabled is False


# --- pkg/common/configs/configvalidator_test.go ---

LOW = "{memory: 10, vcores: 30}"
HIGH = "{memory: 50, vcores: 33}"


@pytest.mark.parametrize(("name", "queue", "refused"), [
    ("Negative guaranteed resource", "{name: q, resources: {guaranteed: {memory: -50}}}", True),
    ("Nil guaranteed resource", f"{{name: q, resources: {{max: {LOW}}}}}", False),
    ("Syntax error in max resource", "{name: q, resources: {max: {memory: ten}}}", True),
    ("Higher guaranteed resource in child queues",
     f"{{name: p, resources: {{guaranteed: {LOW}}}, queues: [{{name: c, resources: {{guaranteed: {HIGH}}}}}]}}", True),
    ("Higher sum of guaranteed resource in child queues than the parent's guaranteed",
     f"{{name: p, resources: {{max: {HIGH}, guaranteed: {LOW}}}, queues: [{{name: c1, resources: {{max: {LOW}, "
     f"guaranteed: {LOW}}}}}, {{name: c2, resources: {{max: {LOW}, guaranteed: {LOW}}}}}]}}", True),
    ("Higher max resource in child queues",
     f"{{name: p, resources: {{max: {LOW}}}, queues: [{{name: c, resources: {{max: {HIGH}}}}}]}}", True),
    ("Higher guaranteed than max resource", f"{{name: q, resources: {{max: {LOW}, guaranteed: {HIGH}}}}}", True),
    ("Valid configuration", f"{{name: q, resources: {{max: {HIGH}, guaranteed: {LOW}}}}}", False),
    ("Nil guaranteed resources for both parent and child",
     f"{{name: p, resources: {{max: {HIGH}}}, queues: [{{name: c, resources: {{max: {LOW}}}}}]}}", False),
])
def test_check_resource_configurations_for_queue(name: str, queue: str, refused: bool) -> None:
    """configvalidator_test.go TestCheckResourceConfigurationsForQueue: the case named `name`."""
    assert fails(f"partitions:\n  - queues: [{{name: root, queues: [{queue}]}}]\n") is refused, name


@pytest.mark.parametrize(("apps", "refused"), [((1, 2, 3, 4), True), ((4, 3, 2, 1), False), ((0, 3, 2, 1), False),
                                               ((4, 3, 2, 0), True)])
def test_check_queue_max_applications_for_queue(apps: tuple[int, int, int, int], refused: bool) -> None:
    """configvalidator_test.go TestCheckQueueMaxApplicationsForQueue: root > parent > parent1 > child1."""
    r, p, p1, c = apps
    text = (f"partitions:\n  - queues: [{{name: root, maxapplications: {r}, queues: [{{name: parent, maxapplications: "
            f"{p}, queues: [{{name: parent1, maxapplications: {p1}, queues: [{{name: child1, maxapplications: {c}}}]}}]"
            "}]}]\n")
    assert fails(text) is refused


def test_get_longest_placement_path() -> None:
    """configvalidator_test.go TestGetLongestPlacementPath: fixed->tag->user and fixed->fixed, and two
    qualified fixed rules refused."""
    users = PlacementRule("user", parent=PlacementRule("tag", value="namespace",
                                                        parent=PlacementRule("fixed", value="root.users")))
    admins = PlacementRule("fixed", True, "dev", parent=PlacementRule("fixed", value="root.admins"))
    assert longest_static_path(users) == ("root.users", "fixed->tag->user", True)
    assert longest_static_path(admins) == ("root.admins.dev", "fixed->fixed", False)
    with pytest.raises(ValueError, match="illegal fully qualified 'fixed' rule"):
        longest_static_path(PlacementRule("fixed", True, "root.dev",
                                          parent=PlacementRule("fixed", value="root.admins")))


def test_check_queue_hierarchy_for_placement() -> None:
    """configvalidator_test.go TestCheckQueueHierarchyForPlacement, cases #1-#10."""
    def queues(users_parent: bool) -> tuple:  # type: ignore[type-arg]
        flag = "true" if users_parent else "false"
        conf = parse_yunikorn_conf(f"partitions:\n  - queues: [{{name: root, queues: [{{name: users, parent: {flag}}}, "
                                   "{name: default}]}]\n")
        return (conf.partitions[0].root,)
    assert check_hierarchy_for_placement(["root", "users"], False, False, queues(True), None)[0] == "not-leaf"  # 1
    assert check_hierarchy_for_placement(["root", "default"], True, False, queues(True), None)[0] == "ok"  # 2
    alice = ["root", "users", "alice"]
    assert check_hierarchy_for_placement(alice, True, False, queues(True), None)[0] == "ok"  # 3
    assert check_hierarchy_for_placement(alice, False, False, queues(True), None)[0] == "missing"  # 4
    assert check_hierarchy_for_placement(alice, True, False, queues(False), None) == ("last-leaf", "users")  # 5
    assert check_hierarchy_for_placement(alice, False, False, queues(False), None) == ("last-leaf", "users")  # 6
    assert check_hierarchy_for_placement(["root", "devs", "test"], True, False, queues(True), None)[0] == "ok"  # 7
    assert check_hierarchy_for_placement(["root", "devs", "test"], False, False, queues(True), None)[0] == "missing"
    assert check_hierarchy_for_placement(["root", "users"], False, True, queues(False), None)[0] == "not-leaf"  # 9
    assert check_hierarchy_for_placement(["root", "users"], False, True, queues(True), None)[0] == "ok"  # 10


@pytest.mark.parametrize(("name", "valid"), [("queue-1", True), ("q#@/:_", True), ("a" * 64, True), ("a" * 65, False),
                                             ("", False), ("a.b", False), ("a b", False), ("a!", False)])
def test_is_queue_name_valid(name: str, valid: bool) -> None:
    """configvalidator_test.go TestIsQueueNameValid (its valid and invalid shapes)."""
    assert bool(QUEUE_NAME.match(name)) is valid


# --- pkg/common/resources/quantity_test.go ---

@pytest.mark.parametrize(("raw", "value"), [("0", 0), ("1", 1), (" 25k ", 25_000), (" 25  k ", 25_000),
                                            ("9223372036854775807", 2**63 - 1), ("9223372036854775808", "overflow"),
                                            ("1000E", "overflow"), ("5X", "invalid"), ("500m", "invalid"),
                                            ("-1", "invalid"), ("7E", 7 * 10**18), ("7Ei", 7 * 2**60),
                                            ("3Mi", 3 * 2**20)])
def test_parse_quantity(raw: str, value: int | str) -> None:
    """quantity_test.go TestParseQuantity."""
    if isinstance(value, str):
        with pytest.raises(ValueError, match=value):
            quantity(raw, milli=False)
    else:
        assert quantity(raw, milli=False) == value


@pytest.mark.parametrize(("raw", "value"), [("1", 1000), (" 25k ", 25 * 10**6), ("500m", 500),
                                            ("9223372036854775", 9223372036854775000), ("9223372036854776", "overflow"),
                                            ("1000P", "overflow"), ("7E", "overflow"), ("2Ki", 2 * 1000 * 1024),
                                            ("-1", "invalid"), ("5X", "invalid")])
def test_parse_vcore(raw: str, value: int | str) -> None:
    """quantity_test.go TestParseVCore."""
    if isinstance(value, str):
        with pytest.raises(ValueError, match=value):
            quantity(raw, milli=True)
    else:
        assert quantity(raw, milli=True) == value


# --- pkg/scheduler/objects/sorters_test.go ---

def _leaf(root: YQueue, name: str, guaranteed: dict[str, int], allocated: dict[str, int], priority: int) -> YQueue:
    q = YQueue(f"root.{name}", root, True, guaranteed=guaranteed, maximum={}, max_apps=0, properties={})
    q.allocated = allocated
    q.priorities = Counter({priority: 1})
    return q


def _order(queues: list[YQueue], priority_first: bool) -> list[str]:
    return [q.name for q in sorted(queues, key=lambda q: sort_queue_key(q, priority_first))]


def test_sort_queues_with_guarantees() -> None:
    """sorters_test.go TestSortQueuesWithGuarantees: the fair cases, with and without priority."""
    root = YQueue("root", None, False, guaranteed={}, maximum={}, max_apps=0, properties={})
    q0 = _leaf(root, "q0", {"memory": 500, "vcore": 500}, {"memory": 300, "vcore": 300}, 1)
    q1 = _leaf(root, "q1", {"memory": 300, "vcore": 300}, {"memory": 200, "vcore": 200}, 1)
    q2 = _leaf(root, "q2", {"memory": 200, "vcore": 200}, {"memory": 100, "vcore": 100}, 1)
    q3 = _leaf(root, "q3", {"memory": 200, "vcore": 200}, {"memory": 100, "vcore": 100}, 3)
    queues = [q0, q1, q2, q3]
    assert _order(queues, True) == ["q3", "q2", "q0", "q1"]  # "fair first - priority"
    q0.allocated, q1.allocated = {"memory": 200, "vcore": 200}, {"memory": 300, "vcore": 300}
    assert _order(queues, True) == ["q3", "q0", "q2", "q1"]  # "fair second - priority"
    assert _order(queues, False)[0] == "q0" and _order(queues, False)[-1] == "q1"  # "fair second"
    q0.allocated, q1.allocated = {"memory": 150, "vcore": 150}, {"memory": 120, "vcore": 120}
    assert _order(queues, True) == ["q3", "q0", "q1", "q2"]  # "fair third - priority"
    assert _order(queues, False)[:2] == ["q0", "q1"]  # "fair third"


def test_sort_queues_no_guarantees() -> None:
    """sorters_test.go TestSortQueuesNoGuarantees: usage against the fair max (root's 1000) decides."""
    root = YQueue("root", None, False, guaranteed={}, maximum={"memory": 1000, "vcore": 1000}, max_apps=0,
                  properties={})
    q0 = _leaf(root, "q0", {}, {"memory": 300, "vcore": 300}, 1)
    q1 = _leaf(root, "q1", {}, {"memory": 200, "vcore": 200}, 0)
    q2 = _leaf(root, "q2", {}, {"memory": 100, "vcore": 100}, 2)
    q3 = _leaf(root, "q3", {}, {"memory": 100, "vcore": 100}, 3)
    assert _order([q0, q1, q2, q3], False) == ["q3", "q2", "q1", "q0"]
    assert _order([q0, q1, q2, q3], True) == ["q3", "q2", "q0", "q1"]


_E, _M, _P, _V = "ephemeral-storage", "memory", "pods", "vcore"


def _all(e: int, m: int, p: int, v: int) -> dict[str, int]:
    return {_E: e, _M: m, _P: p, _V: v}


@pytest.mark.parametrize(("allocated", "guaranteed", "fair_max", "expected"), [
    ({"vcores": 0}, {"vcores": 1000}, {"vcores": 99999}, 0.0),
    ({"vcores": 100, _M: 2500}, {"vcores": 1000, _M: 5000}, {"vcores": 99999, _M: 99999}, 0.5),
    ({"vcores": 100, _M: 2500, _E: 100}, {"vcores": 1000, _M: 5000, _E: 2000}, {"vcores": 99999, _M: 99999, _E: 99999},
     0.5),
    (_all(1000, 1000, 1000, 1000), {}, _all(2000, 99999, 99999, 99999), 0.5),  # no guarantee: fair max decides
    (_all(1000, 1000, 1000, 1000), {_P: 88888}, _all(2000, 99999, 99999, 99999), 0.5),
    (_all(1000, 1000, 1000, 1000), {_V: 2000}, _all(99999, 99999, 99999, 99999), 0.5),
    (_all(0, 0, 0, 0), {"vcores": 2000}, _all(99999, 99999, 99999, 99999), 0.0),
    (_all(1000, 1000, 1000, 10), {_V: 0}, _all(5000, 5000, 5000, 5000), 1.0),  # explicit 0 guarantee, usage
    (_all(1000, 1000, 1000, 0), {_V: 0}, _all(5000, 5000, 5000, 5000), 0.2),  # explicit 0 guarantee, none used
    (_all(1000, 1000, 1000, 1000), {}, _all(5000, 0, 5000, 5000), 1.0),  # explicit 0 fair max, usage
    (_all(1000, 0, 1000, 1000), {}, _all(5000, 0, 5000, 4000), 0.25),  # explicit 0 fair max, none used
    (_all(1000, 1000, 1000, 1000), {_V: -10}, _all(5000, 5000, 5000, 5000), 1.0),  # negative guarantee, usage
])
def test_get_fair_share(allocated: dict[str, int], guaranteed: dict[str, int], fair_max: dict[str, int],
                        expected: float) -> None:
    """resources_test.go TestGetFairShare (yunikorn-core be3bb487), its table's cases in order up to the negative
    guarantee with usage: the largest share over the allocated types, against the guarantee where one is set,
    else the fair max; a zero or negative denominator counts as a full share when used, none when not."""
    assert fair_share(allocated, guaranteed, fair_max) == pytest.approx(expected)


def _app(key: str, t: float, prio: int) -> QueuedWorkload:
    return QueuedWorkload(key, "ns", "root.q", prio, t, (PodSet("main", 1, {"cpu": 1}),))


@pytest.mark.parametrize(("priority", "order"), [("enabled", ["app-3", "app-2", "app-1", "app-0"]),
                                                 ("disabled", ["app-0", "app-1", "app-2", "app-3"])])
def test_sort_apps_fifo(priority: str, order: list[str]) -> None:
    """sorters_test.go TestSortAppsFifo and TestSortAppsPriorityFifo: submission order, or priority first."""
    policy = load_yunikorn("partitions:\n  - queues: [{name: root, submitacl: '*', queues: [{name: q, properties: "
                           f"{{application.sort.priority: {priority}}}}}]}}]\n", {"cpu": 10})
    for i in range(4):
        policy.submit(_app(f"app-{i}", float(i), i), float(i))
    assert [app.key for _, app in policy.queues["root.q"].pending] == order


# --- pkg/scheduler/objects/queue_test.go ---

def test_headroom() -> None:
    """queue_test.go TestHeadroom: root max 20,10 and parent max 20,8, two leaves each holding 5,3."""
    root = YQueue("root", None, False, guaranteed={}, maximum={"first": 20, "second": 10}, max_apps=0, properties={})
    parent = YQueue("root.parent", root, False, guaranteed={}, maximum={"first": 20, "second": 8}, max_apps=0,
                    properties={})
    leaf1 = YQueue("root.parent.leaf1", parent, True, guaranteed={}, maximum={}, max_apps=0, properties={})
    leaf2 = YQueue("root.parent.leaf2", parent, True, guaranteed={}, maximum={}, max_apps=0, properties={})
    leaf1.charge({"first": 5, "second": 3}, 1, "app-1")
    leaf2.charge({"first": 5, "second": 3}, 1, "app-2")
    assert root.headroom() == {"first": 10, "second": 4}
    assert parent.headroom() == {"first": 10, "second": 2}
    assert leaf1.headroom() == leaf2.headroom() == {"first": 10, "second": 2}
    bare = YQueue("root", None, False, guaranteed={}, maximum={}, max_apps=0, properties={})
    assert bare.headroom() is None  # "empty cluster with root queue should not have headroom"


def test_queue_can_run_app() -> None:
    """queue_test.go TestQueue_canRunApp: root's maxapplications 1, then 2, then the leaf's 1."""
    root = YQueue("root", None, False, guaranteed={}, maximum={}, max_apps=1, properties={})
    leaf = YQueue("root.leaf", root, True, guaranteed={}, maximum={}, max_apps=0, properties={})
    leaf2 = YQueue("root.leaf2", root, True, guaranteed={}, maximum={}, max_apps=0, properties={})
    assert leaf.can_run_app() and root.can_run_app()
    root.running += 1
    assert not leaf.can_run_app()
    root.max_apps = 2
    assert leaf.can_run_app()
    leaf.max_apps = 1
    leaf.running += 1
    root.running += 1
    assert not leaf.can_run_app() and not leaf2.can_run_app()


def test_merge_parent_properties_filters() -> None:
    """queue_test.go TestMergeParentPropertiesFilterPriorityPolicy, ...FilterPriorityOffset,
    ...FilterPreemptionPolicyDisabledPropagates, ...NonDisabledReset and ...ConfigOverridesParent."""
    merged = merge_properties({"priority.policy": "fence", "priority.offset": "100", "preemption.policy": "fence",
                               "application.sort.policy": "fair"}, {"application.sort.policy": "fifo"})
    assert merged == {"priority.policy": "default", "priority.offset": "0", "preemption.policy": "default",
                      "application.sort.policy": "fifo"}
    assert merge_properties({"preemption.policy": "disabled"}, {})["preemption.policy"] == "disabled"


def test_preemption_delay() -> None:
    """queue_test.go TestPreemptionDelay: 30s by default, a positive duration read, anything else the default."""
    def delay(value: str) -> float:
        policy = load_yunikorn("partitions:\n  - queues: [{name: root, queues: [{name: q, properties: "
                               f"{{preemption.delay: '{value}'}}}}]}}]\n", {})
        return float(policy.queues["root.q"].preemption_delay)
    assert delay("10s") == 10.0 and delay("2m") == 120.0
    assert delay("-10s") == 30.0 and delay("nonsense") == 30.0 and delay("0s") == 30.0


def test_find_eligible_preemption_victims_priority_fence() -> None:
    """queue_test.go TestFindEligiblePreemptionVictims: victims of higher priority than the ask are kept; a
    `priority.policy: fence` subtree whose offset is above the ask's priority is out of reach."""
    policy = load_yunikorn("""
partitions:
  - queues:
      - name: root
        submitacl: '*'
        queues:
          - {name: ask, resources: {guaranteed: {vcore: 4}}}
          - {name: low, resources: {guaranteed: {vcore: 1}}}
          - {name: fenced, properties: {priority.policy: fence, priority.offset: "1000"},
             resources: {guaranteed: {vcore: 1}}}
""", {"cpu": 6000})
    for key, queue, prio in (("l-high", "low", 500), ("l-low", "low", 0), ("f0", "fenced", 0), ("f1", "fenced", 0),
                             ("l-2", "low", 0), ("l-3", "low", 0)):
        policy.submit(QueuedWorkload(key, "ns", queue, prio, 0.0, (PodSet("main", 1, {"cpu": 1000}),)), 0.0)
    policy.cycle(0)
    policy.submit(QueuedWorkload("ask", "ns", "ask", 100, 1.0, (PodSet("main", 1, {"cpu": 2000}),)), 1.0)
    decisions = policy.cycle(100)
    evicted = sorted(d.key for d in decisions if d.__class__.__name__ == "EvictWorkload")
    assert "l-high" not in evicted and not any(k.startswith("f") for k in evicted) and len(evicted) == 2


# --- pkg/scheduler/placement/*_test.go ---

PLACEMENT_QUEUES = """
partitions:
  - queues:
      - name: root
        submitacl: '*'
        queues:
          - name: testqueue
          - {name: testparent, queues: [{name: testchild}]}
"""


def test_tag_rule_place() -> None:
    """tag_rule_test.go TestTagRulePlace: no tag; an existing queue; a bad name; a missing queue; qualified;
    a tag parent rule without and with its value."""
    policy = load_yunikorn(PLACEMENT_QUEUES, {})
    rule = PlacementRule("tag", value="label1")
    assert policy.apply_rule(rule, "", {}, "testuser") == ""
    assert policy.apply_rule(rule, "", {"label1": "testqueue"}, "u") == "root.testqueue"
    with pytest.raises(ValueError):
        policy.apply_rule(rule, "", {"label1": "test!queue"}, "u")
    assert policy.apply_rule(rule, "", {"label1": "unknown"}, "u") == ""
    assert policy.apply_rule(rule, "", {"label1": "root.testparent.testchild"}, "u") == "root.testparent.testchild"
    with pytest.raises(ValueError):
        policy.apply_rule(rule, "", {"label1": "root.testparent.test!child"}, "u")
    chained = PlacementRule("tag", value="label1", parent=PlacementRule("tag", value="label2"))
    assert policy.apply_rule(chained, "", {"label1": "testchild"}, "u") == ""
    assert policy.apply_rule(chained, "", {"label1": "testchild", "label2": "testparent"}, "u") == \
        "root.testparent.testchild"


def test_provided_rule_place() -> None:
    """provided_rule_test.go TestProvidedRulePlace: no queue given; an existing queue; a missing queue without
    and with create; a qualified queue; a dotted name becomes `_dot_`."""
    policy = load_yunikorn(PLACEMENT_QUEUES, {})
    rule = PlacementRule("provided")
    assert policy.apply_rule(rule, "", {}, "u") == ""
    assert policy.apply_rule(rule, "testqueue", {}, "u") == "root.testqueue"
    assert policy.apply_rule(rule, "unknown", {}, "u") == ""
    assert policy.apply_rule(PlacementRule("provided", create=True), "unknown", {}, "u") == "root.unknown"
    assert policy.apply_rule(rule, "root.testparent.testchild", {}, "u") == "root.testparent.testchild"
    assert policy.apply_rule(PlacementRule("provided", create=True), "a.b", {}, "u") == "root.a_dot_b"


def test_fixed_rule_parent() -> None:
    """fixed_rule_test.go TestFixedRuleParent: a fixed child under a fixed parent; a parent that is a leaf fails."""
    policy = load_yunikorn(PLACEMENT_QUEUES, {})
    chained = PlacementRule("fixed", value="testchild", parent=PlacementRule("fixed", value="testparent"))
    assert policy.apply_rule(chained, "", {}, "u") == "root.testparent.testchild"
    with pytest.raises(ValueError, match="leaf"):
        policy.apply_rule(PlacementRule("fixed", True, "x", parent=PlacementRule("fixed", value="testqueue")),
                          "", {}, "u")


def test_manager_place_app() -> None:
    """placement_test.go TestManagerPlaceApp: rules in order, a parent result skipped, root.default as the
    fallback, else rejected."""
    policy = load_yunikorn(PLACEMENT_QUEUES.replace("- name: testqueue", "- name: testqueue\n          - name: default")
                           + "    placementrules:\n      - {name: provided}\n      - {name: tag, value: namespace}\n",
                           {})
    assert policy.place("testqueue", {"namespace": "x"})[0] == "root.testqueue"
    assert policy.place("testparent", {"namespace": "testqueue"})[0] == "root.testqueue"  # parent: next rule
    assert policy.place("nope", {"namespace": "nope"})[0] == "root.default"


# --- apache/yunikorn-k8shim pkg/cache/gang_utils_test.go ---

@pytest.mark.parametrize(("text", "timeout", "style"), [
    ("unknownPara=unkown placeholderTimeoutInSeconds=50=25 gangSchedulingStyle=Hard=Soft", 0, "Soft"),
    ("unknownPara=unkown placeholderTimeoutInSeconds=50 gangSchedulingStyle=Hard=Soft", 50, "Soft"),
    ("unknownPara=unkown placeholderTimeoutInSeconds=oneSecond gangSchedulingStyle=Soft", 0, "Soft"),
    ("unknownPara=unkown", 0, "Soft"),
    ("unknownPara=unkown placeholderTimeoutInSeconds=50  gangSchedulingStyle=Hard", 50, "Hard"),
    ("unknownPara=unkown gangSchedulingStyle=abc", 0, "Soft"),
    ("placeholderTimeoutInSeconds gangSchedulingStyle", 0, "Soft"),
])
def test_get_scheduling_policy_params(text: str, timeout: int, style: str) -> None:
    """k8shim gang_utils_test.go TestGetSchedulingPolicyParams."""
    params = parse_scheduling_policy(text)
    assert (params.placeholder_timeout, params.style) == (timeout, style)
