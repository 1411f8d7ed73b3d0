#!/usr/bin/env bash
# Memory per key in cluster mode: the growth of the server's resident memory per string key
# (1,000,000 SETs of key:<n> to an 8-byte value, sent with redis-cli --pipe), iocache-server and
# Debian's redis-server, each standalone and as a one-node cluster serving every slot, side by
# side on this machine. Cluster mode costs iocache its slot index (8 bytes a key) and Redis its
# slot lists. Loopback only, free ports.
#
#   hack/clustermem.sh [keys]
set -euo pipefail
cd "$(dirname "$0")/.."
KEYS=${1:-1000000}
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
IOC=$work/iocache-server
go build -o "$IOC" ./server/cmd/iocache-server
awk -v n="$KEYS" 'BEGIN { for (i = 0; i < n; i++) { k = "key:" i; printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$8\r\nvvvvvvvv\r\n", length(k), k } }' >"$work/load"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
rss() { redis-cli -p "$1" info memory | tr -d '\r' | awk -F: '$1 == "used_memory_rss" { print $2 }'; }
run() { # kind cluster(yes|no)
	local kind=$1 mode=$2 bin=$IOC port dir before after
	[ "$kind" = redis-server ] && bin=redis-server
	port=$(free_port)
	dir=$(mktemp -d -p "$work")
	"$bin" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" --cluster-enabled "$mode" >/dev/null 2>&1 &
	pid=$!
	sleep 0.5
	if [ "$mode" = yes ]; then
		if [ "$kind" = redis-server ]; then
			redis-cli -p "$port" cluster addslotsrange 0 16383 >/dev/null
		else
			local id
			id=$(redis-cli -p "$port" cluster myid)
			redis-cli -p "$port" clustermap set "{\"epoch\":1,\"nodes\":[{\"id\":\"$id\",\"ip\":\"127.0.0.1\",\"port\":$port,\"slots\":[[0,16383]]}]}" >/dev/null
		fi
		for _ in $(seq 1 100); do
			redis-cli -p "$port" cluster info | grep -q cluster_state:ok && break
			sleep 0.1
		done
	fi
	before=$(rss "$port")
	redis-cli -p "$port" --pipe <"$work/load" >/dev/null
	sleep 1
	after=$(rss "$port")
	echo "$kind cluster-enabled=$mode: $(((after - before) / KEYS)) B/key ($(redis-cli -p "$port" dbsize) keys)"
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	pid=
}
for mode in no yes; do
	run iocache-server "$mode"
	run redis-server "$mode"
done
