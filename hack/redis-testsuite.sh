#!/usr/bin/env bash
# make redis-testsuite: Redis 7.0.15's own test suite, run from outside ("external mode") against
# iocache-server and, the same way, against Debian's redis-server 7.0.15, one after the other.
# Writes docs/redis-testsuite.md (totals, a per-file table, iocache's failing tests).
#
#  1. The suite. Debian's source package serves redis_7.0.15.orig.tar.gz, the exact upstream source
#     with tests/; apt checks it against the signed Sources index, and this script checks its
#     SHA-256 again on every run, so a cached copy cannot drift. It is cached under
#     ~/.cache/iocache/redis-src/. Fetching needs root (apt-get update writes apt's lists); the
#     machine's own apt configuration is left untouched (a private sources list is passed with -o).
#     tclsh (Debian package tcl), redis-server and redis-cli are installed with apt when missing, as
#     hack/test.sh installs its peers.
#  2. The run. Each server is started as Redis's own CI starts the one it tests externally
#     (.github/workflows/external.yml: --save "" --enable-protected-configs yes
#     --enable-debug-command yes --enable-module-command yes), on a free port in a temporary dir,
#     and the suite runs with --tags -slow as upstream's does. In external mode runtest always uses
#     a single test client (test_helper.tcl ignores --clients there), so there is nothing to tune
#     for a small machine. Each test file gets its own runtest: an exception (a Tcl error outside an
#     assertion, such as an unknown command) makes runtest exit, and run in one piece the suite
#     would stop at the first file that raises one; file by file, it costs only that file's rest.
#  3. The watchdog. While a server is under test, every second it must be alive and answer PING
#     (any reply, errors such as NOAUTH or BUSY included) within 2 s. A server that dies, that
#     answers nothing for more than HANG_SECONDS, or a suite past TOTAL_TIMEOUT stops the run at
#     once, with the server's log tail. A test file that runs past FILE_TIMEOUT while the server
#     still answers (its client waits for a reply that never comes) is stopped, counted with what
#     it reached, and fails the script at the end.
#  4. Exit status: non-zero on any of those, or when iocache passes fewer than PASS_FLOOR tests.
#     Each server's run takes about 10 minutes on 2 CPUs.
#
#   hack/redis-testsuite.sh                      both servers, every file of the suite
#   SERVERS=iocache FILES="unit/type/incr unit/expire" hack/redis-testsuite.sh   a quick look
#   DOC=/dev/null ...                            don't rewrite docs/redis-testsuite.md
#   IOCACHE_BIN=/path/to/iocache-server ...      test that binary instead of building bin/iocache-server
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

REDIS_VERSION=7.0.15
# sha256 of redis_7.0.15.orig.tar.gz as Debian's signed bookworm Sources index lists it.
REDIS_SHA256=4b1dc4ee6d622a09fff9c6777191209750fb5e5a725ef78ea012d6eef4c22982
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/iocache/redis-src
# iocache's passed count below this fails the run: the figure reached (1838 on 2026-12-04, CI), less
# a margin for the few timing-sensitive tests that flip on a loaded 2-core machine.
PASS_FLOOR=${PASS_FLOOR:-1815}
HANG_SECONDS=${HANG_SECONDS:-30}   # a server silent this long is hung (the suite's DEBUG SLEEPs are <= 1 s)
FILE_TIMEOUT=${FILE_TIMEOUT:-300}  # the slowest file (unit/geo) takes 76 s on redis-server here
TOTAL_TIMEOUT=${TOTAL_TIMEOUT:-3600}  # per server
SERVERS=${SERVERS:-"iocache redis"}
DOC=${DOC:-docs/redis-testsuite.md}

log() { echo "redis-testsuite: $*" >&2; }
die() { log "FAIL: $*"; exit 1; }

