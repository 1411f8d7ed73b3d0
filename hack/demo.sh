#!/usr/bin/env bash
# make demo / make demo-down. On a fresh machine: brings up the local cluster (hack/local-cluster.sh;
# CLUSTER=current uses the current kubeconfig's cluster instead), imports the image built by
# `make image`, installs the operator with the Helm chart, applies the 1-core sample CacheInstance
# and prints what it got (hack/demo). Running it again changes nothing and prints the same.
#
# It also provides what the printed commands use: kubectl of the node's Kubernetes version (make
# kubectl builds it from the module proxy like the other Kubernetes binaries and links it as
# bin/kubectl) and redis-cli (Debian's redis-tools, installed with apt as root, as local-cluster.sh
# installs containerd).
#
#   hack/demo.sh up      (make demo)        CLUSTER=local|current HELM=bin/helm KUBECTL=bin/kubectl IMG=... IMAGE_TAR=...
#   hack/demo.sh down    (make demo-down)   local: the whole cluster goes; current: the demo and the operator
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

CLUSTER=${CLUSTER:-local}
HELM=${HELM:-bin/helm}
KUBECTL=${KUBECTL:-bin/kubectl}
IMG=${IMG:-ghcr.io/iocache/iocache:v0.1.0}
IMAGE_TAR=${IMAGE_TAR:-bin/iocache-image.tar}
RELEASE=iocache
OPERATOR_NS=iocache-system
DEMO_NS=iocache-demo
SAMPLE=config/samples/cache_v1alpha1_cacheinstance_1core.yaml

t0=$SECONDS
phase() { printf '\n=== [%4ds] %s\n' "$((SECONDS - t0))" "$*"; }

case "$CLUSTER" in local | current) ;; *) echo "demo: CLUSTER must be local or current, not '$CLUSTER'" >&2; exit 2 ;; esac

down() {
  if [ "$CLUSTER" = local ]; then
    hack/local-cluster.sh down
    return
  fi
  phase "removing the demo instance and the operator from the current cluster"
  "$KUBECTL" delete namespace "$DEMO_NS" --ignore-not-found --wait=true --timeout=120s
  "$HELM" uninstall "$RELEASE" -n "$OPERATOR_NS" --wait --timeout 2m 2>/dev/null || true
}

# redis_cli prints the path of redis-cli, installing Debian's redis-tools first as root.
redis_cli() {
  if ! command -v redis-cli >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "installing redis-cli (Debian's redis-tools) for the commands below" >&2
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-tools >/dev/null ||
        { DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-tools >/dev/null; }
    else
      echo "redis-cli is not installed (sudo apt-get install -y redis-tools); the commands below use it" >&2
      echo redis-cli
      return
    fi
  fi
  command -v redis-cli
}

up() {
  local kubelet_dir=""
  [ -x "$KUBECTL" ] || { echo "demo: no kubectl at $KUBECTL (make kubectl)" >&2; exit 2; }
  local cli
  cli=$(redis_cli)
  if [ "$CLUSTER" = local ]; then
    phase "local cluster (hack/local-cluster.sh up; the first run builds the Kubernetes binaries)"
    hack/local-cluster.sh up >/dev/null
    eval "$(hack/local-cluster.sh env)"
    export KUBECONFIG
    kubelet_dir=$LOCAL_CLUSTER_KUBELET_DIR
    phase "importing $IMG into the node's containerd"
    hack/local-cluster.sh load "$IMAGE_TAR"
  else
    phase "current cluster: $("$KUBECTL" config current-context)"
    echo "The cluster must be able to pull $IMG (push it to a registry it reads, or load $IMAGE_TAR into its nodes)."
  fi

  phase "installing the operator with Helm (release $RELEASE in $OPERATOR_NS)"
  "$HELM" upgrade --install "$RELEASE" charts/iocache -n "$OPERATOR_NS" --create-namespace \
    --set image.repository="${IMG%:*}" --set image.tag="${IMG##*:}" --wait --timeout 5m >/dev/null
  "$HELM" status "$RELEASE" -n "$OPERATOR_NS" | sed -n '1,6p'

  phase "CacheInstance from $SAMPLE"
  go run ./hack/demo -kubeconfig "${KUBECONFIG:-}" -file "$SAMPLE" -namespace "$DEMO_NS" -release "$RELEASE" \
    -kubelet-dir "$kubelet_dir" -kubectl "$(readlink -f "$KUBECTL")" -redis-cli "$cli"
  phase "done; 'make demo-down' removes it"
}

case "${1:-up}" in
  up) up ;;
  down) down ;;
  *) sed -n '2,9p' "$0" >&2; exit 2 ;;
esac
