"""The `phalanx` command: simulate, compare, validate, verify, generate, run, dev-cluster, snapshot."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import yaml
from rich.console import Console

from phalanx import __version__
from phalanx.admission.registry import POLICIES
from phalanx.api.kinds import is_namespace
from phalanx.api.peers import PEERS, conf_of
from phalanx.api.quantity import format_duration, parse_duration
from phalanx.api.reading import read_yaml
from phalanx.autoscale.metrics import MetricsSeries
from phalanx.errors import InputError, PhalanxError
from phalanx.inputs.load import Inputs, load_paths
from phalanx.migrate.output import migrate_paths, render_json, render_yaml
from phalanx.scheduler.profiles import (
    BUILTIN,
    DEFAULT_GATES,
    GPU_POLICIES,
    KNOWN_GATES,
    Profile,
    builtin,
    load_profile,
    parse_feature_gates,
)
from phalanx.sim.admission_gate import check_queue_objects, held_lines, load_queue_files
from phalanx.sim.durations import DEFAULT_DURATIONS, parse_default_durations
from phalanx.sim.outcomes import SUSPENDED
from phalanx.sim.perf_config import is_perf_config, parse_perf_config
from phalanx.sim.progress import RunProgress
from phalanx.sim.report import SCHEMA_VERSION
from phalanx.sim.report_schema import Report, TimingReport
from phalanx.sim.run import one_horizon, simulate
from phalanx.sim.scenario import SCALE_UP_MODES, Scenario, scenario_for
from phalanx.sim.scheduler_perf import PerfWorkloadManifests, generate_perf
from phalanx.sim.synthetic import generate, parse_workload
from phalanx.sim.tables import render_compare, render_simulation
from phalanx.sim.trace_file import Trace, load_traces
from phalanx.sweep.grid import MAX_SEED, load_factor, seed_list
from phalanx.traces.compare import PROTOCOLS, TRACES, compare_trace, render_trace_compare

MAX_WORKERS = 1024  # local processes for a sweep (a grid runs in at most as many as it has cells)


class _Exit(Exception):
    """--help or --version said all there is to say: main returns this status."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _Parser(argparse.ArgumentParser):
    """argparse whose complaints are one-line input errors (`phalanx: error: --seed: ...`, exit 2) and whose
    --help and --version return from main rather than exit the process."""

    def error(self, message: str) -> NoReturn:
        flag, sep, problem = message.partition(": ")
        if sep and flag.startswith("argument "):
            raise InputError(problem, field=flag.removeprefix("argument "))
        raise InputError(message, field=self.prog.removeprefix("phalanx").strip() or None)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            self._print_message(message, sys.stderr)
        raise _Exit(status)


