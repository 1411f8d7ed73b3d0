#!/usr/bin/env bash
# A real single-node Kubernetes cluster on this machine, from binaries built off the Go module
# proxy (hack/k8s-binaries.sh) and Debian's containerd — no Docker, no registry, no internet.
#
#   hack/local-cluster.sh up            bring it up (idempotent); prints the kubeconfig's path last
#   hack/local-cluster.sh down          remove everything up created and restore what it changed
#   hack/local-cluster.sh status        what runs, and the kubeconfig
#   hack/local-cluster.sh load FILE...  import image tarballs into the node's containerd (k8s.io)
#   hack/local-cluster.sh check-clean   compare the machine with the snapshot taken before up
#   hack/local-cluster.sh kubeconfig    print the kubeconfig's path
#   hack/local-cluster.sh env           KUBECONFIG=... and the kubelet's directory, for scripts
#
# Needs root on Linux. The node: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, a
# kubelet with the static CPU manager (CPU 0 reserved for the system, the others exclusive to
# Guaranteed pods), kube-proxy (iptables), containerd with CNI bridge networking, and CoreDNS (a
# host process on the node address, cluster.local only, forwarding nothing).
#
# Network rules (not optional): pods (10.244.0.0/24) and services (10.96.0.0/24) live only on the
# bridge this script creates; guard rules in filter FORWARD and OUTPUT and in mangle POSTROUTING
# drop anything from or to 10.244.0.0/16 or 10.96.0.0/12 that would leave through any interface
# other than that bridge or lo — so never through the machine's real interface.
#
# State lives outside the checkout: $IOCACHE_CLUSTER_DIR (default ~/.cache/iocache/cluster) and
# /run/iocache-cluster. Processes are stopped by the PIDs recorded at start, never by name. `down`
# keeps the last run's logs in ~/.cache/iocache/cluster-logs for post-mortems and nothing else.
set -euo pipefail
# Under pipefail, "cmd | grep -q" fails when grep exits at its first match while cmd still writes
# (SIGPIPE, status 141), so a test of a command's output reads all of it: grep -c ... >/dev/null.

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The one place the version is set is hack/envtest/go.mod; k8s-binaries.sh reads it.
K8S_VERSION=$("$here/k8s-binaries.sh" version)
repo=$(cd "$here/.." && pwd)
CACHE=${IOCACHE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/iocache}
STATE=${IOCACHE_CLUSTER_DIR:-$CACHE/cluster}
LASTLOGS=$CACHE/cluster-logs
RUNDIR=/run/iocache-cluster
SOCK=$RUNDIR/containerd/containerd.sock

BRIDGE=iocache0
NODE_NAME=iocache-node
NODE_IP=10.244.0.1
POD_CIDR=10.244.0.0/24
POD_GUARD=10.244.0.0/16
SVC_CIDR=10.96.0.0/24
SVC_GUARD=10.96.0.0/12
API_PORT=6443
GUARD=IOCACHE-GUARD
PAUSE_IMAGE=localhost/iocache/pause:1.0
# Static CPU manager: the kubelet reserves ceil(systemReserved.cpu) CPUs, lowest-numbered first
# (CPU 0), for the shared pool; Guaranteed pods with integer CPUs get the others exclusively.
# systemReserved=500m rather than reservedSystemCPUs=0: both reserve CPU 0 alone, but
# reservedSystemCPUs takes a whole CPU out of allocatable, which on 2 cores leaves 1000m — a 1-core
# Guaranteed cache plus the operator's 10m request no longer fit. 500m leaves 1500m allocatable.
SYSTEM_RESERVED_CPU=${LOCAL_CLUSTER_SYSTEM_RESERVED_CPU:-500m}

# Sysctls the kubelet, kube-proxy or the CNI bridge plugin may rewrite; saved at the first up,
# restored by down.
SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward
  net.ipv4.conf.all.forwarding net.ipv4.conf.default.forwarding net.ipv6.conf.all.forwarding
  net.ipv4.conf.all.route_localnet net.bridge.bridge-nf-call-iptables
  net.bridge.bridge-nf-call-ip6tables net.netfilter.nf_conntrack_max
  net.netfilter.nf_conntrack_tcp_timeout_established net.netfilter.nf_conntrack_tcp_timeout_close_wait
  net.netfilter.nf_conntrack_tcp_be_liberal)
# Host paths that containerd, the kubelet or CNI create whatever they are told; down removes the ones
# that did not exist before up (and only this cluster's entries in the others).
HOST_PATHS=(/run/containerd /run/netns /run/mount /var/lib/cni /var/log/containers /var/log/pods
  /var/lib/kubelet /var/lib/containerd /opt/containerd /etc/cni /usr/libexec/kubernetes)
PACKAGES=(containerd runc containernetworking-plugins iptables nftables conntrack socat ethtool openssl curl)
COMPONENTS=(containerd etcd kube-apiserver coredns kube-controller-manager kube-scheduler kubelet kube-proxy)
COREDNS_HEALTH=127.0.0.1:18053
COREDNS_READY=127.0.0.1:18054

t0=$SECONDS
log() { printf '[local-cluster %3ds] %s\n' "$((SECONDS - t0))" "$*" >&2; }
die() {
  printf 'local-cluster: %s\n' "$*" >&2
  [ "${half_up:-0}" = 1 ] && echo "  the node may be half up: 'hack/local-cluster.sh down' removes what was created" >&2
  exit 1
}

