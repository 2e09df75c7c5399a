"""Kubernetes objects as Phalanx reads them: load, validate, default."""
