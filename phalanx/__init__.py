"""Phalanx: a workload-aware gang scheduler for Kubernetes, with a what-if simulator on the same engine.

The public API is small: load manifests, pick a profile, run a simulation, build its report.
"""

from phalanx.errors import InputError, PhalanxError
from phalanx.inputs.load import Inputs, load_paths
from phalanx.scheduler.decisions import Bind, GroupCondition, Unschedulable
from phalanx.scheduler.profiles import Profile, builtin, load_profile
from phalanx.scheduler.scheduler import Scheduler
from phalanx.sim.report import build_report
from phalanx.sim.run import Run, simulate
from phalanx.sim.scenario import Scenario
from phalanx.sim.simulation import Simulation

__version__ = "0.1.0"
__all__ = [
    "Bind", "GroupCondition", "InputError", "Inputs", "PhalanxError", "Profile", "Run", "Scenario", "Scheduler",
    "Simulation", "Unschedulable", "__version__", "build_report", "builtin", "load_paths", "load_profile",
    "simulate",
]
