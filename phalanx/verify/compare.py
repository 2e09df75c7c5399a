"""`phalanx verify`: the same manifests through the real kube-scheduler and through Phalanx, compared.

1. Phalanx simulates the inputs; its timeline (objects appearing, pods finishing) is what the real cluster
   replays, step by step, through the Oracle.
2. Phalanx simulates again with the real scheduler's node choices as hints: where the real node is among
   Phalanx's equally best nodes, Phalanx takes it, so that a random tie-break does not make the two runs
   drift apart; every decision's best nodes are recorded. Likewise the node the real scheduler preempted
   on, where it ranks equal with Phalanx's pick, and the pods it evicted, among victims that rank equal.
3. Per pod and per PodGroup, the two outcomes are compared by category.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from phalanx.api.apps import Deployment, StatefulSet
from phalanx.api.fields import seconds
from phalanx.api.objects import ARRIVAL_ANNOTATION, Pod, Source
from phalanx.api.sets import JobSet, LeaderWorkerSet
from phalanx.errors import InputError
from phalanx.inputs.load import Inputs, documents_as_read, load_paths
from phalanx.scheduler.hints import Hints
from phalanx.scheduler.profiles import DEFAULT_PLACEMENT_SCORE_WEIGHTS, PLACEMENT_SCORERS, Profile
from phalanx.scheduler.queue import SchedulingQueue
from phalanx.sim.admission_gate import kueue_configuration
from phalanx.sim.interleavings import AS_LISTED, INTERLEAVINGS, Interleaving
from phalanx.sim.report_schema import Report
from phalanx.sim.run import simulate
from phalanx.sim.scenario import Scenario
from phalanx.sim.simulation import Simulation
from phalanx.sim.timing import Exploration, Outcome, outcomes, workload_of
from phalanx.verify.controller_pods import ControllerPods, MadePod, top_owner
from phalanx.verify.controlplane import KUBE_VERSION
from phalanx.verify.integrations_plane import RELEASES
from phalanx.verify.kueue_oracle import RealWorkload
from phalanx.verify.oracle import GATED_KINDS, Oracle, RealOutcome, RealPod, Step, pod_key
from phalanx.verify.replayable import check_scaled, replayable

SCHEMA_VERSION = 1
CATEGORIES = ("outcome", "node", "boundAt", "victims", "podGroups", "admission", "messages")


@dataclass
class Difference:
    category: str
    name: str
    phalanx: Any
    real: Any

    def to_json(self) -> dict[str, Any]:
        return {"category": self.category, "name": self.name, "phalanx": self.phalanx, "kubeScheduler": self.real}


@dataclass
class Verdict:
    profile: str
    agree: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    total: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    ties: int = 0  # node choices that differ only among equally best nodes
    differences: list[Difference] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    phalanx_seconds: float = 0.0
    real_seconds: float = 0.0
    binds: int = 0
    notes: list[str] = field(default_factory=list)
    oracles: list[str] = field(default_factory=lambda: [f"kube-scheduler {KUBE_VERSION}"])
    # Where the outcomes differ: Phalanx's runs under the other interleavings (`_timing`), None when all agree.
    timing: dict[str, Any] | None = None

    def check(self, category: str, name: str, phalanx: Any, real: Any) -> bool:
        self.total[category] += 1
        if phalanx == real:
            self.agree[category] += 1
            return True
        self.differences.append(Difference(category, name, phalanx, real))
        return False

    @property
    def agrees(self) -> bool:
        return all(self.agree[c] == self.total[c] for c in CATEGORIES if c != "messages")

    @property
    def within_timing(self) -> bool:
        """Agrees, or every workload that differs ends as the real one did under another interleaving."""
        return self.agrees or (self.timing is not None and self.timing["explained"])

    def to_json(self) -> dict[str, Any]:
        return {
            "schemaVersion": SCHEMA_VERSION, "profile": self.profile, "kubernetesVersion": KUBE_VERSION,
            "agrees": self.agrees, "agreesWithinTiming": self.within_timing, "oracles": self.oracles,
            "categories": {c: {"agree": self.agree[c], "total": self.total[c]} for c in CATEGORIES},
            "nodeTies": self.ties,
            "differences": [d.to_json() for d in self.differences],
            "pods": self.pods,
            "notes": self.notes,
            **({"timing": self.timing} if self.timing is not None else {}),
            "speed": {"podsBound": self.binds, "phalanxSeconds": round(self.phalanx_seconds, 6),
                      "kubeSchedulerSeconds": round(self.real_seconds, 6)},
        }


def _arrival(doc: Mapping[str, Any]) -> float:
    """`phalanx.dev/arrival` as the loader reads it (verify loads the inputs first, so it is valid here)."""
    return seconds((doc.get("metadata") or {}).get("annotations") or {}, ARRIVAL_ANNOTATION,
                   "metadata.annotations") or 0.0


def timeline(docs: Sequence[tuple[Source, Mapping[str, Any]]], report: Mapping[str, Any],
             attempts: Sequence[tuple[float, str]] = ()) -> list[Step]:
    """The steps the real cluster replays: objects by arrival time, the pods that Phalanx finished, and the
    order in which Phalanx's queue tried the pods that appeared (`attempts`: time and queue key of every
    cycle; the first attempt of each at an instant orders that instant's creations, and every cycle's time is
    a step)."""
    creates: dict[float, list[tuple[Source, Mapping[str, Any]]]] = {}
    for source, doc in docs:
        creates.setdefault(_arrival(doc), []).append((source, doc))
    finishes: dict[float, list[str]] = {}
    for pod in report["pods"]:
        if pod["phase"] == "Succeeded" and pod["finishedAt"] is not None:
            finishes.setdefault(float(pod["finishedAt"]), []).append(pod["name"])
    members: dict[str, list[str]] = {}
    for pod in report["pods"]:
        if pod["podGroup"] is not None:
            members.setdefault(pod["podGroup"], []).append(pod["name"])
    roots = _tree_roots(docs)  # a CompositePodGroup root's entry schedules the members of its whole tree
    for group, pods in list(members.items()):
        if group in roots:
            members.setdefault(roots[group], []).extend(pods)
    units: dict[float, list[tuple[str, ...]]] = {}
    unit_groups: dict[float, list[str]] = {}
    appearing = {t: {pod_key(doc) for _, doc in made} for t, made in creates.items()}
    for t, key in _first_attempts(attempts):
        kind, _, name = key.partition(":")
        grouped = kind in ("group", "composite")
        unit = tuple(members.get(name, ())) if grouped else (name,)
        new = appearing.get(t, set())
        if name in new or any(pod in new for pod in unit):  # a retry is a step, not a creation
            units.setdefault(t, []).append(unit)
            unit_groups.setdefault(t, []).append(f"{kind}:{name}" if grouped else "")
    # Every instant Phalanx scheduled at is a step too: a graceful deletion that ends, a retry after it.
    times = sorted({0.0, *creates, *finishes, *(t for t, _ in attempts), float(report["endTime"])})
    return [Step(t, tuple(sorted(finishes.get(t, ()))), tuple(creates.get(t, ())), tuple(units.get(t, ())),
                 tuple(unit_groups.get(t, ()))) for t in times]


def _tree_roots(docs: Sequence[tuple[Source, Mapping[str, Any]]]) -> dict[str, str]:
    """PodGroups under a CompositePodGroup (`namespace/name`) and the root of their tree, read from the
    manifests' parentCompositePodGroupName links (none for a missing parent or a cycle)."""
    parents: dict[tuple[str, str], str] = {}
    for _, doc in docs:
        if doc.get("kind") in ("PodGroup", "CompositePodGroup"):
            meta, spec = doc.get("metadata") or {}, doc.get("spec") or {}
            parent = spec.get("parentCompositePodGroupName")
            if parent:
                key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
                parents[(str(doc.get("kind")), key)] = f"{meta.get('namespace') or 'default'}/{parent}"
    roots: dict[str, str] = {}
    for (kind, key), parent in parents.items():
        if kind != "PodGroup":
            continue
        seen: set[str] = set()
        while ("CompositePodGroup", parent) in parents and parent not in seen:
            seen.add(parent)
            parent = parents[("CompositePodGroup", parent)]
        if parent not in seen:
            roots[key] = parent
    return roots


