"""YuniKorn's queueing as an admission policy: which pods (of which applications) run, in which queue, in
which order, and which are preempted toward guaranteed resources. Phalanx's engine places what is admitted.

Restated from apache/yunikorn-core `pkg/scheduler` (commit be3bb487):
- Queues (`objects/queue.go`): a configured tree under `root`; root's max is the cluster's total
  (SetMaxResource). Headroom (`getHeadRoom`): per resource type a queue limits, max less allocated, the
  smallest over the queue and its ancestors; a type no max names is unlimited. `canRunApp`: the queue and every
  ancestor with `maxapplications` stay within it with one more running application. Properties are inherited
  by children (`mergeProperties`; `priority.policy` and `priority.offset` are not, `preemption.policy` only when
  `disabled`); `application.sort.policy` fifo (the default) or fair applies to leaves,
  `application.sort.priority` (enabled by default), `priority.policy` default or fence and `priority.offset`,
  `preemption.policy` default, fence or disabled, `preemption.delay` (30s by default, leaves only). A value
  YuniKorn cannot read it logs and replaces with the default; so does this model, and not_modelled names it.
- Queue order (`objects/sorters.go`, `sortQueuesByPriorityAndFairness`): a parent's children with pending
  applications by current priority (the highest pending application's, through offsets and fences), then by
  fair share `getFairShare`: the largest allocated/guaranteed over allocated types, a type without a guarantee
  against the queue's fair max (its own max over its ancestors', root's being the cluster). With
  `application.sort.priority: disabled`, fairness first and priority breaks ties.
- Application order: fifo by priority then submission time (submission then priority when priority sorting
  is disabled); fair by usage, which is nothing for an application not yet admitted, so by priority.
- Placement (`placement/*.go`): rules in order, `provided` (the queue the workload names), `tag` (here the
  `namespace` tag), `fixed`, each with `create` and a `parent` rule; a name not starting with `root.` goes
  under the parent rule's queue or root, dots replaced by `_dot_`. A result must be a leaf (or creatable
  under a parent) the submitter may submit to (`submitacl`, checked up the tree); no match puts the
  application in `root.default` if it exists, else rejects it ("application rejected: no placement rule
  matched"). No rules: one implicit `provided` rule without create. Created queues take their parent's
  `childtemplate`.
- Preemption toward guaranteed (`objects/preemption.go`, `queue.go` FindEligiblePreemptionVictims): an
  application that cannot start, waiting longer than its queue's `preemption.delay`, in a queue whose
  remaining guarantee holds its request, looks for victims below the fence root (the first ancestor with
  `preemption.policy: fence`, or whose max the request would pass, else root): running applications in other
  leaves whose queue is over its guarantee in a resource the request uses, not `preemption.policy: disabled`,
  of priority at most the request's (offsets applied down the tree; a `priority.policy: fence` subtree is
  all eligible, or out of reach when its offset is above the request's priority), newest first, while what is
  taken still fits the asking queue's remaining guarantee; the partition's `preemption.enabled: false` turns
  it off.
- Gangs: k8shim task groups are placeholder pods of the application (phalanx/admission/yunikorn_placeholders.py), each a
  workload here; a v1.37 gang (a PodGroup) reserves its minimum all at once, admitted when it fits the headroom.

Workload granularity: as the k8shim hands YuniKorn each pod (the factory's `per_pod`), a workload is one pod,
of the application its `applicationId` names (`QueuedWorkload.application`; the k8shim's
`yunikorn-<namespace>-autogen` without one), admitted when it fits every headroom and maxapplications allows
its application (one already running counts already); application order is by the application's first
submission. A v1.37 gang (a PodGroup) is one workload admitted at its minimum. Requests are counted with
YuniKorn's `pods` resource (one a pod); cpu is YuniKorn's `vcore`. not_modelled() names the rest.

Upstream cases not restated, and why: per-node predicates and node sorting (the engine places pods), user and
group limits (no user identity in the input), recovery queue and forced placement (no restarts), quota
preemption (`quota.preemption.delay`: max lowered at run time, which the input cannot do), application state
machine events.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from phalanx.admission.base import Admit, EvictWorkload, QueuedWorkload
from phalanx.admission.yunikorn_conf import (
    DEFAULT_PARTITION,
    DEFAULT_PLACEMENT_QUEUE,
    QUEUE_NAME,
    ROOT,
    VCORE,
    ChildTemplate,
    PartitionConf,
    PlacementRule,
    QueueConf,
    YunikornConf,
    default_conf,
    parse_yunikorn_conf,
    strictly_positive,
)
from phalanx.admission.yunikorn_namespaces import NamespaceTags
from phalanx.api.quantity import parse_duration

Res = dict[str, int]
MIN_PRIORITY, MAX_PRIORITY = -(2**31), 2**31 - 1
DEFAULT_PREEMPTION_DELAY = 30.0
DEFAULT_USER = "nobody"  # k8shim constants.DefaultUser: pods carry no user info in the input
REJECTED = "application rejected: no placement rule matched"
NOT_ENOUGH_QUEUE_QUOTA = "Not enough queue quota"
MAX_APPS_REACHED = "Maximum number of running applications reached the queue limit"


def to_yunikorn(requests: Mapping[str, int], pods: int = 1) -> Res:
    """A pod's (or pods') requests in YuniKorn's names, with its `pods` resource (k8shim GetPodResource)."""
    out = {(VCORE if k == "cpu" else k): v for k, v in requests.items() if v}
    out["pods"] = out.get("pods", 0) + pods
    return out


