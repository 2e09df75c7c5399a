"""The numbers and quoted lines README.md and docs/*.md state about a command's result, checked against that
command run in-process (`phalanx.cli.main`) on the bundled inputs (examples/, tests/scenarios/).

Each row of PAGES is a page, the command as the page writes it (it must appear on the page, whitespace aside),
the argv run (the written command, with `-o json` where the claims are JSON fields) and the claims: the words
the page uses (they must appear on the page too, so a rewritten page fails here until this table follows) and
an extractor from the run's output with the value as the page writes it. A row runs its commands once for all
its claims; a command shared by two pages runs once. The words docs/live.md and docs/simulation.md give the
members of a gang whose cycle failed (pages that show no command for it) are checked on the README's example,
whose 4-pod gang fits only 2.

Left out, and why:
- docs/benchmarks.md: timings of this machine, not results of a command.
- docs/fragmentation.md, docs/sweeps.md's trace grids, README's `--trace openb` lines: the Alibaba trace files
  are not in the repository; `sweep --ray`'s error line needs a Ray cluster (not reachable is what it says).
- docs/live.md, docs/snapshot.md, docs/fidelity.md's `verify` commands: `run`, `dev-cluster`, `snapshot` and
  `verify` need the kube control plane (their own tests, marked `kube`, check them).
- docs/traces.md (`examples/snapshot` with `day.jsonl`), README's training-mix, README's custom profile line,
  docs/sweeps.md's manifests grids, docs/composite.md (`manifests/`, not a bundled folder), docs/report.md,
  docs/engine.md: the pages state no number about these runs' results. The error lines of docs/traces.md and
  docs/fragmentation.md quote inputs the page does not give.
- docs/migrate.md's coscheduling demo (6 pods stay Pending): tests/migrate/test_coscheduling_demo.py runs it on
  the upstream README's own manifests. docs/peers.md's story beyond its table: tests/sim/test_admission_gate.py.
- `--report DIR`: the report's numbers are the summary's; the command runs without it here (plots are slow).
"""

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from phalanx.cli import main

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Run:
    status: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


Runs = Sequence[Run]


@dataclass(frozen=True)
class Claim:
    words: str  # as the page writes them
    actual: Callable[[Runs], object]
    expected: object


@dataclass(frozen=True)
class Row:
    page: str
    written: str  # the command as the page writes it
    commands: tuple[tuple[str, ...], ...]
    claims: tuple[Claim, ...]
    needs: str | None = None  # a module the run needs (an extra)
    shown: bool = True  # False: the page shows no command for the claim, `written` is what the page says instead
    files: dict[str, str] = field(default_factory=dict)  # file name -> the page's fenced block that starts with it


# --- reading a run ---

def report(runs: Runs, profile: str) -> Any:
    """The report of `profile` among the runs' JSON (compare's results or simulate's one report)."""
    for run in runs:
        document = run.json()
        for result in document.get("results", [document]):
            if result["profile"] == profile:
                return result
    raise AssertionError(f"no report for profile {profile}")


def summary(runs: Runs, profile: str) -> Any:
    return report(runs, profile)["summary"]


def named(items: list[Any], name: str) -> Any:
    [item] = [item for item in items if item["name"] == name]
    return item


def workload(runs: Runs, profile: str, name: str) -> Any:
    return named(report(runs, profile)["workloads"], name)


def pod(runs: Runs, profile: str, name: str) -> Any:
    return named(report(runs, profile)["pods"], name)


def cell(runs: Runs, metric: str, column: str) -> str:
    """The terminal table's cell of `metric` (a row label) under `column` (a header: the profile's name)."""
    rows = [[part.strip() for part in line.split("│")[1:-1]] for line in runs[0].out.splitlines()
            if line.startswith("│")]
    [header] = [[part.strip() for part in line.split("┃")[1:-1]] for line in runs[0].out.splitlines()
                if line.startswith("┃") and column in line.split()][:1]
    [row] = [row for row in rows if row[0] == metric]
    return row[header.index(column)]


def stderr_lines(runs: Runs) -> list[str]:
    return [line for run in runs for line in run.err.splitlines()]


