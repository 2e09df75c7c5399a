"""YuniKorn's queue configuration (`queues.yaml`), as the YuniKorn-style admission reads it.

The format and its checks are restated from apache/yunikorn-core `pkg/common/configs` (config.go,
configvalidator.go) and `pkg/common/resources/quantity.go`:
- The document is `SchedulerConfig`: `partitions` (and `checksum`). It is decoded strictly (yaml.v3 with
  KnownFields): a key YuniKorn's structs do not have is refused. Keys are the lowercased Go field names
  (`maxapplications`, `placementrules`, `submitacl`, ...), matched exactly, so `maxApplications` is refused.
- A partition without a name, or named `default` in any case, is `default`; two partitions of one name are
  refused. Each needs `queues`; when the top level is not exactly one queue named `root`, a `root` is put
  above it (YuniKorn's checkQueuesStructure). `root` takes no `resources`.
- Queue names match `^[a-zA-Z0-9_:#/@-]{1,64}$` and are unique (case-insensitively) among siblings; YuniKorn
  lowercases them, so paths such as `root.a.b` are lowercase. ACLs hold at most two space-separated fields.
- `resources.guaranteed` and `resources.max` map resource names to quantities in YuniKorn's own grammar: a
  whole number, optional spaces, then one of k M G T P E Ki Mi Gi Ti Pi Ei (no fractions, no signs, no
  exponent); `vcore` is read in millicores and also takes `m` (`500m`, and `2` is 2000). Memory and the rest
  are plain units (bytes). A queue's guaranteed must fit its max; its max must fit its parent's (types the
  parent does not limit are free); the children's guarantees summed must fit the parent's guarantee and max.
- `maxapplications`: a child's may not exceed its parent's, and under a parent that sets one every child must.
- Placement rules: `provided`, `user`, `fixed`, `tag` (`recovery` is refused in the config), each with
  `create`, `value`, `parent` (another rule) and `filter` (`type` allow or deny). `fixed` and `tag` need a
  value; a qualified `fixed` (`root.x`) takes no parent rule. The longest static path of each rule chain must
  name a leaf (a parent when the chain goes on dynamically), or queues the rule may create.
- `nodesortpolicy.type` is fair or binpacking (or empty); resource weights are not negative.

Bad input raises InputError naming the object (the ConfigMap, else `queues.yaml`) and the field, such as
`partitions[0].queues[0].queues[1].resources.max.memory`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from phalanx.admission.crd import embedded_yaml, shown
from phalanx.api.fields import fail, mapping, object_name, sequence, text
from phalanx.api.yunikorn_peer import QUEUES_KEY as YUNIKORN_QUEUES_KEY
from phalanx.errors import InputError

ROOT = "root"
DEFAULT_PARTITION = "default"
DEFAULT_PLACEMENT_QUEUE = "root.default"  # common.DefaultPlacementQueue: where an unplaced app lands if it exists
VCORE = "vcore"  # YuniKorn's name for cpu (common.CPU), in millicores
RULES = ("provided", "user", "fixed", "tag")
SORT_POLICIES = ("fifo", "fair", "stateaware")  # stateaware is a deprecated alias of fifo
NODE_SORT_POLICIES = ("", "fair", "binpacking")
# configs.DefaultSchedulerConfig: what YuniKorn runs without a queues.yaml.
DEFAULT_CONF_TEXT = """
partitions:
  - name: default
    placementrules:
      - name: tag
        value: namespace
        create: true
    queues:
      - name: root
        submitacl: '*'
