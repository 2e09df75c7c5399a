"""Volcano's own scheduler unit tests (volcano-sh/volcano), restated as Phalanx tests: see restated.py."""
