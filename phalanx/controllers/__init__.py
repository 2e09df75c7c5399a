"""The simulator's stand-ins for the workload controllers (live, the real ones run)."""