"""

QUEUE_NAME = re.compile(r"^[a-zA-Z0-9_:#/@-]{1,64}$")
RULE_NAME = re.compile(r"^[_a-zA-Z][a-zA-Z0-9_]*$")
_QUANTITY = re.compile(r"^([0-9]+)\s*(([mkKMGTPE]i?)?)$")
_MULTIPLIERS = {"": 1, "m": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
                "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_MAX_INT64 = 2**63 - 1
_MAX_UINT64 = 2**64 - 1

# The yaml keys of each struct (the lowercased Go field names yaml.v3 matches).
_TOP_KEYS = ("partitions", "checksum")
_PARTITION_KEYS = ("name", "queues", "placementrules", "limits", "preemption", "nodesortpolicy", "usergroupresolver")
_QUEUE_KEYS = ("name", "parent", "resources", "maxapplications", "properties", "adminacl", "submitacl",
               "childtemplate", "queues", "limits")
_RESOURCES_KEYS = ("guaranteed", "max")
_RULE_KEYS = ("name", "create", "filter", "parent", "value")
_FILTER_KEYS = ("type", "users", "groups")
_LIMIT_KEYS = ("limit", "users", "groups", "maxresources", "maxapplications")
_TEMPLATE_KEYS = ("maxapplications", "properties", "resources")
_PREEMPTION_KEYS = ("enabled", "quotapreemptionenabled")
_NODE_SORT_KEYS = ("type", "resourceweights")


def quantity(raw: str, *, milli: bool) -> int:
    """YuniKorn's ParseQuantity (milli False) or ParseVCore (milli True); ValueError in its words."""
    match = _QUANTITY.match(raw.strip())
    if match is None:
        raise ValueError("invalid quantity")
    number, suffix = int(match.group(1)), match.group(2)
    if number > _MAX_INT64:
        raise ValueError("invalid quantity: overflow")
    if suffix not in _MULTIPLIERS or (suffix == "m" and not milli):
        raise ValueError("invalid suffix")
    value = number * _MULTIPLIERS[suffix] * (1000 if milli and suffix != "m" else 1)
    if value > _MAX_INT64:
        raise ValueError("invalid quantity: overflow")
    return value


def resources_from_conf(value: Any, where: str) -> dict[str, int]:
    """A `map[string]string` of resources (NewResourceFromConf), keyed by YuniKorn's names."""
    out: dict[str, int] = {}
    for name, raw in _strict(value, where, None).items():
        key = str(name)
        try:
            out[key] = quantity(_scalar(raw), milli=key == VCORE)
        except ValueError as exc:
            raise fail(f"{where}.{key}", f"{exc}: {shown(raw)}") from None
    return out


def fits_max_undef(larger: Mapping[str, int] | None, smaller: Mapping[str, int] | None) -> bool:
    """Resource.FitInMaxUndef: every type of `smaller` that `larger` defines is within it (nil larger = Zero)."""
    if not smaller:
        return True
    limit = larger or {}
    return all(v <= limit[k] for k, v in smaller.items() if k in limit)


def strictly_positive(res: Mapping[str, int] | None) -> bool:
    """resources.StrictlyGreaterThanZero: some value above zero and none below."""
    if not res:
        return False
    return all(v >= 0 for v in res.values()) and any(v > 0 for v in res.values())


@dataclass(frozen=True, slots=True)
class PlacementRule:
    name: str
    create: bool = False
    value: str = ""
    parent: PlacementRule | None = None
    filter_type: str = ""  # "" or allow: the filter allows; deny
    filter_users: tuple[str, ...] = ()
    filter_groups: tuple[str, ...] = ()

    def chain(self) -> list[PlacementRule]:
        """The rule's parents first, then itself (getRuleChain)."""
        return [*(self.parent.chain() if self.parent is not None else []), self]


@dataclass(frozen=True, slots=True)
class ChildTemplate:
    max_applications: int = 0
    properties: Mapping[str, str] = field(default_factory=dict)
    guaranteed: Mapping[str, int] = field(default_factory=dict)
    max: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class QueueConf:
    name: str  # lowercased, as YuniKorn stores it
    path: str  # root.a.b
    leaf: bool  # no `parent: true` and no child queues
    parent_flag: bool = False  # `parent: true` as written (root always has it)
    # As written, in YuniKorn's resource names; the scheduler ignores a map with no value above zero.
    guaranteed: Mapping[str, int] = field(default_factory=dict)
    max: Mapping[str, int] = field(default_factory=dict)
    max_applications: int = 0  # 0: no limit
    properties: Mapping[str, str] = field(default_factory=dict)  # as written on this queue
    submit_acl: str = ""
    admin_acl: str = ""
    children: tuple[QueueConf, ...] = ()
    child_template: ChildTemplate | None = None
    limits: int = 0  # user and group limits written (not modelled)