def _seed(text: str) -> int:
    """A seed: a whole number NumPy's generators take (0 to 2^64 − 1)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"want a whole number from 0 to {MAX_SEED}, got {text[:40]!r}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"want a positive number of seconds, got {text[:40]!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="phalanx",
        description="Workload-aware gang scheduling for Kubernetes, and a what-if simulator on the same engine.",
    )
    parser.add_argument("--version", action="version", version=f"phalanx {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def inputs(p: argparse.ArgumentParser, paths: str = "+") -> None:
        p.add_argument("paths", nargs=paths, metavar="FILE_OR_DIR",
                       help="Kubernetes manifests: YAML files (multi-document or kind: List), "
                            "kubectl's -o json files, or directories of them")
        p.add_argument("--until", metavar="DURATION",
                       help="stop the simulated clock at this time (e.g. 2h, 90m, 3600); default: when nothing "
                            "more can change")
        p.add_argument("--seed", type=_seed, default=0, help="seed for tie-breaking among equal-score nodes")
        p.add_argument("--trace-file", action="append", default=[], metavar="FILE",
                       help="a JSON Lines trace of timed create/delete events replayed on top of the manifests "
                            "(docs/traces.md); repeatable")
        p.add_argument("--metrics", metavar="FILE",
                       help="metric values for HorizontalPodAutoscalers: CSV with the header time,metric,value "
                            "and an optional selector column; a value holds until the next row for that metric "
                            "(docs/autoscaling.md)")
        p.add_argument("--scale-up", default="pod", metavar="MODE",
                       help="how the cluster autoscaler model adds nodes when the manifests hold node groups: pod "
                            "(per pod, as cluster-autoscaler does) or gang (a whole gang's minCount at once, or "
                            "nothing); compare takes a list, e.g. pod,gang, and runs each profile under each")
        p.add_argument("--default-duration", metavar="SPEC", default="",
                       help="how long pods without phalanx.dev/duration run: DURATION for every batch kind, "
                            "KIND=DURATION,... per owner kind (Job, PyTorchJob, TFJob, MPIJob; ReplicaSet, "
                            "StatefulSet, DaemonSet, LeaderWorkerSet and Pod run for the whole horizon unless "
                            "named), or none; default: 1h for batch kinds (docs/simulation.md)")
        p.add_argument("--queues", action="append", default=[], metavar="FILE",
                       help="Kueue (ResourceFlavor, ClusterQueue, Cohort, LocalQueue, WorkloadPriorityClass, its "
                            "Configuration or that ConfigMap) and "
                            "Volcano (Queue, volcano-scheduler.conf or its ConfigMap) objects for the kueue and "
                            "volcano profiles, when they are not among the manifests; repeatable")
        p.add_argument("--report", metavar="DIR",
                       help="also write report.json (with time series), series.csv, PNG plots and a "
                            "self-contained index.html into DIR (docs/report.md)")
        p.add_argument("--sample", metavar="DURATION",
                       help="with --report: sample the time series at most once per DURATION of simulated time "
                            "(default: after every event)")

    sim = sub.add_parser("simulate", help="run the simulation under one profile and print the outcome")
    inputs(sim, paths="*")
    sim.add_argument("--profile", help=" | ".join(BUILTIN[:BUILTIN.index("phalanx") + 1])
                     + " | a profile file; without it, --feature-gates decide")
    sim.add_argument("--config", metavar="FILE", help="a KubeSchedulerConfiguration-like profile file")
    sim.add_argument("--feature-gates", default="", metavar="GATES",
                     help="e.g. GenericWorkload=true (the v1.37 default is off: pod-at-a-time scheduling)")
    sim.add_argument("-o", "--output", choices=("table", "wide", "json", "yaml"), default="table")
    sim.add_argument("--timing", action="store_true",
                     help="also replay the orders of events a real cluster leaves to timing (the scheduler cycling "
                          "between an instant's creations, concurrent creations reversed) and name the workloads "
                          "whose outcome changes with them (docs/simulation.md)")

    cmp = sub.add_parser("compare", help="run the same input under several profiles, side by side")
    inputs(cmp, paths="*")
    cmp.add_argument("--profiles", default="default,gang",
                     help=f"comma-separated built-in profiles ({', '.join(BUILTIN[:BUILTIN.index('phalanx') + 1])}; "
                          f"for GPU traces {', '.join(GPU_POLICIES)}) or profile files (default: default,gang)")
    cmp.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    trace = cmp.add_argument_group("public traces", "replay a trace's CSV files instead of manifests")
    trace.add_argument("--trace", choices=TRACES, help="the trace format: openb (Alibaba cluster-trace-gpu-v2023)")
    trace.add_argument("--nodes", metavar="NODES.csv", help="the trace's node list")
    trace.add_argument("--pods", metavar="PODS.csv", help="the trace's pod list")
    trace.add_argument("--protocol", choices=PROTOCOLS, default="fragmentation",
                       help="fragmentation: the FGD paper's seeded one-shot replay up to --load × GPU capacity; "
                            "timed: the trace's creation and deletion times (default: fragmentation)")
    trace.add_argument("--load", type=load_factor, default=1.3,
                       help="arrived GPU requests as a multiple of GPU capacity, above 0 and at most 10 "
                            "(default: 1.3)")
    trace.add_argument("--seeds", default="42", help="seeds: a range and/or a comma list, e.g. 42-51 (default: 42)")

    val = sub.add_parser("validate", help="load and validate manifests only")
    val.add_argument("paths", nargs="+", metavar="FILE_OR_DIR")
    val.add_argument("--trace-file", action="append", default=[], metavar="FILE", help="also check a trace file")
    val.add_argument("--queues", action="append", default=[], metavar="FILE",
                     help="also check a file of Kueue and Volcano queueing objects")

    ver = sub.add_parser("verify", help="run manifests through the real kube-scheduler and through Phalanx, and "
                                        "show where they agree and differ",
                         description="Start a throwaway Kubernetes v1.37.2 control plane on loopback, replay the "
                                     "manifests on it as Phalanx's simulation times them, and compare the real "
                                     "kube-scheduler's decisions with Phalanx's (docs/fidelity.md); under "
                                     "--profile kueue the real Kueue v0.17.0 admits in front of it "
                                     "(tools/kueue/build.sh); JobSets and LeaderWorkerSets are made by the real "
                                     "JobSet v0.11.1 and LWS v0.8.0 controllers (tools/integrations/build.sh). "
                                     "Exit status 0 when they agree, 1 when they differ, 2 on bad input.")
    ver.add_argument("paths", nargs="+", metavar="FILE_OR_DIR",
                     help="Kubernetes manifests: YAML or JSON files, or directories of them")
    ver.add_argument("--profile", default="default",
                     help="default | gang (GenericWorkload on in both schedulers) | kueue (gang behind the real "
                          "Kueue) | a profile file (default: default)")
    ver.add_argument("--kube-bin", metavar="DIR",
                     help="the folder with etcd, kube-apiserver, kube-scheduler and kube-controller-manager "
                          "(default: where tools/kube/build.sh puts them)")
    ver.add_argument("--seed", type=_seed, default=0, help="seed for Phalanx's tie-breaking")
    ver.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")

    run = sub.add_parser("run", help="schedule a real cluster's pods as a secondary scheduler (docs/live.md)",
                         description="Run Phalanx against a real cluster: it schedules the pods whose "
                                     "spec.schedulerName is --scheduler-name (PodGroup gangs with GenericWorkload "
                                     "on), binds them through the Binding subresource, preempts as kube-scheduler "
                                     "does and writes PodScheduled conditions, PodGroup conditions and Events. "
                                     "Only the leader of a Lease schedules. SIGTERM stops it cleanly.")
    run.add_argument("--kubeconfig", metavar="FILE",
                     help="a kubeconfig file (default: in-cluster, else $KUBECONFIG or ~/.kube/config)")
    run.add_argument("--scheduler-name", default="phalanx",
                     help="schedule the pods with this spec.schedulerName (default: phalanx)")
    run.add_argument("--profile", help="default | gang | a profile file; without it, --feature-gates decide")
    run.add_argument("--config", metavar="FILE", help="a KubeSchedulerConfiguration-like profile file")
    run.add_argument("--feature-gates", default="", metavar="GATES", help="e.g. GenericWorkload=true")
    run.add_argument("--namespace", action="append", default=[], metavar="NS",
                     help="schedule only pods of this namespace (repeatable; default: every namespace)")
    run.add_argument("--leader-elect", choices=("true", "false"), default="true",
                     help="take part in leader election on a Lease (default: true)")
    run.add_argument("--leader-elect-resource-namespace", metavar="NS",
                     help="the Lease's namespace (default: the pod's own in-cluster, else default)")
    run.add_argument("--leader-elect-resource-name", default="phalanx-scheduler", metavar="NAME")
    run.add_argument("--leader-elect-lease-duration", type=_seconds, default=15.0, metavar="SECONDS")
    run.add_argument("--leader-elect-renew-deadline", type=_seconds, default=10.0, metavar="SECONDS")
    run.add_argument("--leader-elect-retry-period", type=_seconds, default=2.0, metavar="SECONDS")
    run.add_argument("--metrics-bind-address", default="127.0.0.1:10351", metavar="HOST:PORT",
                     help="serve /metrics, /healthz and /readyz here (default: 127.0.0.1:10351)")
    run.add_argument("--seed", type=_seed, default=0, help="seed for tie-breaking among equal-score nodes")
    run.add_argument("-v", "--verbose", action="store_true",
                     help="debug logging, with the client's line per API request (the default is info, without them)")

    mig = sub.add_parser("migrate", help="print the manifests rewritten for v1.37 native gang scheduling",
                         description="Rewrite other schedulers' gang objects (Volcano, scheduler-plugins, "
                                     + "".join(f"{peer.whose}, " for peer in PEERS if peer.gangs)
                                     + "Kueue) and the v1alpha1/v1alpha2 Workload shapes as v1beta1 Workloads and "
                                     "PodGroups, with the pods linked to them; each change is a comment above its "
                                     "document, and what has no native equivalent is a warning (docs/migrate.md).")
    mig.add_argument("paths", nargs="+", metavar="FILE_OR_DIR")
    mig.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml")

    gen = sub.add_parser(
        "generate", help="print the manifests a scheduler_perf workload describes",
        description="Print, as manifests simulate reads, the cluster and load of a workload: one workload of "
                    "kube-scheduler's scheduler_perf configuration (a performance-config.yaml, read unchanged, "
                    "with --workload) or a Phalanx workload file (docs/traces.md).")
    gen.add_argument("file", metavar="FILE",
                     help="a scheduler_perf performance-config.yaml (a list of test cases), or a Phalanx workload "
                          "file of createNodes / createPods / createPodGroups operations")
    gen.add_argument("--workload", metavar="TESTCASE/WORKLOAD",
                     help="the scheduler_perf workload to print (feature gates it needs are named on stderr)")
    gen.add_argument("--list", action="store_true",
                     help="list the scheduler_perf configuration's test cases and workloads, with their labels")
    gen.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml")
    _sweep_parser(sub)
    _dev_cluster_parser(sub)
    _snapshot_parser(sub)
    return parser


def _snapshot_parser(sub: argparse._SubParsersAction[_Parser]) -> None:
    snap = sub.add_parser(
        "snapshot", help="read a live cluster's nodes, pods, workloads and queues into a folder simulate reads",
        description="Read what a what-if needs from a live cluster into DIR, one YAML file per kind (nodes.yaml, "
                    "pods.yaml, ...): Nodes, Pods (bound ones are the running load), PriorityClasses, Namespaces, "
                    "workload controllers, HPAs, PDBs, Workloads and PodGroups, DRA objects, and the "
                    + ", ".join(("Kueue", "Volcano", *(peer.whose for peer in PEERS[:-1])))
                    + f" and {PEERS[-1].whose} queue objects, each when the server serves it. Secrets are never "
                    "read; managedFields and other server bookkeeping are dropped. All kinds are read before "
                    "any file is written (docs/snapshot.md).")
    snap.add_argument("--kubeconfig", metavar="FILE",
                      help="a kubeconfig file (default: in-cluster, else $KUBECONFIG or ~/.kube/config)")
    snap.add_argument("-o", "--output", required=True, metavar="DIR",
                      help="the folder to write (created if missing; the files of an earlier snapshot are "
                           "replaced)")


def _sweep_parser(sub: argparse._SubParsersAction[_Parser]) -> None:
    sweep = sub.add_parser(
        "sweep", help="run a grid of simulations, locally or on a Ray cluster, and report means over seeds",
        description="Run a grid of simulations and report each cell and, per (input, load or what-if, profile), "
                    "the mean and standard deviation over the seeds (docs/sweeps.md). The grid is a trace's pod "
                    "lists x --load x --profiles x --seeds (the fragmentation protocol of `compare --trace`), or "
                    "--manifests sets x --what-if edits x --profiles x --seeds. Cells run in local processes, "
                    "or as Ray tasks with --ray; with --results DIR each finished cell is stored and a rerun "
                    "skips it.")
    trace = sweep.add_argument_group("a trace grid", "the FGD paper's fragmentation protocol, as compare --trace")
    trace.add_argument("--trace", choices=TRACES, help="the trace format: openb (Alibaba cluster-trace-gpu-v2023)")
    trace.add_argument("--nodes", metavar="NODES.csv", help="the trace's node list (one for the whole grid)")
    trace.add_argument("--pods", nargs="+", action="extend", metavar="PODS.csv",
                       help="pod lists, one grid axis (e.g. the 17 openb_pod_list_*.csv variants); repeatable")
    trace.add_argument("--load", metavar="LOADS",
                       help="arrived GPU requests as multiples of GPU capacity, a comma list (default: 1.3)")
    manifests = sweep.add_argument_group("a manifests grid", "what-if runs of Kubernetes manifests")
    manifests.add_argument("--manifests", action="append", default=[], metavar="PATH[,PATH...]",
                           help="one input: manifest files or directories loaded together (an overlay is one "
                                "more path); repeat for more inputs")
    manifests.add_argument("--what-if", metavar="EDITS",
                           help="a comma list of edits: base, nodes=N, nodes*F, arrivals*F, combined with + "
                                "(e.g. base,nodes*0.5,nodes*2+arrivals*0.5; default: base)")
    manifests.add_argument("--until", metavar="DURATION",
                           help="stop every run's clock at this time (e.g. 2h); puts all cells on one horizon")
    sweep.add_argument("--profiles",
                       help="comma-separated profiles (built-in names or files); default: random,dotprod,"
                            "clustering,packing,bestfit,fgd for a trace, default,gang for manifests")
    sweep.add_argument("--seeds", help="seeds: a range and/or a comma list, e.g. 42-51 (default: 42 for a trace, "
                                       "0 for manifests)")
    sweep.add_argument("--workers", metavar="N", help="local worker processes (default: the number of CPUs)")
    sweep.add_argument("--ray", metavar="ADDRESS",
                       help="run one task per cell on the Ray cluster at HOST:PORT (its GCS port) or "
                            "ray://HOST:PORT instead of locally")
    sweep.add_argument("--results", metavar="DIR",
                       help="store each finished cell as DIR/<key>.json; a rerun skips the cells stored there")
    sweep.add_argument("--report", metavar="DIR",
                       help="also write report.json (the -o json document), cells.csv (one row per cell), PNG "
                            "plots of the means with sd error bars and a self-contained index.html into DIR "
                            "(docs/sweeps.md); DIR is checked before any cell runs")
    sweep.add_argument("-o", "--output", choices=("table", "wide", "json", "yaml"), default="table",
                       help="table: means per (input, load or what-if, profile); wide: also one row per cell")


def _dev_cluster_parser(sub: argparse._SubParsersAction[_Parser]) -> None:
    dev = sub.add_parser(
        "dev-cluster", help="start a local Kubernetes v1.37.2 control plane with a few nodes, to try `phalanx run`",
        description="Start etcd, kube-apiserver, kube-scheduler (the default scheduler, for every pod that does not "
                    "name Phalanx) and kube-controller-manager (the workload controllers) on loopback, the binaries "
                    "that tools/kube/build.sh builds; register --nodes Nodes as API objects (no kubelet runs: pods "
                    "are bound but never started); write a kubeconfig and print the commands to try next. Runs "
                    "until Ctrl-C or SIGTERM, then stops everything and deletes what it made (docs/live.md).")
    dev.add_argument("--profile", default="default",
                     help="default | gang | a profile file: its gates are the cluster's, as `phalanx verify` sets "
                          "them (gang: GenericWorkload on); give `phalanx run` the same (default: default)")
    dev.add_argument("--nodes", type=int, default=3, metavar="N", help="how many nodes (default: 3)")
    dev.add_argument("--node-cpu", default="8", metavar="QUANTITY", help="each node's CPUs (default: 8)")
    dev.add_argument("--node-memory", default="32Gi", metavar="QUANTITY", help="each node's memory (default: 32Gi)")
    dev.add_argument("--gpus", type=int, default=0, metavar="N",
                     help="each node's nvidia.com/gpu, an extended resource (default: 0)")
    dev.add_argument("--kubeconfig-out", default="phalanx-dev.kubeconfig", metavar="FILE",
                     help="write the admin kubeconfig here; removed on exit (default: ./phalanx-dev.kubeconfig)")
    dev.add_argument("--kube-scheduler", action=argparse.BooleanOptionalAction, default=True,
                     help="run kube-scheduler as the default scheduler beside Phalanx (default: yes)")
    dev.add_argument("--controller-manager", action=argparse.BooleanOptionalAction, default=True,
                     help="run kube-controller-manager with the Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, "
                          "CronJob, garbage-collector, namespace and resourceclaim controllers, and "
                          "podgroup-protection with GenericWorkload on (default: yes)")
    dev.add_argument("--kube-bin", metavar="DIR",
                     help="the folder with etcd, kube-apiserver, kube-scheduler and kube-controller-manager "
                          "(default: where tools/kube/build.sh puts them)")


def _load(paths: Sequence[str], trace_files: Sequence[str] = (), queue_files: Sequence[str] = (),
          metrics: str | None = None) -> tuple[Inputs, Trace | None]:
    if not paths and not trace_files:
        raise InputError("give manifests (FILE_OR_DIR...) or --trace-file FILE", field="FILE_OR_DIR")
    inputs = load_paths(paths)
    if metrics is not None:
        inputs.metrics = MetricsSeries.load(metrics)
    elif inputs.hpas:
        print(f"phalanx: {len(inputs.hpas)} HorizontalPodAutoscaler(s) but no --metrics FILE: they read no metric "
              "values and leave their targets alone", file=sys.stderr)
    inputs.queue_docs.extend(load_queue_files(queue_files))
    if inputs.queue_docs:
        # bad queue objects fail before any profile runs; valid ones that admit nothing are named
        for warning in check_queue_objects(inputs.queue_docs):
            print(f"phalanx: warning: {warning}", file=sys.stderr)
    trace = load_traces(trace_files, inputs) if trace_files else None
    for notice in inputs.notices:
        print(f"phalanx: {notice}", file=sys.stderr)
    skipped = inputs.skipped + trace.skipped if trace is not None else inputs.skipped
    if skipped:
        kinds = ", ".join(f"{kind}: {count}" for kind, count in sorted(skipped.items()))
        total = sum(skipped.values())
        print(f"phalanx: skipped {total} object(s) of kinds that do not affect scheduling ({kinds})",
              file=sys.stderr)
    queueing = [doc for doc, _ in inputs.queue_docs if not is_namespace(doc)]
    if queueing:
        counts = Counter(str(doc.get("kind", peer.conf_name if (peer := conf_of(doc)) else "volcano-scheduler.conf"))
                         for doc in queueing)
        kinds = ", ".join(f"{kind}: {count}" for kind, count in sorted(counts.items()))
        print(f"phalanx: read {len(queueing)} queueing object(s) for the peer profiles ({', '.join(POLICIES)}) "
              f"({kinds})", file=sys.stderr)
    if inputs.translated:
        kinds = ", ".join(f"{kind}: {count}" for kind, count in sorted(inputs.translated.items()))
        print(f"phalanx: read {sum(inputs.translated.values())} object(s) as v1.37 native gangs ({kinds}); "
              "`phalanx migrate` prints the rewrite", file=sys.stderr)
        warnings = sorted({f"{c.what}: {w}" for c in inputs.migration for w in c.warnings})
        for warning in warnings[:10]:
            print(f"phalanx: warning: {warning}", file=sys.stderr)
        if len(warnings) > 10:
            print(f"phalanx: warning: and {len(warnings) - 10} more (`phalanx migrate` shows them all)",
                  file=sys.stderr)
    return inputs, trace


def _simulations(args: argparse.Namespace, inputs: Inputs, trace: Trace | None,
                 profiles: Sequence[tuple[Profile, Scenario]]) -> list[Report]:
    """Run the inputs under each profile; with --report, record the time series too."""
    until, sample = _until(args), _sample(args)
    horizon = max([0.0, *(getattr(o, "arrival", 0.0) for o in inputs.objects()),
                   *((trace.deletions[-1][0],) if trace is not None and trace.deletions else ())])
    runs = []
    with RunProgress() as progress:
        for profile, scenario in profiles:
            # Simulations never change the loaded objects, so every profile replays the same ones.
            track = functools.partial(progress.track, label=profile.name, horizon=horizon)
            runs.append(simulate(inputs, profile, scenario=scenario, seed=args.seed, until=until, trace=trace,
                                 series=bool(args.report), sample=sample, setup=[track]))
            progress.done()
    # Without --until each run ends when nothing more can change; the shorter ones are carried on to the
    # longest.
    one_horizon(runs)
    reports = [run.report() for run in runs]
    for report in reports:
        for line in _notices(report):
            print(f"phalanx: {report['profile']}: {line}", file=sys.stderr)
    return reports


def _timing(args: argparse.Namespace, inputs: Inputs, trace: Trace | None, profile: Profile,
            scenario: Scenario) -> TimingReport:
    """`simulate --timing`: the run under every interleaving, and the workloads whose outcome differs."""
    from phalanx.sim.timing import explore

    until = _until(args)
    return explore(lambda order: simulate(inputs, profile, scenario=scenario, seed=args.seed, until=until,
                                          trace=trace, interleaving=order).sim).report()


def _notices(report: Report) -> list[str]:
    """What the report says was not modelled, held back or ignored, one line each."""
    admission, autoscaler = report.get("admission"), report.get("autoscaler")
    lines = [f"not modelled: {line}" for block in (admission, autoscaler) if block is not None
             for line in block["notModelled"]]
    lines += held_lines(admission["workloads"] if admission is not None else [])
    defaulted = report.get("defaultDurations") or {}
    if defaulted:
        lines.append(f"{sum(d['pods'] for d in defaulted.values())} pod(s) without phalanx.dev/duration ran for a "
                     "default: " + ", ".join(f"{kind} {format_duration(d['seconds'])} ({d['pods']})"
                                             for kind, d in defaulted.items())
                     + "; --default-duration changes it")
    lines += held_lines([{"name": f"Job {w['name']}", "reason": SUSPENDED} for w in report["workloads"]
                         if w.get("held") == SUSPENDED])
    for section in (report.get("topologyConstraints"), report.get("compositePodGroups"),
                    report.get("podGroupResourceClaims")):
        lines += section.get("notes", []) if section is not None else []
    lines += [f"HorizontalPodAutoscaler {service['name']}: {line}" for service in report.get("services", [])
              for line in service.get("notes", [])]
    return lines


def _write_report(directory: str, document: Report | dict[str, Any]) -> None:
    from phalanx.sim.output import write_report  # matplotlib loads only when a report is asked for

    written = write_report(directory, document)
    print(f"phalanx: wrote {len(written)} files to {directory} (open {directory.rstrip('/')}/index.html)",
          file=sys.stderr)


def _without_series(report: Report) -> dict[str, object]:
    return {key: value for key, value in report.items() if key != "series"}


def _simulate_profile(args: argparse.Namespace) -> tuple[Profile, Scenario]:
    gates = parse_feature_gates(args.feature_gates)
    if args.profile and args.config:
        raise InputError("give either --profile or --config, not both", field="--config")
    if args.config:
        profile = load_profile(args.config)
    elif args.profile:
        profile = load_profile(args.profile)
    else:
        merged = {**DEFAULT_GATES, **gates}
        profile = builtin("gang" if merged.get("GenericWorkload") else "default")
    profile.feature_gates.update(gates)
    modes = _scale_up_modes(args)
    if len(modes) != 1:
        raise InputError("simulate takes one mode (compare takes a list)", field="--scale-up")
    return profile, scenario_for(args.profile or "", scale_up=modes[0], durations=_durations(args))


def _durations(args: argparse.Namespace) -> tuple[tuple[str, float], ...]:
    """The default durations of `--default-duration` (simulate, compare); none for commands without it."""
    spec = getattr(args, "default_duration", None)
    if spec is None:
        return ()
    return parse_default_durations(spec) if spec.strip() else DEFAULT_DURATIONS


def _scale_up_modes(args: argparse.Namespace) -> list[str]:
    modes = [m.strip() for m in getattr(args, "scale_up", "pod").split(",") if m.strip()]
    for mode in modes:
        if mode not in SCALE_UP_MODES:
            raise InputError(f"unknown mode {mode!r} (pod or gang)", field="--scale-up")
    if not modes:
        raise InputError("name a mode: pod or gang", field="--scale-up")
    return modes


def _with_scale_up(profiles: list[tuple[Profile, str]], modes: list[str],
                   durations: tuple[tuple[str, float], ...]) -> list[tuple[Profile, Scenario]]:
    """Each profile (loaded from its spec: a built-in name or a file) under each scale-up mode; with more than
    one mode the names say which."""
    if len(modes) == 1:
        return [(profile, scenario_for(spec, scale_up=modes[0], durations=durations)) for profile, spec in profiles]
    return [(dataclasses.replace(p, name=f"{p.name}/{mode}-scale-up"),
             scenario_for(spec, scale_up=mode, durations=durations)) for p, spec in profiles for mode in modes]


def _sample(args: argparse.Namespace) -> float | None:
    if args.sample is None:
        return None
    try:
        sample = parse_duration(args.sample)
    except ValueError as exc:
        raise InputError(str(exc), field="--sample") from None
    if sample <= 0:
        raise InputError("must be a positive duration", field="--sample")
    return sample


def _until(args: argparse.Namespace) -> float | None:
    if args.until is None:
        return None
    try:
        return parse_duration(args.until)
    except ValueError as exc:
        raise InputError(str(exc), field="--until") from None


def _emit(document: Any, output: str) -> None:
    from phalanx.sim.jsonsafe import dumps, finite

    if output == "json":
        sys.stdout.write(dumps(document) + "\n")
    else:
        sys.stdout.write(yaml.safe_dump(finite(document), sort_keys=False))


def _run(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    _tolerant_stdout()
    if getattr(args, "report", None) is not None and args.command != "sweep":  # sweep checks its own files
        from phalanx.sim.output import check_report_directory

        check_report_directory(args.report)  # before any work that a report it cannot write would throw away
    # Piped output has no terminal width to go by: give tables room rather than folding them at 80.
    console = Console() if sys.stdout.isatty() else Console(width=140)
    return COMMANDS[args.command](args, console)


def _generate(args: argparse.Namespace, console: Console) -> int:
    raw = read_yaml(args.file)
    if not is_perf_config(raw):
        for flag, given in (("--workload", args.workload), ("--list", args.list)):
            if given:
                raise InputError("applies to scheduler_perf configuration files (a YAML list of test cases); this is "
                                 "a Phalanx workload file", file=args.file, field=flag)
        manifests = generate(parse_workload(raw, args.file))
    else:
        config = parse_perf_config(raw, args.file)
        if args.list:
            listing = config.listing()
            width = max(len(name) for name, _ in listing)
            for name, labels in listing:
                print(f"{name:<{width}}  {','.join(labels)}".rstrip())
            return 0
        if not args.workload:
            raise InputError("name the workload to print: --workload TESTCASE/WORKLOAD (--list shows them)",
                             file=args.file)
        generated = generate_perf(config, args.workload)
        for line in _perf_notes(generated):
            print(f"phalanx: {generated.selector}: {line}", file=sys.stderr)
        manifests = generated.manifests
    if args.output == "json":
        _emit({"apiVersion": "v1", "kind": "List", "items": manifests}, "json")
    else:
        # libyaml's emitter: the same text as PyYAML's, several times faster on scheduler_perf's 5000-node cases
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        sys.stdout.write(yaml.dump_all(manifests, Dumper=dumper, sort_keys=False))
    return 0


def _perf_notes(generated: PerfWorkloadManifests) -> list[str]:
    """How scheduler_perf runs the workload that the manifests cannot carry: its feature gates (as simulate's
    --feature-gates, for the gates Phalanx models) and its scheduler configuration."""
    notes = []
    gates = generated.feature_gates
    if gates:
        def shown(names: list[str]) -> str:
            return ",".join(f"{name}={str(gates[name]).lower()}" for name in names)

        known = [name for name in gates if name in KNOWN_GATES]
        other = [name for name in gates if name not in KNOWN_GATES]
        line = f"scheduler_perf runs it with feature gates {shown(list(gates))}"
        if known:
            line += (f": pass --feature-gates {shown(known)} to simulate (compare has no --feature-gates: "
                     "give it a profile file with featureGates)")
        if other:
            line += f"; {', '.join(other)} {'is' if len(other) == 1 else 'are'} not modelled by Phalanx"
        notes.append(line)
    if generated.unused_params:
        names = ", ".join(generated.unused_params)
        notes.append(f"no operation uses the param(s) {names}: scheduler_perf fails such a workload unless its Go "
                     "test code reads them (a hook Phalanx does not run, which may shape the cluster too)")
    if generated.scheduler_config:
        notes.append(f"scheduler_perf runs it with the scheduler configuration {generated.scheduler_config}: "
                     f"pass --config {generated.scheduler_config} to simulate")
    return notes


def _migrate(args: argparse.Namespace, console: Console) -> int:
    pairs, changes = migrate_paths(args.paths)
    text = render_json(pairs) if args.output == "json" else render_yaml(pairs)
    for change in changes:
        for warning in change.warnings:
            print(f"phalanx: warning: {change.what}: {warning}", file=sys.stderr)
        if args.output == "json":
            for note in change.notes:
                print(f"phalanx: {change.what}: {note}", file=sys.stderr)
    sys.stdout.write(text)
    return 0


def _validate(args: argparse.Namespace, console: Console) -> int:
    inputs, _ = _load(args.paths, args.trace_file, args.queues)
    controllers = inputs.controllers()
    queueing = sum(1 for doc, _ in inputs.queue_docs if not is_namespace(doc))
    print(f"valid: {len(inputs.nodes)} node(s), {len(inputs.pods)} pod(s), {len(inputs.pod_groups)} "
          f"pod group(s), {len(inputs.workloads)} workload(s), {len(inputs.jobs)} job(s), "
          f"{len(controllers)} workload controller object(s) (Deployment, ReplicaSet, StatefulSet, DaemonSet, CronJob, "
          "JobSet, LeaderWorkerSet, PyTorchJob, TFJob, MPIJob), "
          f"{len(inputs.priority_classes)} priority class(es), {queueing} queueing object(s), "
          f"{len(inputs.node_groups)} node group(s)")
    return 0


def _simulate(args: argparse.Namespace, console: Console) -> int:
    run = _simulate_profile(args)
    _until(args), _sample(args)  # bad flags fail before the inputs load
    inputs, trace = _load(args.paths, args.trace_file, args.queues, args.metrics)
    report = _simulations(args, inputs, trace, [run])[0]
    if args.timing:
        report["timing"] = _timing(args, inputs, trace, *run)
    if args.report:
        _write_report(args.report, report)
    if args.output in ("json", "yaml"):
        _emit(_without_series(report), args.output)
    else:
        render_simulation(report, console, wide=args.output == "wide")
    return 0


def _compare(args: argparse.Namespace, console: Console) -> int:
    if args.trace or args.nodes or args.pods:
        return _compare_trace(args, console)
    if not args.paths and not args.trace_file:
        raise InputError("give manifests (FILE_OR_DIR...) or a trace (--trace openb --nodes NODES.csv --pods "
                         "PODS.csv)", field="compare")
    loaded = [(load_profile(spec.strip()), spec.strip()) for spec in args.profiles.split(",") if spec.strip()]
    if not loaded:
        raise InputError("name at least one profile", field="--profiles")
    profiles = _with_scale_up(loaded, _scale_up_modes(args), _durations(args))
    _until(args), _sample(args)  # bad flags fail before the inputs load
    inputs, trace = _load(args.paths, args.trace_file, args.queues, args.metrics)
    reports = _simulations(args, inputs, trace, profiles)
    if args.report:
        _write_report(args.report, {"schemaVersion": SCHEMA_VERSION, "results": reports})
    if args.output in ("json", "yaml"):
        _emit({"schemaVersion": SCHEMA_VERSION, "results": [_without_series(r) for r in reports]}, args.output)
    else:
        render_compare(reports, console)
    return 0


def _compare_trace(args: argparse.Namespace, console: Console) -> int:
    """`compare --trace openb --nodes … --pods …`: the trace under each profile and seed."""
    if args.paths or args.trace_file:
        raise InputError("give either manifests (FILE_OR_DIR, --trace-file) or --trace, not both", field="compare")
    for flag, value in (("--trace", args.trace), ("--nodes", args.nodes), ("--pods", args.pods)):
        if not value:
            raise InputError("is required with --trace, --nodes and --pods", field=flag)
    specs = [spec.strip() for spec in args.profiles.split(",") if spec.strip()]
    results = compare_trace(args.trace, args.nodes, args.pods, args.protocol, args.load, seed_list(args.seeds),
                            specs)
    if args.report:
        _write_report(args.report, {"schemaVersion": SCHEMA_VERSION, "results": results})
    if args.output in ("json", "yaml"):
        _emit({"schemaVersion": SCHEMA_VERSION, "results": results}, args.output)
    else:
        render_trace_compare(results, console)
    return 0


def _live(args: argparse.Namespace, console: Console) -> int:
    """`run`: the live scheduler until SIGTERM (exit 0), or until it loses its Lease (exit 1)."""
    import logging

    from phalanx.live.run import Options, default_lease_namespace, parse_address, run

    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not args.verbose:  # the client logs every request (watches, Lease renewals) at info: ~100 lines a minute idle
        for name in ("httpx2", "httpcore2"):  # lightkube's HTTP client (a fork of httpx)
            logging.getLogger(name).setLevel(logging.WARNING)
    host, port = parse_address(args.metrics_bind_address)
    if not (args.leader_elect_lease_duration > args.leader_elect_renew_deadline
            > 1.2 * args.leader_elect_retry_period > 0):
        raise InputError("needs lease duration > renew deadline > 1.2 × retry period > 0 (as client-go)",
                         field="--leader-elect-lease-duration")
    profile, scenario = _simulate_profile(args)
    _refuse_queueing(args.profile, scenario)
    options = Options(
        profile=profile, kubeconfig=args.kubeconfig, scheduler_name=args.scheduler_name,
        namespaces=frozenset(args.namespace) or None, leader_elect=args.leader_elect == "true",
        lease_namespace=args.leader_elect_resource_namespace or default_lease_namespace(),
        lease_name=args.leader_elect_resource_name, lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline, retry_period=args.leader_elect_retry_period,
        metrics_host=host, metrics_port=port, seed=args.seed)
    return run(options)


def _refuse_queueing(spec: str | None, scenario: Scenario) -> None:
    """The live driver never reads a Scenario: under a queueing profile it would bind queued pods at once."""
    if scenario.admission is not None:
        raise InputError(f"{spec!r} queues workloads as {scenario.admission.capitalize()} does, which only the "
                         "simulator models; run the real one in front of `phalanx run --profile gang`",
                         field="--profile")


def _verify(args: argparse.Namespace, console: Console) -> int:
    """`verify`: exit 0 when Phalanx and the real kube-scheduler agree, 1 when they differ."""
    from pathlib import Path

    from phalanx.verify.compare import check_replayable, verify
    from phalanx.verify.controlplane import ControlPlane
    from phalanx.verify.oracle import Oracle
    from phalanx.verify.render import render_verdict

    profile = load_profile(args.profile)
    # Bad input, and what the oracle cannot replay, fail before a control plane starts.
    check_replayable(args.paths, profile, seed=args.seed, scenario=scenario_for(args.profile))
    with ControlPlane(Path(args.kube_bin) if args.kube_bin else None) as plane:
        verdict = verify(args.paths, profile, Oracle(plane), seed=args.seed, scenario=scenario_for(args.profile))
    if args.output in ("json", "yaml"):
        _emit(verdict.to_json(), args.output)
    else:
        render_verdict(verdict, console)
    return 0 if verdict.agrees else 1


def _dev_cluster(args: argparse.Namespace, console: Console) -> int:
    """`dev-cluster`: a local control plane until Ctrl-C or SIGTERM (exit 0); exit 1 when a component dies."""
    from pathlib import Path

    from phalanx.devcluster.cluster import Options, run
    from phalanx.devcluster.nodes import NodeShape

    shape = NodeShape(args.nodes, args.node_cpu, args.node_memory, args.gpus)
    _refuse_queueing(args.profile, scenario_for(args.profile))  # `phalanx run`, the next command, would refuse it
    return run(Options(profile=load_profile(args.profile), profile_spec=args.profile, nodes=shape,
                       kubeconfig_out=Path(args.kubeconfig_out),
                       bin_dir=Path(args.kube_bin) if args.kube_bin else None,
                       kube_scheduler=args.kube_scheduler, controller_manager=args.controller_manager))


def _sweep(args: argparse.Namespace, console: Console) -> int:
    """`sweep`: a grid of runs (docs/sweeps.md); bad input of any cell's files fails before anything runs."""
    import os

    from phalanx import sweep
    from phalanx.sim.output import check_report_directory

    if args.report is not None:  # a bad DIR fails before any input loads or any cell runs
        check_report_directory(args.report, sweep.SWEEP_REPORT_FILES)
    traced = bool(args.trace or args.nodes or args.pods)
    if traced == bool(args.manifests):
        raise InputError("give either a trace (--trace openb --nodes NODES.csv --pods PODS.csv...) or "
                         "--manifests PATHS, not both" if traced else "give a trace (--trace openb --nodes "
                         "NODES.csv --pods PODS.csv...) or --manifests PATHS", field="sweep")
    workers = (os.cpu_count() or 1) if args.workers is None else _workers(args.workers)
    profiles = [spec.strip() for spec in (args.profiles or ("random,dotprod,clustering,packing,bestfit,fgd"
                                                            if traced else "default,gang")).split(",")
                if spec.strip()]
    if not profiles:
        raise InputError("name at least one profile", field="--profiles")
    for spec in profiles:
        load_profile(spec)
    seeds = seed_list(args.seeds or ("42" if traced else "0"))
    if traced:
        for flag, value in (("--what-if", args.what_if), ("--until", args.until)):
            if value is not None:
                raise InputError("applies to --manifests, not to a trace", field=flag)
        for flag, value in (("--trace", args.trace), ("--nodes", args.nodes), ("--pods", args.pods)):
            if not value:
                raise InputError("is required with --trace, --nodes and --pods", field=flag)
        for flag, path in (("--nodes", args.nodes), *(("--pods", p) for p in args.pods)):
            if not os.path.isfile(path):
                raise InputError(f"{path}: no such file", field=flag)
        loads = sweep.parse_loads(args.load or "1.3")
        cells = sweep.trace_grid(args.trace, args.nodes, args.pods, profiles, seeds, loads)
    else:
        if args.load is not None:
            raise InputError("applies to a trace, not to --manifests", field="--load")
        edits = sweep.parse_edits(args.what_if or "base")
        sets = [[p.strip() for p in spec.split(",") if p.strip()] for spec in args.manifests]
        for spec, paths in zip(args.manifests, sets, strict=True):
            if not paths:
                raise InputError(f"names no file or directory: {spec[:40]!r}", field="--manifests")
        for paths in sets:
            inputs = load_paths(paths)  # bad manifests and edits that cannot apply fail here, before any run
            for edit in edits:
                sweep.apply_edit(inputs, edit)
        cells = sweep.manifest_grid(sets, profiles, [edit.text for edit in edits], seeds, _until(args))
    store = sweep.ResultStore(args.results) if args.results else None
    if store is not None and (others := store.others(cells)):
        print(f"phalanx: {args.results}: ignoring {others} stored result(s) of cells outside this grid",
              file=sys.stderr)
    records, ran = sweep.run_grid(cells, workers=workers, ray_address=args.ray, store=store)
    where = f"on Ray at {args.ray}" if args.ray else f"in {min(workers, ran)} local process(es)"
    print(f"phalanx: sweep: {len(cells)} cell(s): {f'{ran} run {where}' if ran else 'none run'}, "
          f"{len(cells) - ran} read from --results", file=sys.stderr)
    document = sweep.sweep_document(cells, records)
    if args.report:
        written = sweep.write_sweep_report(args.report, document)
        print(f"phalanx: wrote {len(written)} files to {args.report} (open {args.report.rstrip('/')}/index.html)",
              file=sys.stderr)
    if args.output in ("json", "yaml"):
        _emit(document, args.output)
    else:
        sweep.render_sweep(document, console, wide=args.output == "wide")
    return 0


