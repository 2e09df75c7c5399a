"""Hostile `--metrics` files: read through MetricsSeries.load (what the CLI calls), then, when they load, one
HPA on an External and a Pods metric of the file's names simulated briefly (and now and then without --until,
so the run goes to 10 minutes after the file's last row, however far that is). Far times (106,751 days, Go's
longest duration), NaN and infinities, 5,000-digit numbers, unicode digits, missing or repeated columns, BOMs,
CRLF, quotes, duplicate rows, bad selectors, invalid UTF-8, and files of tens of thousands of rows."""

from __future__ import annotations

import os
import random
from typing import Any

import yaml

from phalanx.autoscale.metrics import MetricsSeries
from phalanx.errors import InputError
from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.hpa import Autoscalers
from phalanx.sim.jsonsafe import dumps
from phalanx.sim.report import build_report
from phalanx.sim.scenario import Scenario
from phalanx.sim.simulation import Simulation
from tests.fuzz.surface import INPUT_ERROR, OK, Surface

NAMES = ["q", "rps", "cpu", "memory", "", " q ", "q,r", "\u00e9", "x" * 300]
TIMES = ["0", "15", "90s", "15m", "1h30m", "2.5", ".5", "1e3", "-5", "nan", "inf", "1_0", "\u0663", "9" * 5000,
         "9223372036", "106751d", "2562047h", "2562048h", "292y", "1.7976931348623157e308", "", "15 m", "0x10",
         "9223372036.854775807", "0.000000001", "1ns", "3us", "2\u00b5s"]
VALUES = ["0", "1", "30", "500m", "2k", "1.5", "16Gi", "8Ei", "9Ei", "1e18", "1e19", "-1", "nan", "NaN", "inf",
          "-inf", "1e400", "9" * 5000, "0." + "0" * 5000 + "1", "\u0663", "1_0", "", "0.0000001m", "1e-30",
          "9223372036854775807", "9223372036854775808", " 7 ", "+3", "1E3", "0x1"]
SELECTORS = ["", "service=llm", "a=1,b=2", "b=2,a=1", "deployment=web", "a=1,a=2", "=x", "a", "a=b=c", "a b=c",
             "x" * 70 + "=1", "a=" + "v" * 70, "\ud800=1"]
HEADERS = ["time,metric,value", "time,metric,value,selector", "value,selector,metric,time", "time,metric",
           "time,metric,value,value", "time,metric,value,extra", "", "\ufefftime,metric,value,selector",
           " time , metric , value , selector ", "TIME,METRIC,VALUE"]
_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def pick(rng: random.Random, common: list[str], hostile: list[str], odds: float) -> str:
    return rng.choice(hostile) if rng.random() < odds else rng.choice(common)


def rows(rng: random.Random, count: int, odds: float) -> list[list[str]]:
    """`count` rows (time, metric, value, selector) of a few series, mostly well formed."""
    out = []
    time = 0
    for _ in range(count):
        time += rng.choice([0, 7, 15, 60, 600, 3600])
        out.append([pick(rng, [str(time)], TIMES, odds), pick(rng, ["q", "rps", "cpu"], NAMES, odds),
                    pick(rng, ["0", "3", "12", "40", "150"], VALUES, odds),
                    pick(rng, ["", "service=llm", "deployment=web"], SELECTORS, odds)])
    return out