k8sdir() { echo "$CACHE/k8s/${K8S_VERSION}-linux-amd64"; }

preflight() {
  [ "$(uname -s)" = Linux ] || die "needs Linux (this is $(uname -s))"
  [ "$(id -u)" = 0 ] || die "needs root: it runs containerd and a kubelet, and changes iptables, interfaces and sysctls (try: sudo $0 $*)"
  [ "$(uname -m)" = x86_64 ] || die "only linux/amd64 is set up (this is $(uname -m))"
  if [ "$1" = up ]; then command -v go >/dev/null || die "needs Go to build the Kubernetes binaries and images"; fi
  return 0
}

# ---------- processes, by recorded PID ----------

pidfile() { echo "$STATE/run/$1.pid"; }
logfile() { echo "$STATE/logs/$1.log"; }

# running NAME: the recorded PID is alive and still runs the recorded executable (no PID reuse).
running() {
  local f pid exe
  f=$(pidfile "$1")
  [ -f "$f" ] || return 1
  read -r pid exe <"$f" || return 1
  [ -n "$pid" ] && [ -e "/proc/$pid" ] || return 1
  [ "$(readlink "/proc/$pid/exe" 2>/dev/null | sed 's/ (deleted)$//')" = "$exe" ]
}

start() { # NAME BINARY ARGS...
  local name=$1 bin=$2
  shift 2
  if running "$name"; then
    log "$name already running (pid $(cut -d' ' -f1 "$(pidfile "$name")"))"
    return 0
  fi
  log "starting $name"
  echo "=== $(date -Is) $bin $*" >>"$(logfile "$name")"
  # setsid: its own session, so an interrupted make does not take the node down half-way.
  setsid "$bin" "$@" >>"$(logfile "$name")" 2>&1 </dev/null &
  echo "$! $(readlink -f "$bin")" >"$(pidfile "$name")"
}

fail() { # COMPONENT MESSAGE: say which component failed and show the end of its log
  local name=$1
  shift
  {
    echo "local-cluster: $name $*"
    if [ -f "$(logfile "$name")" ]; then
      echo "  last lines of $(logfile "$name"):"
      tail -n 25 "$(logfile "$name")" | sed 's/^/  | /'
    fi
    echo "  the node is half up: 'hack/local-cluster.sh down' removes what was created"
  } >&2
  exit 1
}

wait_for() { # COMPONENT DESCRIPTION TIMEOUT_S COMMAND...
  local name=$1 what=$2 timeout=$3
  shift 3
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if [ "$name" != - ] && ! running "$name"; then fail "$name" "exited before it was $what"; fi
    if ((SECONDS >= deadline)); then fail "$name" "was not $what after ${timeout}s"; fi
    sleep 0.5
  done
}

stop() { # NAME [TERM_TIMEOUT_S]: SIGTERM by recorded PID, SIGKILL if it ignores it
  local name=$1 timeout=${2:-15} pid
  if ! running "$name"; then
    rm -f "$(pidfile "$name")"
    return 0
  fi
  pid=$(cut -d' ' -f1 "$(pidfile "$name")")
  log "stopping $name (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + timeout))
  while running "$name" && ((SECONDS < deadline)); do sleep 0.2; done
  if running "$name"; then
    log "$name ignored SIGTERM for ${timeout}s; SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    deadline=$((SECONDS + 10))
    while running "$name" && ((SECONDS < deadline)); do sleep 0.2; done
  fi
  running "$name" && die "$name (pid $pid) survives SIGKILL"
  rm -f "$(pidfile "$name")"
}

# ---------- ports ----------

port_busy() { ss -Hltn "sport = :$1" 2>/dev/null | grep -c . >/dev/null; }

dns_port_busy() { # 53 on the node address, or on every address, in TCP or UDP
  ss -Hltun "sport = :53" 2>/dev/null | awk '{print $5}' | grep -cE "^(0\.0\.0\.0|\*|\[::\]|$NODE_IP):53$" >/dev/null
}

check_ports() { # COMPONENT PORT...: only called when the component is not running
  local name=$1 p
  shift
  for p in "$@"; do
    if port_busy "$p"; then
      die "$name cannot start: port $p is taken by: $(ss -Hltnp "sport = :$p" | awk '{print $4, $6}' | head -n 3 | tr '\n' ' ')"
    fi
  done
}

# ---------- snapshot of the machine before up, and the comparison after down ----------

strip_iptables() { sed -e '/^#/d' -e 's/\[[0-9]*:[0-9]*\]//'; }

sysctl_snapshot() {
  # Everything readable, minus counters and per-interface keys (interfaces are compared on their own).
  sysctl -a 2>/dev/null | grep -vE '^(kernel\.random\.|kernel\.ns_last_pid|kernel\.pty\.nr|fs\.(dentry-state|file-nr|inode-nr|inode-state|aio-nr|quota\.)|net\.netfilter\.nf_conntrack_count|net\.(ipv4|ipv6)\.(conf|neigh)\.|kernel\.sched_domain|vm\.stat_refresh|kernel\.perf_event_max_sample_rate|dev\.cdrom|fs\.binfmt_misc)' | sort
}

