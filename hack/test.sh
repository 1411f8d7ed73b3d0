#!/usr/bin/env bash
# make test: every test of the module against its real peers, and nothing left behind.
#
#  1. Peers. The tests run against Debian's redis-server, its redis-tools (redis-cli,
#     redis-benchmark, redis-check-rdb, redis-check-aof), prometheus (with promtool) and openssl
#     (the encrypted keys it writes, for tls-key-file-pass). As root on
#     Debian, missing ones are installed with apt, as `make demo` installs containerd; otherwise the
#     run stops with the command that installs them. IOCACHE_SKIP_PEERS=1 is the only way to run without them: the tests that
#     need a peer then skip, and the summary lists them.
#  2. go test ./... through gotestsum, whose summary ends the run with every skipped test and its
#     reason, and the count.
#  3. The check. Every process the tests start inherits IOCACHE_TEST_RUN=<this run's id> and every
#     temporary file goes under a TMPDIR made for this run. When the tests end, any process still
#     carrying the id (kube-apiserver, etcd, iocache-server, redis-server, prometheus...) and anything
#     left in that TMPDIR is listed, then stopped or removed, and the run fails. Processes without the
#     id, such as a redis-server of your own, are never looked at. A file a test wrote into the
#     checkout (one git neither knows nor ignores) fails the run too.
#
#   KUBEBUILDER_ASSETS=... HELM=... KUSTOMIZE=... GOTESTSUM=... hack/test.sh [go test packages and flags]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

GOTESTSUM=${GOTESTSUM:-bin/gotestsum}
[ -x "$GOTESTSUM" ] || { echo "test: no gotestsum at $GOTESTSUM (make gotestsum)" >&2; exit 2; }
[ -n "${KUBEBUILDER_ASSETS:-}" ] || { echo "test: KUBEBUILDER_ASSETS is not set (run make test)" >&2; exit 2; }

# peers: program -> the Debian package that ships it.
declare -A package=([redis-server]=redis-server [redis-cli]=redis-tools [redis-benchmark]=redis-tools
  [redis-check-rdb]=redis-tools [redis-check-aof]=redis-tools [prometheus]=prometheus [promtool]=prometheus
  [openssl]=openssl)

ensure_peers() {
  local p missing=() pkgs=()
  for p in "${!package[@]}"; do
    command -v "$p" >/dev/null || { missing+=("$p"); pkgs+=("${package[$p]}"); }
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  mapfile -t pkgs < <(printf '%s\n' "${pkgs[@]}" | sort -u)
  local install="apt-get install -y --no-install-recommends ${pkgs[*]}"
  if [ "${IOCACHE_SKIP_PEERS:-}" = 1 ]; then
    echo "test: IOCACHE_SKIP_PEERS=1: ${missing[*]} not installed; the tests that need them will skip ($install installs them)"
    return 0
  fi
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "test: the tests need ${missing[*]}, which are not installed. Install them with" >&2
    echo "  sudo $install" >&2
    echo "or run 'make test IOCACHE_SKIP_PEERS=1' to skip the tests that need them." >&2
    exit 2
  fi
  echo "test: installing the test peers from apt: ${pkgs[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
  # Debian starts the packages' services on their default ports (6379 is make run's); the tests
  # start their own on free ports, so the services this install added are stopped and disabled.
  local unit
  for unit in redis-server prometheus; do
    if printf '%s\n' "${pkgs[@]}" | grep -cx "$unit" >/dev/null && command -v systemctl >/dev/null; then
      systemctl disable --now "$unit" >/dev/null 2>&1 || true
      echo "test: stopped and disabled the $unit service apt started (the tests run their own)"
    fi
  done
}

# tagged prints the PIDs of processes whose environment holds this run's IOCACHE_TEST_RUN.
tagged() {
  local d environ
  for d in /proc/[0-9]*; do
    # Another user's processes cannot be read, and cannot have been started by the tests.
    environ=$({ tr '\0' '\n' <"$d/environ"; } 2>/dev/null) || continue
    case $'\n'"$environ"$'\n' in
      *$'\n'"IOCACHE_TEST_RUN=$run"$'\n'*) echo "${d#/proc/}" ;;
    esac
  done
}

check_nothing_left() {
  local rc=0 pids i
  mapfile -t pids < <(tagged)
  if [ ${#pids[@]} -gt 0 ]; then
    rc=1
    echo "test: FAIL: processes started by the tests are still running:" >&2
    ps -o pid,ppid,etime,rss,args -p "$(IFS=,; echo "${pids[*]}")" >&2 || true
    kill -TERM "${pids[@]}" 2>/dev/null || true
    for i in $(seq 50); do
      mapfile -t pids < <(tagged)
      [ ${#pids[@]} -gt 0 ] || break
      sleep 0.1
    done
    [ ${#pids[@]} -eq 0 ] || kill -KILL "${pids[@]}" 2>/dev/null || true
    echo "test: stopped them" >&2
  fi
  if [ -n "$(ls -A "$tmp")" ]; then
    rc=1
    echo "test: FAIL: the tests left files in their temporary directory $tmp:" >&2
    (cd "$tmp" && du -sh -- * .[!.]* 2>/dev/null) >&2 || true
  fi
  rm -rf "$tmp"
  local added
  added=$(comm -13 <(echo "$untracked_before") <(untracked))
  if [ -n "$added" ]; then
    rc=1
    echo "test: FAIL: the tests wrote files into the checkout (a test's files belong in t.TempDir()):" >&2
    echo "$added" | sed 's/^/  /' >&2
  fi
  [ $rc = 0 ] && echo "test: nothing left behind (no process with the run's id, no temporary file, no new file in the checkout)"
  return $rc
}

# untracked lists the files git does not know and does not ignore, so new ones a test wrote stand out.
untracked() { git ls-files --others --exclude-standard | sort; }

ensure_peers

untracked_before=$(untracked)
run=$(date +%s)-$$
tmp=$(mktemp -d "${TMPDIR:-/tmp}/iocache-test.XXXXXX")
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(./...)

# envtest waits 20 s for kube-apiserver by default; the chart and operator packages start one each,
# at once, and on two busy cores that is not always enough.
export KUBEBUILDER_CONTROLPLANE_START_TIMEOUT=${KUBEBUILDER_CONTROLPLANE_START_TIMEOUT:-2m}

rc=0
IOCACHE_TEST_RUN=$run TMPDIR=$tmp "$GOTESTSUM" --format pkgname --format-hide-empty-pkg -- \
  -count=1 -timeout 40m "${args[@]}" || rc=$?
check_nothing_left || rc=1
exit $rc
