#!/usr/bin/env bash
# The README runner, make test-e2e's last phase: runs every ```sh block of README.md on the local
# node, in order, as a user would type them into one terminal (what one block exports, the next
# sees), so that the README's commands cannot drift from what works. A block fails the run when any
# of its commands fails.
#
# An HTML comment on the line right before a block's fence changes how it runs:
#   <!-- readme-runner: skip: REASON -->        not run; REASON is printed, and there must be one
#   <!-- readme-runner: background port=N -->   started in the background (a server that runs until
#                                               stopped); the next block waits until 127.0.0.1:N
#                                               accepts connections
#   <!-- readme-runner: last -->                run after all the others (the teardown)
# Blocks in other languages (```yaml, ```text) are not commands and are not run.
#
# Everything the blocks start (make run, kubectl port-forward ... &) belongs to the runner's own
# session and is stopped, by that session's process group, when the runner ends.
#
#   hack/readme-run.sh [README.md]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

readme=${1:-README.md}
work=$(mktemp -d)
script=$work/readme.sh
trap 'rm -rf "$work"' EXIT

# Split the README into blocks: $work/NNN.sh holds a block's commands, $work/NNN.meta its line number
# and marker.
awk -v dir="$work" '
  /^<!-- readme-runner: .* -->$/ { marker = $0; marker_line = NR; next }
  !inblock && /^```sh$/ {
    inblock = 1; n++
    file = sprintf("%s/%03d.sh", dir, n)
    printf "%d\t%s\n", NR + 1, (marker_line == NR - 1 ? marker : "") > sprintf("%s/%03d.meta", dir, n)
    printf "" > file
    next
  }
  inblock && /^```$/ { inblock = 0; close(file); next }
  inblock { print > file }
' "$readme"

{
  echo 'set -euo pipefail'
  # wait_port waits for a background block's server, at most five minutes (make run builds first).
  echo 'wait_port() { for _ in $(seq 600); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.5; done; echo "readme-run: nothing listens on 127.0.0.1:$1" >&2; return 1; }'
} >"$script"
last=()
ran=0 skipped=0
for meta in "$work"/*.meta; do
  [ -e "$meta" ] || { echo "readme-run: no \`\`\`sh blocks in $readme" >&2; exit 1; }
  block=${meta%.meta}.sh
  IFS=$'\t' read -r line marker <"$meta"
  where="$readme:$line"
  mode=${marker#<!-- readme-runner: }
  mode=${mode% -->}
  case "$marker" in
    "")
      printf 'echo; echo "=== %s"; sed "s/^/  \\$ /" %q\n. %q\n' "$where" "$block" "$block" >>"$script"
      ran=$((ran + 1)) ;;
    *"readme-runner: skip: "?*)
      echo "readme-run: $where skipped: ${mode#skip: }"
      skipped=$((skipped + 1)) ;;
    *"readme-runner: background port="*)
      port=${mode#background port=}
      printf 'echo; echo "=== %s (in the background, until 127.0.0.1:%s answers)"; sed "s/^/  \\$ /" %q\n( . %q ) &\nwait_port %s\n' \
        "$where" "$port" "$block" "$block" "$port" >>"$script"
      ran=$((ran + 1)) ;;
    *"readme-runner: last -->")
      last+=("$where" "$block") ;;
    *)
      echo "readme-run: $where: unknown marker $marker (skip: REASON, background port=N, last)" >&2
      exit 2 ;;
  esac
done
for ((i = 0; i < ${#last[@]}; i += 2)); do
  printf 'echo; echo "=== %s (last)"; sed "s/^/  \\$ /" %q\n. %q\n' "${last[i]}" "${last[i + 1]}" "${last[i + 1]}" >>"$script"
  ran=$((ran + 1))
done
echo "readme-run: running $ran blocks of $readme ($skipped skipped, each with its reason above)"

# A session of its own: its process group is everything the blocks started.
setsid bash "$script" &
session=$!
rc=0
wait "$session" || rc=$?
kill -TERM -- "-$session" 2>/dev/null || true
for _ in $(seq 50); do
  kill -0 -- "-$session" 2>/dev/null || break
  sleep 0.1
done
kill -KILL -- "-$session" 2>/dev/null || true
if [ $rc != 0 ]; then
  echo "readme-run: FAIL: a command of $readme failed (exit $rc); see the block above" >&2
  exit $rc
fi
echo "readme-run: PASS: every runnable block of $readme worked as printed"