snapshot() { # DIR
  local d=$1
  mkdir -p "$d"
  ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort >"$d/links"
  ip -4 route show table main | sort >"$d/routes"
  { ip netns list 2>/dev/null || true; } | awk '{print $1}' | sort >"$d/netns"
  findmnt -rn -o TARGET | sort >"$d/mounts"
  { iptables-save 2>/dev/null || true; } | strip_iptables >"$d/iptables"
  { ip6tables-save 2>/dev/null || true; } | strip_iptables >"$d/ip6tables"
  if command -v nft >/dev/null; then nft list tables 2>/dev/null | sort >"$d/nft-tables" || true; else : >"$d/nft-tables"; fi
  # Only the cgroups a node makes: other work on this machine creates and removes its own.
  find /sys/fs/cgroup -mindepth 1 -maxdepth 3 -type d 2>/dev/null | grep -E 'kubepods|containerd|k8s\.io|/pod[0-9a-f_-]{36}' | sort >"$d/cgroups" || true
  sysctl_snapshot >"$d/sysctl"
  local p
  for p in "${HOST_PATHS[@]}"; do [ -e "$p" ] && echo "$p"; done >"$d/paths" || true
}

# ours: the processes that reference this cluster's state (every component does on its command
# line), or sit in a pod cgroup. Used to check that nothing is left; never to kill by name.
leftover_processes() {
  local pid cmd
  for pid in $(ls /proc | grep -E '^[0-9]+$'); do
    [ "$pid" = $$ ] && continue
    cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || continue
    case "$cmd" in
      *"$STATE"* | *"$RUNDIR"*) echo "$pid $cmd" ;;
      *) grep -qE 'kubepods' "/proc/$pid/cgroup" 2>/dev/null && echo "$pid (in a pod cgroup) $cmd" ;;
    esac
  done | grep -v 'local-cluster.sh' || true
}

check_clean() { # compare now with $STATE/before; prints differences, returns 1 if any
  local before=$STATE/before now rc=0 f
  [ -d "$before" ] || before=$CACHE/cluster-before
  [ -d "$before" ] || { echo "no snapshot to compare with (up was never run)"; return 0; }
  now=$(mktemp -d)
  snapshot "$now"
  for f in links routes netns mounts iptables ip6tables nft-tables cgroups sysctl paths; do
    if ! diff -u "$before/$f" "$now/$f" >"$now/$f.diff" 2>&1; then
      echo "differs from before up: $f"
      sed -n '3,40p' "$now/$f.diff" | grep -E '^[-+]' | sed 's/^/  /'
      rc=1
    fi
  done
  local procs
  procs=$(leftover_processes)
  if [ -n "$procs" ]; then
    echo "processes of this cluster still running:"
    echo "$procs" | sed 's/^/  /'
    rc=1
  fi
  rm -rf "$now"
  [ $rc = 0 ] && echo "clean: links, routes, netns, mounts, iptables, nftables, cgroups, sysctls, host paths and processes match the snapshot taken before up"
  return $rc
}

# ---------- set-up steps ----------

install_packages() {
  local missing=() p
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -c 'install ok installed' >/dev/null || missing+=("$p")
  done
  [ ${#missing[@]} = 0 ] && return 0
  log "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || die "apt-get update failed"
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || die "apt-get install ${missing[*]} failed"
}

build_binaries() {
  log "Kubernetes $K8S_VERSION binaries (built once into $(k8sdir); the first build takes 10-25 minutes)"
  "$here/k8s-binaries.sh" etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy coredns >/dev/null
}

cert() { # NAME CN ORG SAN(or -) USAGE(server|client|both)
  local name=$1 cn=$2 org=$3 san=$4 usage=$5 p=$STATE/pki subj eku
  [ -f "$p/$name.crt" ] && return 0
  subj="/CN=$cn"
  [ "$org" != - ] && subj="/O=$org$subj"
  case $usage in server) eku=serverAuth ;; client) eku=clientAuth ;; *) eku=serverAuth,clientAuth ;; esac
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$eku"
    [ "$san" != - ] && echo "subjectAltName=$san"
  } >"$p/$name.ext"
  openssl ecparam -genkey -name prime256v1 -noout -out "$p/$name.key" 2>/dev/null
  openssl req -new -key "$p/$name.key" -subj "$subj" -out "$p/$name.csr" 2>/dev/null
  openssl x509 -req -in "$p/$name.csr" -CA "$p/ca.crt" -CAkey "$p/ca.key" -CAcreateserial -days 365 \
    -extfile "$p/$name.ext" -out "$p/$name.crt" 2>/dev/null
  rm -f "$p/$name.csr" "$p/$name.ext"
}

