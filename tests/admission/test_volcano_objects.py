"""Volcano Queue parsing: the fields of volcano-sh/apis `pkg/apis/scheduling/v1beta1/types.go` QueueSpec and
QueueStatus, the defaults the CRD applies, and errors naming the field."""

from __future__ import annotations

import time
from typing import Any

import pytest

from phalanx.admission.volcano_objects import VolcanoQueue, check_hierarchy, is_queue, parse_queue
from phalanx.errors import InputError


def queue(spec: dict[str, Any] | None = None, *, name: str = "q1", status: dict[str, Any] | None = None,
          api: str = "scheduling.volcano.sh/v1beta1") -> dict[str, Any]:
    doc: dict[str, Any] = {"apiVersion": api, "kind": "Queue", "metadata": {"name": name}, "spec": spec or {}}
    if status is not None:
        doc["status"] = status
    return doc


def test_docs_queue_example() -> None:
    """volcano-sh/website `content/en/docs/queue.md`: a queue with weight 1, a capability of cpu and memory and
    `reclaimable: false`, Open."""
    q = parse_queue(queue({"weight": 1, "reclaimable": False, "capability": {"cpu": 2, "memory": "4096Mi"}},
                          status={"state": "Open"}))
    assert q == VolcanoQueue("q1", weight=1, capability={"cpu": 2000, "memory": 4096 * 2**20}, reclaimable=False)
    assert q.open


def test_defaults() -> None:
    """types.go: weight defaults to 1 (kubebuilder default), reclaimable to true (nil pointer), dequeueStrategy
    to traverse, and a queue without a status is taken as Open (the queue controller opens it)."""
    q = parse_queue(queue())
    assert (q.weight, q.reclaimable, q.dequeue_strategy, q.state, q.priority) == (1, True, "traverse", "Open", 0)
    assert q.capability == {} and q.guarantee == {} and q.deserved == {} and q.parent == ""


def test_all_fields() -> None:
    """types.go QueueSpec: guarantee.resource, deserved, parent, priority, dequeueStrategy; and the status
    state Closed, which takes no new jobs."""
    q = parse_queue(queue({"weight": 3, "guarantee": {"resource": {"cpu": "500m", "nvidia.com/gpu": 1}},
                           "deserved": {"cpu": 4}, "parent": "dept", "priority": 10, "dequeueStrategy": "fifo",
                           "affinity": {"nodeGroupAffinity": {}}}, status={"state": "Closed"}))
    assert q.guarantee == {"cpu": 500, "nvidia.com/gpu": 1}
    assert q.deserved == {"cpu": 4000}
    assert (q.parent, q.priority, q.dequeue_strategy, q.state, q.open) == ("dept", 10, "fifo", "Closed", False)
    assert q.unmodelled == ("spec.affinity",)


def test_is_queue() -> None:
    assert is_queue(queue())
    assert not is_queue({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Queue"})
    assert not is_queue({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup"})


@pytest.mark.parametrize(("doc", "field"), [
    (queue({"weight": 0}), "spec.weight"),  # kubebuilder Minimum=1
    (queue({"weight": 65536}), "spec.weight"),  # kubebuilder Maximum=65535
    (queue({"weight": "heavy"}), "spec.weight"),
    (queue({"capability": {"cpu": "lots"}}), "spec.capability.cpu"),
    (queue({"capability": {"memory": "-1Gi"}}), "spec.capability.memory"),
    (queue({"capability": ["cpu"]}), "spec.capability"),
    (queue({"guarantee": {"resource": {"cpu": "x"}}}), "spec.guarantee.resource.cpu"),
    (queue({"deserved": {"cpu": "1 core"}}), "spec.deserved.cpu"),
    (queue({"reclaimable": "no way"}), "spec.reclaimable"),
    (queue({"priority": -1}), "spec.priority"),
    (queue({"dequeueStrategy": "lifo"}), "spec.dequeueStrategy"),
    (queue({"parent": "q1"}), "spec.parent"),
    (queue(status={"state": "Paused"}), "status.state"),
    (queue(api="scheduling.volcano.sh/v1alpha9"), "apiVersion"),
    ({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {}}, "metadata.name"),
])
def test_bad_input_names_the_field(doc: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as err:
        parse_queue(doc)
    assert err.value.field == field
    assert err.value.obj is not None and err.value.obj.startswith("Queue")


def test_hierarchy_checks() -> None:
    """A parent must exist (`root` is implicit) and parents must not form a cycle."""
    good = {q.name: q for q in (VolcanoQueue("dept", parent="root"), VolcanoQueue("team", parent="dept"))}
    check_hierarchy(good)
    with pytest.raises(InputError, match="not defined") as err:
        check_hierarchy({"team": VolcanoQueue("team", parent="nowhere")})
    assert err.value.field == "spec.parent"
    with pytest.raises(InputError, match="cycle"):
        check_hierarchy({"a": VolcanoQueue("a", parent="b"), "b": VolcanoQueue("b", parent="a")})


def test_a_long_queue_chain_is_checked_in_linear_time() -> None:
    """Each queue is walked up once: 20,000 queues in one chain (each parent the previous) check at once; a
    cycle at the far end of a long chain is found and named."""
    chain = {f"q{i}": VolcanoQueue(f"q{i}", parent=f"q{i - 1}" if i else "root") for i in range(20_000)}
    started = time.perf_counter()
    check_hierarchy(chain)
    assert time.perf_counter() - started < 1.0
    chain["q0"] = VolcanoQueue("q0", parent="q19999")
    with pytest.raises(InputError, match="cycle"):
        check_hierarchy(chain)


def test_an_integral_weight_is_read_as_the_api_server_reads_it() -> None:
    doc = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"},
           "spec": {"weight": 3.0}}
    assert parse_queue(doc).weight == 3
    with pytest.raises(InputError, match="must be of type integer"):
        parse_queue({**doc, "spec": {"weight": "3"}})
