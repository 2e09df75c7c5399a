"""Kubernetes objects as Phalanx reads them: read, parse, validate, default. The ground floor: it imports
nothing above it (phalanx.inputs composes it with migrate and autoscale into load_paths)."""
