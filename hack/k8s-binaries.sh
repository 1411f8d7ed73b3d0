#!/usr/bin/env bash
# Builds Kubernetes and etcd binaries from the Go module proxy (no download site needed) into a cache
# folder outside the checkout, in setup-envtest's layout, so every clone on this machine reuses them.
#
#   hack/k8s-binaries.sh [component ...]   components: kube-apiserver etcd kubelet kube-controller-manager
#                                          kube-scheduler kube-proxy kubectl coredns
#                                          (default: kube-apiserver etcd)
#   hack/k8s-binaries.sh version           prints the Kubernetes version, e.g. 1.37.2
# Prints the folder holding the binaries on its last line of stdout; progress goes to stderr.
#
# The Kubernetes version lives in one place, hack/envtest/go.mod (the k8s.io/kubernetes module the
# binaries are built from, and the staging modules it replaces); the Makefile, local-cluster.sh and
# this script read it from there.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
K8S_VERSION=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v1[.]/ {sub(/^v/, "", $2); print $2; exit}' "$here/envtest/go.mod")
[ -n "$K8S_VERSION" ] || { echo "k8s-binaries: no k8s.io/kubernetes requirement in $here/envtest/go.mod" >&2; exit 2; }
# Kubernetes v1.X.Y is built from its staging modules at v0.X.Y: a replace at another version would
# mix two releases.
if stray=$(awk -v want="v0.${K8S_VERSION#1.}" '$1 ~ /^k8s[.]io\// && $2 == "=>" && $4 != want {print $1 " " $4}' "$here/envtest/go.mod") && [ -n "$stray" ]; then
  echo "k8s-binaries: hack/envtest/go.mod replaces staging modules at other versions than v0.${K8S_VERSION#1.}: $stray" >&2
  exit 2
fi
if [ "${1:-}" = version ]; then
  echo "$K8S_VERSION"
  exit 0
fi
cache=${IOCACHE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/iocache}
dir="$cache/k8s/${K8S_VERSION}-$(go env GOOS)-$(go env GOARCH)"
mkdir -p "$dir"

components=("$@")
[ ${#components[@]} -gt 0 ] || components=(kube-apiserver etcd)

minor=$(echo "$K8S_VERSION" | cut -d. -f2)
# Without these the binaries report v0.0.0-master and clients warn about version skew.
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=v${K8S_VERSION} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor}"

# One build at a time per cache directory: make envtest and make test-e2e started together would
# otherwise build the same binary twice into the same temporary file.
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9

for c in "${components[@]}"; do
  module=envtest flags=$ldflags out=$c
  case "$c" in
    etcd) pkg=go.etcd.io/etcd/server/v3 ;;
    kube-apiserver|kubelet|kube-controller-manager|kube-scheduler|kube-proxy|kubectl) pkg=k8s.io/kubernetes/cmd/$c ;;
    coredns)
      # The local cluster's DNS, from its own module (hack/coredns); the file name carries its
      # version, so bumping hack/coredns/go.mod builds the new one.
      module=coredns pkg=. flags="-s -w"
      out=coredns-$(awk '$1 == "require" && $2 == "github.com/coredns/coredns" {print $3}' "$here/coredns/go.mod") ;;
    *) echo "k8s-binaries: unknown component '$c'" >&2; exit 2 ;;
  esac
  if [ -x "$dir/$out" ]; then
    echo "k8s-binaries: $out present in $dir" >&2
    continue
  fi
  echo "k8s-binaries: building $out ($pkg) from the module proxy (several minutes the first time)..." >&2
  start=$SECONDS
  (cd "$here/$module" && CGO_ENABLED=0 go build -trimpath -ldflags "$flags" -o "$dir/$out.tmp" "$pkg")
  mv "$dir/$out.tmp" "$dir/$out"
  echo "k8s-binaries: built $out in $((SECONDS - start))s" >&2
done
echo "$dir"