def _show(res: Mapping[str, int]) -> str:
    """A resource as the core's Resource.String prints it: map[name:value ...], names sorted."""
    return "map[" + " ".join(f"{k}:{v}" for k, v in sorted(res.items())) + "]"


def _add(a: Mapping[str, int], b: Mapping[str, int], sign: int = 1) -> Res:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + sign * v
    return out


def fits_headroom(headroom: Mapping[str, int] | None, request: Mapping[str, int]) -> bool:
    """headRoom.FitInMaxUndef(request): types the headroom does not name are unlimited; nil headroom: all fit."""
    if headroom is None:
        return True
    return all(v <= headroom[k] for k, v in request.items() if k in headroom and v > 0)


def fair_share(allocated: Mapping[str, int], guaranteed: Mapping[str, int] | None,
               fair_max: Mapping[str, int] | None) -> float:
    """resources.getFairShare: the largest share over allocated types, against guaranteed, else fair max."""
    best = 0.0
    for key, used in allocated.items():
        if used < 0:
            continue
        for denominators in (guaranteed, fair_max):
            if denominators is None or key not in denominators:
                continue
            den = denominators[key]
            share = (0.0 if used <= 0 else 1.0) if den <= 0 else used / den
            best = max(best, share)
            break
    return best


def priority_by_policy(policy: str, offset: int, priority: int) -> int:
    """priorityValueByPolicy: fence gives the offset, default adds it (clamped to int32); MinPriority stays."""
    if priority == MIN_PRIORITY:
        return priority
    if policy == "fence":
        return offset
    return max(MIN_PRIORITY, min(MAX_PRIORITY, priority + offset))


def sort_queue_key(queue: YQueue, priority_first: bool) -> tuple[Any, ...]:
    """The sort key of a child queue under a fair parent (sortQueuesByPriorityAndFairness or
    ...FairnessAndPriority); ties by path, where YuniKorn's map order is arbitrary."""
    share = fair_share(queue.allocated, queue.guaranteed, queue.fair_max())
    prio = -queue.current_priority()
    return (prio, share, queue.path) if priority_first else (share, prio, queue.path)


# Properties: (key, reader) with YuniKorn's default when the value cannot be read.
def _sort_policy(value: str) -> str | None:
    return {"fifo": "fifo", "": "fifo", "stateaware": "fifo", "fair": "fair"}.get(value)


def _enabled(value: str) -> bool | None:
    return {"enabled": True, "disabled": False}.get(value.lower())


def _int32(value: str) -> int | None:
    try:
        number = int(value.strip(), 10)
    except ValueError:
        return None
    return number if MIN_PRIORITY <= number <= MAX_PRIORITY else None


def _delay(value: str) -> float | None:
    try:
        seconds = parse_duration(value)
    except ValueError:
        return None
    return seconds if seconds > 0 else None


def merge_properties(parent: Mapping[str, str], own: Mapping[str, str]) -> dict[str, str]:
    """mergeProperties with filterParentProperty: what a child inherits, its own values winning."""
    out: dict[str, str] = {}
    for key, value in parent.items():
        if key == "priority.policy":
            value = "default"
        elif key == "priority.offset":
            value = "0"
        elif key == "preemption.policy" and value.lower() != "disabled":
            value = "default"
        out[key] = value
    out.update(own)
    return out


@dataclass
class _Stats:
    admitted: int = 0
    preempted: int = 0
    wait_sum: float = 0.0


@dataclass(eq=False)
class _App:
    workload: QueuedWorkload
    seq: int
    total: Res  # the whole request, YuniKorn names
    minimum: Res  # what must fit to start: the gang minimum (placeholders), else the total
    gang: bool
    min_counts: dict[str, int]
    queue: YQueue | None = None
    admitted_at: float | None = None
    charged: Res = field(default_factory=dict)
    reason: str = ""
    app_created: float = 0.0  # when its application's first workload was submitted (the application order)

    @property
    def key(self) -> str:
        return self.workload.key

    @property
    def application(self) -> str:
        """The application it belongs to: several workloads (pods) share one under the k8shim."""
        return self.workload.application or self.workload.key

    @property
    def shape(self) -> tuple[tuple[str, int], ...]:
        return tuple(sorted(self.minimum.items()))


