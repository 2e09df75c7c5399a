"""Queueing in front of the scheduler queue: Kueue-style and Volcano-style admission (DESIGN: wave 2)."""