# ensure_tools installs what the run needs: program -> Debian package.
ensure_tools() {
  declare -A package=([tclsh]=tcl [redis-server]=redis-server [redis-cli]=redis-tools)
  local p pkgs=()
  for p in "${!package[@]}"; do command -v "$p" >/dev/null || pkgs+=("${package[$p]}"); done
  [ ${#pkgs[@]} -gt 0 ] || return 0
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    die "missing ${pkgs[*]}: install them with  sudo apt-get install -y ${pkgs[*]}"
  fi
  log "installing ${pkgs[*]} from apt"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
  # Debian starts redis-server's service on 6379 (make run's port); this run starts its own.
  if printf '%s\n' "${pkgs[@]}" | grep -cx redis-server >/dev/null && command -v systemctl >/dev/null; then
    systemctl disable --now redis-server >/dev/null 2>&1 || true
  fi
}

# fetch_suite leaves the upstream source tree in $CACHE/redis-$REDIS_VERSION.
fetch_suite() {
  local tarball=$CACHE/redis_$REDIS_VERSION.orig.tar.gz
  mkdir -p "$CACHE"
  if [ ! -f "$tarball" ]; then
    [ "$(id -u)" = 0 ] || die "the suite is not cached at $tarball; fetching it needs root (apt-get source)"
    local tmp
    tmp=$(mktemp -d)
    # A deb-src list of our own, given to apt with -o, so the machine's apt setup is not changed.
    cat >"$tmp/src.sources" <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    local opts=(-o "Dir::Etc::sourcelist=$tmp/src.sources" -o Dir::Etc::sourceparts=/dev/null)
    log "fetching redis $REDIS_VERSION's source from Debian"
    apt-get "${opts[@]}" update -qq
    (cd "$tmp" && apt-get "${opts[@]}" source --download-only -qq redis)
    [ -f "$tmp/redis_$REDIS_VERSION.orig.tar.gz" ] || die "Debian's source package is not redis $REDIS_VERSION: $(ls "$tmp")"
    mv "$tmp/redis_$REDIS_VERSION.orig.tar.gz" "$tarball"
    rm -rf "$tmp"
  fi
  echo "$REDIS_SHA256  $tarball" | sha256sum -c --quiet - || die "$tarball is not redis $REDIS_VERSION's orig tarball"
  if [ ! -x "$CACHE/redis-$REDIS_VERSION/runtest" ]; then
    tar -C "$CACHE" -xzf "$tarball"
  fi
  SUITE=$CACHE/redis-$REDIS_VERSION
  # Some files run the tools of the tree they come from (src/redis-cli, src/redis-benchmark...),
  # built in upstream's CI; Debian's builds of the same version stand in for them.
  local t
  for t in redis-cli redis-benchmark redis-check-aof redis-check-rdb redis-server; do
    command -v "$t" >/dev/null && ln -sf "$(command -v "$t")" "$SUITE/src/$t"
  done
}

# free_port prints a port nothing listens on, below runtest's own ranges (21079 up for its test
# server, 21111-29110 for the servers it spawns in internal mode) and Linux's ephemeral ports
# (32768 up), which a client connection may hold.
free_port() {
  local p
  for _ in $(seq 100); do
    p=$((10000 + RANDOM % 11000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
  die "no free port found"
}

# start_server NAME DIR: start NAME on a free port in DIR; sets PID and PORT. Another program may
# take the port between the check and the bind, so a start that fails is tried again.
start_server() {
  local try
  for try in 1 2 3 4 5; do
    start_server_once "$@" && return 0
    stop_server
  done
  tail -20 "$2/server.log" >&2
  die "$1 did not start (5 tries)"
}

start_server_once() {
  local name=$1 dir=$2 args
  PORT=$(free_port)
  args=(--port "$PORT" --bind 127.0.0.1 --dir "$dir" --save ""
    --enable-protected-configs yes --enable-debug-command yes --enable-module-command yes)
  case $name in
    # iocache also serves Prometheus metrics, on 9121 by default; off, so runs don't collide.
    iocache) "$IOCACHE_BIN" "${args[@]}" --metrics-port 0 >"$dir/server.log" 2>&1 & ;;
    redis) redis-server "${args[@]}" >"$dir/server.log" 2>&1 & ;;
  esac
  PID=$!
  for _ in $(seq 50); do
    [ "$(timeout 2 redis-cli -p "$PORT" ping 2>/dev/null)" = PONG ] && return 0
    alive "$PID" || break
    sleep 0.1
  done
  log "$name did not start on port $PORT: $(tail -1 "$dir/server.log")"
  return 1
}

stop_server() {
  kill "$PID" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$PID" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$PID" 2>/dev/null || true
  wait "$PID" 2>/dev/null || true
}

# alive PID: the process runs (a dead child of this script stays a zombie until waited for, and
# kill -0 succeeds on zombies).
alive() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [ "${stat%% *}" != Z ]
}

# watchdog PID PORT FLAG: every second, the server must be alive and answer PING within 2 s; after
# HANG_SECONDS without an answer, or when it is gone, it writes why into FLAG and stops.
watchdog() {
  local pid=$1 port=$2 flag=$3 silent=0 reply
  while :; do
    if ! alive "$pid"; then
      echo "the server (pid $pid) died" >"$flag"
      return
    fi
    reply=$(timeout 2 redis-cli -p "$port" ping 2>&1) || true
    # Any reply is an answer: tests set requirepass, fill maxclients or run busy scripts.
    case $reply in
      "" | *"Could not connect"* | *"Connection reset"* | *"Server closed"*) silent=$((silent + 1)) ;;
      *) silent=0 ;;
    esac
    if [ "$silent" -gt "$HANG_SECONDS" ]; then
      echo "the server (pid $pid) has not answered PING for $silent s (last: ${reply:-no reply})" >"$flag"
      return
    fi
    sleep 1
  done
}