class YQueue:
    """One queue of the tree with what the model tracks for it."""

    def __init__(self, path: str, parent: YQueue | None, leaf: bool, *, guaranteed: Mapping[str, int],
                 maximum: Mapping[str, int], max_apps: int, properties: Mapping[str, str], submit_acl: str = "",
                 template: ChildTemplate | None = None, dynamic: bool = False) -> None:
        self.path = path
        self.name = path.rsplit(".", 1)[-1]
        self.parent = parent
        self.leaf = leaf
        self.children: dict[str, YQueue] = {}
        self.guaranteed: Res | None = dict(guaranteed) if strictly_positive(guaranteed) else None
        self.max: Res | None = dict(maximum) if strictly_positive(maximum) else None
        self.max_apps = max_apps
        self.own_properties = dict(properties)
        self.properties: dict[str, str] = merge_properties(parent.properties if parent else {}, properties)
        self.submit_acl = submit_acl
        self.template = template
        self.dynamic = dynamic
        self.allocated: Res = {}
        self.running = 0  # running applications under it
        self.app_refs: Counter[str] = Counter()  # running application -> its admitted workloads under it
        self.apps: dict[str, _App] = {}  # leaves: admitted workloads
        self.pending: list[tuple[tuple[Any, ...], _App]] = []  # leaves: sorted by the application order
        self.shapes: Counter[tuple[tuple[str, int], ...]] = Counter()
        self.priorities: Counter[int] = Counter()
        self.stats = _Stats()
        self.bad_properties: list[str] = []
        self._apply_properties()
        if parent is not None:
            parent.children[self.name] = self

    def _read(self, key: str, reader: Any, default: Any) -> Any:
        if key not in self.properties:
            return default
        value = reader(self.properties[key])
        if value is None:
            self.bad_properties.append(f"{key}: {self.properties[key]!r}")
            return default
        return value

    def _apply_properties(self) -> None:
        self.sort_policy = "fair" if not self.leaf else self._read("application.sort.policy", _sort_policy, "fifo")
        self.priority_sort = self._read("application.sort.priority", _enabled, True)
        self.priority_policy = self._read("priority.policy",
                                          lambda v: {"default": "default", "fence": "fence"}.get(v.lower()),
                                          "default")
        self.priority_offset = self._read("priority.offset", _int32, 0)
        self.preemption_policy = self._read(
            "preemption.policy", lambda v: {"": "default", "default": "default", "fence": "fence",
                                            "disabled": "disabled"}.get(v.lower()), "default")
        self.preemption_delay = (self._read("preemption.delay", _delay, DEFAULT_PREEMPTION_DELAY) if self.leaf
                                 else DEFAULT_PREEMPTION_DELAY)

    def ancestry(self) -> list[YQueue]:
        out: list[YQueue] = []
        node: YQueue | None = self
        while node is not None:
            out.append(node)
            node = node.parent
        return out

    def headroom(self) -> Res | None:
        """getHeadRoom: None when nothing up the tree has a max."""
        room: Res | None = None
        for queue in reversed(self.ancestry()):
            if queue.max is None:
                continue
            own = {k: v - queue.allocated.get(k, 0) for k, v in queue.max.items()}
            room = own if room is None else {**room, **{k: min(v, room[k]) if k in room else v
                                                         for k, v in own.items()}}
        return room

    def fair_max(self) -> Res | None:
        """GetFairMaxResource: root's max, each descendant's own max entries overriding."""
        if self.parent is None:
            return dict(self.max) if self.max is not None else None
        limit = self.parent.fair_max()
        if not self.max or not limit:
            return limit
        return {**limit, **self.max}

    def can_run_app(self, application: str | None = None) -> bool:
        """Whether `application` may run here within every `maxapplications` up the tree (one already running
        under a queue counts there already); None: whether a new one may."""
        return all(q.max_apps == 0 or (application is not None and application in q.app_refs)
                   or q.running + 1 <= q.max_apps for q in self.ancestry())

    def current_priority(self) -> int:
        """The queue's priority as its parent sorts it: its highest pending application's (a leaf) or child's
        (a parent), through its policy and offset."""
        if self.leaf:
            raw = max(self.priorities, default=MIN_PRIORITY)
        else:
            raw = max((c.current_priority() for c in self.children.values() if c.has_pending()),
                      default=MIN_PRIORITY)
        return priority_by_policy(self.priority_policy, self.priority_offset, raw)

    def has_pending(self) -> bool:
        if self.leaf:
            return bool(self.pending)
        return any(c.has_pending() for c in self.children.values())

    def app_key(self, app: _App) -> tuple[Any, ...]:
        """The application order (sortApplications); ties by arrival order."""
        prio, created = -app.workload.priority, app.app_created
        if self.sort_policy == "fifo" and not self.priority_sort:
            return (created, prio, app.workload.created, app.seq)
        return (prio, created, app.workload.created, app.seq)

    def add_pending(self, app: _App) -> None:
        bisect.insort(self.pending, (self.app_key(app), app), key=lambda item: item[0])
        self.shapes[app.shape] += 1
        self.priorities[app.workload.priority] += 1

    def remove_pending(self, app: _App) -> None:
        key = self.app_key(app)
        index = bisect.bisect_left(self.pending, key, key=lambda item: item[0])
        if index < len(self.pending) and self.pending[index][1] is app:
            del self.pending[index]
            self.shapes[app.shape] -= 1
            self.priorities[app.workload.priority] -= 1
            if self.shapes[app.shape] <= 0:
                del self.shapes[app.shape]
            if self.priorities[app.workload.priority] <= 0:
                del self.priorities[app.workload.priority]

    def charge(self, res: Mapping[str, int], sign: int, application: str) -> None:
        for queue in self.ancestry():
            queue.allocated = _add(queue.allocated, res, sign)
            before = queue.app_refs[application]
            queue.app_refs[application] = before + sign
            if queue.app_refs[application] <= 0:
                del queue.app_refs[application]
            queue.running += (application in queue.app_refs) - (before > 0)

    def remaining_guaranteed(self) -> Res | None:
        """What is left of the guarantees up the tree (guaranteed − allocated, the smallest per type); None when no
        queue on the path has a guarantee (a simplified GetRemainingGuaranteedResource)."""
        out: Res | None = None
        for queue in self.ancestry():
            if queue.guaranteed is None:
                continue
            left = {k: v - queue.allocated.get(k, 0) for k, v in queue.guaranteed.items()}
            out = left if out is None else {**left, **{k: min(v, left[k]) if k in left else v for k, v in out.items()}}
        return out


