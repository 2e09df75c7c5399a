"""A zero-time loop found on the differential generator's seed 277: a bare PodGroup member recreated at the
instant it was preempted bound the preemptor's nominated node again before the preemptor's retry, for ever,
because the Filter counted the nominated preemptor's room but not its anti-affinity. kube-scheduler adds the
nominated pods to the node for every Filter plugin (RunFilterPluginsWithNominatedPods); so does Phalanx now,
and the run ends. (`phalanx verify` on the case agrees with the real kube-scheduler in every category.)"""

from __future__ import annotations

from pathlib import Path

import yaml

from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.run import simulate
from phalanx.sim.scenario import scenario_for
from phalanx.verify.generator import generate_case
from tests.sim.rounds import RoundLimit


def test_a_preempted_bare_member_recreated_at_once_does_not_loop(tmp_path: Path) -> None:
    case = generate_case(277)
    path = tmp_path / "case.yaml"
    path.write_text(yaml.safe_dump_all(case.manifests, sort_keys=False))
    simulate(load_paths([str(path)]), builtin(case.profile), scenario=scenario_for(case.profile), until=3600,
             observers=[RoundLimit(500)])
