"""Topology-aware workload scheduling (KEP-5732) as a plugin of the PodGroup cycle: TopologyPlacement's
PlacementGenerate (`placements.py`), the placement scorers (`placement_scores.py`), the search that runs the group
algorithm in each placement and keeps the best (`topology_placement.py`), and its lines in the report
(`report.py`)."""