class RecordingQueue(SchedulingQueue):
    """The scheduling queue, noting the time and key of every entry it hands out.

    Without backoff: the real scheduler's backoff (1 s here) runs on the wall clock, which passes while the
    oracle replays a step, so its retries land in the same simulated step; Phalanx's must too."""

    def __init__(self, *, reverse_ties: bool = False, shuffle_ties: int = 0) -> None:
        super().__init__(initial_backoff=0.0, max_backoff=0.0, reverse_ties=reverse_ties, shuffle_ties=shuffle_ties)
        self.popped: list[tuple[float, str]] = []

    def pop(self, now: float) -> str | None:
        key = super().pop(now)
        if key is not None:
            self.popped.append((now, key))
        return key


def scheduler_config(profile: Profile) -> dict[str, Any]:
    """The real scheduler's configuration for a Phalanx profile: its score plugins and weights (the default
    ones it drops are disabled), its plugin arguments, its percentageOfNodesToScore; and a 1 s backoff so that
    quiet comes quickly (backoff changes when a retry happens, not what it decides)."""
    defaults = Profile("defaults")
    dropped = [{"name": name} for name in defaults.scores if name not in profile.scores]
    enabled = [{"name": name, "weight": weight} for name, weight in profile.scores.items()
               if defaults.scores.get(name) != weight]
    score: dict[str, Any] = {}
    if enabled:
        score["enabled"] = enabled
    if dropped:
        score["disabled"] = dropped
    entry: dict[str, Any] = {"schedulerName": "default-scheduler",
                             "percentageOfNodesToScore": profile.percentage_of_nodes_to_score}
    if score:
        entry["plugins"] = {"score": score}
    if profile.topology_aware and profile.placement_scores != DEFAULT_PLACEMENT_SCORE_WEIGHTS:
        entry.setdefault("plugins", {})["placementScore"] = {
            "enabled": [{"name": name, "weight": weight} for name, weight in profile.placement_scores.items()
                        if weight],
            "disabled": [{"name": name} for name in PLACEMENT_SCORERS if not profile.placement_scores.get(name)]}
    if profile.plugin_args:
        entry["pluginConfig"] = [{"name": name, "args": dict(args)} for name, args in profile.plugin_args.items()]
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "podInitialBackoffSeconds": 1, "podMaxBackoffSeconds": 1, "profiles": [entry]}


