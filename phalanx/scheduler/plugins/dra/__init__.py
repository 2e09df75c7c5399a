"""DRA (dynamic resource allocation) at the scheduler's extension points, after kube-scheduler's
`pkg/scheduler/framework/plugins/dynamicresources`: the DynamicResources plugin (`dynamic_resources`) and its
allocator (`device_allocation`), PreEnqueue (`pre_enqueue`), the PodGroup PostFilter step (`post_filter`) and
the device-taint eviction controller (`taint_eviction`). The device state they read and change (what is
allocated, reserved, tainted) is `phalanx.cluster.devices`."""