def csv_text(rng: random.Random, *, big: bool = False, hostile: float = 1.0) -> str:
    """A metrics file: a header and rows, cells joined and quoted in the ways CSV allows and some it does not
    (`hostile` scales how often)."""
    odds = rng.choice([0.0, 0.02, 0.1, 0.4]) * hostile
    header = "time,metric,value,selector" if rng.random() > 0.2 * hostile else rng.choice(HEADERS)
    count = rng.choice([0, 1, 3, 10, 40]) if not big else rng.choice([5_000, 20_000])
    body = rows(rng, count, odds if not big else min(odds, 0.001))
    if rng.random() < 0.1 * hostile and body:
        body += rng.sample(body, k=min(len(body), 3))  # duplicate rows: one series, one time, two values
    if rng.random() < 0.05:  # one row far away
        body.append([rng.choice(["106751d", "9223372036", "2562047h"]), "q", "5", "far=1"])
    width = len(header.split(","))
    lines = [header]
    for row in body:
        cells = row[:width] if rng.random() > 0.03 * hostile else row[:rng.randint(0, 4)]
        if rng.random() < 0.03 * hostile:
            cells = [f'"{c}"' for c in cells]
        lines.append(",".join(cells))
    end = "\r\n" if rng.random() < 0.1 else "\n"
    text = end.join(lines) + (end if rng.random() < 0.9 else "")
    if rng.random() < 0.03 * hostile:
        text = rng.choice(['"unclosed\n', "\n\n\n", "\x00", "time,metric,value\n" + "," * 300 + "\n",
                           "time,metric,value\n" + '"' + "x" * 200_000 + '"\n'])
    return text


def write(directory: str, name: str, text: str) -> str:
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8", errors="surrogatepass", newline="") as handle:
        handle.write(text)
    return path


def hpa_docs(metric: str) -> list[dict[str, Any]]:
    """A node, a Deployment `web` and an HPA scaling it on External `metric` and Pods `cpu`."""
    return [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0"},
         "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
         "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": {
             "metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "c", "resources": {
                 "requests": {"cpu": "100m"}}}]}}}},
        {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
         "metadata": {"name": "web", "namespace": "default"},
         "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                  "minReplicas": 0, "maxReplicas": 20, "metrics": [
                      {"type": "External", "external": {
                          "metric": {"name": metric, "selector": {"matchLabels": {"service": "llm"}}},
                          "target": {"type": "AverageValue", "averageValue": "10"}}},
                      {"type": "Pods", "pods": {"metric": {"name": "cpu"}, "target": {
                          "type": "AverageValue", "averageValue": "500m"}}}]}},
    ]


def simulate(directory: str, manifests: str, metrics_path: str | None, until: float | None,
             mode: str = "pod") -> str:
    """Load the manifests and the metrics file as `phalanx simulate` does, run, and build the report (as strict
    JSON): OK, or INPUT_ERROR for bad input. The HPAs are held to 200 replicas: a capped HPA's pods cost time,
    not findings."""
    cap = Autoscalers.replica_cap
    Autoscalers.replica_cap = 200
    try:
        inputs = load_paths([write(directory, "in.yaml", manifests)])
        if metrics_path is not None:
            inputs.metrics = MetricsSeries.load(metrics_path)
        sim = Simulation(inputs, builtin("gang"), scenario=Scenario(scale_up=mode), until=until)
        dumps(build_report(sim.run()))
    except InputError:
        return INPUT_ERROR
    finally:
        Autoscalers.replica_cap = cap
    return OK


def _generate(rng: random.Random) -> tuple[str, str, float | None]:
    text = csv_text(rng, big=rng.random() < 0.02)
    until = rng.choice([None, 60.0, 300.0, 1800.0])
    return text, rng.choice(["q", "rps"]), until


def _run(case: tuple[str, str, float | None], directory: str) -> str:
    text, metric, until = case
    path = write(directory, "metrics.csv", text)
    manifests = yaml.dump_all(hpa_docs(metric), Dumper=_DUMPER)
    return simulate(directory, manifests, path, until)


def _show(case: tuple[str, str, float | None]) -> str:
    text, metric, until = case
    return f"metric {metric}, until {until}, {len(text)} characters\n{text[:4000]!r}"


SURFACE = Surface("metrics_csv", _generate, _run, _show,
                  "--metrics files with far times, NaN, 5,000-digit numbers, missing columns, BOMs and duplicates, "
                  "read as the CLI reads them and simulated with an HPA")
