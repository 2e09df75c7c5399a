#!/usr/bin/env bash
# Build the real Kueue v0.17.0 (cmd/kueue) from its Go module into a cache folder outside the repository, with
# the module's CRDs, their conversion-webhook patches and its webhook configurations beside it (the oracle of
# `phalanx verify --profile kueue` installs them). Idempotent: a second run with the same go.mod and go.sum does
# nothing. Prints the folder on success.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="v0.17.0"
out="${PHALANX_KUEUE_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/phalanx/kueue/$version}"

if ! command -v go >/dev/null 2>&1; then
    echo "tools/kueue/build.sh: error: go is not on PATH: install Go 1.26 or newer to build Kueue" >&2
    exit 2
fi
stamp="$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" | sha256sum | cut -c1-16)"
if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ] && [ -x "$out/kueue" ]; then
    echo "$out"
    exit 0
fi
mkdir -p "$out"
cd "$here"
if ! go mod download sigs.k8s.io/kueue >/dev/null 2>"$out/.download.log"; then
    echo "tools/kueue/build.sh: error: cannot download sigs.k8s.io/kueue $version (is the Go module proxy $(go env GOPROXY) reachable?): $(tail -n 1 "$out/.download.log")" >&2
    exit 2
fi
module="$(go list -m -f '{{.Dir}}' sigs.k8s.io/kueue)"
start=$SECONDS
go build -trimpath -ldflags "-s -w" -o "$out/kueue" sigs.k8s.io/kueue/cmd/kueue
rm -rf "$out/config"
mkdir -p "$out/config/crd" "$out/config/conversion"
cp "$module"/config/components/crd/bases/*.yaml "$out/config/crd/"
cp "$module"/config/components/crd/patches/webhook_in_*.yaml "$out/config/conversion/"
cp "$module"/config/components/webhook/manifests.yaml "$out/config/webhooks.yaml"
chmod -R u+w "$out/config"
echo "$stamp" > "$out/.stamp"
echo "tools/kueue/build.sh: built kueue $version in $((SECONDS - start)) s" >&2
echo "$out"
