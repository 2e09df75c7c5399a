"""Cluster state as arrays over nodes: allocatable, requested, labels, taints."""
