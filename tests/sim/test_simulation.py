"""The simulator driver's replayed ends (`Simulation.replay_ends`, verify's other interleavings): pods end when a
replay ended them, not a run time after this run bound them."""

from phalanx.scheduler.profiles import builtin
from phalanx.sim.simulation import Simulation
from tests.builders import MakeNode, MakePod, inputs_of


def _sim() -> Simulation:
    return Simulation(inputs_of(MakeNode("n1").alloc(cpu="4", memory="8Gi"),
                                MakePod("runs", "ml").req(cpu="4").duration(100),
                                MakePod("timed", "ml").req(cpu="1").duration(30).arrival(200),
                                MakePod("waits", "ml").req(cpu="4").duration(10).arrival(10),
                                MakePod("never-ends", "ml").req(cpu="1").duration(5).arrival(300)),
                      builtin("default"), until=1000)


def test_a_pod_ends_when_the_replay_ended_it_and_one_without_an_end_runs_on() -> None:
    sim = _sim()
    sim.replay_ends({"ml/runs": 50.0, "ml/waits": 120.0}, timed=["ml/timed"])
    sim.run()
    runs, waits, timed, never = (sim.pods[k] for k in ("ml/runs", "ml/waits", "ml/timed", "ml/never-ends"))
    assert (runs.phase, runs.finished_at) == ("Succeeded", 50.0)  # not at 100 s, its run time
    assert (waits.bound_at, waits.phase, waits.finished_at) == (50.0, "Succeeded", 120.0)
    assert (timed.bound_at, timed.finished_at) == (200.0, 230.0)  # its own run time
    assert never.phase == "Running"  # the replay never ended it


def test_a_replayed_end_leaves_a_pod_that_is_not_running_alone() -> None:
    """The replay ended `waits` at 20 s, before this run bound it: it runs once `runs` is gone, and never ends."""
    sim = _sim()
    sim.replay_ends({"ml/waits": 20.0, "ml/runs": 60.0}, timed=())
    sim.run()
    waits = sim.pods["ml/waits"]
    assert (waits.bound_at, waits.phase) == (60.0, "Running")


def test_without_replayed_ends_pods_end_after_their_run_time() -> None:
    sim = _sim().run()
    assert sim.pods["ml/runs"].finished_at == 100.0
    assert sim.pods["ml/waits"].finished_at == 110.0
