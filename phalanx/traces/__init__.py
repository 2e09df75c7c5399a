"""Public trace replays: the Alibaba GPU cluster trace (openb, cluster-trace-gpu-v2023) loaded as nodes
and pods, replayed through the same scheduling engine under the FGD paper's fragmentation protocol or on
the trace's own clock."""

from phalanx.traces.compare import compare_trace
from phalanx.traces.fragmentation import ReplayResult, replay_fragmentation
from phalanx.traces.openb import OpenbTrace, load_nodes, load_pods

__all__ = ["OpenbTrace", "ReplayResult", "compare_trace", "load_nodes", "load_pods", "replay_fragmentation"]
