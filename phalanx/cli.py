"""The `phalanx` command: simulate, compare, validate."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

import yaml
from rich.console import Console

from phalanx import __version__
from phalanx.api.load import Inputs, load_paths
from phalanx.api.quantity import parse_duration
from phalanx.errors import InputError, PhalanxError
from phalanx.scheduler.profiles import DEFAULT_GATES, Profile, builtin, load_profile, parse_feature_gates
from phalanx.sim.report import SCHEMA_VERSION, build_report
from phalanx.sim.simulation import Simulation
from phalanx.sim.tables import render_compare, render_simulation


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="phalanx",
        description="Workload-aware gang scheduling for Kubernetes, and a what-if simulator on the same engine.",
    )
    parser.add_argument("--version", action="version", version=f"phalanx {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def inputs(p: argparse.ArgumentParser) -> None:
        p.add_argument("paths", nargs="+", metavar="FILE_OR_DIR",
                       help="Kubernetes manifests: YAML files (multi-document or kind: List) or directories")
        p.add_argument("--until", metavar="DURATION",
                       help="stop the simulated clock at this time (e.g. 2h, 90m, 3600); default: when nothing "
                            "more can change")
        p.add_argument("--seed", type=int, default=0, help="seed for tie-breaking among equal-score nodes")

    sim = sub.add_parser("simulate", help="run the simulation under one profile and print the outcome")
    inputs(sim)
    sim.add_argument("--profile", help="default | gang | a profile file; without it, --feature-gates decide")
    sim.add_argument("--config", metavar="FILE", help="a KubeSchedulerConfiguration-like profile file")
    sim.add_argument("--feature-gates", default="", metavar="GATES",
                     help="e.g. GenericWorkload=true (the v1.37 default is off: pod-at-a-time scheduling)")
    sim.add_argument("-o", "--output", choices=("table", "wide", "json", "yaml"), default="table")

    cmp = sub.add_parser("compare", help="run the same input under several profiles, side by side")
    inputs(cmp)
    cmp.add_argument("--profiles", default="default,gang",
                     help="comma-separated built-in profile names or profile files (default: default,gang)")
    cmp.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")

    val = sub.add_parser("validate", help="load and validate manifests only")
    val.add_argument("paths", nargs="+", metavar="FILE_OR_DIR")
    return parser


def _load(paths: Sequence[str]) -> Inputs:
    inputs = load_paths(paths)
    if inputs.skipped:
        kinds = ", ".join(f"{kind}: {count}" for kind, count in sorted(inputs.skipped.items()))
        total = sum(inputs.skipped.values())
        print(f"phalanx: skipped {total} object(s) of kinds that do not affect scheduling ({kinds})",
              file=sys.stderr)
    return inputs


def _simulate_profile(args: argparse.Namespace) -> Profile:
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
    return profile


def _until(args: argparse.Namespace) -> float | None:
    if args.until is None:
        return None
    try:
        return parse_duration(args.until)
    except ValueError as exc:
        raise InputError(str(exc), field="--until") from None


def _emit(document: Any, output: str) -> None:
    if output == "json":
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        sys.stdout.write(yaml.safe_dump(document, sort_keys=False))


def _run(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    # Piped output has no terminal width to go by: give tables room rather than folding them at 80.
    console = Console() if sys.stdout.isatty() else Console(width=140)
    if args.command == "validate":
        inputs = _load(args.paths)
        print(f"valid: {len(inputs.nodes)} node(s), {len(inputs.pods)} pod(s), {len(inputs.pod_groups)} "
              f"pod group(s), {len(inputs.workloads)} workload(s), {len(inputs.jobs)} job(s), "
              f"{len(inputs.priority_classes)} priority class(es)")
        return 0
    if args.command == "simulate":
        profile = _simulate_profile(args)
        until = _until(args)
        inputs = _load(args.paths)
        report = build_report(Simulation(inputs, profile, seed=args.seed, until=until).run())
        if args.output in ("json", "yaml"):
            _emit(report, args.output)
        else:
            render_simulation(report, console, wide=args.output == "wide")
        return 0
    profiles = [load_profile(spec.strip()) for spec in args.profiles.split(",") if spec.strip()]
    if not profiles:
        raise InputError("name at least one profile", field="--profiles")
    until = _until(args)
    inputs = _load(args.paths)
    reports = []
    for profile in profiles:
        # Simulations never change the loaded objects, so every profile replays the same ones.
        reports.append(build_report(Simulation(inputs, profile, seed=args.seed, until=until).run()))
    if args.output in ("json", "yaml"):
        _emit({"schemaVersion": SCHEMA_VERSION, "results": reports}, args.output)
    else:
        render_compare(reports, console)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _run(argv)
    except PhalanxError as exc:
        print(f"phalanx: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 1


if __name__ == "__main__":
    sys.exit(main())