kubeconfig() { # FILE USER CERT_NAME
  local f=$1 user=$2 c=$3 p=$STATE/pki
  cat >"$f" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: iocache-local
  cluster:
    server: https://$NODE_IP:$API_PORT
    certificate-authority-data: $(base64 -w0 "$p/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(base64 -w0 "$p/$c.crt")
    client-key-data: $(base64 -w0 "$p/$c.key")
contexts:
- name: iocache-local
  context: {cluster: iocache-local, user: $user}
current-context: iocache-local
EOF
  chmod 600 "$f"
}

make_certs() {
  local p=$STATE/pki
  mkdir -p "$p"
  chmod 700 "$p"
  if [ ! -f "$p/ca.crt" ]; then
    log "certificates (CA, servers, clients, service-account key)"
    openssl ecparam -genkey -name prime256v1 -noout -out "$p/ca.key" 2>/dev/null
    openssl req -x509 -new -key "$p/ca.key" -subj /CN=iocache-local-ca -days 3650 \
      -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign,digitalSignature \
      -out "$p/ca.crt" 2>/dev/null
  fi
  cert apiserver kube-apiserver - "IP:$NODE_IP,IP:10.96.0.1,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost" server
  cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters - client
  cert admin kubernetes-admin system:masters - client
  cert controller-manager system:kube-controller-manager - - client
  cert scheduler system:kube-scheduler - - client
  cert kube-proxy system:kube-proxy - - client
  cert coredns system:iocache-local:coredns - - client
  cert kubelet-client "system:node:$NODE_NAME" system:nodes - client
  cert kubelet "system:node:$NODE_NAME" system:nodes "IP:$NODE_IP,DNS:$NODE_NAME" server
  if [ ! -f "$p/sa.key" ]; then
    openssl ecparam -genkey -name prime256v1 -noout -out "$p/sa.key" 2>/dev/null
    openssl ec -in "$p/sa.key" -pubout -out "$p/sa.pub" 2>/dev/null
  fi
  kubeconfig "$STATE/kubeconfig" kubernetes-admin admin
  kubeconfig "$STATE/controller-manager.kubeconfig" system:kube-controller-manager controller-manager
  kubeconfig "$STATE/scheduler.kubeconfig" system:kube-scheduler scheduler
  kubeconfig "$STATE/kube-proxy.kubeconfig" system:kube-proxy kube-proxy
  kubeconfig "$STATE/coredns.kubeconfig" system:iocache-local:coredns coredns
  kubeconfig "$STATE/kubelet.kubeconfig" "system:node:$NODE_NAME" kubelet-client
}

write_configs() {
  mkdir -p "$STATE/cni/net.d" "$STATE/var" "$RUNDIR"
  cat >"$STATE/containerd.toml" <<EOF
# containerd 1.6 (Debian 12) for the local cluster: its own root, state and socket, so it never
# meets a system containerd.
version = 2
root = "$STATE/var/containerd"
state = "$RUNDIR/containerd"
[grpc]
  address = "$SOCK"
[plugins."io.containerd.internal.v1.opt"]
  path = "$STATE/var/containerd-opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # The VM's root lacks CAP_SYS_RESOURCE: without this every sandbox fails with
  # "can't get final child's PID from pipe: EOF".
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$RUNDIR/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$STATE/cni/net.d"
EOF
  cat >"$STATE/cni/net.d/10-iocache.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "iocache",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$STATE/var/cni-ipam",
        "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$NODE_IP", "rangeStart": "10.244.0.10"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    }
  ]
}
EOF
  local p=$STATE/pki
  cat >"$STATE/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $p/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $p/kubelet.crt
tlsPrivateKeyFile: $p/kubelet.key
containerRuntimeEndpoint: unix://$SOCK
# containerd 1.6 cannot tell the kubelet its cgroup driver, and this VM has cgroup v1.
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
cpuManagerPolicy: static
cpuManagerReconcilePeriod: 5s
systemReserved: {cpu: $SYSTEM_RESERVED_CPU}
# CoreDNS on the node address answers for cluster.local; pods never see the machine's resolvers.
resolvConf: ""
clusterDNS: ["$NODE_IP"]
clusterDomain: cluster.local
podLogsDir: $STATE/var/pod-logs
volumePluginDir: $STATE/var/kubelet/volume-plugins
# A throwaway node: never evict or garbage-collect the images imported by hand.
evictionHard: {memory.available: 100Mi, nodefs.available: 2%, imagefs.available: 2%, nodefs.inodesFree: 2%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
maxPods: 30
serializeImagePulls: false
shutdownGracePeriod: 0s
EOF
  cat >"$STATE/Corefile" <<EOF
# The local cluster's DNS: cluster.local from the API server, on the node address only (never on
# the machine's real interface), and nothing forwarded.
.:53 {
    bind $NODE_IP
    errors
    health $COREDNS_HEALTH
    ready $COREDNS_READY
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $STATE/coredns.kubeconfig iocache-local
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 30
}
EOF
  cat >"$STATE/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $STATE/kube-proxy.kubeconfig}
mode: iptables
hostnameOverride: $NODE_NAME
bindAddress: $NODE_IP
clusterCIDR: $POD_CIDR
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
# NodePorts only on the bridge's address, never on the real interface or loopback.
nodePortAddresses: ["$NODE_IP/32"]
iptables: {localhostNodePorts: false}
# 0 = leave the kernel's conntrack settings alone.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
}

save_sysctls() {
  [ -f "$STATE/sysctls.saved" ] && return 0
  local k v
  for k in "${SYSCTLS[@]}"; do
    v=$(sysctl -n "$k" 2>/dev/null) || continue
    printf '%s=%s\n' "$k" "$v"
  done >"$STATE/sysctls.saved"
}

