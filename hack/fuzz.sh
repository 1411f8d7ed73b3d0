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
echo "fuzz: $count targets, ${FUZZTIME} each, $failed failed"
[ "$failed" -eq 0 ]
