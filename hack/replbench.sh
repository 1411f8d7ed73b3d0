#!/usr/bin/env bash
# Primary throughput with 0, 1 and 2 replicas attached: iocache-server (primary and replicas)
# against Debian's redis-server (primary and replicas), side by side on this machine, three
# interleaved rounds. The replicas run on the same CPUs as the primary, so this measures what a
# write costs the whole set, as on a small node. Loopback only, free ports.
#
#   hack/replbench.sh [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
IOC=$(mktemp -d)/iocache-server
go build -o "$IOC" ./server/cmd/iocache-server
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
run() { # kind replicas
	local kind=$1 n=$2 bin=$IOC pids=() dir primary port
	[ "$kind" = redis-server ] && bin=redis-server
	dir=$(mktemp -d)
	primary=$(free_port)
	"$bin" --port "$primary" --bind 127.0.0.1 --save "" --dir "$dir" >/dev/null 2>&1 &
	pids+=($!)
	sleep 0.5
	for _ in $(seq 1 "$n"); do
		port=$(free_port)
		"$bin" --port "$port" --bind 127.0.0.1 --save "" --dir "$dir" --replicaof 127.0.0.1 "$primary" >/dev/null 2>&1 &
		pids+=($!)
	done
	for _ in $(seq 1 50); do
		[ "$(redis-cli -p "$primary" info replication | grep -c state=online)" -ge "$n" ] && break
		sleep 0.2
	done
	local rps
	rps=$(redis-benchmark -p "$primary" -t set -n 300000 -c 50 -P 16 -r 100000 -d 64 -q 2>/dev/null |
		grep -o '[0-9.]* requests per second' | head -1 | cut -d' ' -f1)
	echo "$kind replicas=$n: $rps SET/s"
	kill "${pids[@]}" 2>/dev/null || true
	wait "${pids[@]}" 2>/dev/null || true
	rm -rf "$dir"
}
for _ in $(seq 1 "$ROUNDS"); do
	for n in 0 1 2; do
		run redis-server "$n"
		run iocache "$n"
	done
done
rm -rf "$(dirname "$IOC")"
