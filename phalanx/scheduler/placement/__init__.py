"""Placement decisions for whole pod groups, above the per-pod algorithm: topology-aware placements
(KEP-5732, `topology.py`), and exact gang placement where the greedy group cycle cannot seat a gang."""
