"""Exact gang placement (`exact.py`, the `phalanx` profile): the CP-SAT model the group algorithm (gang.py) falls
back to where the greedy group cycle cannot seat a gang. It is a step inside the group algorithm, not a plugin at
an extension point, so it stays beside the engine; topology placements and CompositePodGroup trees are plugins
(`plugins/topology/`, `plugins/composite/`) that run the group algorithm, and with it this step."""
