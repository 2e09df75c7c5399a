#!/usr/bin/env bash
# Build the real Kubernetes v1.37.2 control plane (kube-apiserver, kube-scheduler, kube-controller-manager) and
# the etcd that kubernetes' go.mod requires, from Go modules, into a cache folder outside the repository.
# Idempotent: a second run with the same go.mod and go.sum does nothing. Prints the bin folder on success.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="v1.37.2"
bin="${PHALANX_KUBE_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/phalanx/kube/$version/bin}"
binaries=(etcd kube-apiserver kube-controller-manager kube-scheduler)

if ! command -v go >/dev/null 2>&1; then
    echo "tools/kube/build.sh: error: go is not on PATH: install Go 1.26 or newer to build the Kubernetes control plane" >&2
    exit 2
fi
stamp="$(cat "$here/go.mod" "$here/go.sum" "$here/etcd/main.go" | sha256sum | cut -c1-16)"
if [ -f "$bin/.stamp" ] && [ "$(cat "$bin/.stamp")" = "$stamp" ]; then
    all=1
    for b in "${binaries[@]}"; do [ -x "$bin/$b" ] || all=0; done
    if [ "$all" = 1 ]; then echo "$bin"; exit 0; fi
fi
mkdir -p "$bin"
cd "$here"
if ! go mod download >/dev/null 2>"$bin/.download.log"; then
    echo "tools/kube/build.sh: error: cannot download the Go modules (is the Go module proxy $(go env GOPROXY) reachable?): $(tail -n 1 "$bin/.download.log")" >&2
    exit 2
fi
# -trimpath and no debug info keep the binaries small; the version stamp is what `--version` prints.
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37"
start=$SECONDS
go build -trimpath -ldflags "$ldflags" -o "$bin/etcd" ./etcd
go build -trimpath -ldflags "$ldflags" -o "$bin/" k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-controller-manager
echo "$stamp" > "$bin/.stamp"
echo "tools/kube/build.sh: built ${binaries[*]} in $((SECONDS - start)) s" >&2
echo "$bin"