# Gates that need GenericWorkload (kube_features.go): off in the scheduler unless the profile models them.
WORKLOAD_GATES = ("PodGroupPreemptionPolicy", "TopologyAwareWorkloadScheduling", "CompositePodGroup",
                  "WorkloadWithJob", "DRAWorkloadResourceClaims")


def scheduler_gates(profile: Profile) -> dict[str, bool]:
    """The real scheduler's gates for a Phalanx profile: GenericWorkload as the profile has it, and of the
    gates that depend on it only PodGroupPreemptionPolicy, TopologyAwareWorkloadScheduling, CompositePodGroup
    and DRAWorkloadResourceClaims, where the profile turns them on."""
    gates = dict.fromkeys(WORKLOAD_GATES, False)
    gates["GenericWorkload"] = profile.gang
    gates["PodGroupPreemptionPolicy"] = profile.gang and profile.feature_gates.get("PodGroupPreemptionPolicy", False)
    gates["TopologyAwareWorkloadScheduling"] = profile.topology_aware
    gates["CompositePodGroup"] = profile.composite
    gates["DRAWorkloadResourceClaims"] = profile.workload_claims
    return gates


def server_gates(profile: Profile) -> dict[str, bool]:
    """The API server's and controller manager's workload gates for a profile: the scheduler's, and
    WorkloadWithJob with GenericWorkload (Phalanx's Job controller makes a Job's PodGroup when the Job asks)."""
    return {**scheduler_gates(profile), "WorkloadWithJob": profile.gang}


def uses_gated_api(docs: Sequence[tuple[Source, Mapping[str, Any]]]) -> bool:
    """Whether the replay creates anything the workload gates change on the API server: the workload kinds, or a
    pod (or a template) naming its scheduling group, a Job asking for one. Only then does the server restart
    with the profile's gates; nothing else it creates reads them."""
    for _, doc in docs:
        if doc.get("kind") in GATED_KINDS or "schedulingGroup" in json.dumps(doc.get("spec") or {}):
            return True
        if doc.get("kind") == "Job" and (doc.get("spec") or {}).get("scheduling"):
            return True
    return False


@dataclass
class _Run:
    report: Report
    ties: dict[str, tuple[str, ...]]
    attempts: list[tuple[float, str]]
    cron_runs: dict[str, float]  # the Jobs Phalanx's CronJob controller made (`namespace/name`) and when
    controller_pods: ControllerPods  # pods made by a controller the oracle runs
    outcomes: dict[str, Outcome]  # per workload (phalanx/sim/timing.py)
    workloads: dict[str, str]  # pod key -> its workload


