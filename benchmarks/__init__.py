"""Phalanx benchmarks: engine throughput, YAML loading and memory, in the shapes of kube-scheduler's
scheduler_perf (5,000 nodes; 10,000 pods one at a time, in gangs of 3, in gangs of 500).

Run them all with one command from the repository root (results and the reference floors are in
docs/benchmarks.md):

    pytest benchmarks/ --benchmark-only

They never run with the test suite (`pytest` alone reads only `tests/`). `python -m benchmarks.profile`
prints where the time goes (cProfile).
"""
