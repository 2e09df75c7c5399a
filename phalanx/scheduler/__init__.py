"""The scheduling engine: queue, framework and plugins, pod and PodGroup cycles. Driver-agnostic."""