restore_sysctls() {
  local f=$STATE/sysctls.saved line k v cur
  [ -f "$f" ] || return 0
  while IFS= read -r line; do
    k=${line%%=*}
    v=${line#*=}
    cur=$(sysctl -n "$k" 2>/dev/null) || continue
    if [ "$cur" != "$v" ]; then
      log "restoring sysctl $k=$v (was $cur)"
      sysctl -qw "$k=$v" || log "could not restore $k"
    fi
  done <"$f"
}

guard_rules() { # the rules of the IOCACHE-GUARD chain, as iptables arguments
  echo "-o $BRIDGE -j RETURN"
  echo "-o lo -j RETURN"
  local r
  for r in "$POD_GUARD" "$SVC_GUARD"; do
    echo "-s $r -j DROP"
    echo "-d $r -j DROP"
  done
}

guard_install() {
  local t c rule
  for t in filter mangle; do
    iptables -w -t $t -N $GUARD 2>/dev/null || true
    iptables -w -t $t -F $GUARD
    while IFS= read -r rule; do
      # shellcheck disable=SC2086
      iptables -w -t $t -A $GUARD $rule
    done < <(guard_rules)
  done
  # First in every chain a packet leaving the machine passes; guard_first re-asserts the order after
  # kube-proxy and the kubelet have inserted theirs.
  for c in "filter FORWARD" "filter OUTPUT" "mangle POSTROUTING"; do
    set -- $c
    iptables -w -t "$1" -C "$2" -j $GUARD 2>/dev/null || iptables -w -t "$1" -I "$2" 1 -j $GUARD
  done
  guard_first
}

guard_first() {
  local c first
  for c in "filter FORWARD" "filter OUTPUT" "mangle POSTROUTING"; do
    set -- $c
    first=$(iptables -w -t "$1" -S "$2" | sed -n 2p)
    if [ "$first" != "-A $2 -j $GUARD" ]; then
      while iptables -w -t "$1" -D "$2" -j $GUARD 2>/dev/null; do :; done
      iptables -w -t "$1" -I "$2" 1 -j $GUARD
    fi
  done
}

# kube-proxy and the kubelet insert their jumps at the top of FORWARD and OUTPUT when they first
# sync, which may be after guard_install. Move the guard back to the top until two checks a second
# apart agree (they insert once; their later syncs leave existing rules where they are). The mangle
# POSTROUTING guard is never preceded by anything of theirs.
guard_settle() {
  local i
  for i in $(seq 1 20); do
    guard_first
    sleep 1
    guard_check && return 0
  done
  iptables -w -S FORWARD >&2
  iptables -w -S OUTPUT >&2
  die "the network guard rules do not stay first in FORWARD/OUTPUT/POSTROUTING"
}

guard_check() { # the guard is in place and first
  local c
  for c in "filter FORWARD" "filter OUTPUT" "mangle POSTROUTING"; do
    set -- $c
    [ "$(iptables -w -t "$1" -S "$2" | sed -n 2p)" = "-A $2 -j $GUARD" ] || return 1
  done
}

setup_network() {
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    log "bridge $BRIDGE with the node address $NODE_IP/24 (the kernel has no dummy interface)"
    ip link add "$BRIDGE" type bridge
  fi
  ip addr show dev "$BRIDGE" | grep -c " $NODE_IP/24 " >/dev/null || ip addr add "$NODE_IP/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  # ClusterIPs route onto the bridge: even with no iptables rules at all they never head for the
  # default route.
  ip route show "$SVC_CIDR" | grep -c . >/dev/null || ip route add "$SVC_CIDR" dev "$BRIDGE"
  guard_install
  # Pods reach each other through the bridge and the host through the gateway; forwarding is off
  # on this machine by default (restored by down).
  sysctl -qw net.ipv4.ip_forward=1
}

coredns_version() { awk '$1 == "require" && $2 == "github.com/coredns/coredns" {print $3}' "$here/coredns/go.mod"; }

api_apply() { # PATH JSON: create an object as the admin unless it exists
  local code
  code=$(curl -s -o "$STATE/logs/api-apply.out" -w '%{http_code}' --max-time 10 --cacert "$STATE/pki/ca.crt" \
    --cert "$STATE/pki/admin.crt" --key "$STATE/pki/admin.key" -H 'Content-Type: application/json' \
    -X POST --data "$2" "https://$NODE_IP:$API_PORT$1")
  case $code in 201 | 409) ;; *) cat "$STATE/logs/api-apply.out" >&2; die "creating $1 failed (HTTP $code)" ;; esac
}

api() { # PATH: GET from the API server as the admin
  curl -sf --max-time 5 --cacert "$STATE/pki/ca.crt" --cert "$STATE/pki/admin.crt" --key "$STATE/pki/admin.key" \
    "https://$NODE_IP:$API_PORT$1"
}

node_ready() {
  api "/api/v1/nodes/$NODE_NAME" | tr -d ' \n' | grep -c '"type":"Ready","status":"True"' >/dev/null
}

make_pause_image() {
  local out=$CACHE/images/pause.tar
  if [ ! -f "$out" ]; then
    log "pause image $PAUSE_IMAGE (a static Go binary that waits for signals)"
    mkdir -p "$CACHE/images"
    (cd "$repo" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$CACHE/images/pause" ./hack/image/pause &&
      go run ./hack/image -tag "$PAUSE_IMAGE" -out "$out" -entrypoint /pause -user 65535:65535 -workdir / \
        "$CACHE/images/pause=/pause" >/dev/null) || die "building the pause image failed"
  fi
  echo "$out"
}

ctr_() { ctr --address "$SOCK" --namespace k8s.io "$@"; }

load_images() {
  local f
  for f in "$@"; do
    [ -f "$f" ] || die "load: no such file $f"
    running containerd || die "load: the local cluster is not up (containerd is not running)"
    ctr_ images import "$f" >/dev/null 2>"$STATE/logs/ctr-import.err" ||
      { cat "$STATE/logs/ctr-import.err" >&2; die "load: ctr images import $f failed"; }
    log "imported $f into the node's containerd"
  done
}

# ---------- up ----------

