"""KAI Queue parsing and validation (NVIDIA/KAI-Scheduler `pkg/apis/scheduling/v2`), KAI's own example queue files,
and the KAI admission policy's bookkeeping, messages and speed."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx.admission.base import Admit, EvictWorkload, PodSet, QueuedWorkload
from phalanx.admission.kai import DEFAULT_QUEUE, KaiAdmission, load_kai
from phalanx.admission.kai_factory import KaiFactory
from phalanx.admission.kai_objects import KaiQueue, KaiResource, check_hierarchy, is_queue, parse_queue
from phalanx.api.objects import Queueing
from phalanx.errors import InputError

DATA = Path(__file__).parent / "data" / "kai"
GPU = "nvidia.com/gpu"


def queue(spec: dict[str, Any] | None = None, *, name: str = "q1", api: str = "scheduling.run.ai/v2",
          resources: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = dict(spec or {})
    if resources:
        body.setdefault("resources", {})
    return {"apiVersion": api, "kind": "Queue", "metadata": {"name": name}, "spec": body}


def res(quota: float = 0, limit: float = -1, weight: float = 1) -> dict[str, float]:
    return {"quota": quota, "limit": limit, "overQuotaWeight": weight}


def wl(key: str, queue: str, gpu: int = 0, cpu: int = 0, *, priority: int = 50, created: float = 0.0
       ) -> QueuedWorkload:
    requests = {k: v for k, v in (("cpu", cpu), (GPU, gpu)) if v}
    return QueuedWorkload(key, "ns", queue, priority, created, (PodSet("main", 1, requests),))


def admitted(decisions: list[Admit | EvictWorkload]) -> list[str]:
    return [d.key for d in decisions if isinstance(d, Admit)]


# --- parsing ---

def test_parse_all_fields() -> None:
    """queue_types.go QueueSpec and resources.go QueueResource: quota, limit, overQuotaWeight per resource; memory
    read in MB; priority defaults to 100."""
    q = parse_queue(queue({"displayName": "Team", "parentQueue": "dept", "priority": 7, "resources": {
        "cpu": res(2000, 4000, 2), "memory": res(4096, 8192), "gpu": res(0.5, -1, 3)}}))
    assert (q.parent, q.priority, q.display_name) == ("dept", 7, "Team")
    assert q.resource("cpu") == KaiResource(2000, 4000, 2)
    assert q.resource("memory") == KaiResource(4096, 8192, 1)
    assert q.resource("gpu") == KaiResource(0.5, -1, 3)
    assert parse_queue(queue()).priority == 100


def test_unset_fields_are_zero_and_unset_limits_noted() -> None:
    """resources.go: the fields are plain float64s (no defaulting): an unset limit is 0, which admits nothing."""
    q = parse_queue(queue({"resources": {"gpu": {"quota": 1}}}))
    assert q.resource("gpu") == KaiResource(1, 0, 0)
    assert q.unset_limits == ("cpu", "memory", "gpu")
    policy = KaiAdmission([q], {GPU: 4})
    assert any("spec.resources.gpu.limit is unset" in n for n in policy.not_modelled())


def test_is_queue() -> None:
    assert is_queue(queue())
    assert not is_queue({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue"})
    assert not is_queue({"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup"})


@pytest.mark.parametrize(("doc", "field"), [
    (queue(resources=False), "spec.resources"),  # queue_webhook.go: "resources must be specified"
    (queue({"resources": {"gpu": {"quota": -2}}}), "spec.resources.gpu.quota"),
    (queue({"resources": {"cpu": {"limit": -0.5}}}), "spec.resources.cpu.limit"),
    (queue({"resources": {"memory": {"overQuotaWeight": -1}}}), "spec.resources.memory.overQuotaWeight"),
    (queue({"resources": {"gpu": {"quota": "2"}}}), "spec.resources.gpu.quota"),
    (queue({"resources": {"gpu": {"quota": True}}}), "spec.resources.gpu.quota"),
    (queue({"resources": {"gpu": {"quota": float("nan")}}}), "spec.resources.gpu.quota"),
    (queue({"resources": {"gpu": {"qouta": 1}}}), "spec.resources.gpu.qouta"),
    (queue({"resources": {"tpu": {"quota": 1}}}), "spec.resources.tpu"),
    (queue({"resources": {"gpu": 3}}), "spec.resources.gpu"),
    (queue({"priority": "high"}), "spec.priority"),
    (queue({"priority": 1.5}), "spec.priority"),
    (queue({"parentQueue": "q1"}), "spec.parentQueue"),
    (queue(api="scheduling.run.ai/v1"), "apiVersion"),
])
def test_bad_input_names_object_and_field(doc: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as err:
        parse_queue(doc)
    assert err.value.obj == "Queue q1"
    assert err.value.field == field


def test_unnamed_queue() -> None:
    with pytest.raises(InputError) as err:
        parse_queue({"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {}, "spec": {}})
    assert err.value.obj == "Queue (unnamed)" and err.value.field == "metadata.name"


def test_missing_parent_and_cycle() -> None:
    with pytest.raises(InputError) as err:
        check_hierarchy({"a": KaiQueue("a", parent="nope")})
    assert (err.value.obj, err.value.field) == ("Queue a", "spec.parentQueue") and "not defined" in str(err.value)
    with pytest.raises(InputError) as err:
        check_hierarchy({"a": KaiQueue("a", parent="b"), "b": KaiQueue("b", parent="a")})
    assert err.value.field == "spec.parentQueue" and "cycle" in str(err.value)


def test_duplicate_queue() -> None:
    with pytest.raises(InputError) as err:
        load_kai([queue(), queue()], capacity={GPU: 1})
    assert (err.value.obj, err.value.field) == ("Queue q1", "metadata.name")


def test_limit_below_quota_is_accepted() -> None:
    """KAI refuses neither; the fair share is capped by the limit (requestable share)."""
    policy = load_kai([queue({"resources": {"gpu": res(4, 2)}})], capacity={GPU: 8})
    policy.submit(wl("a", "q1", 3), 0)
    policy.cycle(0)
    assert next(r for r in policy.queue_rows() if r["queue"] == "q1")["fair_share"] == {GPU: 2}


# --- KAI's published examples ---

def _docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((DATA / name).read_text()) if d]


def test_upstream_examples_default_queues() -> None:
    """docs/quickstart/default-queues.yaml: default-parent-queue and its child default-queue, quota 0, no limit,
    weight 1 for every resource."""
    queues = [parse_queue(d) for d in _docs("default-queues.yaml")]
    assert [(q.name, q.parent) for q in queues] == [("default-parent-queue", ""),
                                                   ("default-queue", "default-parent-queue")]
    for q in queues:
        for r in ("cpu", "memory", "gpu"):
            assert q.resource(r) == KaiResource(0, -1, 1)


def test_upstream_examples_limited_queue() -> None:
    """docs/priority/example/limited-queue.yaml: `default` unlimited, its child `test` limited to 1 GPU, quota 1."""
    queues = {q.name: q for q in (parse_queue(d) for d in _docs("limited-queue.yaml"))}
    assert queues["default"].resource("gpu") == KaiResource(-1, -1, 1)
    assert queues["test"].parent == "default"
    assert queues["test"].resource("gpu") == KaiResource(1, 1, 1)
    assert queues["test"].resource("cpu") == KaiResource(-1, -1, 1)
    policy = load_kai(_docs("limited-queue.yaml"), capacity={GPU: 4, "cpu": 8000})
    policy.submit(wl("a", "test", 1), 0)
    policy.submit(wl("b", "test", 1, created=1), 0)
    assert admitted(policy.cycle(0)) == ["a"]
    assert policy.pending_reason("b") == ("test quota has reached the allowable limit of GPUs. Limit is 1 GPUs, "
                                          "currently 1 GPUs allocated and workload requested 1 GPUs")


def test_upstream_examples_two_queue_oscillation() -> None:
    """examples/time-based-fairshare/two-queue-oscillation/queues.yaml: two leaf teams of quota 0 and equal weight
    under one department split the GPUs evenly (without time-based fair share)."""
    queues = {q.name: q for q in (parse_queue(d) for d in _docs("two-queue-oscillation-queues.yaml"))}
    assert queues["team-a"].parent == queues["team-b"].parent == "training-department"
    assert queues["team-a"].display_name == "Team A"
    policy = load_kai(_docs("two-queue-oscillation-queues.yaml"), capacity={GPU: 8})
    for i in range(8):
        policy.submit(wl(f"a{i}", "team-a", 1, created=i), 0)
        policy.submit(wl(f"b{i}", "team-b", 1, created=i), 0)
    assert len(admitted(policy.cycle(0))) == 8
    rows = {r["queue"]: r for r in policy.queue_rows()}
    assert rows["team-a"]["fair_share"] == {GPU: 4} and rows["team-b"]["fair_share"] == {GPU: 4}
    assert rows["team-a"]["allocated"] == {GPU: 4} and rows["team-b"]["allocated"] == {GPU: 4}


# --- the factory and the policy ---

def test_factory_queue_default() -> None:
    """defaultgrouper.CalcPodGroupQueue: a workload without `kai.scheduler/queue` goes to `default-queue`."""
    factory = KaiFactory()
    assert factory.queue([None, Queueing(volcano="x")]) == DEFAULT_QUEUE == "default-queue"
    assert factory.queue([Queueing(peer=(("kai.queue", ""),)), Queueing(peer=(("kai.queue", "team"),))]) == "team"
    assert factory.whole and not factory.requeues and factory.name == "kai"


def test_default_queue_is_created() -> None:
    policy = load_kai([], capacity={GPU: 2})
    policy.submit(wl("a", "", 1), 0)
    assert admitted(policy.cycle(0)) == ["a"]
    assert {r["queue"] for r in policy.queue_rows()} == {"default-parent-queue", "default-queue"}


def test_missing_and_parent_queue_reasons() -> None:
    policy = load_kai([queue({"resources": {"gpu": res()}}, name="dept"),
                       queue({"parentQueue": "dept", "resources": {"gpu": res()}}, name="team")], capacity={GPU: 2})
    policy.submit(wl("a", "nowhere", 1), 0)
    policy.submit(wl("b", "dept", 1), 0)
    assert policy.cycle(0) == []
    assert "not defined" in policy.pending_reason("a")
    assert "only leaf queues" in policy.pending_reason("b")
    assert any("nowhere" in n for n in policy.not_modelled())
    assert any("consolidation" in n for n in policy.not_modelled())


def test_non_preemptible_over_quota_message() -> None:
    """quota_check.go: a non-preemptible job (priority ≥ 100) must fit the queue's quota."""
    policy = load_kai([queue({"resources": {"gpu": res(1)}})], capacity={GPU: 4})
    policy.submit(wl("a", "q1", 2, priority=100), 0)
    assert policy.cycle(0) == []
    assert policy.pending_reason("a") == (
        "Non-preemptible workload is over quota. Workload requested 2 GPUs, but q1 quota is 1 GPUs, while 0 GPUs "
        "are already allocated for non-preemptible pods. Use a preemptible workload to go over quota.")


