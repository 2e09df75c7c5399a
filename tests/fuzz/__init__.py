"""The fuzz suite: one module per input surface (`surface_*.py`, each defining `SURFACE`), a runner that tries
seeds in worker processes with a timeout and a memory bound (`tests/fuzz/runner.py`), the CI test over every
surface (`tests/fuzz/test_surfaces.py`) and the benchmark command (`python -m benchmarks.fuzz`)."""
