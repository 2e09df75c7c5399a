"""The run API: one sequence, each caller's needs as parameters."""

from collections.abc import Callable
from pathlib import Path

from phalanx import builtin, load_paths
from phalanx.sim.run import one_horizon, simulate
from phalanx.sim.scenario import Scenario, scenario_for
from phalanx.sim.simulation import Simulation

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bare-metal"


def test_setup_runs_on_the_built_simulation_and_around_wraps_the_run_alone() -> None:
    seen: list[str] = []

    def setup(sim: Simulation) -> None:
        seen.append(f"setup at {sim.now}, {sim.binds} binds")

    def around(run: Callable[[], Simulation]) -> None:
        seen.append("before")
        run()
        seen.append("after")

    run = simulate(load_paths([str(EXAMPLE)]), builtin("gang"), until=3600.0, setup=[setup], around=around,
                   recreate_bare_members=False)
    assert seen == ["setup at 0.0, 0 binds", "before", "after"]
    assert run.sim.end_time == 3600.0 and run.sim.binds > 0
    assert not run.sim.recreate_bare_members
    assert "series" not in run.report()


def test_series_and_observers_watch_every_batch() -> None:
    batches: list[float] = []
    run = simulate(load_paths([str(EXAMPLE)]), builtin("default"), series=True, sample=600.0,
                   observers=[lambda sim: batches.append(sim.now)])
    report = run.report()
    assert batches and report["series"]["sampleInterval"] == 600.0
    assert report["series"]["podsRunning"][-1] == report["summary"]["pods"]["running"]


def test_one_horizon_carries_the_shorter_runs_on_to_the_longest() -> None:
    inputs = load_paths([str(EXAMPLE)])
    runs = [simulate(inputs, builtin("default"), until=600.0), simulate(inputs, builtin("gang"), until=7200.0)]
    one_horizon(runs)
    assert [run.report()["endTime"] for run in runs] == [7200.0, 7200.0]


def test_the_scenario_not_the_profile_puts_admission_in_front_of_the_scheduler() -> None:
    inputs = load_paths(["examples/peers"])
    assert (scenario_for("kueue"), scenario_for("gang", scale_up="gang")) == (Scenario("kueue"), Scenario(None, "gang"))
    queued = simulate(inputs, builtin("kueue"), scenario=scenario_for("kueue")).report()
    plain = simulate(inputs, builtin("kueue")).report()
    assert queued["admission"]["policy"] == "kueue" and queued["admission"]["admitted"] > 0
    assert "admission" not in plain
