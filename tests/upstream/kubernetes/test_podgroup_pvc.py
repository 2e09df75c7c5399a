"""kube-scheduler v1.37.2's `podgroup/podgroup_pvc_test.go` (TestPodGroupSchedulingWithReadWriteOncePodPVC), accounted
for here.

Both cases create HostPath PersistentVolumes and bound ReadWriteOncePod PersistentVolumeClaims, and their two group
members mount them: whether the group schedules rests on the VolumeRestrictions plugin seeing, within one PodGroup
cycle, a claim already used by a member placed earlier. Phalanx reads neither PersistentVolumes nor
PersistentVolumeClaims, and its volume plugins (VolumeRestrictions among them) are not implemented (every report
lists them under `notImplementedPlugins`), so neither case can be said with its inputs.
"""

from __future__ import annotations

from tests.upstream.kubernetes.restated import Case, Unexpressed, names

FILE = "podgroup/podgroup_pvc_test.go"
TEST = "TestPodGroupSchedulingWithReadWriteOncePodPVC"
NO_VOLUMES = ("it creates PersistentVolumes and ReadWriteOncePod PersistentVolumeClaims for the pods to mount, which "
              "are not Phalanx inputs (volume plugins, VolumeRestrictions among them, are not modelled)")

CASES: list[Case] = []

UNEXPRESSED: list[Unexpressed] = [
    Unexpressed(FILE, TEST, "two pods sharing a ReadWriteOncePod PVC keep the group unschedulable", NO_VOLUMES),
    Unexpressed(FILE, TEST, "two pods with distinct ReadWriteOncePod PVCs are scheduled", NO_VOLUMES),
]


UPSTREAM_NAMES = (
    "two pods sharing a ReadWriteOncePod PVC keep the group unschedulable",
    "two pods with distinct ReadWriteOncePod PVCs are scheduled",
)


def test_every_upstream_case_is_named_once() -> None:
    ours = names([*CASES, *UNEXPRESSED])
    assert sorted(ours) == sorted((TEST, name) for name in UPSTREAM_NAMES)
    assert len(set(ours)) == len(ours)
    everything: list[Case | Unexpressed] = [*CASES, *UNEXPRESSED]
    assert all(c.file == FILE for c in everything)
