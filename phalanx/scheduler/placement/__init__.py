"""Placement decisions for whole pod groups, above the per-pod algorithm: topology-aware placements
(KEP-5732, `topology.py`), exact gang placement where the greedy group cycle cannot seat a gang (`exact.py`),
and CompositePodGroup trees (KEP-6012: the forest of groups in `forest.py`, their cycle in `composite.py`)."""