@dataclass(frozen=True, slots=True)
class PartitionConf:
    name: str
    root: QueueConf
    rules: tuple[PlacementRule, ...] = ()
    preemption_enabled: bool | None = None
    quota_preemption_enabled: bool | None = None
    node_sort_policy: str = ""
    limits: int = 0
    user_group_resolver: str = ""

    def queues(self) -> dict[str, QueueConf]:
        """Every configured queue by path."""
        out: dict[str, QueueConf] = {}
        stack = [self.root]
        while stack:
            queue = stack.pop()
            out[queue.path] = queue
            stack.extend(queue.children)
        return out


@dataclass(frozen=True, slots=True)
class YunikornConf:
    partitions: tuple[PartitionConf, ...]

    def partition(self, name: str = DEFAULT_PARTITION) -> PartitionConf | None:
        return next((p for p in self.partitions if p.name == name), None)


def default_conf() -> YunikornConf:
    return parse_yunikorn_conf(DEFAULT_CONF_TEXT)


def parse_yunikorn_conf(source: str | Mapping[str, Any]) -> YunikornConf:
    """`queues.yaml` from its text, its parsed mapping, the `yunikorn-configs` ConfigMap holding it (or that
    ConfigMap's `data` alone). InputError names the object and the field."""
    try:
        doc = embedded_yaml(source, "(text)") if isinstance(source, str) else source
        doc = mapping(doc, "(document)", required=True)
    except InputError as exc:
        raise exc.at(obj=YUNIKORN_QUEUES_KEY) from None
    if doc.get("kind") == "ConfigMap":
        try:
            data = mapping(doc.get("data"), "data", required=True)
            return _in_data(data, f"data[{YUNIKORN_QUEUES_KEY}]")
        except InputError as exc:
            raise exc.at(obj=object_name(doc)) from None
    if "partitions" not in doc and set(doc) == {YUNIKORN_QUEUES_KEY}:
        try:
            return _in_data(doc, YUNIKORN_QUEUES_KEY)
        except InputError as exc:
            raise exc.at(obj=YUNIKORN_QUEUES_KEY) from None
    try:
        return _conf(doc)
    except InputError as exc:
        raise exc.at(obj=YUNIKORN_QUEUES_KEY) from None


def _in_data(data: Mapping[str, Any], where: str) -> YunikornConf:
    if YUNIKORN_QUEUES_KEY not in data:
        raise fail("data", f"has no {YUNIKORN_QUEUES_KEY!r} key")
    raw = text(data[YUNIKORN_QUEUES_KEY], where)
    loaded = embedded_yaml(raw, where)
    # An empty queues.yaml decodes to an empty SchedulerConfig (io.EOF is skipped): no partitions.
    doc = mapping(loaded, where)
    try:
        return _conf(doc)
    except InputError as exc:
        raise InputError(exc.detail, field=f"{where}.{exc.field}" if exc.field else where) from None



def _strict(value: Any, where: str, keys: tuple[str, ...] | None, *, required: bool = False) -> Mapping[str, Any]:
    """A mapping with only `keys` (None: any), as yaml.v3's KnownFields decoding takes it."""
    found = mapping(value, where, required=required)
    if keys is not None:
        for key in found:
            if key not in keys:
                raise fail(f"{where}.{key}", f"field {key} not found (YuniKorn refuses unknown fields; its fields "
                                             f"here: {', '.join(keys)})")
    return found