up() {
  preflight up
  mkdir -p "$STATE/run" "$STATE/logs" "$RUNDIR"
  chmod 700 "$STATE"
  install_packages
  if [ ! -d "$STATE/before" ]; then
    # First up since the last down: remember the machine as it was (after the packages, which are
    # meant to stay).
    snapshot "$STATE/before.tmp"
    mv "$STATE/before.tmp" "$STATE/before"
    rm -rf "$CACHE/cluster-before"
    cp -r "$STATE/before" "$CACHE/cluster-before"
  fi
  build_binaries
  local k
  k=$(k8sdir)
  # Every port first, so a taken one stops up before anything starts.
  running etcd || check_ports etcd 2379 2380
  running kube-apiserver || check_ports kube-apiserver $API_PORT
  running kube-controller-manager || check_ports kube-controller-manager 10257
  running kube-scheduler || check_ports kube-scheduler 10259
  running kubelet || check_ports kubelet 10250 10248
  running kube-proxy || check_ports kube-proxy 10249 10256
  if ! running coredns; then
    check_ports coredns "${COREDNS_HEALTH##*:}" "${COREDNS_READY##*:}"
    if dns_port_busy; then
      die "coredns cannot start: port 53 is taken on every address or on $NODE_IP: $(ss -Hltunp 'sport = :53' | awk '{print $1, $5, $7}' | tr '\n' ' ')"
    fi
  fi
  half_up=1
  save_sysctls
  make_certs
  write_configs
  setup_network

  # containerd
  if ! running containerd; then
    start containerd "$(command -v containerd)" --config "$STATE/containerd.toml"
  fi
  wait_for containerd "answering on $SOCK" 30 ctr --address "$SOCK" version
  if ! ctr_ images ls -q | grep -cxF "$PAUSE_IMAGE" >/dev/null; then
    local pause
    pause=$(make_pause_image)
    load_images "$pause"
  fi

  # etcd, then the API server
  if ! running etcd; then
    check_ports etcd 2379 2380
    start etcd "$k/etcd" --name iocache --data-dir "$STATE/var/etcd" \
      --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
      --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
      --initial-cluster iocache=http://127.0.0.1:2380 --unsafe-no-fsync=true --log-level=warn
  fi
  wait_for etcd "healthy" 30 curl -sf --max-time 2 http://127.0.0.1:2379/health

  local p=$STATE/pki
  if ! running kube-apiserver; then
    check_ports kube-apiserver $API_PORT
    start kube-apiserver "$k/kube-apiserver" --advertise-address=$NODE_IP --bind-address=$NODE_IP \
      --secure-port=$API_PORT --etcd-servers=http://127.0.0.1:2379 \
      --service-cluster-ip-range=$SVC_CIDR --allow-privileged=true \
      --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
      --client-ca-file="$p/ca.crt" --tls-cert-file="$p/apiserver.crt" --tls-private-key-file="$p/apiserver.key" \
      --kubelet-client-certificate="$p/apiserver-kubelet-client.crt" --kubelet-client-key="$p/apiserver-kubelet-client.key" \
      --kubelet-certificate-authority="$p/ca.crt" --kubelet-preferred-address-types=InternalIP,Hostname \
      --service-account-issuer=https://kubernetes.default.svc.cluster.local \
      --service-account-key-file="$p/sa.pub" --service-account-signing-key-file="$p/sa.key" \
      --cert-dir="$STATE/var/apiserver-certs" --profiling=false --event-ttl=30m
  fi
  wait_for kube-apiserver "ready" 90 api /readyz

  # CoreDNS reads Services and EndpointSlices as its own user.
  api_apply /apis/rbac.authorization.k8s.io/v1/clusterroles '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"iocache-local:coredns"},"rules":[{"apiGroups":[""],"resources":["services","endpoints","namespaces","pods"],"verbs":["list","watch"]},{"apiGroups":["discovery.k8s.io"],"resources":["endpointslices"],"verbs":["list","watch"]}]}'
  api_apply /apis/rbac.authorization.k8s.io/v1/clusterrolebindings '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"iocache-local:coredns"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"iocache-local:coredns"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"system:iocache-local:coredns"}]}'
  if ! running coredns; then
    start coredns "$k/coredns-$(coredns_version)" -conf "$STATE/Corefile"
  fi

  if ! running kube-controller-manager; then
    check_ports kube-controller-manager 10257
    start kube-controller-manager "$k/kube-controller-manager" --kubeconfig="$STATE/controller-manager.kubeconfig" \
      --authentication-kubeconfig="$STATE/controller-manager.kubeconfig" --authorization-kubeconfig="$STATE/controller-manager.kubeconfig" \
      --bind-address=127.0.0.1 --secure-port=10257 --leader-elect=false \
      --root-ca-file="$p/ca.crt" --service-account-private-key-file="$p/sa.key" --use-service-account-credentials=true \
      --cluster-signing-cert-file="$p/ca.crt" --cluster-signing-key-file="$p/ca.key" \
      --service-cluster-ip-range=$SVC_CIDR --allocate-node-cidrs=false --cluster-name=iocache-local \
      --cert-dir="$STATE/var/kcm-certs"
  fi
  if ! running kube-scheduler; then
    check_ports kube-scheduler 10259
    start kube-scheduler "$k/kube-scheduler" --kubeconfig="$STATE/scheduler.kubeconfig" \
      --authentication-kubeconfig="$STATE/scheduler.kubeconfig" --authorization-kubeconfig="$STATE/scheduler.kubeconfig" \
      --bind-address=127.0.0.1 --secure-port=10259 --leader-elect=false --cert-dir="$STATE/var/scheduler-certs"
  fi
  if ! running kubelet; then
    check_ports kubelet 10250 10248
    mkdir -p "$STATE/var/kubelet" "$STATE/var/pod-logs"
    start kubelet "$k/kubelet" --config="$STATE/kubelet.yaml" --kubeconfig="$STATE/kubelet.kubeconfig" \
      --root-dir="$STATE/var/kubelet" --cert-dir="$STATE/var/kubelet/pki" \
      --hostname-override=$NODE_NAME --node-ip=$NODE_IP
  fi
  if ! running kube-proxy; then
    check_ports kube-proxy 10249 10256
    start kube-proxy "$k/kube-proxy" --config="$STATE/kube-proxy.yaml"
  fi
  wait_for kube-controller-manager "healthy" 60 curl -skf --max-time 2 https://127.0.0.1:10257/healthz
  wait_for kube-scheduler "healthy" 60 curl -skf --max-time 2 https://127.0.0.1:10259/healthz
  wait_for kubelet "healthy" 60 curl -sf --max-time 2 http://127.0.0.1:10248/healthz
  wait_for kubelet "registered and Ready" 90 node_ready
  wait_for kube-proxy "healthy" 60 curl -sf --max-time 2 http://127.0.0.1:10256/healthz
  wait_for coredns "ready (synced with the API server)" 60 curl -sf --max-time 2 "http://$COREDNS_READY/ready"
  guard_settle
  wait_for kube-controller-manager "done creating the default ServiceAccount" 60 api /api/v1/namespaces/default/serviceaccounts/default
  log "up: node $NODE_NAME Ready (Kubernetes v$K8S_VERSION, static CPU manager, $SYSTEM_RESERVED_CPU reserved -> CPU 0 shared; DNS on $NODE_IP)"
  echo "$STATE/kubeconfig"
}

