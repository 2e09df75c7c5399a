"""Autoscaling: the HorizontalPodAutoscaler and the cluster-autoscaler model."""
