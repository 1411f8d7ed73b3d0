#!/usr/bin/env bash
# make verify: fails when the generators or gofmt would change a file. Generated files (CRDs, RBAC,
# deepcopy, the chart's copies of both, the Grafana dashboards) are committed exactly as
# `make manifests generate fmt dashboards` writes them; `make test` regenerates them before testing,
# so only this check, run first in CI on a fresh clone, can catch a hand edit or a forgotten
# regeneration. On a working tree with changes of your own it compares the tree before and after,
# so only what the generators change counts.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

state() { git status --porcelain=v1 --untracked-files=all; git diff; }

before=$(state)
make --no-print-directory manifests generate fmt dashboards >/dev/null
after=$(state)
if [ "$before" != "$after" ]; then
  echo "verify: FAIL: make manifests generate fmt dashboards changed the tree; commit what they generate:" >&2
  diff <(echo "$before") <(echo "$after") >&2 || true
  exit 1
fi
echo "verify: generated files, gofmt and dashboards are as the generators write them"