def _simulate(inputs: Inputs, profile: Profile, scenario: Scenario | None, seed: int,
              hints: dict[str, str] | None = None, preemption_hints: dict[str, str] | None = None,
              victim_hints: set[str] | None = None, interleaving: Interleaving = AS_LISTED,
              until: float | None = None, setup: Sequence[Callable[[Simulation], object]] = ()) -> _Run:
    queue = RecordingQueue(reverse_ties=interleaving.reverse_queue, shuffle_ties=interleaving.shuffle)
    # Nothing on the real cluster makes an evicted bare pod again.
    run = simulate(inputs, profile, scenario=scenario, seed=seed, until=until, setup=setup,
                   recreate_bare_members=False, queue=queue,
                   hints=Hints(nodes=hints, preemption_nodes=preemption_hints, victims=victim_hints),
                   interleaving=interleaving)
    given = {pod.key for pod in inputs.pods}
    jobs = {job.key for job in inputs.jobs}
    deployments = frozenset(deployment.key for deployment in inputs.of(Deployment))
    replayed = ControllerPods(deployments=deployments)
    for key, record in sorted(((k, r) for k, r in run.sim.pods.items() if k not in given),
                              key=lambda item: item[1].pod.arrival):
        pod = record.pod
        namespace, _, name = (pod.owner or "").partition("/")
        owner = top_owner(pod.controller, namespace, name, pod.labels, deployments)
        if owner is not None:
            replayed.made.setdefault(owner, []).append(MadePod(key, pod.arrival, _pinned_node(pod)))
    cron_runs = {key: job.job.arrival for key, job in run.sim.jobs.jobs.items() if key not in jobs}
    return _Run(run.report(), run.sim.scheduler.ties(), queue.popped, cron_runs, replayed, outcomes(run.sim),
                {key: workload_of(record.pod) for key, record in run.sim.pods.items()})


def with_cron_runs(docs: Sequence[tuple[Source, Mapping[str, Any]]], runs: Mapping[str, float]
                   ) -> tuple[list[tuple[Source, Mapping[str, Any]]], list[str]]:
    """The documents with each CronJob replaced by the Jobs Phalanx's CronJob controller made from it, each
    created at the time it made it (`runs`: `namespace/<cronjob>-<minutes>` -> time), and a note per CronJob:
    the real CronJob controller follows the wall clock, which the replay's simulated clock cannot drive, so the
    oracle makes its Jobs as its schedule made them in Phalanx's run, and the real Job controller their pods."""
    out: list[tuple[Source, Mapping[str, Any]]] = []
    notes: list[str] = []
    for source, doc in docs:
        if doc.get("kind") != "CronJob":
            out.append((source, doc))
            continue
        meta = doc.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name"))
        template = (doc.get("spec") or {}).get("jobTemplate") or {}
        template_meta = template.get("metadata") or {}
        made = sorted((at, key) for key, at in runs.items() if key.rpartition("-")[0] == f"{namespace}/{name}")
        for at, key in made:
            annotations = {**(template_meta.get("annotations") or {}), ARRIVAL_ANNOTATION: f"{at:g}s"}
            labels = dict(template_meta.get("labels") or {})
            job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
                "name": key.partition("/")[2], "namespace": namespace, "labels": labels, "annotations": annotations},
                "spec": dict(template.get("spec") or {})}
            out.append((source, job))
        notes.append(f"CronJob {namespace}/{name}: its {len(made)} Job(s) created at the times its schedule gave them "
                     "in Phalanx's run (the real CronJob controller follows the wall clock, not the replay's)")
    return out, notes


def _pinned_node(pod: Pod) -> str | None:
    """The node a DaemonSet's pod is made for: its required `matchFields: metadata.name In [node]` term."""
    for term in pod.placement.required_terms or ():
        for req in term.fields:
            if req.key == "metadata.name" and req.operator == "In" and len(req.values) == 1:
                return req.values[0]
    return None


def _first_attempts(popped: Sequence[tuple[float, str]]) -> list[tuple[float, str]]:
    """The first attempt of each queue key at each instant: a group tried before is tried again when a late
    member appears, and that member is created in its turn among the pods of its step."""
    seen: set[tuple[float, str]] = set()
    first: list[tuple[float, str]] = []
    for t, key in popped:
        if (t, key) not in seen:
            seen.add((t, key))
            first.append((t, key))
    return first


def _state(pod: Mapping[str, Any]) -> str:
    if pod["phase"] in ("Running", "Succeeded"):
        return "bound"
    return "pending" if pod["phase"] == "Pending" else pod["phase"].lower()


# A single pod's PostFilter verdict follows its fit error's full stop; a group's (", pod group preemption: …")
# is part of the group's status and stays.
_PREEMPTION_TAIL = re.compile(r"(?<=\.)\s*preemption: .*$")


def normalise_message(message: str | None) -> str | None:
    """The part of a FailedScheduling message both schedulers write: without a single pod's preemption tail."""
    if message is None:
        return None
    return _PREEMPTION_TAIL.sub("", message).strip().rstrip(".")


def check_replayable(paths: Sequence[str], profile: Profile, *, seed: int = 0,
                     scenario: Scenario | None = None) -> None:
    """InputError, before a control plane starts, for what the oracle cannot replay: bad input, a kind its control
    plane does not serve, pods made by a controller it does not run, a queueing profile with no real peer."""
    _check_admission(scenario)
    inputs = load_paths(paths)
    replayable(documents_as_read(paths), kueue=scenario is not None and scenario.admission == "kueue")
    first = _simulate(inputs, profile, scenario, seed)
    check_scaled(inputs, first.controller_pods, paths)


