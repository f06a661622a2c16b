#!/usr/bin/env bash
# Runs each fuzz target (package:Function) for a -fuzztime budget.
#
#   hack/fuzz.sh BUDGET TARGET...
#
# BUDGET is what go test's -fuzztime takes: a count of executions ("3000x") or a duration ("2m").
# make test uses counts. A duration races Go's fuzz coordinator at its deadline (golang/go#75804,
# fixed in Go 1.27; this project builds with 1.26): when the deadline fires while a worker is
# between inputs, the target fails with a bare "context deadline exceeded" and writes no failing
# input. A count has no deadline to race. For a duration run, a failure is that race only when
# the output says exactly that and no failing input was written; everything else fails.
set -uo pipefail

budget=$1
shift

status=0
for target in "$@"; do
  pkg=${target%%:*}
  fn=${target##*:}
  echo "fuzz $target for $budget"
  corpus="$pkg/testdata/fuzz/$fn"
  before=$(ls "$corpus" 2>/dev/null | sort)
  out=$(mktemp)
  "${GO:-go}" test -run '^$' -fuzz "^${fn}\$" -fuzztime "$budget" "$pkg" 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  after=$(ls "$corpus" 2>/dev/null | sort)
  if [ "$rc" -ne 0 ]; then
    if [[ $budget != *x ]] && [ "$before" = "$after" ] &&
      ! grep -q 'Failing input written' "$out" &&
      [ "$(grep -c -E '^\s+context deadline exceeded$' "$out")" -eq 1 ] &&
      [ "$(grep -c -E '^\s{4}\S' "$out")" -eq 1 ]; then
      echo "fuzz $target: stopped by the -fuzztime deadline race (golang/go#75804), no failing input: not a finding"
    else
      echo "fuzz $target: FAILED"
      status=1
    fi
  fi
  rm -f "$out"
done
exit $status
