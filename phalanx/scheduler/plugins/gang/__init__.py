"""Gang scheduling (KEP-4671) at the PodGroup cycle's extension points, after kube-scheduler's
`pkg/scheduler/framework/plugins/gangscheduling`."""