def verify(paths: Sequence[str], profile: Profile, oracle: Oracle, *, seed: int = 0,
           scenario: Scenario | None = None) -> Verdict:
    inputs = load_paths(paths)
    kueue = scenario is not None and scenario.admission == "kueue"
    _check_admission(scenario)
    docs, notes = replayable(documents_as_read(paths), kueue=kueue)
    first = _simulate(inputs, profile, scenario, seed)
    check_scaled(inputs, first.controller_pods, paths)
    docs, cron_notes = with_cron_runs(docs, first.cron_runs)
    notes += cron_notes
    steps = timeline(docs, first.report, first.attempts)
    controllers = [name for name, needed in (
        ("job-controller", inputs.jobs or first.cron_runs),
        ("resourceclaim-controller", inputs.claim_templates),
        ("device-taint-eviction-controller", inputs.device_taint_rules)) if needed]
    integrations = sorted({str(doc.get("kind")) for _, doc in docs if doc.get("kind") in RELEASES})
    for kind, name in (("JobSet", "job-controller"), ("LeaderWorkerSet", "statefulset-controller")):
        if kind in integrations and name not in controllers:
            controllers.append(name)  # the real JobSet controller makes Jobs; LWS's StatefulSets
    controllers += [name for name in first.controller_pods.controllers() if name not in controllers]
    # Bare pods with a run time end that long after the real scheduler bound them, whenever that was. A member of
    # a PodGroup makes progress only while its group runs (docs/simulation.md): it ends when Phalanx ended it.
    durations = {pod.key: pod.duration for pod in inputs.pods if pod.duration is not None and pod.node_name is None
                 and pod.owner is None and pod.controller is None and pod.pod_group is None}
    oracle.reset()
    if uses_gated_api(docs):
        oracle.use_gates(server_gates(profile))
    else:
        # The scheduler watches the kinds its gates turn on: a server an earlier replay left without one (a run
        # under `default` with PodGroups) would keep it from ever being ready.
        served = oracle.plane.gates
        missing = {gate: True for gate, on in scheduler_gates(profile).items() if on and not served.get(gate)}
        if missing:
            oracle.use_gates(missing)
    settings: dict[str, Any] = {}
    if kueue:
        config = kueue_configuration(inputs.queue_docs)
        settings = config.oracle_fields()
        if settings:
            notes.append(f"the real Kueue runs with {config.name}'s fairSharing (preemptionStrategies: "
                         f"{', '.join(config.fair_sharing or ())})")
    oracle.use_kueue(kueue, settings, pods=kueue and _pod_integration(inputs), integrations=integrations)
    real = oracle.run(steps, scheduler_config(profile), scheduler_gates(profile), controllers, durations,
                      first.controller_pods)
    _pair_interchangeable(first.report, real, oracle.interchangeable())
    queued_sets = [obj for obj in inputs.controllers() if isinstance(obj, LeaderWorkerSet) and obj.queueing is not None
                   and obj.queueing.kueue]
    admitted = oracle.admissions.workloads if oracle.admissions is not None else None
    _pair_lws_groups(first.report, real, admitted, queued_sets)
    hints = {key: pod.node for key, pod in real.pods.items() if pod.node is not None}
    started = time.perf_counter()
    preempted_on = {key: pod.preempted_on for key, pod in real.pods.items() if pod.preempted_on is not None}
    victims = {key for key, pod in real.pods.items() if pod.preempted}
    second = _simulate(inputs, profile, scenario, seed, hints, preempted_on, victims)
    verdict = Verdict(profile.name, phalanx_seconds=time.perf_counter() - started, real_seconds=real.seconds,
                      binds=int(second.report["stats"]["podsScheduled"]))
    prebound = {pod_key(doc) for _, doc in docs if doc.get("kind") == "Pod" and (doc.get("spec") or {}).get("nodeName")}
    _pair_interchangeable(second.report, real, oracle.interchangeable())
    _pair_lws_groups(second.report, real, admitted, queued_sets)
    lws_groups = frozenset(f"{obj.namespace}/{obj.name}-{group}" for obj in inputs.controllers()
                           if isinstance(obj, LeaderWorkerSet) for group in range(obj.replicas))
    _compare(verdict, second.report, real, second.ties, prebound, lws_groups)
    if oracle.admissions is not None:
        verdict.oracles.append(f"Kueue {oracle.admissions.kueue.version}")
        _compare_admission(verdict, second.report, oracle.admissions.workloads,
                           {**{f"Job {job.key}": job.arrival for job in inputs.jobs}, **_pod_workloads(inputs)})
    verdict.oracles.extend(str(RELEASES[kind]) for kind in integrations)
    if not verdict.agrees:
        arrivals = {**{f"Job {job.key}": job.arrival for job in inputs.jobs}, **_pod_workloads(inputs)}
        # The replay saw nothing after its last step: what another order of events would do later is not compared.
        # Its pods ended when the replay ended them (at Phalanx's first run's ends, bare pods a run time after the
        # real binding), not a run time after another order bound them.
        horizon = steps[-1].time if steps else None
        ends = {key: step.time for step in steps for key in step.finish if key not in durations}

        def replayed(sim: Simulation) -> None:
            sim.replay_ends(ends, durations)

        verdict.timing = _timing(verdict, second, real, oracle, prebound, arrivals, lambda order: _simulate(
            inputs, profile, scenario, seed, hints, preempted_on, victims, interleaving=order, until=horizon,
            setup=[replayed]))
    verdict.notes.extend(notes)
    for (kind, gate), count in sorted(real.left_out.items()):
        verdict.notes.append(f"not replayed: {count} {kind} object(s) (the API server does not take them with the "
                             f"profile's gates: {gate} off, as on a cluster without it)")
    if real.skipped_finishes:
        verdict.notes.append(f"{len(real.skipped_finishes)} pod(s) that Phalanx ran to completion never ran on the "
                             f"real cluster: {', '.join(real.skipped_finishes[:5])}")
    return verdict