def hms(text: str) -> float:
    """Seconds of a duration as the pages write it: `1h 0m 36s`, `50m 36s`, `36 s`, `2h`."""
    units = {"h": 3600, "m": 60, "s": 1}
    parts = re.findall(r"(\d+)\s*([hms])", text)
    assert parts and "".join(n + u for n, u in parts) == re.sub(r"\s", "", text), text
    return float(sum(int(n) * units[u] for n, u in parts))


def clock(text: str) -> float:
    """Seconds from the start of the run of a clock time `HH:MM` (runs start at 00:00)."""
    hours, minutes = text.split(":")
    return float(int(hours) * 3600 + int(minutes) * 60)


def money(text: str) -> int:
    return int(text.lstrip("$").replace(",", ""))


def replicas_at(runs: Runs, service: str, replicas: int) -> list[float]:
    found = named(report(runs, "gang")["services"], service)["replicas"]
    return [step["time"] for step in found if step["replicas"] == replicas]


# --- the pages ---

def _bare_metal() -> Row:
    return Row("README.md", "phalanx compare examples/bare-metal --profiles default,gang --until 8h",
               (("compare", "examples/bare-metal", "--profiles", "default,gang", "--until", "8h"),), (
                   Claim("two gang members bind", lambda r: 4 - int(cell(r, "of them gang members", "default")), 2),
                   Claim("holding 8 of 64 CPUs for nothing", lambda r: cell(r, "cpu stranded", "default"),
                         f"{8 / 64:.1%}"),
                   Claim("(64 stranded CPU-hours over the night)", lambda r: cell(r, "cpu stranded hours", "default"),
                         "64"),
                   Claim("and four pods stay pending", lambda r: cell(r, "pods pending", "default"), "4"),
                   Claim("no placement exists, so no member binds", lambda r: cell(r, "of them gang members", "gang"),
                         "4"),
                   Claim("both tenants land, and every allocated core does work",
                         lambda r: (cell(r, "pods running", "gang"), cell(r, "cpu stranded", "gang")), ("12", "0.0%")),
                   Claim("Allocation reads 84.4% in both",
                         lambda r: {cell(r, "cpu allocated", p) for p in ("default", "gang")}, {"84.4%"}),
               ))


def _bare_metal_report() -> Row:
    return Row("README.md", "phalanx compare examples/bare-metal --until 8h --report report/",
               (("compare", "examples/bare-metal", "--until", "8h"),), (
                   Claim("(`default` holds 12.5% of the CPUs for nothing all night; under `gang` the gap is gone)",
                         lambda r: (cell(r, "cpu stranded", "default"), cell(r, "cpu stranded", "gang")),
                         ("12.5%", "0.0%")),
               ))


def _web_vs_batch(mode: str, claims: tuple[Claim, ...]) -> Row:
    written = f"phalanx compare examples/web-vs-batch/common examples/web-vs-batch/{mode} --until 12h"
    argv = ("compare", "examples/web-vs-batch/common", f"examples/web-vs-batch/{mode}", "--until", "12h",
            "-o", "json")
    return Row("README.md", written, (argv,), claims)


GANG = "batch/nightly-training-workers"


def _web_vs_batch_rows() -> list[Row]:
    return [
        _web_vs_batch("all", (
            Claim("`gang` profile evicts the whole gang as one unit",
                  lambda r: (summary(r, "gang")["evictions"], named(report(r, "gang")["podGroups"], GANG)
                             ["preemptedCount"]), (4, 1)),  # a preemptible 4-pod training gang, preempted once
            Claim("(it requeues and lands again when the spike ends)",
                  lambda r: named(report(r, "gang")["podGroups"], GANG)["succeeded"], 4),
        )),
        _web_vs_batch("single", (
            Claim("individual workers are evicted and the survivors hold their CPUs for nothing",
                  lambda r: (summary(r, "gang")["evictions"] < 4, summary(r, "gang")["strandedResourceHours"]["cpu"]
                             > 1), (True, True)),
        )),
    ]