def _scalar(value: Any) -> str:
    """A YAML scalar decoded into a Go string: its text; null is ""."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    raise ValueError(f"cannot unmarshal a {type(value).__name__} into a string")


def _string(value: Any, where: str) -> str:
    try:
        return _scalar(value)
    except ValueError as exc:
        raise fail(where, str(exc)) from None


def _flag(value: Any, where: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise fail(where, f"must be true or false, got {shown(value)}")
    return value


def _uint(value: Any, where: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_UINT64:
        raise fail(where, f"must be a whole number from 0 (a uint64), got {shown(value)}")
    return value


def _strings(value: Any, where: str) -> tuple[str, ...]:
    return tuple(_string(v, f"{where}[{i}]") for i, v in enumerate(sequence(value, where)))


def _properties(value: Any, where: str) -> dict[str, str]:
    return {str(k): _string(v, f"{where}.{k}") for k, v in _strict(value, where, None).items()}


def _conf(doc: Mapping[str, Any]) -> YunikornConf:
    doc = _strict(doc, "(document)", _TOP_KEYS)
    partitions: list[PartitionConf] = []
    seen: set[str] = set()
    for i, raw in enumerate(sequence(doc.get("partitions"), "partitions")):
        partition = _partition(raw, f"partitions[{i}]")
        if partition.name.lower() in seen:
            raise fail(f"partitions[{i}].name", f"duplicate partition name found with name {partition.name}")
        seen.add(partition.name.lower())
        partitions.append(partition)
    return YunikornConf(tuple(partitions))


def _partition(raw: Any, where: str) -> PartitionConf:
    doc = _strict(raw, where, _PARTITION_KEYS)
    name = _string(doc.get("name"), f"{where}.name")
    if name == "" or name.lower() == DEFAULT_PARTITION:
        name = DEFAULT_PARTITION
    raw_queues = doc.get("queues")
    if raw_queues is None:
        raise fail(f"{where}.queues", "queue config is not set")
    top = sequence(raw_queues, f"{where}.queues")
    limits = len(sequence(doc.get("limits"), f"{where}.limits"))
    for j, raw_limit in enumerate(sequence(doc.get("limits"), f"{where}.limits")):
        _limit(raw_limit, f"{where}.limits[{j}]")
    inserted = len(top) != 1 or str(mapping(top[0], f"{where}.queues[0]").get("name", "")).lower() != ROOT
    if inserted:
        root = _queue({"name": ROOT, "parent": True, "queues": top}, where, None)
    else:
        if _has_resources(top[0]):
            raise fail(f"{where}.queues[0].resources", "root queue must not have resource limits set")
        root = _queue(top[0], f"{where}.queues[0]", None, root=True)
    root_where = where if inserted else f"{where}.queues[0]"
    _check_resources(root, root_where, None)
    rules = tuple(_rule(r, f"{where}.placementrules[{k}]")
                  for k, r in enumerate(sequence(doc.get("placementrules"), f"{where}.placementrules")))
    _check_placement(rules, root, f"{where}.placementrules")
    preemption = _strict(doc.get("preemption"), f"{where}.preemption", _PREEMPTION_KEYS)
    node_sort = _strict(doc.get("nodesortpolicy"), f"{where}.nodesortpolicy", _NODE_SORT_KEYS)
    sort_type = _string(node_sort.get("type"), f"{where}.nodesortpolicy.type")
    if sort_type.lower() not in NODE_SORT_POLICIES:
        raise fail(f"{where}.nodesortpolicy.type", f"undefined policy: {sort_type}")
    for key, weight in _strict(node_sort.get("resourceweights"), f"{where}.nodesortpolicy.resourceweights",
                               None).items():
        if isinstance(weight, bool) or not isinstance(weight, int | float):
            raise fail(f"{where}.nodesortpolicy.resourceweights.{key}", f"must be a number, got {shown(weight)}")
        if weight < 0:
            raise fail(f"{where}.nodesortpolicy.resourceweights.{key}",
                       f"negative resource weight for {key} is not allowed")
    _check_max_apps(root, root_where)
    resolver = _strict(doc.get("usergroupresolver"), f"{where}.usergroupresolver", ("type",))
    return PartitionConf(
        name=name, root=root, rules=rules,
        preemption_enabled=_opt_flag(preemption.get("enabled"), f"{where}.preemption.enabled"),
        quota_preemption_enabled=_opt_flag(preemption.get("quotapreemptionenabled"),
                                           f"{where}.preemption.quotapreemptionenabled"),
        node_sort_policy=sort_type.lower(), limits=limits,
        user_group_resolver=_string(resolver.get("type"), f"{where}.usergroupresolver.type"))


def _has_resources(raw: Any) -> bool:
    if not isinstance(raw, Mapping):
        return False
    res = raw.get("resources")
    return isinstance(res, Mapping) and (res.get("guaranteed") is not None or res.get("max") is not None)


def _opt_flag(value: Any, where: str) -> bool | None:
    return None if value is None else _flag(value, where)


def _acl(value: Any, where: str) -> str:
    acl = _string(value, where)
    if acl.strip() and acl.strip() != "*" and len(acl.split()) > 2:
        raise fail(where, f"multiple spaces found in ACL: '{acl.strip()}'")
    return acl  # a leading space means "no users, these groups"


def _queue(raw: Any, where: str, parent_path: str | None, *, root: bool = False) -> QueueConf:
    doc = _strict(raw, where, _QUEUE_KEYS)
    name = _string(doc.get("name"), f"{where}.name")
    if parent_path is not None and not QUEUE_NAME.match(name):
        raise fail(f"{where}.name", f"invalid queue name {shown(name)}, max 64 characters consisting of "
                                    "alphanumeric characters and '-', '_', '#', '@', '/', ':' allowed")
    lowered = name.lower()
    path = lowered if parent_path is None else f"{parent_path}.{lowered}"
    resources = _strict(doc.get("resources"), f"{where}.resources", _RESOURCES_KEYS)
    guaranteed = resources_from_conf(resources.get("guaranteed"), f"{where}.resources.guaranteed")
    maximum = resources_from_conf(resources.get("max"), f"{where}.resources.max")
    if not fits_max_undef(maximum, guaranteed):
        raise fail(f"{where}.resources.guaranteed",
                   f"guaranteed resource {guaranteed} is larger than maximum resource {maximum} for queue {name}")
    child_where = f"{where}.queues"
    children: list[QueueConf] = []
    seen: set[str] = set()
    for i, child in enumerate(sequence(doc.get("queues"), child_where)):
        queue = _queue(child, f"{child_where}[{i}]", path)
        if queue.name in seen:
            raise fail(f"{child_where}[{i}].name", f"duplicate child name found with name '{queue.name}', level "
                                                   f"{path.count('.') + 1}")
        seen.add(queue.name)
        children.append(queue)
    explicit_parent = _flag(doc.get("parent"), f"{where}.parent")
    leaf = not explicit_parent and not root and not children
    template = None
    if not leaf and doc.get("childtemplate") is not None:
        raw_template = _strict(doc.get("childtemplate"), f"{where}.childtemplate", _TEMPLATE_KEYS)
        template_res = _strict(raw_template.get("resources"), f"{where}.childtemplate.resources", _RESOURCES_KEYS)
        template = ChildTemplate(
            _uint(raw_template.get("maxapplications"), f"{where}.childtemplate.maxapplications"),
            _properties(raw_template.get("properties"), f"{where}.childtemplate.properties"),
            resources_from_conf(template_res.get("guaranteed"), f"{where}.childtemplate.resources.guaranteed"),
            resources_from_conf(template_res.get("max"), f"{where}.childtemplate.resources.max"))
    raw_limits = sequence(doc.get("limits"), f"{where}.limits")
    for j, raw_limit in enumerate(raw_limits):
        _limit(raw_limit, f"{where}.limits[{j}]")
    return QueueConf(
        name=lowered, path=path, leaf=leaf, parent_flag=explicit_parent or root,
        guaranteed=guaranteed, max=maximum,
        max_applications=_uint(doc.get("maxapplications"), f"{where}.maxapplications"),
        properties=_properties(doc.get("properties"), f"{where}.properties"),
        submit_acl=_acl(doc.get("submitacl"), f"{where}.submitacl"),
        admin_acl=_acl(doc.get("adminacl"), f"{where}.adminacl"),
        children=tuple(children), child_template=template, limits=len(raw_limits))


def _limit(raw: Any, where: str) -> None:
    """The syntax of a user or group limit (the limits themselves are not modelled)."""
    doc = _strict(raw, where, _LIMIT_KEYS)
    users = _strings(doc.get("users"), f"{where}.users")
    groups = _strings(doc.get("groups"), f"{where}.groups")
    if not users and not groups:
        raise fail(where, "empty user and group lists defined in limit")
    res = resources_from_conf(doc.get("maxresources"), f"{where}.maxresources")
    apps = _uint(doc.get("maxapplications"), f"{where}.maxapplications")
    if doc.get("maxresources") and not strictly_positive(res):
        raise fail(f"{where}.maxresources", "MaxResources should be greater than zero")
    if apps == 0 and not doc.get("maxresources"):
        raise fail(where, "invalid resource combination for limit: all resource limits are null")


def _check_resources(queue: QueueConf, where: str, parent_max: Mapping[str, int] | None) -> dict[str, int]:
    """checkQueueResource: the guarantee a queue counts for against its parent (its own, else its children's)."""
    if not fits_max_undef(parent_max, queue.max):
        raise fail(f"{where}.resources.max", f"max resource of parent {dict(parent_max or {})} is smaller than "
                                             f"maximum resource {dict(queue.max)} for queue {queue.name}")
    own_max = _min_defined(queue.max, parent_max)
    summed: dict[str, int] = {}
    for i, child in enumerate(queue.children):
        child_where = f"{where}.queues[{i}]"
        for key, value in _check_resources(child, child_where, own_max).items():
            summed[key] = summed.get(key, 0) + value
    if not fits_max_undef(queue.guaranteed, summed):
        raise fail(f"{where}.resources.guaranteed",
                   f"guaranteed resource of parent {dict(queue.guaranteed)} is smaller than sum of guaranteed "
                   f"resources {summed} of the children for queue {queue.name}")
    if not fits_max_undef(own_max, summed):
        raise fail(f"{where}.resources.max", f"max resource {own_max} is smaller than sum of guaranteed resources "
                                             f"{summed} of the children for queue {queue.name}")
    return dict(queue.guaranteed) if any(queue.guaranteed.values()) else summed


def _min_defined(own: Mapping[str, int], parent: Mapping[str, int] | None) -> dict[str, int] | None:
    """ComponentWiseMin of two limits, a type missing from either being unlimited (nil stays nil)."""
    if parent is None:
        return dict(own) if own else None
    out = dict(parent)
    for key, value in own.items():
        out[key] = min(value, out[key]) if key in out else value
    return out


def _check_max_apps(queue: QueueConf, where: str) -> None:
    for i, child in enumerate(queue.children):
        child_where = f"{where}.queues[{i}]"
        if queue.max_applications and queue.max_applications < child.max_applications:
            raise fail(f"{child_where}.maxapplications",
                       "parent maxApplications must be larger than child maxApplications")
        if queue.max_applications and child.max_applications == 0:
            raise fail(f"{child_where}.maxapplications",
                       "maxApplications is either undefined or zero, which is not allowed when parent queue's "
                       "maxApplications is defined")
        _check_max_apps(child, child_where)


def _rule(raw: Any, where: str) -> PlacementRule:
    doc = _strict(raw, where, _RULE_KEYS, required=True)
    name = _string(doc.get("name"), f"{where}.name")
    if not RULE_NAME.match(name):
        raise fail(f"{where}.name", f"invalid rule name {name}, a name must be a valid identifier")
    kind = name.lower()
    if kind == "recovery":
        raise fail(f"{where}.name", "recovery rule cannot be part of the config, failing placement rule config")
    if kind not in RULES:
        raise fail(f"{where}.name", f"unknown rule name specified {name}, failing placement rule config")
    parent = _rule(doc["parent"], f"{where}.parent") if doc.get("parent") is not None else None
    flt = _strict(doc.get("filter"), f"{where}.filter", _FILTER_KEYS)
    filter_type = _string(flt.get("type"), f"{where}.filter.type")
    if filter_type and filter_type.lower() not in ("allow", "deny"):
        raise fail(f"{where}.filter.type",
                   f"invalid rule filter type {filter_type}, filter type  must be either '', allow or deny")
    value = _string(doc.get("value"), f"{where}.value").lower()
    if kind in ("fixed", "tag") and not value:
        raise fail(f"{where}.value", f"a {kind} queue rule must have a {'queue' if kind == 'fixed' else 'tag'} "
                                     "name set")
    if kind == "fixed":
        for part in value.split("."):
            if not QUEUE_NAME.match(part):
                raise fail(f"{where}.value", f"invalid queue name {shown(part)} in fixed rule value {shown(value)}")
        if value.startswith(ROOT) and parent is not None:
            raise fail(f"{where}.parent", "cannot have a fixed queue rule with qualified queue name and a parent rule")
    return PlacementRule(kind, _flag(doc.get("create"), f"{where}.create"), value, parent, filter_type.lower(),
                         _strings(flt.get("users"), f"{where}.filter.users"),
                         _strings(flt.get("groups"), f"{where}.filter.groups"))


def longest_static_path(rule: PlacementRule) -> tuple[str, str, bool]:
    """getLongestStaticPath: the fixed part of a rule chain (`root.users`), the chain (`fixed->tag->user`) and
    whether a dynamic rule follows. ValueError for a second fully qualified fixed rule."""
    path, names, dynamic = "", [], False
    for r in rule.chain():
        names.append(r.name)
        if dynamic:
            continue
        if r.name != "fixed":
            path = path or "<dynamic>"
            dynamic = True
            continue
        if r.value.startswith(ROOT):
            if path:
                raise ValueError(f"illegal fully qualified 'fixed' rule with value {r.value}")
            path = r.value
            continue
        path = f"{path or ROOT}.{r.value}"
    return path, "->".join(names), dynamic


def check_hierarchy_for_placement(parts: list[str], create: bool, dynamic: bool,
                                  queues: tuple[QueueConf, ...], parent: QueueConf | None) -> tuple[str, str]:
    """checkQueueHierarchyForPlacement: "ok", "not-leaf", "missing" or "last-leaf", with the leaf's name."""
    name = parts[0]
    if not queues:
        if parent is not None and not parent.parent_flag:
            return "last-leaf", parent.name
        return ("ok", "") if create else ("missing", "")
    found = next((q for q in queues if q.name == name), None)
    if found is None:
        return ("ok", "") if create else ("missing", "")
    if len(parts) == 1:
        # As upstream, "parent" here is the written flag: a queue with children but no `parent: true` counts
        # as a leaf for a chain that goes on dynamically.
        if dynamic:
            return ("ok", "") if found.parent_flag else ("not-leaf", "")
        return ("not-leaf", "") if found.parent_flag else ("ok", "")
    return check_hierarchy_for_placement(parts[1:], create, dynamic, found.children, found)


def _check_placement(rules: tuple[PlacementRule, ...], root: QueueConf, where: str) -> None:
    for i, rule in enumerate(rules):
        try:
            path, chain, dynamic = longest_static_path(rule)
        except ValueError as exc:
            raise fail(f"{where}[{i}].value", str(exc)) from None
        if not path.startswith(ROOT):
            continue
        result, last = check_hierarchy_for_placement(path.lower().split("."), rule.create, dynamic, (root,), None)
        if result == "not-leaf":
            raise fail(f"{where}[{i}]", f"placement rule no. #{i} ({chain}) references a queue ({path}) which is "
                                        "not a leaf")
        if result == "missing":
            raise fail(f"{where}[{i}]", f"placement rule no. #{i} ({chain}) references non-existing queues ({path}) "
                                        "and create is 'false'")
        if result == "last-leaf":
            raise fail(f"{where}[{i}]", f"placement rule no. #{i} ({chain}) references non-existing queues ({path}) "
                                        f"which cannot be created because the last queue ({last}) in the hierarchy "
                                        "is a leaf")
