//go:build tools

// Package tools pins the Kueue module whose cmd/kueue build.sh builds.
package tools

import _ "sigs.k8s.io/kueue/cmd/kueue"
