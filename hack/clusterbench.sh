#!/usr/bin/env bash
# Throughput of a cluster of 1, 2 and 3 shards (one primary each), iocache-server in cluster
# mode (map pushed with CLUSTERMAP SET) against Debian's redis-server in cluster mode (slots
# added, nodes joined with CLUSTER MEET), side by side on this machine, interleaved rounds.
# redis-benchmark --cluster drives every primary (plain redis-benchmark for one shard: --cluster
# wants two nodes or more). All nodes share this machine's CPUs, so more
# shards do not add cores here: the figures are the per-shard cost; on a node per shard each
# shard would bring its own. Loopback only, free ports.
#
#   hack/clusterbench.sh [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
IOC=$(mktemp -d)/iocache-server
go build -o "$IOC" ./server/cmd/iocache-server
# A free port whose cluster bus port (redis-server: port + 10000) is free and valid too.
free_port() {
	python3 -c '
import socket
while True:
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]
    if p > 55000: continue
    b = socket.socket()
    try: b.bind(("127.0.0.1", p + 10000))
    except OSError: continue
    print(p); break'
}
run() { # kind shards
	local kind=$1 n=$2 bin=$IOC pids=() dir ports=() ids=() i
	[ "$kind" = redis-server ] && bin=redis-server
	dir=$(mktemp -d)
	for i in $(seq 0 $((n - 1))); do
		ports+=("$(free_port)")
		mkdir -p "$dir/$i"
		"$bin" --port "${ports[$i]}" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir/$i" --cluster-enabled yes >/dev/null 2>&1 &
		pids+=($!)
	done
	sleep 0.5
	for i in $(seq 0 $((n - 1))); do ids+=("$(redis-cli -p "${ports[$i]}" cluster myid)"); done
	if [ "$kind" = redis-server ]; then
		for i in $(seq 0 $((n - 1))); do
			redis-cli -p "${ports[$i]}" cluster addslotsrange $((i * 16384 / n)) $(((i + 1) * 16384 / n - 1)) >/dev/null
			[ "$i" -gt 0 ] && redis-cli -p "${ports[0]}" cluster meet 127.0.0.1 "${ports[$i]}" >/dev/null
		done
		for _ in $(seq 1 100); do
			ok=0
			for i in $(seq 0 $((n - 1))); do
				redis-cli -p "${ports[$i]}" cluster info | grep -q cluster_state:ok && ok=$((ok + 1))
			done
			[ "$ok" -eq "$n" ] && [ "$(redis-cli -p "${ports[0]}" cluster nodes | grep -c connected)" -eq "$n" ] && break
			sleep 0.2
		done
	else
		local map='{"epoch":1,"nodes":[' sep=''
		for i in $(seq 0 $((n - 1))); do
			map+="$sep{\"id\":\"${ids[$i]}\",\"ip\":\"127.0.0.1\",\"port\":${ports[$i]},\"slots\":[[$((i * 16384 / n)),$(((i + 1) * 16384 / n - 1))]]}"
			sep=,
		done
		map+=']}'
		for i in $(seq 0 $((n - 1))); do redis-cli -p "${ports[$i]}" clustermap set "$map" >/dev/null; done
	fi
	local out set get mode=--cluster
	[ "$n" -eq 1 ] && mode= # redis-benchmark --cluster wants two nodes or more; one serves every slot
	out=$(redis-benchmark $mode -p "${ports[0]}" -t set,get -n 2000000 -c 60 -P 16 -r 100000 -d 64 -q 2>/dev/null | tr '\r' '\n' || true)
	set=$(echo "$out" | grep -o 'SET: [0-9.]* requests per second' | tail -1 | cut -d' ' -f2)
	get=$(echo "$out" | grep -o 'GET: [0-9.]* requests per second' | tail -1 | cut -d' ' -f2)
	echo "$kind shards=$n: $set SET/s $get GET/s"
	kill "${pids[@]}" 2>/dev/null || true
	wait "${pids[@]}" 2>/dev/null || true
	rm -rf "$dir"
}
for _ in $(seq 1 "$ROUNDS"); do
	for n in 1 2 3; do
		run iocache-server "$n"
		run redis-server "$n"
	done
done