def _gpu_fleet_readme() -> Row:
    return Row("README.md", "phalanx simulate examples/gpu-fleet --profile gang -o wide",
               (("simulate", "examples/gpu-fleet", "--profile", "gang", "-o", "json"),), (
                   Claim("a DeviceTaintRule that quarantines one GPU\n  (`NoSchedule`) and later fails another "
                         "(`NoExecute`, evicting its users), and a diagnostic pod that\n  tolerates the taint",
                         lambda r: ([len(pod(r, "gang", f"ml/inference-{i}")["deviceTaintEvictions"]) for i in "ab"],
                                    pod(r, "gang", "ml/gpu-diagnostics")["devices"]),
                         ([1, 1], ["gpu.example.com/gpu-node-0/gpu-3"])),
               ))


def _gpu_fleet() -> Row:
    return Row("docs/devices.md", "phalanx simulate examples/gpu-fleet --profile gang -o wide",
               (("simulate", "examples/gpu-fleet", "--profile", "gang", "-o", "json"),), (
                   Claim("so the 3-pod training gang (8 GPUs per pod, one claim per pod from a\nResourceClaimTemplate) "
                         "takes nodes 1–3",
                         lambda r: sorted(pod(r, "gang", f"ml/train-{i}")["node"] for i in range(3)),
                         [f"gpu-node-{i}" for i in (1, 2, 3)]),
                   Claim("a diagnostic pod tolerating the taint lands on that GPU",
                         lambda r: pod(r, "gang", "ml/gpu-diagnostics")["devices"],
                         ["gpu.example.com/gpu-node-0/gpu-3"]),
                   Claim("two\ninference servers share one GPU of `gpu-node-4`",
                         lambda r: {d for i in "ab" for d in pod(r, "gang", f"ml/inference-{i}")["devices"]},
                         {"gpu.example.com/gpu-node-4/gpu-0"}),
                   Claim("a `NoExecute` rule arriving at\n02:00 evicts one at once and the other after its 600 s "
                         "toleration",
                         lambda r: [pod(r, "gang", f"ml/inference-{i}")["deviceTaintEvictions"][0]["time"]
                                    for i in "ab"],
                         [clock("02:00"), clock("02:00") + 600]),
                   Claim("a late 8-GPU pod stays pending with\n`0/5 nodes are available: 5 cannot allocate all "
                         "claims.`",
                         lambda r: (pod(r, "gang", "ml/train-extra")["phase"],
                                    pod(r, "gang", "ml/train-extra")["message"]),
                         ("Pending", "0/5 nodes are available: 5 cannot allocate all claims.")),
               ))


def _chart_load() -> Row:
    def placeable(r: Runs) -> tuple[int, int]:
        message = named(report(r, "gang")["podGroups"], "ml/train")["message"]
        found = re.search(r"minCount \((\d+)\) cannot be satisfied: (\d+) scheduled", message)
        assert found, message
        return int(found[2]), int(found[1])

    return Row("README.md", "phalanx compare examples/chart-load --until 3h",
               (("compare", "examples/chart-load", "--until", "3h", "-o", "json"),), (
                   Claim("leave room for only part of a\n  training gang",
                         lambda r: 0 < placeable(r)[0] < placeable(r)[1], True),
               ))


PEERS_TABLE = {  # profile -> the page's cells, as written
    "gang": ("36 s, 1h 0m 36s", "34 s, 30m 34s", "3h 10m 34s, 3h 30m 36s, 5h 0m 51s", "6", "13.3 GPU-hours",
             "5h 10m 51s"),
    "kueue": ("36 s, 1h 0m 36s", "50m 36s, 1h 20m 36s", "2h, 4h, 3h 50m 36s", "4", "8 GPU-hours", "4h 0m 36s"),
    "volcano": ("1h 30m, 2h 30m", "2h 20m, 2h 50m", "2h, 2h, 3h 50m", "0", "0", "4h 0m"),
}