def _differing(verdict: Verdict, workloads: Mapping[str, str]) -> set[str]:
    """The workloads a verdict's differences (messages aside) name."""
    out: set[str] = set()
    for difference in verdict.differences:
        if difference.category == "messages":
            continue
        if difference.category == "admission":
            out.add(difference.name)
        elif difference.category == "podGroups":
            out.add(f"PodGroup {difference.name.split()[0]}")
        else:
            out.add(workloads.get(difference.name, f"Pod {difference.name}"))
    return out


def _timing(verdict: Verdict, listed: _Run, real: RealOutcome, oracle: Oracle, prebound: set[str],
            arrivals: Mapping[str, float], run: Callable[[Interleaving], _Run]) -> dict[str, Any]:
    """Phalanx's run under each other interleaving of events (phalanx/sim/interleavings.py), steered by the same
    hints, compared with the real outcome as the first was: per differing workload, the interleavings under which
    Phalanx ends it as the real scheduler did. The case is explained when every differing workload has one."""
    differing = _differing(verdict, listed.workloads)
    explored = Exploration(INTERLEAVINGS)
    explored.runs[AS_LISTED.name] = listed.outcomes
    took: dict[str, list[str]] = {workload: [] for workload in differing}
    whole: list[str] = []
    for order in INTERLEAVINGS:
        if order is AS_LISTED:
            continue
        other = run(order)
        explored.runs[order.name] = other.outcomes
        again = Verdict(verdict.profile)
        _pair_interchangeable(other.report, real, oracle.interchangeable())
        _compare(again, other.report, real, other.ties, prebound)
        if oracle.admissions is not None:
            _compare_admission(again, other.report, oracle.admissions.workloads, arrivals)
        if again.agrees:
            whole.append(order.name)
        still = _differing(again, other.workloads)
        for workload in differing - still:
            took[workload].append(order.name)
    report = explored.report({w: names[0] for w, names in took.items() if names})
    return {"explained": all(took.values()), "agreesUnder": whole,
            "workloads": [{"workload": w, "kubeSchedulerAs": names} for w, names in sorted(took.items())],
            "timingDependent": report["timingDependent"], "interleavings": report["interleavings"]}


def _pair_interchangeable(report: Mapping[str, Any], real: RealOutcome, groups: Mapping[str, list[str]]) -> None:
    """The pods of a Job without completion indexes are alike, and named in creation order on both sides
    (`Oracle.interchangeable`): pair each of Phalanx's with a real one bound to the same node at the same time
    where there is one, then at the same time (which of a Job's pods runs when is the Job's doing; the node is the
    scheduler's, judged on its own), then on the same node, so that which name went where is not counted as a
    difference."""
    mine = {pod["name"]: pod for pod in report["pods"]}
    for keys in groups.values():
        free = [real.pods[key] for key in keys if key in real.pods]
        paired: dict[str, RealPod] = {}
        for by_node, by_time in ((True, True), (False, True), (True, False)):
            for key in keys:
                pod = mine.get(key)
                if key in paired or pod is None or pod["node"] is None:
                    continue
                match = next((r for r in free if (not by_node or r.node == pod["node"])
                              and (not by_time or r.bound_at == pod["boundAt"])), None)
                if match is not None:
                    free.remove(match)
                    paired[key] = match
        for key in keys:
            if key not in paired and key in real.pods and free:
                paired[key] = free.pop(0)
        for key, record in paired.items():
            record.key = key
            real.pods[key] = record