# run_suite NAME OUTDIR: the suite, file by file, against NAME; each file's output in OUTDIR. Each
# file gets a fresh server: a file an exception aborts leaves its settings behind (a maxmemory of
# 1 byte, a requirepass...), and they would fail every file after it.
run_suite() {
  local name=$1 out=$2 dir f rc t0 t1 o why deadline start
  mkdir -p "$out"
  deadline=$(($(date +%s) + TOTAL_TIMEOUT))
  start=$(date +%s)
  for f in $FILES; do
    o=$out/${f//\//_}.out
    dir=$(mktemp -d)
    start_server "$name" "$dir"
    watchdog "$PID" "$PORT" "$dir/watchdog" &
    WPID=$!
    t0=$(date +%s)
    rc=0
    # TERM=dumb: runtest colours its output only on xterm-like terminals, and we parse it. timeout
    # runs it in a process group of its own and signals the whole group, test client included.
    (cd "$SUITE" && TERM=dumb exec timeout --kill-after 10 "$FILE_TIMEOUT" ./runtest --host 127.0.0.1 \
      --port "$PORT" --tags -slow --single "$f" </dev/null >"$o" 2>&1) &
    RPID=$!
    wait "$RPID" || rc=$?
    RPID=""
    t1=$(date +%s)
    kill "$WPID" 2>/dev/null || true
    wait "$WPID" 2>/dev/null || true
    WPID=""
    echo "$f $rc $((t1 - t0))" >>"$out/files"
    printf '%-8s %-40s %4ss  ok %3s  err %3s  exception %s\n' "$name" "$f" "$((t1 - t0))" \
      "$(grep -c '^\[ok\]' "$o")" "$(grep -c '^\[err\]' "$o")" "$(grep -c '^\[exception\]' "$o")" >&2
    why=""
    if [ -s "$dir/watchdog" ]; then
      why="$(cat "$dir/watchdog") during $f"
    elif ! alive "$PID"; then
      why="the server (pid $PID) died during $f"
    elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
      # The server still answers: the test client waits for a reply that never comes (a missing
      # push message, say). The file counts what it reached, the run goes on, and the script
      # fails at the end: the suite must run to its end without a hang.
      log "$name: $f ran past FILE_TIMEOUT=${FILE_TIMEOUT}s"
      echo "$f" >>"$out/timeouts"
    elif [ "$(date +%s)" -gt "$deadline" ]; then
      why="the suite ran past TOTAL_TIMEOUT=${TOTAL_TIMEOUT}s"
    fi
    if [ -n "$why" ]; then
      log "$name: last lines of $f's output ($o):"
      tail -15 "$o" >&2
      log "$name: server log tail ($dir/server.log):"
      tail -30 "$dir/server.log" >&2
      die "$name: $why"
    fi
    stop_server
    PID=""
    rm -rf "$dir"
  done
  echo $(($(date +%s) - start)) >"$out/seconds"
}

# counts OUTDIR prints, per file: file ok err exception skipped seconds.
counts() {
  local out=$1 f rc secs o
  while read -r f rc secs; do
    o=$out/${f//\//_}.out
    echo "$f $(grep -c '^\[ok\]' "$o") $(grep -c '^\[err\]' "$o") $(grep -c '^\[exception\]' "$o") \
      $(grep -Ec '^\[(skip|ignore)\]' "$o") $secs"
  done <"$out/files"
}

total() { awk -v c="$2" '{s += $c} END {print s + 0}' "$1"; }

# write_doc: the report, from the per-file counts of both servers.
write_doc() {
  local io=$WORK/iocache redis=$WORK/redis
  counts "$io" >"$WORK/io.counts"
  if [ -f "$redis/files" ]; then counts "$redis" >"$WORK/redis.counts"; else : >"$WORK/redis.counts"; fi
  {
    echo "# Redis $REDIS_VERSION's test suite against iocache-server"
    echo
    echo "Written by \`make redis-testsuite\` (hack/redis-testsuite.sh) on $(date -u '+%Y-%m-%d %H:%M UTC'). Do not edit the"
    echo "figures by hand; the text outside them is in the script."
    echo
    echo "- Suite: the \`tests/\` of redis_$REDIS_VERSION.orig.tar.gz from Debian's source package (sha256 ${REDIS_SHA256:0:16}...),"
    echo "  tclsh $(echo 'puts [info patchlevel]' | tclsh)."
    echo "- iocache: \`$("$IOCACHE_BIN" --version)\` (${BUILT_FROM:-$IOCACHE_BIN})."
    echo "- redis: \`$(redis-server --version)\`."
    echo "- Each server started with \`--port P --bind 127.0.0.1 --dir TMP --save \"\" --enable-protected-configs yes"
    echo "  --enable-debug-command yes --enable-module-command yes\` (iocache also \`--metrics-port 0\`), as Redis's CI"
    echo "  starts the server of its external run; then, file by file, \`TERM=dumb ./runtest --host 127.0.0.1 --port P"
    echo "  --tags -slow --single FILE\`. An exception aborts the rest of its file (one per file at most)."
    echo "- Machine: $(nproc) CPUs. Whole run: ${ELAPSED}s."
    echo
    echo "## Totals"
    echo
    echo "| server | passed | failed | exceptions (files aborted) | skipped | seconds |"
    echo "|---|---:|---:|---:|---:|---:|"
    local w c
    for w in iocache redis; do
      c=$WORK/${w/iocache/io}.counts
      [ -s "$c" ] || continue
      echo "| $w | $(total "$c" 2) | $(total "$c" 3) | $(total "$c" 4) | $(total "$c" 5) | $(cat "$WORK/$w/seconds" 2>/dev/null) |"
    done
    if [ -s "$WORK/redis.counts" ]; then
      echo
      echo "iocache passes $(total "$WORK/io.counts" 2) tests where redis-server passes $(total "$WORK/redis.counts" 2)" \
        "($(awk -v a="$(total "$WORK/io.counts" 2)" -v b="$(total "$WORK/redis.counts" 2)" 'BEGIN {printf "%.1f", b ? 100 * a / b : 0}')%)."
    fi
    echo
    echo "## Per file"
    echo
    echo "passed / failed / exception for each server; a file both servers skip entirely is left out."
    echo
    echo "| file | iocache | redis | iocache's exception |"
    echo "|---|---|---|---|"
    local f ok err exc skip secs rline why
    while read -r f ok err exc skip secs; do
      rline=$(awk -v f="$f" '$1 == f {print $2 " / " $3 " / " $4; s = $2 + $3 + $4} END {if (s == 0 && NR) print "-"}' "$WORK/redis.counts" | head -1)
      [ "$ok$err$exc" = 000 ] && [ "${rline:-0 / 0 / 0}" = "0 / 0 / 0" ] && continue
      why=$(sed -n 's/^\[exception\]: Executing test client: //p' "$io/${f//\//_}.out" | head -1 | cut -c1-120 | sed 's/|/\\|/g')
      if [ -f "$io/timeouts" ] && grep -qx "$f" "$io/timeouts"; then
        why="ran past FILE_TIMEOUT=${FILE_TIMEOUT}s, stopped. $why"
      fi
      echo "| $f | $ok / $err / $exc | ${rline:--} | ${why} |"
    done <"$WORK/io.counts"
    echo
    echo "## iocache's failing tests"
    echo
    echo "Tests that fail on iocache; those redis-server fails too, on this machine, are marked (also on redis)."
    echo
    local line name
    while read -r f _; do
      while IFS= read -r line; do
        name=${line#\[err\]: }
        name=${name% in tests/*}
        if [ -f "$redis/${f//\//_}.out" ] && grep -qF -- "$line" "$redis/${f//\//_}.out"; then
          echo "- $f: $name (also on redis)"
        else
          echo "- $f: $name"
        fi
      done < <(grep '^\[err\]' "$io/${f//\//_}.out")
    done <"$WORK/io.counts"
    if [ -f "$ROOT/hack/redis-testsuite-known.md" ]; then
      echo
      cat "$ROOT/hack/redis-testsuite-known.md"
    fi
  } >"$DOC.tmp"
  mv "$DOC.tmp" "$DOC"
}

# Whatever happens, the server and the watchdog under test go with the script, and so do the
# runs' outputs once the run passed (a failed run keeps them, and says where, for a look).
PID="" WPID="" RPID="" WORK=""
cleanup() {
  local rc=$?
  [ -z "$RPID" ] || kill "$RPID" 2>/dev/null || true
  [ -z "$WPID" ] || kill "$WPID" 2>/dev/null || true
  [ -z "$PID" ] || stop_server
  if [ -n "$WORK" ]; then
    if [ "$rc" = 0 ]; then rm -rf "$WORK"; else log "the runs' outputs are kept in $WORK"; fi
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

T0=$(date +%s)
ensure_tools
fetch_suite
if [ -z "${FILES:-}" ]; then
  # The suite's own list of files, in its order (test_helper.tcl's all_tests).
  FILES=$(sed -n '/^set ::all_tests {/,/^}/p' "$SUITE/tests/test_helper.tcl" | sed '1d;$d' | tr -d ' ')
fi
if [ -z "${IOCACHE_BIN:-}" ]; then
  log "building bin/iocache-server"
  go build -o bin/iocache-server ./server/cmd/iocache-server
  IOCACHE_BIN=$ROOT/bin/iocache-server
  # What was built, for the report (the checkout may move on while the suite runs).
  BUILT_FROM="commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- server || echo ', with local changes')"
fi
WORK=$(mktemp -d)
log "outputs in $WORK"
for s in $SERVERS; do
  run_suite "$s" "$WORK/$s"
done
ELAPSED=$(($(date +%s) - T0))
if [ -f "$WORK/iocache/files" ]; then
  if [ "$DOC" != /dev/null ]; then write_doc && log "wrote $DOC"; fi
  passed=$(counts "$WORK/iocache" | awk '{s += $2} END {print s + 0}')
  log "iocache passed $passed tests (floor $PASS_FLOOR); whole run ${ELAPSED}s"
  [ "$passed" -ge "$PASS_FLOOR" ] || die "iocache passed $passed tests, fewer than PASS_FLOOR=$PASS_FLOOR"
fi
for s in $SERVERS; do
  if [ -s "$WORK/$s/timeouts" ]; then
    die "$s: test files that ran past FILE_TIMEOUT=${FILE_TIMEOUT}s (a client waited for a reply that never came): $(tr '\n' ' ' <"$WORK/$s/timeouts")"
  fi
done
