#!/usr/bin/env bash
# Build kube-scheduler's own benchmark, scheduler_perf (k8s.io/kubernetes v1.37.2,
# test/integration/scheduler_perf), as one test binary per topic, from the Go module, with tools/kube's go.mod,
# into a cache folder outside the repository. Idempotent: a second run with the same go.mod and go.sum does
# nothing. Prints the bin folder on success. benchmarks/scheduler_perf.py runs the binaries.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="v1.37.2"
bin="${PHALANX_SCHEDULER_PERF_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/phalanx/scheduler_perf/$version/bin}"
topics=(podgroup/gangscheduling podgroup/basicscheduling podgroup/tas workload_preemption)

if ! command -v go >/dev/null 2>&1; then
    echo "tools/scheduler_perf/build.sh: error: go is not on PATH: install Go 1.26 or newer to build scheduler_perf" >&2
    exit 2
fi
module="$here/../kube"
stamp="$( (cat "$module/go.mod" "$module/go.sum"; echo "${topics[*]}") | sha256sum | cut -c1-16)"
if [ -f "$bin/.stamp" ] && [ "$(cat "$bin/.stamp")" = "$stamp" ]; then
    echo "$bin"; exit 0
fi
mkdir -p "$bin"
cd "$module"
if ! go mod download >/dev/null 2>"$bin/.download.log"; then
    echo "tools/scheduler_perf/build.sh: error: cannot download the Go modules (is the Go module proxy $(go env GOPROXY) reachable?): $(tail -n 1 "$bin/.download.log")" >&2
    exit 2
fi
start=$SECONDS
for topic in "${topics[@]}"; do
    # -trimpath: the in-process API server then finds its test certificates through TEST_SRCDIR/TEST_WORKSPACE
    # (benchmarks/scheduler_perf.py sets them to the module cache).
    go test -c -trimpath -o "$bin/${topic//\//_}.test" "k8s.io/kubernetes/test/integration/scheduler_perf/$topic"
done
echo "$stamp" > "$bin/.stamp"
echo "tools/scheduler_perf/build.sh: built ${#topics[@]} scheduler_perf binaries in $((SECONDS - start)) s" >&2
echo "$bin"