class YunikornAdmission:
    """YuniKorn's queues, placement, ordering and preemption over one partition of a `queues.yaml`."""

    def __init__(self, conf: YunikornConf | None, capacity: Mapping[str, int],
                 partition: str = DEFAULT_PARTITION) -> None:
        self.conf = conf if conf is not None else default_conf()
        part = self.conf.partition(partition)
        self._notes: list[str] = []
        self._v137_gangs = False  # a v1.37 PodGroup or a gang minimum was submitted
        if part is None:
            self._notes.append(f"queues.yaml has no {partition!r} partition: YuniKorn's default configuration "
                               "is used")
            part = default_conf().partition(DEFAULT_PARTITION)
            assert part is not None
        elif len(self.conf.partitions) > 1:
            others = ", ".join(p.name for p in self.conf.partitions if p.name != partition)
            self._notes.append(f"partitions other than {partition!r} ({others}): not modelled (the k8shim "
                               "schedules into the default partition)")
        self.partition: PartitionConf = part
        self.rules: tuple[PlacementRule, ...] = part.rules or (PlacementRule("provided"),)
        self.preemption = part.preemption_enabled is None or part.preemption_enabled
        self.queues: dict[str, YQueue] = {}
        self._build(part.root, None)
        self.root = self.queues[ROOT]
        self.nodes_changed(capacity)
        self._apps: dict[str, _App] = {}
        self._rejected: dict[str, str] = {}
        self._seq = 0
        self._wake: float | None = None  # see wake_at
        self._app_first: dict[str, float] = {}  # application -> when its first workload was submitted
        self._namespaces: dict[str, NamespaceTags] = {}  # namespace -> its YuniKorn annotations (set_namespaces)

    def _build(self, conf: QueueConf, parent: YQueue | None) -> None:
        queue = YQueue(conf.path, parent, conf.leaf, guaranteed=conf.guaranteed, maximum=conf.max,
                       max_apps=conf.max_applications, properties=conf.properties, submit_acl=conf.submit_acl,
                       template=conf.child_template)
        self.queues[conf.path] = queue
        for child in conf.children:
            self._build(child, queue)

    # --- the AdmissionPolicy protocol ---

    def workload_priority(self, priority_class: str, priority: int) -> int:
        return priority

    def nodes_changed(self, total: Mapping[str, int]) -> None:
        """Root's max is the partition's total resources (SetMaxResource: a zero total leaves it unset)."""
        res = {(VCORE if k == "cpu" else k): v for k, v in total.items()}
        self.root.max = res if strictly_positive(res) else None

    def submit(self, workload: QueuedWorkload, now: float) -> None:
        self.finished(workload.key, now)
        self._seq += 1
        total: Res = {}
        minimum: Res = {}
        min_counts: dict[str, int] = {}
        gang = False
        for ps in workload.pod_sets:
            total = _add(total, to_yunikorn({k: v * ps.count for k, v in ps.requests.items()}, ps.count))
            count = ps.count if ps.min_count is None else min(ps.min_count, ps.count)
            if count < ps.count:
                gang = True
                min_counts[ps.name] = count
            minimum = _add(minimum, to_yunikorn({k: v * count for k, v in ps.requests.items()}, count))
        self._v137_gangs |= gang or workload.key.startswith("PodGroup ")
        app = _App(workload, self._seq, total, minimum if gang else total, gang, min_counts)
        app.app_created = self._app_first.setdefault(app.application, workload.created)
        path, reason = self.place(workload.queue, {"namespace": workload.namespace})
        if path is None:
            self._rejected[workload.key] = reason
            return
        queue = self.queues.get(path) or self._create(path)
        tags = self._namespaces.get(workload.namespace)
        if tags is not None and queue.dynamic:  # partition.go AddApplication: a dynamic queue takes the tags
            self._tag(queue, tags)
        app.queue = queue
        self._apps[workload.key] = app
        queue.add_pending(app)

    def finished(self, key: str, now: float) -> None:
        self._rejected.pop(key, None)
        app = self._apps.pop(key, None)
        if app is None or app.queue is None:
            return
        if app.admitted_at is None:
            app.queue.remove_pending(app)
        else:
            app.queue.charge(app.charged, -1, app.application)
            app.queue.apps.pop(key, None)

    def cycle(self, now: float) -> list[Admit | EvictWorkload]:
        out: list[Admit | EvictWorkload] = []
        self._wake = None
        self._allocate(now, out)
        if self.preemption:
            self._preempt(now, out)
        return out

    def wake_at(self) -> float | None:
        """When the last cycle's answer changes with time alone: the first waiting application's preemption
        delay ends (the simulator runs a cycle then)."""
        return self._wake

    def queue_rows(self) -> list[dict[str, object]]:
        rows: list[dict[str, object]] = []
        for path in sorted(self.queues):
            queue = self.queues[path]
            stats = queue.stats
            rows.append({
                "queue": path, "leaf": queue.leaf, "dynamic": queue.dynamic,
                "guaranteed": dict(sorted((queue.guaranteed or {}).items())),
                "max": dict(sorted((queue.max or {}).items())),
                "allocated": {k: v for k, v in sorted(queue.allocated.items()) if v},
                "admitted": stats.admitted, "pending": self._pending_under(queue), "running": queue.running,
                "max_applications": queue.max_apps, "preempted": stats.preempted,
                "mean_wait": stats.wait_sum / stats.admitted if stats.admitted else None,
            })
        return rows

    def pending_reason(self, key: str) -> str:
        if key in self._rejected:
            return self._rejected[key]
        app = self._apps.get(key)
        if app is None or app.admitted_at is not None:
            return ""
        return app.reason or f"waiting in queue {app.queue.path if app.queue else '?'}"

    def not_modelled(self) -> list[str]:
        out = list(self._notes)
        if self._v137_gangs:
            out.append("a v1.37 gang (a PodGroup with minCount) is admitted whole at its minimum, as if placeholders "
                       "had reserved it at once (so no placeholder timeout; the pods above the minimum are not "
                       "admitted later when it starts on its minimum alone); YuniKorn itself knows no v1.37 gang and "
                       "would take its pods one by one")
        for path, queue in sorted(self.queues.items()):
            out.extend(f"queue {path}: property {bad} cannot be read; YuniKorn logs it and uses its default, as here"
                       for bad in queue.bad_properties)
            if queue.max and "cpu" in queue.max:
                out.append(f"queue {path}: resources.max names cpu; YuniKorn counts pods' cpu as vcore, so this "
                           "limits nothing (as in YuniKorn)")
        props = {k for q in self.queues.values() for k in q.own_properties}
        for key in sorted(props & {"application.unschedasks.backoff", "application.unschedasks.backoff.delay",
                                   "quota.preemption.delay"}):
            out.append(f"property {key}: not modelled")
        if self.partition.limits or any(self._conf_limits()):
            out.append("user and group limits: not modelled (the input carries no user identity)")
        if any(r.name == "user" for rule in self.rules for r in rule.chain()):
            out.append("placement rule user: pods carry no user info, so the k8shim's default user "
                       f"{DEFAULT_USER!r} is placed (root.{DEFAULT_USER})")
        if any(r.filter_users or r.filter_groups for rule in self.rules for r in rule.chain()):
            out.append(f"placement rule filters: matched against user {DEFAULT_USER!r} with no groups")
        if self.partition.node_sort_policy:
            out.append(f"nodesortpolicy {self.partition.node_sort_policy}: node sorting is the profile's")
        out.append("preemption picks victims across the cluster (YuniKorn picks them per node), pods (a gang "
                   "whole); allow-preemption annotations and the preemption retry interval are not modelled")
        out.append("a pod counts as allocated in its queue from its admission, before a node takes it (YuniKorn "
                   "allocates on a node and in the queue at once)")
        return out

    def set_namespaces(self, namespaces: Mapping[str, NamespaceTags], warnings: Iterable[str] = ()) -> None:
        """The Namespaces' YuniKorn annotations (phalanx.admission.yunikorn_namespaces), applied to the dynamic
        queue each application of theirs is placed in."""
        self._namespaces = dict(namespaces)
        self._notes.extend(warnings)

    @staticmethod
    def _tag(queue: YQueue, tags: NamespaceTags) -> None:
        """SetResources (both, when either is set) and SetMaxRunningApps, on an unmanaged queue."""
        if tags.maximum is not None or tags.guaranteed is not None:
            queue.guaranteed = dict(tags.guaranteed) if tags.guaranteed and strictly_positive(tags.guaranteed) \
                else None
            queue.max = dict(tags.maximum) if tags.maximum and strictly_positive(tags.maximum) else None
        if tags.max_apps:
            queue.max_apps = tags.max_apps

    def task_group_refusal(self, queue_name: str, namespace: str, application: str,
                           groups: Iterable[tuple[Mapping[str, int], int]]) -> str | None:
        """Why the core refuses an application with task groups (partition.go AddApplication), or None: its
        queue must be a leaf sorting applications fifo (SupportTaskGroup), and the task groups' total (each
        group's minResource times minMember, with its pods) must fit every max under root (GetMaxQueueSet).
        A queue that placement cannot find or make is left to placement's own rejection (None here)."""
        path, _ = self.place(queue_name, {"namespace": namespace})
        queue = self.queues.get(path) if path is not None else None
        if queue is None:
            return None
        if not queue.leaf or queue.sort_policy != "fifo":
            return f"queue {path} cannot run application {application} with task group request: unsupported sort type"
        ask: Res = {}
        for requests, members in groups:
            ask = _add(ask, to_yunikorn({k: v * members for k, v in requests.items()}, members))
        limits: Res = {}
        for node in queue.ancestry()[:-1]:  # root's max (the cluster) is not a queue's set max
            for name, value in (node.max or {}).items():
                limits[name] = min(value, limits.get(name, value))
        if not fits_headroom(limits or None, ask):
            return (f"queue {path} cannot fit application {application}: task group request "
                    f"{_show(ask)} larger than max queue allocation {_show(limits)}")
        return None

    # --- placement ---

    def place(self, queue_name: str, tags: Mapping[str, str], user: str = DEFAULT_USER) -> tuple[str | None, str]:
        """AppPlacementManager.PlaceApplication: the leaf's path, or None with YuniKorn's reason. After the
        configured rules (the implicit recovery rule places nothing), `root.default` if it exists."""
        for rule in (*self.rules, None):
            try:
                name = self.apply_rule(rule, queue_name, tags, user) if rule is not None else ""
            except ValueError as exc:
                return None, f"{REJECTED} ({exc})"
            if rule is None and DEFAULT_PLACEMENT_QUEUE in self.queues:
                name = DEFAULT_PLACEMENT_QUEUE
            if not name:
                continue
            queue = self.queues.get(name)
            if queue is None:
                current = name
                while queue is None:
                    current = current.rsplit(".", 1)[0]
                    queue = self.queues.get(current)
                if not self._may_submit(queue, user):
                    continue
                if queue.leaf:
                    return None, f"application rejected: queue {name} cannot be created under leaf queue {current}"
            elif not queue.leaf or not self._may_submit(queue, user):
                continue
            return name, ""
        return None, REJECTED

    def apply_rule(self, rule: PlacementRule, queue_name: str, tags: Mapping[str, str], user: str) -> str:
        if not self._filter_allows(rule, user):
            return ""
        if rule.name == "provided":
            value = queue_name.lower()
        elif rule.name == "tag":
            value = next((v for k, v in tags.items() if k.lower() == rule.value), "").lower()
        elif rule.name == "user":
            value = user.lower()
        else:
            value = rule.value
        if not value:
            return ""
        qualified = value.startswith(ROOT + ".") or (rule.name == "fixed" and value.startswith(ROOT))
        if qualified:
            for part in value.split("."):
                if not QUEUE_NAME.match(part):
                    raise ValueError(f"invalid queue name {part!r}")
            path = value
        else:
            child = value.replace(".", "_dot_") if rule.name != "fixed" else value
            if rule.name != "fixed" and not QUEUE_NAME.match(child):
                raise ValueError(f"invalid queue name {child!r}")
            parent = ROOT
            if rule.parent is not None:
                parent = self.apply_rule(rule.parent, queue_name, tags, user)
                if not parent:
                    return ""
                if not parent.startswith(ROOT + "."):
                    parent = f"{ROOT}.{parent}"
                existing = self.queues.get(parent)
                if existing is not None and existing.leaf:
                    raise ValueError(f"parent rule returned a leaf queue: {parent}")
            path = f"{parent}.{child}"
        if not rule.create and path not in self.queues:
            return ""
        return path

    @staticmethod
    def _filter_allows(rule: PlacementRule, user: str) -> bool:
        if not rule.filter_users and not rule.filter_groups:
            return True
        listed = user in rule.filter_users
        return listed if rule.filter_type != "deny" else not listed

    @staticmethod
    def _may_submit(queue: YQueue, user: str) -> bool:
        """CheckSubmitAccess up the tree: `*`, or the user named in an ACL's user list."""
        for node in queue.ancestry():
            acl = node.submit_acl
            users = acl.split(" ")[0].split(",") if acl and not acl.startswith(" ") else []
            if acl.strip() == "*" or user in users:
                return True
        return False

    def _create(self, path: str) -> YQueue:
        """Dynamic queues down to `path` (a leaf), each from its parent's child template."""
        parts = path.split(".")
        parent = self.queues[ROOT]
        for depth in range(1, len(parts)):
            sub = ".".join(parts[: depth + 1])
            existing = self.queues.get(sub)
            if existing is None:
                template = parent.template or ChildTemplate()
                existing = YQueue(sub, parent, depth == len(parts) - 1, guaranteed=template.guaranteed,
                                  maximum=template.max, max_apps=template.max_applications,
                                  properties=template.properties, dynamic=True)
                self.queues[sub] = existing
            parent = existing
        return parent

    # --- allocation ---

    def _pending_under(self, queue: YQueue) -> int:
        if queue.leaf:
            return len(queue.pending)
        return sum(self._pending_under(c) for c in queue.children.values())

    def _pick_leaf(self, blocked: set[str]) -> YQueue | None:
        """Descend from root through each parent's children in queue order, skipping blocked leaves."""
        def live(queue: YQueue) -> bool:
            if queue.leaf:
                return bool(queue.pending) and queue.path not in blocked
            return any(live(c) for c in queue.children.values())

        def descend(queue: YQueue) -> YQueue | None:
            if queue.leaf:
                return queue if live(queue) else None
            children = [c for c in queue.children.values() if live(c)]
            children.sort(key=lambda c: sort_queue_key(c, queue.priority_sort))
            for child in children:
                found = descend(child)
                if found is not None:
                    return found
            return None

        return descend(self.root)

    def _allocate(self, now: float, out: list[Admit | EvictWorkload]) -> None:
        """Queues in queue order take turns; a leaf's applications are tried in application order and a leaf
        with none that fits is done for the cycle (headroom only shrinks within a cycle)."""
        blocked: set[str] = set()
        cursor: dict[str, int] = {}
        failed: dict[str, set[tuple[tuple[str, int], ...]]] = {}
        while True:
            leaf = self._pick_leaf(blocked)
            if leaf is None:
                return
            full = not leaf.can_run_app()  # no new application may start: only running ones' workloads
            if full and not any(a.application in leaf.app_refs for _, a in leaf.pending):
                for _, app in leaf.pending:
                    app.reason = f"{MAX_APPS_REACHED} ({self._max_apps_queue(leaf)})"
                blocked.add(leaf.path)
                continue
            headroom = leaf.headroom()
            shapes = failed.setdefault(leaf.path, set())
            index = cursor.get(leaf.path, 0)
            chosen: _App | None = None
            while index < len(leaf.pending) and len(shapes) < len(leaf.shapes):
                app = leaf.pending[index][1]
                if full and app.application not in leaf.app_refs:
                    app.reason = f"{MAX_APPS_REACHED} ({self._max_apps_queue(leaf)})"
                    index += 1
                    continue
                if app.shape not in shapes:
                    if fits_headroom(headroom, app.minimum):
                        chosen = app
                        break
                    shapes.add(app.shape)
                app.reason = f"{NOT_ENOUGH_QUEUE_QUOTA}: its request does not fit the headroom of queue {leaf.path}"
                index += 1
            cursor[leaf.path] = index
            if chosen is None:
                for _, app in leaf.pending[index:]:
                    app.reason = (f"{NOT_ENOUGH_QUEUE_QUOTA}: its request does not fit the headroom of queue "
                                  f"{leaf.path}")
                blocked.add(leaf.path)
                continue
            self._run(chosen, headroom, now, out)

    @staticmethod
    def _max_apps_queue(leaf: YQueue) -> str:
        full = next((q for q in leaf.ancestry() if q.max_apps and q.running + 1 > q.max_apps), leaf)
        return f"queue {full.path}: {full.running} of maxapplications {full.max_apps} running"

    def _run(self, app: _App, headroom: Res | None, now: float, out: list[Admit | EvictWorkload]) -> None:
        queue = app.queue
        assert queue is not None
        queue.remove_pending(app)
        counts: dict[str, int] = {}
        charged = app.total
        if app.gang and not fits_headroom(headroom, app.total):
            charged, counts = app.minimum, dict(app.min_counts)
        app.charged = charged
        app.admitted_at = now
        app.reason = ""
        queue.charge(charged, 1, app.application)
        queue.apps[app.key] = app
        queue.stats.admitted += 1
        queue.stats.wait_sum += max(0.0, now - app.workload.created)
        out.append(Admit(app.key, queue.path, counts=counts))

    # --- preemption ---

    def _preempt(self, now: float, out: list[Admit | EvictWorkload]) -> None:
        """For each leaf in path order, its waiting applications in order (one preemption per leaf and cycle, as
        YuniKorn's preemption attempt interval spaces them out)."""
        for path in sorted(self.queues):
            leaf = self.queues[path]
            if not leaf.leaf or not leaf.pending or leaf.preemption_policy == "disabled":
                continue
            if leaf.remaining_guaranteed() is None:
                continue  # no guarantee on the path: nothing to preempt toward
            tried: set[tuple[tuple[str, int], ...]] = set()
            for _, app in list(leaf.pending):
                if len(tried) >= len(leaf.shapes):
                    break
                if now - app.workload.created < leaf.preemption_delay:
                    due = app.workload.created + leaf.preemption_delay
                    self._wake = due if self._wake is None else min(self._wake, due)
                    continue
                if app.shape in tried or not leaf.can_run_app(app.application):
                    continue
                victims = self.find_victims(app)
                if victims is None:
                    tried.add(app.shape)
                    continue
                for victim in victims:
                    vq = victim.queue
                    assert vq is not None
                    self.finished(victim.key, now)
                    vq.stats.preempted += 1
                    out.append(EvictWorkload(victim.key, "Preempted",
                                             f"preempted by {app.key} (queue {leaf.path}) toward its guaranteed "
                                             "resources", by=app.key))
                self._run(app, leaf.headroom(), now, out)
                break

    def find_victims(self, app: _App) -> list[_App] | None:
        """Running applications whose eviction lets `app` start, or None (see the module docstring)."""
        queue = app.queue
        assert queue is not None
        ask = app.minimum
        remaining = queue.remaining_guaranteed()
        if remaining is None or not all(ask.get(k, 0) <= v for k, v in remaining.items() if k in ask):
            return None  # the asking queue must stay within its guarantee (checkPreemptionQueueGuarantees)
        fence, priority_at = self._fence(queue, app.workload.priority, ask)
        candidates: list[_App] = []
        self._collect(fence, queue, priority_at[fence.path], False, priority_at, candidates)
        candidates.sort(key=lambda a: (-(a.admitted_at or 0.0), -a.seq))
        taken: Res = {}
        chosen: list[_App] = []
        over: dict[str, Res] = {}
        for victim in candidates:
            vq = victim.queue
            assert vq is not None
            left = over.setdefault(vq.path, vq.remaining_guaranteed() or {})
            if left and not any(left.get(k, 0) < 0 for k in ask if k in left):
                continue  # the victim's queue is no longer over its guarantee in a type the ask uses
            if not all(v <= remaining.get(k, v) for k, v in _add(taken, victim.charged).items() if k in remaining):
                break  # what is taken must still fit the asking queue's remaining guarantee
            taken = _add(taken, victim.charged)
            over[vq.path] = {k: v + victim.charged.get(k, 0) for k, v in left.items()}
            chosen.append(victim)
            if self._fits_without(queue, ask, chosen):
                return chosen
        return None

    def _fits_without(self, queue: YQueue, ask: Res, victims: list[_App]) -> bool:
        for victim in victims:
            assert victim.queue is not None
            victim.queue.charge(victim.charged, -1, victim.application)
        try:
            return fits_headroom(queue.headroom(), ask)
        finally:
            for victim in victims:
                assert victim.queue is not None
                victim.queue.charge(victim.charged, 1, victim.application)

    @staticmethod
    def _fence(queue: YQueue, priority: int, ask: Res) -> tuple[YQueue, dict[str, int]]:
        """findPreemptionFenceRoot: the subtree victims come from, with the ask's priority at each queue on the way."""
        priority_at: dict[str, int] = {}
        current = priority
        node: YQueue | None = queue
        while node is not None:
            current = node.priority_offset if node.priority_policy == "fence" else current + node.priority_offset
            priority_at[node.path] = current
            limit = _effective_max(node)
            over_max = limit is not None and any(node.allocated.get(k, 0) + ask.get(k, 0) > v
                                                 for k, v in limit.items())
            if node.parent is None or node.preemption_policy == "fence" or over_max:
                return node, priority_at
            node = node.parent
        raise AssertionError("unreachable: root has no parent")

    def _collect(self, queue: YQueue, ask_queue: YQueue, priority: int, fenced: bool,
                 priority_at: Mapping[str, int], out: list[_App]) -> None:
        if queue is ask_queue:
            return
        if queue.leaf:
            if queue.preemption_policy == "disabled":
                return
            left = queue.remaining_guaranteed()
            if left is not None and all(v >= 0 for v in left.values()):
                return  # within its guarantee: nothing to take
            for app in self._running_in(queue):
                if fenced or app.workload.priority <= priority:
                    out.append(app)
            return
        for child in queue.children.values():
            child_fenced = False
            child_priority = priority_at.get(child.path)
            if child_priority is None:
                if child.priority_policy == "fence":
                    if child.priority_offset > priority:
                        continue
                    child_fenced, child_priority = True, priority
                else:
                    child_priority = priority - child.priority_offset
            self._collect(child, ask_queue, child_priority, fenced or child_fenced, priority_at, out)

    @staticmethod
    def _running_in(queue: YQueue) -> Iterable[_App]:
        return queue.apps.values()

    def _conf_limits(self) -> Iterable[int]:
        return (q.limits for q in self.partition.queues().values())


