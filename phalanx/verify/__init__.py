"""The real Kubernetes control plane as Phalanx's oracle: `phalanx verify` and the differential tests."""
