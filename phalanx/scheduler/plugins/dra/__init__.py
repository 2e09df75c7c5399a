"""DRA (dynamic resource allocation) at the scheduler's extension points, after kube-scheduler's
`pkg/scheduler/framework/plugins/dynamicresources`: the device-taint eviction controller's rule
(`taint_eviction`) and the PodGroup PostFilter step (`post_filter`). The device state they read and change
(what is allocated, reserved, tainted) is `phalanx.cluster.devices`."""
