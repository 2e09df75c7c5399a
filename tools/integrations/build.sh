#!/usr/bin/env bash
# Build the real JobSet v0.11.1 and LeaderWorkerSet v0.8.0 controllers (the versions Kueue v0.17.0 integrates)
# from their Go modules into a cache folder outside the repository, each with its CRDs, its webhook
# configurations and the patches its release applies to them (the objectSelector of its pod webhooks): the
# oracle of `phalanx verify` runs them beside the real Kueue. Idempotent: a second run with the same go.mod and
# go.sum does nothing. Prints the folder on success.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="jobset-v0.11.1-lws-v0.8.0"
out="${PHALANX_INTEGRATIONS_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/phalanx/integrations/$version}"

if ! command -v go >/dev/null 2>&1; then
    echo "tools/integrations/build.sh: error: go is not on PATH: install Go 1.26 or newer to build JobSet and LWS" >&2
    exit 2
fi
stamp="$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" | sha256sum | cut -c1-16)"
if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ] && [ -x "$out/jobset" ] && [ -x "$out/lws" ]; then
    echo "$out"
    exit 0
fi
mkdir -p "$out"
cd "$here"
for module in sigs.k8s.io/jobset sigs.k8s.io/lws; do
    if ! go mod download "$module" >/dev/null 2>"$out/.download.log"; then
        echo "tools/integrations/build.sh: error: cannot download $module (is the Go module proxy $(go env GOPROXY) reachable?): $(tail -n 1 "$out/.download.log")" >&2
        exit 2
    fi
done
jobset="$(go list -m -f '{{.Dir}}' sigs.k8s.io/jobset)"
lws="$(go list -m -f '{{.Dir}}' sigs.k8s.io/lws)"
start=$SECONDS
go build -trimpath -ldflags "-s -w" -o "$out/jobset" sigs.k8s.io/jobset
go build -trimpath -ldflags "-s -w" -o "$out/lws" sigs.k8s.io/lws/cmd
rm -rf "$out/config"
mkdir -p "$out/config/jobset/crd" "$out/config/jobset/patches" "$out/config/lws/crd" "$out/config/lws/patches"
cp "$jobset"/config/components/crd/bases/*.yaml "$out/config/jobset/crd/"
cp "$jobset"/config/components/webhook/manifests.yaml "$out/config/jobset/webhooks.yaml"
cp "$jobset"/config/components/webhook/patches/*.yaml "$out/config/jobset/patches/"
cp "$lws"/config/crd/bases/*.yaml "$out/config/lws/crd/"
cp "$lws"/config/webhook/manifests.yaml "$out/config/lws/webhooks.yaml"
cp "$lws"/config/webhook/mutating-patch.yaml "$lws"/config/webhook/validating-patch.yaml "$out/config/lws/patches/"
chmod -R u+w "$out/config"
echo "$stamp" > "$out/.stamp"
echo "tools/integrations/build.sh: built jobset and lws in $((SECONDS - start)) s" >&2
echo "$out"