def _peers_row(profile: str) -> list[Claim]:
    retrain, evaluation, sweeps, evictions, lost, makespan = PEERS_TABLE[profile]

    def wait_completion(name: str) -> Callable[[Runs], object]:
        return lambda r: (workload(r, profile, name)["waitSeconds"]["max"],
                          workload(r, profile, name)["completionSeconds"])

    return [
        Claim(f"| production/retrain: wait, completion | {' | '.join(PEERS_TABLE[p][0] for p in PEERS_TABLE)} |",
              wait_completion("production/retrain"), tuple(hms(t) for t in retrain.split(", "))),
        Claim(f"| production/eval: wait, completion | {' | '.join(PEERS_TABLE[p][1] for p in PEERS_TABLE)} |",
              wait_completion("production/eval"), tuple(hms(t) for t in evaluation.split(", "))),
        Claim(f"| research/sweep-a, -b, -c: completion | {' | '.join(PEERS_TABLE[p][2] for p in PEERS_TABLE)} |",
              lambda r: [workload(r, profile, f"research/sweep-{x}")["completionSeconds"] for x in "abc"],
              [hms(t) for t in sweeps.split(", ")]),
        Claim(f"| evictions (pods) | {' | '.join(PEERS_TABLE[p][3] for p in PEERS_TABLE)} |",
              lambda r: summary(r, profile)["evictions"], int(evictions)),
        Claim(f"| GPU work lost | {' | '.join(PEERS_TABLE[p][4] for p in PEERS_TABLE)} |",
              lambda r: round(summary(r, profile)["lostResourceHours"].get("nvidia.com/gpu", 0), 1),
              float(lost.split()[0])),
        Claim(f"| makespan | {' | '.join(PEERS_TABLE[p][5] for p in PEERS_TABLE)} |",
              lambda r: summary(r, profile)["makespan"]["seconds"], hms(makespan)),
    ]