# ---------- down ----------

remove_chains() { # iptables|ip6tables PREFIX-REGEX: remove the chains named so and the jumps to them
  local ipt=$1 re=$2 t chain
  for t in filter nat mangle raw; do
    $ipt -w -t $t -S >/dev/null 2>&1 || continue
    # Jumps from built-in chains, by rule number, last first.
    local builtin num
    for builtin in INPUT OUTPUT FORWARD PREROUTING POSTROUTING; do
      $ipt -w -t $t -S $builtin >/dev/null 2>&1 || continue
      for num in $($ipt -w -t $t -L $builtin -n --line-numbers | awk -v re="^($re)" '$2 ~ re {print $1}' | sort -rn); do
        $ipt -w -t $t -D $builtin "$num" || log "could not delete rule $num of $ipt -t $t $builtin"
      done
    done
    for chain in $($ipt -w -t $t -S | awk -v re="^($re)" '$1 == "-N" && $2 ~ re {print $2}'); do
      $ipt -w -t $t -F "$chain" 2>/dev/null || true
    done
    for chain in $($ipt -w -t $t -S | awk -v re="^($re)" '$1 == "-N" && $2 ~ re {print $2}'); do
      $ipt -w -t $t -X "$chain" 2>/dev/null || log "could not delete $ipt -t $t chain $chain"
    done
  done
}

remove_new_nft_tables() {
  command -v nft >/dev/null || return 0
  local before=$STATE/before/nft-tables tbl
  [ -f "$before" ] || return 0
  local tables
  tables=$(nft list tables 2>/dev/null || true)
  while IFS= read -r tbl; do
    [ -n "$tbl" ] || continue
    grep -qxF "$tbl" "$before" && continue
    # Only tables without a rule left: iptables-nft created them for the chains removed above.
    if [ "$(nft list "$tbl" 2>/dev/null | grep -cvE '^\s*(#.*|table .*|chain .*|type .* hook .*policy accept;|\}|)$')" = 0 ]; then
      nft delete "$tbl" 2>/dev/null && log "removed nftables $tbl (created during up, now empty)" || true
    else
      log "nftables $tbl was created during up and still has rules; left alone:"
      nft list "$tbl" 2>/dev/null | sed -n '1,30p' >&2
    fi
  done <<<"$tables"
}