def _pair_lws_groups(report: Mapping[str, Any], real: RealOutcome, workloads: dict[str, RealWorkload] | None,
                     sets: Sequence[LeaderWorkerSet]) -> None:
    """The groups of a LeaderWorkerSet are alike, and Kueue makes their Workloads in one reconcile, within one
    second: it orders those by creation time (whole seconds), then at random (by UID), not by group index.
    Pair each of Phalanx's groups with a real group whose members were bound at the same times where there is
    one, and give the real group's pods and Workload its index, so that which index Kueue took first is not
    counted as a difference (when and where the groups ran is)."""
    mine = {pod["name"]: pod for pod in report["pods"]}
    for lws in sets:
        def members(group: int, lws: LeaderWorkerSet = lws) -> list[str]:
            return [f"{lws.namespace}/{lws.name}-{group}",
                    *(f"{lws.namespace}/{lws.name}-{group}-{w}" for w in range(1, lws.size))]

        def times(group: int, real_side: bool) -> tuple[float | None, ...]:
            if real_side:
                return tuple(real.pods[k].bound_at if k in real.pods else None for k in members(group))
            return tuple(mine[k]["boundAt"] if k in mine else None for k in members(group))

        free = list(range(lws.replicas))
        pairing: dict[int, int] = {}
        for group in range(lws.replicas):
            match = next((h for h in free if times(h, True) == times(group, False)), None)
            if match is not None:
                free.remove(match)
                pairing[group] = match
        for group in range(lws.replicas):
            if group not in pairing:
                pairing[group] = free.pop(0)
        pods = {new: real.pods.pop(old) for group, taken in pairing.items()
                for new, old in zip(members(group), members(taken), strict=True) if old in real.pods}
        for key, record in pods.items():
            record.key = key
            real.pods[key] = record
        if workloads is not None:
            moved = {f"PodGroup {lws.namespace}/{lws.name}-{group}": workloads.pop(
                f"PodGroup {lws.namespace}/{lws.name}-{taken}", None) for group, taken in pairing.items()}
            for key, work in moved.items():
                if work is not None:
                    work.key = key
                    workloads[key] = work


def _pod_workloads(inputs: Inputs) -> dict[str, float]:
    """The workloads of Kueue's pod integration in the inputs (a plain pod with the queue-name label, a pod group of
    such pods, a StatefulSet with the label), as Phalanx names them, each with when it is offered (a pod group's
    last member's arrival)."""
    found: dict[str, float] = {}
    for pod in inputs.pods:
        if pod.queueing is None or not pod.queueing.kueue or pod.owner is not None or pod.controller is not None \
                or pod.node_name is not None:
            continue
        key = f"PodGroup {pod.group_key}" if pod.group_key is not None else f"Pod {pod.key}"
        found[key] = max(found.get(key, pod.arrival), pod.arrival)
    for obj in inputs.controllers():
        if isinstance(obj, StatefulSet | JobSet) and obj.queueing is not None and obj.queueing.kueue:
            found[f"{type(obj).__name__} {obj.key}"] = obj.arrival
        if isinstance(obj, LeaderWorkerSet) and obj.queueing is not None and obj.queueing.kueue:
            for group in range(obj.replicas):  # a workload per group, as Kueue's LWS integration makes them
                found[f"PodGroup {obj.namespace}/{obj.name}-{group}"] = obj.arrival
    return found


def _pod_integration(inputs: Inputs) -> bool:
    """Whether Kueue's pod integration takes part: a plain pod, a Deployment's or a StatefulSet's pod template
    with the queue-name label."""
    templates = [getattr(obj, "template", None) for obj in inputs.controllers()
                 if isinstance(obj, Deployment | StatefulSet)]
    return bool(_pod_workloads(inputs)) or any(
        isinstance(t, Pod) and t.queueing is not None and t.queueing.kueue for t in templates)


def _check_admission(scenario: Scenario | None) -> None:
    """Only Kueue can be replayed: Volcano's module is not served here, so nothing real could judge it."""
    if scenario is not None and scenario.admission not in (None, "kueue"):
        raise InputError(f"verify has no real {scenario.admission.capitalize()} to replay on (its Go module is not "
                         "served here); verify --profile kueue runs the real Kueue", field="--profile")


