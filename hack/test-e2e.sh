#!/usr/bin/env bash
# make test-e2e: the end-to-end test on a real node. Brings up the local cluster
# (hack/local-cluster.sh, root), imports the iocache image (make image) and a small probe image,
# runs hack/e2e (Go, build tag e2e: Helm install, Ready, clients, CPUs, pinning, metrics, benchmark,
# roll, garbage collection, an unschedulable instance reported Degraded), then runs every command
# block of the README on the node (hack/readme-run.sh), then takes the cluster down, which fails
# unless the machine matches the snapshot taken before up (processes, mounts, interfaces, netns,
# iptables, nftables, cgroups, sysctls). Prints timings per phase.
#
# It wants a cluster of its own (the node has one exclusive CPU, which make demo's instance would
# hold): with the local cluster already up it stops, unless E2E_REUSE_CLUSTER=1, and then leaves it
# up. E2E_KEEP_CLUSTER=1 keeps a fresh one up too, for debugging.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

HELM=$(readlink -f "${HELM:-bin/helm}")
IMG=${IMG:-ghcr.io/iocache/iocache:v0.1.0}
IMAGE_TAR=${IMAGE_TAR:-bin/iocache-image.tar}
PROBE_IMG=localhost/iocache/e2e-probe:dev
KEEP=${E2E_KEEP_CLUSTER:-0}
REUSE=${E2E_REUSE_CLUSTER:-0}

t0=$SECONDS
declare -a timings=()
current="" cur_start=0
phase() {
  local now=$SECONDS
  [ -n "$current" ] && timings+=("$(printf '  %-52s %5ds' "$current" "$((now - cur_start))")")
  current=$1 cur_start=$now
  [ -n "$1" ] && printf '\n=== [%4ds] %s\n' "$((now - t0))" "$1"
  return 0
}

[ -x "$HELM" ] || { echo "test-e2e: no helm at $HELM (make helm)" >&2; exit 2; }
was_up=0
if hack/local-cluster.sh status >/dev/null 2>&1; then
  was_up=1
  if [ "$REUSE" != 1 ]; then
    echo "test-e2e: the local cluster is already up; the test wants one of its own (its single exclusive CPU" >&2
    echo "may be taken). 'make cluster-down' (or make demo-down) first, or E2E_REUSE_CLUSTER=1 to use it anyway." >&2
    exit 2
  fi
fi

finish() {
  local rc=$?
  if [ $was_up = 0 ] && [ "$KEEP" = 0 ]; then
    phase "local cluster down, and the machine as it was before up"
    if ! hack/local-cluster.sh down; then
      echo "test-e2e: FAIL: the machine is not as it was before the cluster came up (see above)" >&2
      rc=1
    fi
  else
    echo "test-e2e: the local cluster stays up (it was up before, or E2E_KEEP_CLUSTER=1); 'make cluster-down' removes it"
  fi
  phase ""
  printf '\n=== test-e2e phases (total %ds)\n' "$((SECONDS - t0))"
  printf '%s\n' "${timings[@]}"
  if [ $rc = 0 ]; then echo "test-e2e: PASS"; else echo "test-e2e: FAIL"; fi
  exit $rc
}
trap finish EXIT

phase "local cluster up (the first run builds the Kubernetes binaries)"
hack/local-cluster.sh up >/dev/null
eval "$(hack/local-cluster.sh env)"
export KUBECONFIG

phase "images: $IMG and $PROBE_IMG into the node's containerd"
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o bin/e2e-probe ./hack/e2e/probe
go run ./hack/image -tag "$PROBE_IMG" -out bin/e2e-probe.tar -entrypoint /probe -user 65532:65532 bin/e2e-probe=/probe >/dev/null
hack/local-cluster.sh load "$IMAGE_TAR" bin/e2e-probe.tar

phase "go test -tags e2e ./hack/e2e (compiling it takes a minute the first time)"
IOCACHE_E2E_HELM=$HELM IOCACHE_E2E_IMAGE=$IMG IOCACHE_E2E_PROBE_IMAGE=$PROBE_IMG \
  IOCACHE_E2E_KUBELET_DIR=$LOCAL_CLUSTER_KUBELET_DIR IOCACHE_E2E_RESERVED_CPUS=$LOCAL_CLUSTER_RESERVED_CPUS \
  go test -tags e2e ./hack/e2e -run TestEndToEnd -v -count=1 -timeout 30m

# The README's commands, as printed, on this node (the operator is uninstalled and the test's
# instances are gone by now). Its last block is make demo-down, which takes the cluster down and
# checks the machine is clean, so it runs only on a cluster of the test's own.
if [ $was_up = 0 ] && [ "$KEEP" = 0 ]; then
  phase "README runner: every command block of README.md on this node (hack/readme-run.sh)"
  HELM=$HELM hack/readme-run.sh README.md
else
  echo "test-e2e: the README runner is skipped: its last block (make demo-down) would take down a cluster that is not the test's own"
fi