def _snapshot(args: argparse.Namespace, console: Console) -> int:
    """`snapshot`: the cluster's objects into DIR, and one summary line on stderr."""
    from phalanx.snapshot import capture, check_directory, write_snapshot

    check_directory(args.output)  # before the cluster is read
    snapshot = capture(args.kubeconfig)
    write_snapshot(args.output, snapshot)
    print(f"phalanx: {snapshot.summary(args.output)}", file=sys.stderr)
    return 0


def _workers(text: str) -> int:
    value = int(text) if text.isascii() and text.isdigit() and len(text) <= 10 else 0
    if not 1 <= value <= MAX_WORKERS:
        raise InputError(f"want a whole number of processes, at least 1 and at most {MAX_WORKERS}, got {text[:40]!r}",
                         field="--workers")
    return value


Command = Callable[[argparse.Namespace, Console], int]
COMMANDS: dict[str, Command] = {
    "simulate": _simulate, "compare": _compare, "validate": _validate, "verify": _verify, "generate": _generate,
    "run": _live, "migrate": _migrate, "sweep": _sweep, "dev-cluster": _dev_cluster, "snapshot": _snapshot,
}


def _tolerant_stdout() -> None:
    """Names and messages from the input may hold what the output's encoding cannot (a lone surrogate from a
    JSON escape): written escaped, as stderr writes them, rather than failing halfway through a table."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None and getattr(sys.stdout, "errors", None) == "strict":
        reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _run(argv)
    except _Exit as done:
        return done.status
    except PhalanxError as exc:
        # One line, whatever the input put in a name or a path.
        print("phalanx: error: " + str(exc).replace("\r", "\\r").replace("\n", "\\n"), file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 1


if __name__ == "__main__":
    sys.exit(main())
