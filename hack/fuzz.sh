#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME each (make fuzz). `make test` already runs
# each target's seed corpus as a test; this searches beyond it. A failing input is written to
# the package's testdata/fuzz/<target>/ by go test, where the next `make test` replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME="${FUZZTIME:-30s}"
failed=0
count=0
while IFS=: read -r file _ decl; do
	target="${decl#func }"
	target="${target%%(*}"
	pkg="./$(dirname "$file")"
	count=$((count + 1))
	echo "== $pkg $target ($FUZZTIME)"
	if ! go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" 2>&1 | tail -n 3; then
		failed=$((failed + 1))
	fi
done < <(grep -rn --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]+\(' server hack controllers api 2>/dev/null | sort)

# The door search (server/engine/doors_test.go): hostile RESTORE and FUNCTION RESTORE payloads,
# scripts and primaries' syncs, generated from a new seed, each run against iocache-server and
# redis-server under the RSS and PING watchdog. `make test` runs 60 cases; this runs DOORS_CASES.
DOORS_CASES="${DOORS_CASES:-400}"
echo "== door search ($DOORS_CASES cases)"
doors=passed
if ! IOCACHE_DOORS_CASES="$DOORS_CASES" go test ./server/engine -run '^TestDoorsSearch$' -count=1 -v -timeout 120m 2>&1 | grep -v ': case [0-9]* ' | tail -n 12; then
	doors=failed
	failed=$((failed + 1))
fi
echo "fuzz: $count targets, ${FUZZTIME} each, and the door search ($DOORS_CASES cases, $doors): $failed failed"
[ "$failed" -eq 0 ]
