"""CompositePodGroup trees (KEP-6012) as a plugin of the PodGroup cycle: the forest of groups (`forest.py`), the
tree's PreEnqueue and root cycle (`tree_cycles.py`), the tree's placement, walked top-down (`tree_placement.py`),
and its lines in the report (`report.py`). A tree's groups are placed with the topology plugin's search."""
