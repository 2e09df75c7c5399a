"""A simulation's inputs: manifests read into API objects, with other schedulers' gang objects migrated and
cluster-autoscaler node groups picked out (over api, migrate and autoscale)."""
