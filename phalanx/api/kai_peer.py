"""NVIDIA KAI Scheduler as the readers that are not its own see it (phalanx.api.peers): the `kai.scheduler/queue`
label on pods and owners, its `priorityClassName` label, its Queues (`scheduling.run.ai`), its PodGroups (which
`migrate` writes as native gangs, a pod joining by the annotation `pod-group-name`) and its GPU-sharing
annotations (api/kai_gpu.py)."""

from __future__ import annotations

from phalanx.api.kai_gpu import GPU_FRACTION, GPU_FRACTION_DEVICES, GPU_MEMORY, NVIDIA_GPU, kai_gpu_request
from phalanx.api.peer import Capture, ForeignGang, Key, Peer

GROUP = "scheduling.run.ai"
QUEUE_LABEL = "kai.scheduler/queue"
QUEUE = "kai.queue"  # Queueing.peer's fields
PRIORITY_CLASS = "kai.priorityClass"  # KAI reads a workload's priority class from the label priorityClassName first

_SHARING = ("KAI's GPU sharing; kube-scheduler ignores it and the pod gets no GPU (a DRA ResourceClaim for a shared "
            "device is the native route)")

KAI = Peer(
    name="kai", whose="KAI",
    keys=(Key(QUEUE, (QUEUE_LABEL,)), Key(PRIORITY_CLASS, ("priorityClassName",))),
    scheduler_names=("kai-scheduler",),
    queue_kinds=((GROUP, "Queue"),),
    captured=(Capture("Queue", GROUP, (), "queues", "kai-queues.yaml"),),
    queue_marks=(("labels", QUEUE_LABEL), ("labels", "runai/queue")),
    annotations={GPU_FRACTION: _SHARING, GPU_MEMORY: _SHARING,
                 GPU_FRACTION_DEVICES: "KAI's GPU sharing; kube-scheduler ignores it"},
    gangs=(ForeignGang(GROUP, "PodGroup", "KAI PodGroup", 1, ("labels", QUEUE_LABEL)),),
    pointers=(("annotations", "pod-group-name"),),
    gpu_request=kai_gpu_request,
    # KAI's GPU sharing: shares (gpu-fraction, gpu-memory) beside whole nvidia.com/gpu, on the most used GPU that
    # fits (gpupack); nodes scored as KAI's default placement strategy (binpack for gpu and cpu) packs them, a
    # share preferring a node whose shared GPUs fit it (gpusharingorder: above binpack, below the k8s plugins'
    # preferences, as KAI's score tiers rank them); consolidation before preemption.
    profile={
        "plugins": {
            "filter": {"disabled": [{"name": "*"}], "enabled": [{"name": name} for name in (
                "NodeName", "NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit",
                "GpuShare", "PodTopologySpread", "InterPodAffinity", "DynamicResources")]},
            "score": {"enabled": [{"name": "GpuSharingOrder", "weight": 3}]},
        },
        "pluginConfig": [
            {"name": "GpuShare", "args": {"deviceSelection": "best", "wholeGpuResource": NVIDIA_GPU}},
            {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated", "resources": [
                {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": NVIDIA_GPU, "weight": 1}]}}},
        ],
        "consolidation": True,
    },
)
