"""Manifests rewritten for v1.37 native gang scheduling: other schedulers' gang objects and the alpha
Workload shapes of v1.35/v1.36 become v1beta1 Workloads and PodGroups (`phalanx migrate`, and the loader)."""
