"""`phalanx dev-cluster`: a local Kubernetes v1.37.2 control plane with a few API-only nodes, for trying
`phalanx run` (docs/live.md, "Try it locally"). Built on `phalanx.verify.controlplane.ControlPlane`."""