def _compare_admission(verdict: Verdict, report: Mapping[str, Any], real: Mapping[str, RealWorkload],
                       arrivals: Mapping[str, float]) -> None:
    """Per Job that Kueue queues: admitted or held at the end, the step at which it was first admitted, and how
    often Kueue evicted it (preempted or reclaimed)."""
    for row in (report.get("admission") or {}).get("workloads") or ():
        name = row["name"]
        if name not in arrivals:
            continue  # a kind whose Kueue integration the oracle does not run (JobSet, LeaderWorkerSet, ...)
        waits = row["admissionWaits"]
        mine = {"admitted": bool(row["admitted"]),
                "admittedAt": round(arrivals[name] + waits[0], 6) if waits else None, "evictions": row["evictions"]}
        theirs = real.get(name)
        verdict.check("admission", name, mine, None if theirs is None else {
            "admitted": theirs.admitted, "admittedAt": theirs.admitted_at, "evictions": theirs.evictions})


def _compare(verdict: Verdict, report: Mapping[str, Any], real: RealOutcome,
             ties: Mapping[str, tuple[str, ...]], prebound: set[str],
             only_phalanx: frozenset[str] = frozenset()) -> None:
    """Per pod: victims, then (unless preempted) outcome, and for pods a scheduler placed (not those bound in
    the manifests) the node and the time of binding; per PodGroup its PodGroupInitiallyScheduled status, but
    for those only Phalanx makes (`only_phalanx`: a LeaderWorkerSet's groups), which a note counts."""
    for pod in report["pods"]:
        key = pod["name"]
        theirs = real.pods.get(key)
        mine_preempted = pod["preemptedCount"] > 0
        real_preempted = bool(theirs and theirs.preempted)
        verdict.check("victims", key, mine_preempted, real_preempted)
        if theirs is None:
            verdict.check("outcome", key, _state(pod), "missing")
            continue
        real_state = "failed" if theirs.evicted else \
            "bound" if theirs.node is not None or theirs.finished else "pending"
        entry = {"name": key, "phalanx": {"state": _state(pod), "node": pod["node"], "boundAt": pod["boundAt"],
                                          "message": pod["message"] if pod["phase"] == "Pending" else None},
                 "kubeScheduler": {"state": real_state, "node": theirs.node, "boundAt": theirs.bound_at,
                                   "message": theirs.message if real_state == "pending" else None}}
        verdict.pods.append(entry)
        if mine_preempted or real_preempted:
            continue  # Phalanx recreates a preempted member; the real cluster has no controller to do so
        if not verdict.check("outcome", key, _state(pod), real_state):
            continue
        if real_state == "bound" and key not in prebound:
            verdict.check("boundAt", key, pod["boundAt"], theirs.bound_at)
            if pod["node"] is not None and theirs.node is not None:
                best = ties.get(key, ())
                if pod["node"] != theirs.node and theirs.node in best:
                    verdict.ties += 1
                    verdict.total["node"] += 1
                    verdict.agree["node"] += 1
                else:
                    verdict.check("node", key, pod["node"], theirs.node)
        elif pod["phase"] == "Pending":
            verdict.check("messages", key, normalise_message(pod["message"]), normalise_message(theirs.message))
    # The real group of a Phalanx PodGroup: its own name, or (a Job controller's, named with a hash) the
    # group its members joined.
    joined = {pod["podGroup"]: real.pods[pod["name"]].group for pod in report["pods"]
              if pod["podGroup"] and pod["name"] in real.pods and real.pods[pod["name"]].group}
    if any(kind == "PodGroup" for kind, _ in real.left_out):
        return  # the API server took no PodGroup (its gate is off): the verdict's note says so
    skipped = 0
    for group in report.get("podGroups", []):
        key = group["name"]
        if key in only_phalanx:
            skipped += 1
            continue
        mine = {c["type"]: c["status"] for c in group.get("conditions", []) if "type" in c}
        theirs_group = real.groups.get(key) or real.groups.get(joined.get(key) or "", {})
        for ctype in ("PodGroupInitiallyScheduled",):
            condition = theirs_group.get(ctype, {})
            real_status = condition.get("status")
            if condition.get("overwritten"):
                # Members the real scheduler bound, the condition not True: its True was overwritten by a
                # retry's False (v1.37.2's stale-informer race, docs/fidelity.md); the guard means True.
                verdict.notes.append(f"PodGroup {key}: the real scheduler bound its members but its {ctype} ended "
                                     f"{real_status or 'unset'}: a retry of its leftover members overwrote the "
                                     "True (v1.37.2's updatePodGroupCondition read a stale PodGroup); read as True")
                real_status = "True"
            verdict.check("podGroups", f"{key} {ctype}", mine.get(ctype), real_status)
    if skipped:
        verdict.notes.append(f"not compared: {skipped} PodGroup(s) that Phalanx's LeaderWorkerSet controller makes, "
                             "one per group (the real LWS makes none: docs/simulation.md)")