down() {
  preflight down
  [ -d "$STATE" ] || { log "nothing to do: $STATE does not exist"; return 0; }
  mkdir -p "$STATE/run" "$STATE/logs"
  # Shim PIDs before containerd forgets them.
  local shims=() f pid
  for f in "$RUNDIR"/containerd/io.containerd.runtime.v2.task/*/*/shim.pid; do
    [ -f "$f" ] && shims+=("$(cat "$f")")
  done

  # Nothing may restart or re-create pods while we take them apart.
  stop kube-controller-manager
  stop kube-scheduler
  stop kubelet
  stop kube-proxy

  if running containerd; then
    local ids
    ids=$(ctr_ tasks ls -q 2>/dev/null || true)
    if [ -n "$ids" ]; then
      log "killing $(echo "$ids" | wc -l) containers"
      for id in $ids; do ctr_ tasks kill -a -s SIGKILL "$id" >/dev/null 2>&1 || true; done
      local deadline=$((SECONDS + 20))
      while [ -n "$(ctr_ tasks ls 2>/dev/null | awk 'NR>1 && $3!="STOPPED"')" ] && ((SECONDS < deadline)); do sleep 0.5; done
      for id in $ids; do ctr_ tasks delete -f "$id" >/dev/null 2>&1 || true; done
    fi
    for id in $(ctr_ containers ls -q 2>/dev/null || true); do ctr_ containers rm "$id" >/dev/null 2>&1 || true; done
  fi
  stop containerd
  for pid in "${shims[@]}"; do
    if [ -e "/proc/$pid" ] && readlink "/proc/$pid/exe" | grep -c 'containerd-shim' >/dev/null; then
      log "stopping leftover containerd shim pid $pid (recorded in its shim.pid)"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done

  stop coredns
  # The API server may ignore SIGTERM once etcd is gone: stop it first.
  stop kube-apiserver 10
  stop etcd

  # Anything still in a pod cgroup (a container whose shim died) is killed by its PID from the
  # cgroup, then the pod cgroups go.
  local cg
  for cg in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
    [ -d "$cg" ] || continue
    for pid in $(find "$cg" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u); do
      log "killing pid $pid left in $cg"
      kill -KILL "$pid" 2>/dev/null || true
    done
  done
  sleep 0.2
  for cg in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
    [ -d "$cg" ] || continue
    find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
    [ -d "$cg" ] && log "could not remove cgroup $cg"
  done

  # Network namespaces containerd made for pods, and their veths.
  local ns
  for ns in $({ ip netns list 2>/dev/null || true; } | awk '{print $1}'); do
    if [ -f "$STATE/before/netns" ] && grep -qxF "$ns" "$STATE/before/netns"; then continue; fi
    case $ns in cni-*) ip netns delete "$ns" 2>/dev/null && log "removed netns $ns" || log "could not remove netns $ns" ;; esac
  done
  local veth
  for veth in $(ip -o link show master "$BRIDGE" 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//'); do
    ip link delete "$veth" 2>/dev/null || true
  done

  # Mounts under this cluster's directories, deepest first.
  local m
  for m in $(findmnt -rn -o TARGET | grep -E "^($STATE|$RUNDIR|/run/containerd|/run/netns/cni-)" | awk '{print length, $0}' | sort -rn | cut -d' ' -f2-); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "could not unmount $m"
  done
  if ! grep -qxF /run/netns "$STATE/before/mounts" 2>/dev/null && findmnt -rn /run/netns >/dev/null 2>&1 &&
    [ -z "$(ls -A /run/netns 2>/dev/null)" ]; then
    umount /run/netns 2>/dev/null || true
  fi

  # iptables: kube-proxy's and the kubelet's KUBE-* chains and CNI's; then the bridge; the guard
  # goes last, when no pod address exists any more.
  remove_chains iptables 'KUBE-|CNI-'
  remove_chains ip6tables 'KUBE-|CNI-'
  conntrack -D -s "$POD_GUARD" >/dev/null 2>&1 || true
  conntrack -D -d "$POD_GUARD" >/dev/null 2>&1 || true
  conntrack -D -d "$SVC_GUARD" >/dev/null 2>&1 || true
  if ip link show "$BRIDGE" >/dev/null 2>&1; then
    log "removing bridge $BRIDGE"
    ip link delete "$BRIDGE"
  fi
  restore_sysctls
  remove_chains iptables 'IOCACHE-'
  remove_chains ip6tables 'IOCACHE-'
  remove_new_nft_tables

  # Host paths created during up; in the ones that existed, only this cluster's entries.
  local p
  for p in "${HOST_PATHS[@]}"; do
    [ -e "$p" ] || continue
    if [ -f "$STATE/before/paths" ] && ! grep -qxF "$p" "$STATE/before/paths"; then
      rm -rf "$p"
    fi
  done
  rm -f /var/lib/cni/results/iocache-* 2>/dev/null || true
  find /var/log/containers -maxdepth 1 -type l -lname "$STATE/*" -delete 2>/dev/null || true
  rm -rf "$RUNDIR"

  # Keep the logs for post-mortems, then the state goes.
  rm -rf "$LASTLOGS"
  [ -d "$STATE/logs" ] && cp -r "$STATE/logs" "$LASTLOGS"
  local rc=0
  check_clean || rc=$?
  rm -rf "$STATE"
  log "down (logs of this run kept in $LASTLOGS)"
  return $rc
}

status() {
  local c state
  for c in "${COMPONENTS[@]}"; do
    if running "$c"; then state="running (pid $(cut -d' ' -f1 "$(pidfile "$c")"))"; else state="not running"; fi
    printf '%-24s %s\n' "$c" "$state"
  done
  if [ -f "$STATE/pki/admin.crt" ] && api /readyz >/dev/null 2>&1; then
    if node_ready; then echo "node $NODE_NAME: Ready"; else echo "node $NODE_NAME: not Ready"; fi
    guard_check && echo "guard rules: in place" || echo "guard rules: MISSING or not first"
    echo "kubeconfig: $STATE/kubeconfig"
    return 0
  fi
  echo "API server: not answering"
  return 1
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  load) shift; preflight load; load_images "$@" ;;
  check-clean) check_clean ;;
  kubeconfig) echo "$STATE/kubeconfig" ;;
  env) # for scripts: eval "$(hack/local-cluster.sh env)"
    echo "KUBECONFIG=$STATE/kubeconfig"
    echo "LOCAL_CLUSTER_KUBELET_DIR=$STATE/var/kubelet"
    echo "LOCAL_CLUSTER_NODE_IP=$NODE_IP"
    echo "LOCAL_CLUSTER_RESERVED_CPUS=0" ;;
  *) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
