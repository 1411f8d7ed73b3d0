#!/usr/bin/env bash
# compare.sh runs Debian's redis-benchmark and iocache-bench against one redis-server with the same
# settings (50 clients, 256-byte values, 100000 random keys, SET then GET), round after round,
# alternating which tool goes first so neither always meets a fuller keyspace or a warmer server.
# It prints one line per run and the median ratio iocache-bench / redis-benchmark per setting.
# docs/bench.md reports its figures. Every run is bounded by its request count.
#
#   go build -o bin/iocache-bench ./server/cmd/iocache-bench && server/bench/compare.sh
#
# Environment: IB, RB, RS (the two tools and redis-server), PORT, ROUNDS (3), N1 and N16 (requests
# per test at pipeline 1 and 16), SETTINGS ("pipeline:threads ..."), SERVER_CPUS and CLIENT_CPUS
# (taskset lists to pin server and clients apart; empty leaves them unpinned), CLIENT_NICE (0; a
# positive value lets the server take the CPU first, so the client's own CPU cost matters less).
set -euo pipefail

IB=${IB:-bin/iocache-bench}
RB=${RB:-redis-benchmark}
RS=${RS:-redis-server}
RC=${RC:-redis-cli}
PORT=${PORT:-$((20000 + RANDOM % 20000))}
ROUNDS=${ROUNDS:-3}
N1=${N1:-100000}
N16=${N16:-1000000}
SETTINGS=${SETTINGS:-"1:1 16:1 1:2 16:2"}
SERVER_CPUS=${SERVER_CPUS:-}
CLIENT_CPUS=${CLIENT_CPUS:-}
CLIENT_NICE=${CLIENT_NICE:-0}

# pin CPUS CMD...: runs a client, pinned when CPUS is set, at nice CLIENT_NICE.
pin() {
	local cpus=$1
	shift
	if [ -n "$cpus" ]; then set -- taskset -c "$cpus" "$@"; fi
	nice -n "$CLIENT_NICE" "$@"
}

# Started directly, not through pin (a function runs in a subshell), so $! is the server itself and
# the trap stops it: taskset and the server exec, keeping the pid.
srv=("$RS" --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --loglevel warning)
if [ -n "$SERVER_CPUS" ]; then srv=(taskset -c "$SERVER_CPUS" "${srv[@]}"); fi
"${srv[@]}" >/dev/null 2>&1 &
server=$!
for _ in $(seq 100); do
	if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then break; fi
	sleep 0.05
done

ratios=$(mktemp)
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true; rm -f "$ratios"' EXIT

# served: the server's total_commands_processed, to check each tool's figure against what the
# server itself saw over the tool's whole run (process start to exit, so slightly lower).
served() { "$RC" -p "$PORT" INFO stats | tr -d '\r' | awk -F: '$1 == "total_commands_processed" { print $2 }'; }
now() { date +%s.%N; }

# timed VAR CMD...: runs CMD, stores its output in VAR and the server-side rate in VAR_served.
timed() {
	local var=$1 c0 t0 out
	shift
	c0=$(served) t0=$(now)
	out=$("$@")
	printf -v "$var" '%s' "$out"
	printf -v "${var}_served" '%s' "$(awk -v c="$(($(served) - c0 - 1))" -v t0="$t0" -v t1="$(now)" 'BEGIN { printf "%.0f", c / (t1 - t0) }')"
}

# both N A B: the rate over both tests from the per-test rates (each test sends N requests).
both() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.0f", 2 * n / (n / a + n / b) }'; }

# rps TOOL-OUTPUT TEST: the requests per second of one test from -q output.
rps() { tr '\r' '\n' <<<"$1" | awk -v t="$2:" '$1 == t { print $2 }' | tail -1; }

run_rb() {
	local p=$1 t=$2 n=$3 extra=()
	if [ "$t" -gt 1 ]; then extra=(--threads "$t"); fi
	pin "$CLIENT_CPUS" "$RB" -h 127.0.0.1 -p "$PORT" -q -t set,get -n "$n" -c 50 -d 256 -r 100000 -P "$p" "${extra[@]}"
}

run_ib() {
	local p=$1 t=$2 n=$3
	pin "$CLIENT_CPUS" "$IB" --host 127.0.0.1 --port "$PORT" -q --tests set,get --requests "$n" --clients 50 \
		--threads "$t" --pipeline "$p" --data-size 256 --keyspace 100000
}

echo "redis-server $("$RS" --version | awk '{print $3}'), $ROUNDS rounds, server CPUs '${SERVER_CPUS:-any}', client CPUs '${CLIENT_CPUS:-any}', client nice $CLIENT_NICE"
for s in $SETTINGS; do
	p=${s%%:*} t=${s##*:}
	n=$N1
	if [ "$p" -gt 1 ]; then n=$N16; fi
	for r in $(seq "$ROUNDS"); do
		if [ $((r % 2)) -eq 1 ]; then
			timed rb run_rb "$p" "$t" "$n"
			timed ib run_ib "$p" "$t" "$n"
		else
			timed ib run_ib "$p" "$t" "$n"
			timed rb run_rb "$p" "$t" "$n"
		fi
		for test in SET GET; do
			a=$(rps "$rb" $test) b=$(rps "$ib" $test)
			ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b / a }')
			echo "c50 P$p threads$t round $r $test: redis-benchmark $a iocache-bench $b ratio $ratio"
			echo "P$p-threads$t-$test $ratio" >>"$ratios"
		done
		echo "c50 P$p threads$t round $r server saw: redis-benchmark run $rb_served/s (tool says $(both "$n" "$(rps "$rb" SET)" "$(rps "$rb" GET)")/s)," \
			"iocache-bench run $ib_served/s (tool says $(both "$n" "$(rps "$ib" SET)" "$(rps "$ib" GET)")/s)"
	done
done
echo "median ratio iocache-bench / redis-benchmark:"
for key in $(awk '!seen[$1]++ { print $1 }' "$ratios"); do
	awk -v k="$key" '$1 == k { print $2 }' "$ratios" | sort -n |
		awk -v k="$key" '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "  c50 %s: %.3f (min %.3f, max %.3f, %d rounds)\n", k, m, v[1], v[NR], NR }'
done
