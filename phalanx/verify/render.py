"""`phalanx verify` as a table: agreement per category, then each difference."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from phalanx.verify.compare import CATEGORIES, Verdict

_WHAT = {
    "outcome": "bound or pending, per pod",
    "node": "node chosen (ties among equally best nodes agree)",
    "boundAt": "simulated time of binding",
    "victims": "pods preempted",
    "podGroups": "PodGroupInitiallyScheduled",
    "admission": "Kueue: admitted or held, when first admitted, evictions, per Job",
    "messages": "FailedScheduling message (without the preemption tail)",
}


def render_verdict(verdict: Verdict, console: Console) -> None:
    table = Table(title=f"phalanx verify: profile {verdict.profile} against the real "
                        f"{' and '.join(verdict.oracles)}")
    for column in ("category", "agree", "total", "what is compared"):
        table.add_column(column, justify="right" if column in ("agree", "total") else "left")
    for category in CATEGORIES:
        agree, total = verdict.agree[category], verdict.total[category]
        style = "" if agree == total else "bold red"
        table.add_row(category, str(agree), str(total), _WHAT[category], style=style)
    console.print(table)
    if verdict.ties:
        console.print(f"{verdict.ties} node choice(s) differ only among equally best nodes (random in both).")
    if verdict.differences:
        diff = Table(title="differences")
        for column in ("category", "object", "Phalanx", "kube-scheduler"):
            diff.add_column(column, overflow="fold")
        for d in verdict.differences:
            diff.add_row(d.category, d.name, str(d.phalanx), str(d.real))
        console.print(diff)
    if verdict.timing is not None:
        timing = Table(title="where they differ: Phalanx under the other orders of events (docs/simulation.md)")
        for column in ("workload", "kube-scheduler's outcome is Phalanx's under"):
            timing.add_column(column, overflow="fold")
        for row in verdict.timing["workloads"]:
            timing.add_row(row["workload"], ", ".join(row["kubeSchedulerAs"]) or "no interleaving")
        console.print(timing)
    for note in verdict.notes:
        console.print(f"note: {note}")
    console.print("agree" if verdict.agrees else "differ, within what timing decides" if verdict.within_timing
                  else "differ")