def test_memory_quota_in_megabytes() -> None:
    policy = load_kai([queue({"resources": {"memory": res(1000, 1000)}})], capacity={"memory": 10**10})
    policy.submit(QueuedWorkload("a", "ns", "q1", 50, 0, (PodSet("m", 1, {"memory": 10**9}),)), 0)
    policy.submit(QueuedWorkload("b", "ns", "q1", 50, 1, (PodSet("m", 1, {"memory": 1}),)), 0)
    assert admitted(policy.cycle(0)) == ["a"]
    assert "limit of memory. Limit is 1 GB" in policy.pending_reason("b")


def test_finished_frees_quota_and_rows() -> None:
    policy = load_kai([queue({"resources": {"gpu": res(1, 1)}})], capacity={GPU: 4})
    policy.submit(wl("a", "q1", 1), 0)
    policy.submit(wl("b", "q1", 1, created=1), 0)
    assert admitted(policy.cycle(0)) == ["a"]
    policy.finished("a", 5)
    assert admitted(policy.cycle(5)) == ["b"]
    row = next(r for r in policy.queue_rows() if r["queue"] == "q1")
    assert row["admitted"] == 2 and row["pending"] == 0 and row["running"] == 1
    assert row["quota"] == {GPU: 1} and row["limit"] == {GPU: 1}
    assert row["mean_wait"] == 2.5


def test_speed_many_workloads() -> None:
    """The benchmark's shape, scaled down: 30 queues, 3,000 workloads; each cycle stays linear in queues."""
    docs = [queue({"resources": {"gpu": res(4, -1, 1 + i % 3), "cpu": res(-1, -1), "memory": res(-1, -1)}},
                  name=f"q{i}") for i in range(30)]
    policy = load_kai(docs, capacity={GPU: 200, "cpu": 10**6})
    for i in range(3000):
        policy.submit(wl(f"w{i}", f"q{i % 30}", 1 + i % 2, cpu=100, priority=i % 3 * 60, created=i), 0)
    start = time.perf_counter()
    done = 0
    for step in range(200):
        out = policy.cycle(step)
        for d in out:
            if isinstance(d, Admit) and done % 2 == 0:
                policy.finished(d.key, step)
            done += 1
    assert time.perf_counter() - start < 10