TASK_GROUPS = "yunikorn.apache.org/task-groups"
TASK_GROUP_NAME = "yunikorn.apache.org/task-group-name"
SCHEDULING_POLICY = "yunikorn.apache.org/schedulingPolicyParameters"


@dataclass(frozen=True, slots=True)
class TaskGroup:
    name: str
    min_member: int
    min_resource: Mapping[str, int]  # per member, in Phalanx's units (cpu in millicores)


@dataclass(frozen=True, slots=True)
class GangParams:
    placeholder_timeout: int = 0  # seconds; 0: YuniKorn's default of 15 minutes
    style: str = "Soft"


def parse_task_groups(annotation: str) -> list[TaskGroup]:
    """The `yunikorn.apache.org/task-groups` annotation as k8shim GetTaskGroupsFromAnnotation reads it: a JSON
    list of {name, minMember, minResource, ...}; ValueError in its words for a group without a name, without
    minResource, with minMember zero or negative, a negative or unreadable quantity, or cpu given twice."""
    import json

    from phalanx.api.quantity import QuantityError, resource_value

    if not annotation:
        return []
    try:
        raw = json.loads(annotation)
    except ValueError as exc:
        raise ValueError(f"task-groups is not valid JSON: {exc}") from None
    if not isinstance(raw, list):
        raise ValueError("task-groups must be a JSON list")
    out: list[TaskGroup] = []
    for item in raw:
        if not isinstance(item, dict) or not item.get("name"):
            raise ValueError(f"can't get taskGroup Name from pod annotation, {annotation}")
        if not isinstance(item["name"], str):  # json.Unmarshal into the TaskGroup struct fails
            raise ValueError(f"taskGroup name {item['name']!r} is not a string")
        if item.get("minResource") is None:
            raise ValueError(f"can't get taskGroup MinResource from pod annotation, {annotation}")
        if not isinstance(item["minResource"], dict):
            raise ValueError(f"minResource of taskGroup {item['name']!r} is not a map of quantities")
        members = item.get("minMember", 0)
        if isinstance(members, bool) or not isinstance(members, int) or members == 0:
            raise ValueError(f"can't get taskGroup MinMember from pod annotation, {annotation}")
        if members < 0:
            raise ValueError(f"minMember cannot be negative, {annotation}")
        resources: dict[str, int] = {}
        for name, quantity in dict(item["minResource"]).items():
            key = "cpu" if name in ("cpu", VCORE) else str(name)
            if key in resources:
                raise ValueError(f"minResource {name!r} in taskGroup {item['name']!r} collides with another resource")
            try:
                resources[key] = resource_value(key, quantity)
            except QuantityError as exc:
                raise ValueError(f"minResource {name!r} in taskGroup {item['name']!r}: {exc}") from None
        out.append(TaskGroup(str(item["name"]), members, resources))
    return out


