#!/usr/bin/env bash
# make demo / make demo-down. On a fresh machine: brings up the local cluster (hack/local-cluster.sh;
# CLUSTER=current uses the current kubeconfig's cluster instead), imports the image built by
# `make image`, installs the operator with the Helm chart, applies the 1-core sample CacheInstance
# and prints what it got (hack/demo). Running it again changes nothing and prints the same.
#
#   hack/demo.sh up      (make demo)        CLUSTER=local|current HELM=bin/helm IMG=... IMAGE_TAR=...
#   hack/demo.sh down    (make demo-down)   local: the whole cluster goes; current: the demo and the operator
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

CLUSTER=${CLUSTER:-local}
HELM=${HELM:-bin/helm}
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
  kubectl delete namespace "$DEMO_NS" --ignore-not-found --wait=true --timeout=120s
  "$HELM" uninstall "$RELEASE" -n "$OPERATOR_NS" --wait --timeout 2m 2>/dev/null || true
}

up() {
  local kubelet_dir=""
  if [ "$CLUSTER" = local ]; then
    phase "local cluster (hack/local-cluster.sh up; the first run builds the Kubernetes binaries)"
    hack/local-cluster.sh up >/dev/null
    eval "$(hack/local-cluster.sh env)"
    export KUBECONFIG
    kubelet_dir=$LOCAL_CLUSTER_KUBELET_DIR
    phase "importing $IMG into the node's containerd"
    hack/local-cluster.sh load "$IMAGE_TAR"
  else
    phase "current cluster: $(kubectl config current-context)"
    echo "The cluster must be able to pull $IMG (push it to a registry it reads, or load $IMAGE_TAR into its nodes)."
  fi

  phase "installing the operator with Helm (release $RELEASE in $OPERATOR_NS)"
  "$HELM" upgrade --install "$RELEASE" charts/iocache -n "$OPERATOR_NS" --create-namespace \
    --set image.repository="${IMG%:*}" --set image.tag="${IMG##*:}" --wait --timeout 5m >/dev/null
  "$HELM" status "$RELEASE" -n "$OPERATOR_NS" | sed -n '1,6p'

  phase "CacheInstance from $SAMPLE"
  go run ./hack/demo -kubeconfig "${KUBECONFIG:-}" -file "$SAMPLE" -namespace "$DEMO_NS" -release "$RELEASE" \
    -kubelet-dir "$kubelet_dir"
  phase "done; 'make demo-down' removes it"
}

case "${1:-up}" in
  up) up ;;
  down) down ;;
  *) sed -n '2,9p' "$0" >&2; exit 2 ;;
esac
