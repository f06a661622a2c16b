#!/usr/bin/env bash
# Runs the control-plane tests (go test -v with the arguments given) and, when they fail, ends
# with each failed test's own lines.
#
#   hack/integration.sh -timeout 30m ./test/integration/...
#
# The suite's in-process API server, controller manager and scheduler log to the same stream as
# the tests, tens of thousands of lines, and CI keeps only the end of a run's output: a failure's
# "--- FAIL" and its t.Error lines would sit minutes above the end, cut off.
set -uo pipefail

log=$(mktemp)
trap 'rm -f "$log"' EXIT
"${GO:-go}" test -count=1 -v "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
  echo
  echo "=== what failed (the whole output is above)"
  awk '
    /^=== (RUN|CONT|NAME) / { cur = $3; next }
    /^ *--- FAIL: / { print; printf "%s", lines[$3]; next }
    /^panic: / { panicking = 40 }
    panicking > 0 { print; panicking--; next }
    /^ +/ { lines[cur] = lines[cur] $0 "\n" }
  ' "$log"
fi
exit "$rc"
