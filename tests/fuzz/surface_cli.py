"""Random command lines for simulate, compare, validate, sweep and generate with hostile option values, run
in-process by `phalanx.cli.main` on the small bundled example (examples/bare-metal) with tiny `--until`s.

The contract: exit 0 or 1 is "ok"; exit 2 must come with exactly one stderr line `phalanx: error: ...` and no
traceback ("input-error"); anything else (another status, more lines, an exception out of main, SystemExit)
is a finding. stdout is UTF-8 with strict errors, as a terminal's is, so output that cannot be written is
found too.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import shutil
from pathlib import Path
from typing import Any

from tests.fuzz.surface import INPUT_ERROR, OK, Surface

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bare-metal"
Case = dict[str, Any]

HOSTILE = ["-1", "0", "1", "2147483648", str(2**63), str(2**64), "1e308", "inf", "-inf", "nan", "9" * 5000,
           "9" * 400, "٣", "０", "0.0000001", "", " ", "-", "--", "a\nb", "x\udcff", "1_000", "+5", "0x10", "1e-9",
           "٣-٩٩٩٩٩٩٩٩٩٩٩٩", "0-99999999999", "5-1", ",", ",,", "1,", "-0"]
DURATIONS = ["1m", "10m", "30s", "0", "0s", "1.5h", "-5s", "292y", "2562047h", "106751d", "1h1h", "1e308",
             "nan", "9" * 400, "10", "0.000001", "1ms", "1ns"]
EDITS = ["base", "nodes*2", "nodes=1", "nodes*0.5", "arrivals*0.5", "arrivals*0", "nodes*2+arrivals*0.5",
         "arrivals*" + "9" * 400, "nodes*" + "9" * 400, "nodes=" + "9" * 30, "nodes=0", "nodes*1e3", "nodes=٣",
         "arrivals=3", "nodes*-1", "base+", "+", "nodes*1000", "arrivals*1000", "base,nodes*2"]
PROFILES = ["default", "gang", "kueue", "volcano", "nosuch", "", ",", "default,gang", "/dev/null", "x\udcff"]
GATES = ["", "GenericWorkload=true", "GenericWorkload=false", "NoSuchGate=true", "GenericWorkload=maybe", "=", ","]
WORKLOADS = [
    "workloadTemplate:\n- {opcode: createNodes, count: COUNT}\n- {opcode: createPods, count: 2, interval: DURATION}\n",
    "params: {n: COUNT}\nworkloadTemplate:\n- {opcode: createNodes, countParam: $n}\n",
    "workloadTemplate:\n- {opcode: createPodGroups, count: 2, minCount: COUNT}\n",
    "workloadTemplate:\n- {opcode: sleep, duration: DURATION}\n- {opcode: createPods, count: 1}\n",
    "workloadTemplate: COUNT\n",
]


def _pick(rng: random.Random, valid: list[str], hostile: list[str] = HOSTILE) -> str:
    return rng.choice(valid) if rng.random() < 0.6 else rng.choice(hostile)


def _inputs(rng: random.Random) -> list[str]:
    files = sorted(os.listdir(EXAMPLE))
    roll = rng.random()
    if roll < 0.5:
        return [str(EXAMPLE)]
    if roll < 0.8:
        return [str(EXAMPLE / name) for name in rng.sample(files, rng.randint(1, len(files)))]
    return [rng.choice(["", "/nonexistent", "/dev/null", str(EXAMPLE / "nope.yaml"), "-", "x\udcff"])]


def _simulate(rng: random.Random) -> list[str]:
    argv = ["simulate", *_inputs(rng), "--until", _pick(rng, ["1m", "10m", "30s"], DURATIONS)]
    if rng.random() < 0.3:
        argv += ["--seed", _pick(rng, ["0", "7", str(2**64 - 1)])]
    if rng.random() < 0.3:
        argv += ["--profile", _pick(rng, PROFILES[:4], PROFILES)]
    elif rng.random() < 0.3:
        argv += ["--feature-gates", rng.choice(GATES)]
    if rng.random() < 0.2:
        argv += ["--scale-up", _pick(rng, ["pod", "gang"], ["pod,gang", "", "node", ","])]
    if rng.random() < 0.15:
        argv += ["--sample=" + _pick(rng, DURATIONS[:3], DURATIONS)]  # without --report: a no-op or an error
    argv += ["-o", _pick(rng, ["table", "wide", "json", "yaml"], ["html", "", "TABLE"])]
    return argv


def _compare(rng: random.Random) -> list[str]:
    if rng.random() < 0.3:  # trace mode: the CSVs do not exist, so only the arguments are checked
        return ["compare", "--trace", "openb", "--nodes", "/nonexistent/n.csv", "--pods", "/nonexistent/p.csv",
                "--load", _pick(rng, ["1.3", "0.5", "10"]), "--seeds", _pick(rng, ["42", "1-3"])]
    return ["compare", *_inputs(rng), "--until", _pick(rng, ["1m", "10m"], DURATIONS),
            "--profiles", _pick(rng, ["default,gang", "default", "gang"], PROFILES),
            "-o", _pick(rng, ["table", "json", "yaml"], ["wide", "x"])]


def _validate(rng: random.Random) -> list[str]:
    argv = ["validate", *_inputs(rng)]
    if rng.random() < 0.2:
        argv += ["--trace-file", rng.choice(["/nonexistent", "/dev/null", str(EXAMPLE / "01-nodes.yaml")])]
    return argv


def _sweep(rng: random.Random) -> list[str]:
    pair = f"{EXAMPLE}/01-nodes.yaml,{EXAMPLE}/03-training-gang.yaml"
    argv = ["sweep", "--manifests", _pick(rng, [str(EXAMPLE), pair], [",", " , ", "", "/nonexistent", ",/nonexistent"]),
            "--until", _pick(rng, ["1m", "10m"], DURATIONS), "--profiles", _pick(rng, ["default", "gang"], PROFILES)]
    # One seed and one edit keep a valid grid to one cell, which runs in this process whatever --workers says.
    argv += ["--seeds", _pick(rng, ["0", "3"])]
    argv += ["--what-if", rng.choice(EDITS) if rng.random() < 0.7 else rng.choice(HOSTILE)]
    argv += ["--workers", _pick(rng, ["1"])]
    if rng.random() < 0.1:
        argv += ["--load", rng.choice(HOSTILE)]
    argv += ["-o", rng.choice(["table", "wide", "json", "yaml"])]
    return argv


def _generate(rng: random.Random) -> Case:
    text = rng.choice(WORKLOADS).replace("COUNT", _pick(rng, ["0", "1", "3"], [*HOSTILE, "2147483648", "1.5",
                                                                                 "'3'", "true", "[1]", "{a: 1}"]))
    text = text.replace("DURATION", _pick(rng, ["1s", "1m"], DURATIONS))
    return {"argv": ["generate", "WORKLOAD", "-o", rng.choice(["yaml", "json", "x"])], "workload": text}


def _generate_case(rng: random.Random) -> Case:
    command = rng.choice(["simulate", "simulate", "compare", "validate", "sweep", "sweep", "generate", "odd"])
    if command == "generate":
        return _generate(rng)
    if command == "odd":  # anything at all after a command name
        argv = [rng.choice(["simulate", "compare", "validate", "sweep", "generate", "", "--help", "x"])]
        argv += [rng.choice([*HOSTILE, "--until", "--seed", "-o", "--what-if", "--version", "--help", "-h"])
                 for _ in range(rng.randint(0, 4))]
        return {"argv": argv}
    return {"argv": {"simulate": _simulate, "compare": _compare, "validate": _validate, "sweep": _sweep}[command](rng)}


class _StrictStdout(io.TextIOWrapper):
    def __init__(self) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8", errors="strict")


def _run(case: Case, directory: str) -> str:
    from phalanx.cli import main

    scratch = os.path.join(directory, "cli")
    os.makedirs(scratch, exist_ok=True)
    try:
        argv = list(case["argv"])
        if "workload" in case:
            path = os.path.join(scratch, "workload.yaml")
            with open(path, "w", encoding="utf-8", errors="surrogatepass") as handle:
                handle.write(case["workload"])
            argv = [path if arg == "WORKLOAD" else arg for arg in argv]
        stderr = io.StringIO()
        with contextlib.redirect_stdout(_StrictStdout()), contextlib.redirect_stderr(stderr):
            status = main(argv)
        return _verdict(status, stderr.getvalue())
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _verdict(status: int, err: str) -> str:
    if status in (0, 1):
        return OK
    lines = err.splitlines()
    if status == 2 and len(lines) == 1 and lines[0].startswith("phalanx: error: ") and "Traceback" not in err:
        return INPUT_ERROR
    raise AssertionError(f"exit {status} with stderr {err[:600]!r}")


def _show(case: Case) -> str:
    shown = " ".join(repr(arg) if not arg or any(c.isspace() for c in arg) else arg[:80] for arg in case["argv"])
    return f"phalanx {shown}" + (f"\nworkload.yaml:\n{case['workload']}" if "workload" in case else "")


SURFACE = Surface("cli", _generate_case, _run, _show,
                  "command lines for simulate, compare, validate, sweep and generate with hostile option values")
