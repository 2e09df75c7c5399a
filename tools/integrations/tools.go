//go:build tools

// Package tools pins the modules of the JobSet and LeaderWorkerSet controllers that build.sh builds.
package tools

import (
	_ "sigs.k8s.io/jobset"
	_ "sigs.k8s.io/lws/cmd"
)