def _peers() -> Row:
    def gpu_time_averaged(r: Runs) -> str:
        averaged = {p: summary(r, p)["timeAveragedAllocated"]["nvidia.com/gpu"] for p in PEERS_TABLE}
        return max(averaged, key=lambda p: averaged[p])

    return Row("docs/peers.md", "phalanx simulate examples/peers --profile P",
               tuple(("simulate", "examples/peers", "--profile", p, "-o", "json") for p in PEERS_TABLE), (
                   *(claim for p in PEERS_TABLE for claim in _peers_row(p)),
                   Claim("and the third sweep waits 3 hours",
                         lambda r: round(workload(r, "gang", "research/sweep-c")["waitSeconds"]["max"] / 3600), 3),
                   Claim("there is nothing to reclaim and it waits its turn\n  (50 minutes)",
                         lambda r: int(workload(r, "kueue", "production/eval")["waitSeconds"]["max"] // 60), 50),
                   Claim("GPUs stay busy (the highest time-averaged\n  allocation of the three)", gpu_time_averaged,
                         "kueue"),
                   Claim("names on stderr (`phalanx: volcano: not modelled: reclaim/preempt evict whole workloads "
                         "(Volcano's\n  task-level actions evict single pods)`)",
                         lambda r: "phalanx: volcano: not modelled: reclaim/preempt evict whole workloads (Volcano's "
                                   "task-level actions evict single pods)" in stderr_lines(r), True),
                   Claim("production waits an hour and a half for the sweeps\n  to end",
                         lambda r: workload(r, "volcano", "production/retrain")["waitSeconds"]["max"], hms("1h 30m")),
               ))


def _autoscaling() -> Row:
    def zero_until(r: Runs) -> float:
        [down] = replicas_at(r, "serving/llm", 0)
        return min(t for t in replicas_at(r, "serving/llm", 1) if t > down) - down

    def service(r: Runs) -> Any:
        return named(report(r, "gang")["services"], "serving/llm")

    def gang(r: Runs) -> Any:
        return named(report(r, "gang")["podGroups"], "ml/nightly-train")

    def autoscaler(r: Runs) -> Any:
        return report(r, "gang")["autoscaler"]

    return Row("docs/autoscaling.md",
               "phalanx simulate examples/autoscaling --metrics examples/autoscaling/metrics.csv --profile gang "
               "--until 24h",
               (("simulate", "examples/autoscaling", "--metrics", "examples/autoscaling/metrics.csv", "--profile",
                 "gang", "--until", "24h", "-o", "json"),), (
                   Claim("the HPA scales `llm` to zero\n  (04:05, `ScaledToZero=True`)",
                         lambda r: replicas_at(r, "serving/llm", 0), [clock("04:05")]),
                   Claim("keeps it there for 7.9 hours: 7.9 GPU-hours saved",
                         lambda r: (round(zero_until(r) / 3600, 1), round(service(r)["gpuHoursSaved"], 1)),
                         (7.9, 7.9)),
                   Claim("at 12:00 requests return; the next sync scales it to 1",
                         lambda r: min(t for t in replicas_at(r, "serving/llm", 1) if t > clock("04:05")),
                         clock("12:00")),
                   Claim("1,200 requests met\n  the cold service and waited up to 2 minutes",
                         lambda r: (service(r)["requestsCold"], math.ceil(service(r)["addedLatencySeconds"]["max"]
                                                                            / 60)), (1200, 2)),
                   Claim("p99 over the day is untouched (1,200 of 2.6 million)",
                         lambda r: (service(r)["addedLatencySeconds"]["p99"], round(service(r)["requests"] / 1e6, 1)),
                         (0.0, 2.6)),
                   Claim("the training gang waits for its four nodes (4 minutes and a scan)",
                         lambda r: (autoscaler(r)["nodesAdded"], int(gang(r)["waitSeconds"] // 60)),
                         ({"train-pool": 4}, 4)),
                   Claim("runs 3 hours", lambda r: gang(r)["completedAt"] - gang(r)["startedAt"], hms("3h")),
                   Claim("13.0 node-hours, $424",
                         lambda r: (round(sum(autoscaler(r)["nodeHours"].values()), 1),
                                    round(autoscaler(r)["totalCost"])), (13.0, money("$424"))),
               ))


def _gang_pool(page: str) -> Row:
    def scaler(r: Runs, mode: str) -> tuple[int, int, float, float, int, float]:
        result = report(r, f"gang/{mode}-scale-up")
        a = result["autoscaler"]
        return (sum(a["nodesAdded"].values()), a["nodesRemoved"], round(sum(a["nodeHours"].values()), 1),
                a["idleNodeHours"], round(a["totalCost"]), result["summary"]["makespan"]["seconds"])

    claims = (
        Claim("| nodes added (removed) | 30 (30) | 4 (4) |\n| node-hours | 31.5 | 25 |\n"
              "| idle node-hours | 6.5 | 0 |\n| cost | $1,034 | $821 |\n| makespan | 6h 5m 45s | 6h 5m 45s |",
              lambda r: (scaler(r, "pod"), scaler(r, "gang")),
              ((30, 30, 31.5, 6.5, money("$1,034"), hms("6h 5m 45s")),
               (4, 4, 25.0, 0, money("$821"), hms("6h 5m 45s")))),
    ) if page == "docs/autoscaling.md" else (
        Claim("Two gangs on an autoscaled pool, per-pod against gang-aware\n  scale-up",
              lambda r: scaler(r, "gang")[0] < scaler(r, "pod")[0], True),
    )
    return Row(page, "phalanx compare examples/gang-pool --profiles gang --scale-up pod,gang",
               (("compare", "examples/gang-pool", "--profiles", "gang", "--scale-up", "pod,gang", "-o", "json"),),
               claims)


def _mixed_gang(page: str) -> Row:
    words = ("v1.37's cycle places them one at a time and fails,\n  the `phalanx` profile's exact placement seats "
             "them at once") if page == "README.md" else "`phalanx compare` shows the\ncounts as one row"
    return Row(page, "phalanx compare examples/mixed-gang --profiles gang,phalanx --until 3h",
               (("compare", "examples/mixed-gang", "--profiles", "gang,phalanx", "--until", "3h"),), (
                   Claim(words, lambda r: (cell(r, "pod groups scheduled", "gang"),
                                           cell(r, "pod groups scheduled", "phalanx"),
                                           cell(r, "exact placement: placed / infeasible / undecided", "phalanx")),
                         ("0/1", "1/1", "1 / 0 / 0")),
               ), needs="ortools")


def _topology() -> Row:
    def nodes(r: Runs, profile: str, prefix: str) -> set[str | None]:
        return {p["node"] for p in report(r, profile)["pods"] if p["name"].startswith(prefix)}

    return Row("docs/topology.md",
               "phalanx compare tests/scenarios/gang-in-one-rack --profiles gang,gang-topology.yaml --until 30m",
               (("compare", "{root}/tests/scenarios/gang-in-one-rack", "--profiles", "gang,{gang-topology.yaml}",
                 "--until", "30m", "-o", "json"),), (
                   Claim("under `gang` both gangs\nspread over the racks and the unlabelled node",
                         lambda r: all("node-x" in nodes(r, "gang", g) and len(nodes(r, "gang", g)) > 2
                                       for g in ("ml/eval", "ml/train")), True),
                   Claim("with the gate on, `eval` (12 cpu) lands inside rack-a, and\n`train` (16 cpu, more than any "
                         "rack has free) waits",
                         lambda r: (nodes(r, "gang-topology", "ml/eval"), nodes(r, "gang-topology", "ml/train")),
                         ({"node-a1", "node-a2"}, {None})),
               ), files={"gang-topology.yaml": "yaml"})


FITTED = ("pod group is unschedulable, minCount (N) cannot be satisfied: S scheduled, R remaining, pod group "
          "preemption: <the preemption's verdict>")
UNTRIED = "minCount (N) cannot be satisfied: S scheduled, R remaining"


def _as_pattern(template: str) -> re.Pattern[str]:
    """The pages' message template as a pattern: N, S and R counts, <…> any text."""
    parts = re.split(r"(\b[NSR]\b|<[^>]*>)", template)
    return re.compile("".join(r"\d+" if part in ("N", "S", "R") else ".+" if part.startswith("<")
                              else re.escape(part) for part in parts))


def _gang_messages(page: str, says: str) -> Row:
    """The words the pages give the members of a gang whose cycle failed, on the README's example (a 4-pod gang
    of which 2 fit before the third does not): those that fitted, the one that did not (its own fit error), the
    one never tried; and the PodGroup's condition, the group's message."""
    def kinds(r: Runs) -> tuple[int, int, int, bool]:
        gang = report(r, "gang")
        [group] = gang["podGroups"]
        pending = [p["message"] for p in gang["pods"] if p["podGroup"] and p["phase"] == "Pending"]
        fitted = sum(bool(_as_pattern(FITTED).fullmatch(m)) for m in pending)
        untried = sum(bool(_as_pattern(UNTRIED).fullmatch(m)) for m in pending)
        own = sum(m.startswith("0/4 nodes are available: ") for m in pending)
        condition = group["conditions"][0]["message"]
        return fitted, own, untried, f"pod group is unschedulable, {condition}" in pending

    return Row(page, says, (("compare", "examples/bare-metal", "--profiles", "default,gang", "--until",
                                        "8h", "-o", "json"),), (
        Claim(f"`{FITTED}`", kinds, (2, 1, 1, True)),
        Claim(f"`{UNTRIED}`", kinds, (2, 1, 1, True)),
    ), shown=False)


SWEEP_ERRORS = (  # docs/sweeps.md, "Errors": the argv that makes each line
    (("--manifests", "{root}/examples/training-mix", "--seeds", "5-1"),
     "phalanx: error: --seeds: invalid seed list '5-1': want e.g. 42-51 or 1,2,3"),
    (("--manifests", "{root}/examples/training-mix", "--what-if", "nodes*x"),
     "phalanx: error: --what-if: invalid edit 'nodes*x': want base, nodes=N, nodes*F or arrivals*F (combined with +)"),
    (("--manifests", "{root}/examples/training-mix", "--what-if", "arrivals*1e9"),
     "phalanx: error: --what-if: invalid edit 'arrivals*1e9': want base, nodes=N, nodes*F or arrivals*F "
     "(combined with +)"),
    (("--manifests", "{root}/examples/training-mix", "--what-if", "arrivals*5000"),
     "phalanx: error: --what-if: invalid edit 'arrivals*5000': arrivals*F takes a factor from 0 to 1000"),
    (("--manifests", ","), "phalanx: error: --manifests: names no file or directory: ','"),
    (("--manifests", "{root}/examples/training-mix", "--report", "{sweep.json}"),
     "phalanx: error: sweep.json: --report: exists and is not a directory"),
    (("--trace", "openb", "--nodes", "{root}/README.md", "--pods", "missing.csv"),
     "phalanx: error: --pods: missing.csv: no such file"),
)


def _stderr_of(i: int) -> Callable[[Runs], object]:
    return lambda r: (r[i].status, r[i].err.splitlines())


def _sweep_errors() -> Row:
    return Row("docs/sweeps.md", "Bad input is one line and exit status 2",
               tuple(("sweep", *argv) for argv, _ in SWEEP_ERRORS),
               tuple(Claim(line, _stderr_of(i), (2, [line])) for i, (_, line) in enumerate(SWEEP_ERRORS)),
               files={"sweep.json": ""})


PAGES: list[Row] = [
    _bare_metal(), _bare_metal_report(), *_web_vs_batch_rows(), _gpu_fleet_readme(), _gpu_fleet(),
    _chart_load(), _peers(), _autoscaling(), _gang_pool("README.md"), _gang_pool("docs/autoscaling.md"),
    _mixed_gang("README.md"), _mixed_gang("docs/profiles.md"), _topology(), _sweep_errors(),
    _gang_messages("docs/live.md", "get kube-scheduler's words too"),
    _gang_messages("docs/simulation.md", "as its group cycle writes them"),
]


# --- running ---

def flat(text: str) -> str:
    return " ".join(text.split())


def fenced_block(page: str, first_line: str) -> str:
    """The page's fenced block whose first line is `# <first_line>`."""
    for block in re.findall(r"```\w*\n(.*?)```", page, re.S):
        if block.startswith(f"# {first_line}\n"):
            return str(block)
    raise AssertionError(f"no fenced block starting with '# {first_line}'")


_RUNS: dict[tuple[str, ...], Run] = {}


def run(capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]) -> Run:
    if argv not in _RUNS:
        capsys.readouterr()
        status = main(list(argv))
        out, err = capsys.readouterr()
        _RUNS[argv] = Run(status, out, err)
    return _RUNS[argv]


@pytest.mark.parametrize("row", PAGES, ids=[f"{row.page}: {row.written}" for row in PAGES])
def test_the_page_states_what_the_command_prints(row: Row, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if row.needs:
        pytest.importorskip(row.needs)
    page = (ROOT / row.page).read_text()
    assert flat(row.written) in flat(page), f"{row.page} no longer {'shows' if row.shown else 'says'} " \
                                            f"`{row.written}`"
    monkeypatch.chdir(tmp_path if row.files else ROOT)
    names = {"{root}": str(ROOT)}
    for name, kind in row.files.items():
        (tmp_path / name).write_text(fenced_block(page, name) if kind else "")
        names["{" + name + "}"] = name
    runs = []
    for argv in row.commands:
        for placeholder, value in names.items():
            argv = tuple(a.replace(placeholder, value) for a in argv)
        result = _fresh(capsys, argv) if row.files else run(capsys, argv)
        assert row.page == "docs/sweeps.md" or result.status == 0, (argv, result.err)
        runs.append(result)
    wrong = []
    for claim in row.claims:
        assert flat(claim.words) in flat(page), f"{row.page} no longer says {claim.words!r}"
        actual = claim.actual(runs)
        if actual != claim.expected:
            wrong.append(f"{claim.words!r}: the page says {claim.expected!r}, the command gives {actual!r}")
    assert not wrong, f"{row.page}, `{row.written}`:\n" + "\n".join(wrong)


def _fresh(capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]) -> Run:
    """A run in this test's own folder (with files written there), never shared."""
    capsys.readouterr()
    status = main(list(argv))
    out, err = capsys.readouterr()
    return Run(status, out, err)