def parse_scheduling_policy(annotation: str) -> GangParams:
    """`yunikorn.apache.org/schedulingPolicyParameters` as k8shim GetSchedulingPolicyParam reads it: space-separated
    key=value pairs; malformed pairs are skipped, an unreadable timeout is 0, an unknown style is Soft."""
    timeout, style = 0, "Soft"
    for pair in annotation.split(" "):
        parts = pair.split("=")
        if len(parts) != 2:
            continue
        if parts[0] == "placeholderTimeoutInSeconds":
            try:
                timeout = int(parts[1], 10)
            except ValueError:
                timeout = 0
        elif parts[0] == "gangSchedulingStyle":
            style = parts[1] if parts[1] in ("Hard", "Soft") else "Soft"
    return GangParams(timeout, style)


def _effective_max(queue: YQueue) -> Res | None:
    """GetMaxResource: the smallest max per type over the queue and its ancestors."""
    out: Res | None = None
    for node in queue.ancestry():
        if node.max is None:
            continue
        out = dict(node.max) if out is None else {**node.max, **{k: min(v, node.max[k]) if k in node.max else v
                                                                  for k, v in out.items()}}
    return out


def load_yunikorn(conf: YunikornConf | str | Mapping[str, Any] | None,
                  capacity: Mapping[str, int]) -> YunikornAdmission:
    """A YunikornAdmission from a parsed conf, its YAML text, a mapping or the ConfigMap (YuniKorn's default
    configuration when None) and the cluster's allocatable total."""
    parsed = conf if isinstance(conf, YunikornConf) or conf is None else parse_yunikorn_conf(conf)
    return YunikornAdmission(parsed, capacity)
