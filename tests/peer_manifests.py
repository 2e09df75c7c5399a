"""Manifests the migrate and verify tests share, written as a user writes them: two 4-cpu nodes, a one-task
Volcano Job (batch.volcano.sh/v1alpha1, minAvailable 3 of 4 workers in queue `research`), its PriorityClass, and
a stranger pod bound to node-a that takes 1 cpu (so the gang of four 2-cpu pods no longer fits whole)."""

NODES = """
apiVersion: v1
kind: Node
metadata: {name: node-a}
status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: node-b}
status: {allocatable: {cpu: "4", memory: 16Gi, pods: "110"}}
"""

ONE_TASK = """
---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: train, namespace: ml}
spec:
  minAvailable: 3
  schedulerName: volcano
  queue: research
  priorityClassName: high
  tasks:
  - name: worker
    replicas: 4
    template:
      spec:
        restartPolicy: OnFailure
        containers: [{name: c, image: img, resources: {requests: {cpu: "2"}}}]
"""
STRANGER = """
---
apiVersion: v1
kind: Pod
metadata: {name: stranger, namespace: ml}
spec:
  nodeName: node-a
  containers: [{name: c, image: img, resources: {requests: {cpu: "1"}}}]
"""
HIGH = """
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
"""
