#!/usr/bin/env bash
# npm test (after its pretest step: scripts/test-tools.sh, then the build): the type check, the
# linter, the test run, and the shedding tests (test/integration/memory.test.ts) alone, last, as
# docs/development.md explains. Every step runs and reports whatever the ones before it did; the
# run ends with one line a step and exits 1 when any failed. A failed type check or lint is
# printed again above those lines, where a reader of the output's tail sees it (vitest prints its
# own failures at the end of its run).
set -uo pipefail
cd "$(dirname "$0")/.."

trap 'echo "test: interrupted" >&2; exit 130' INT TERM
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

names=()
results=()
# step NAME COMMAND...: runs COMMAND; with TEST_KEEP=1 in front, its output is kept for the summary.
step() {
  local name=$1 keep=false started=$SECONDS status
  shift
  if [ "$1" = TEST_KEEP=1 ]; then
    keep=true
    shift
  fi
  echo
  echo "test: === $name: $* ==="
  if [ "$keep" = true ]; then
    "$@" 2>&1 | tee "$logs/${#names[@]}.log"
    status=${PIPESTATUS[0]}
  else
    "$@"
    status=$?
  fi
  names+=("$name")
  if [ "$status" -eq 0 ]; then
    results+=("passed in $((SECONDS - started)) s")
  else
    results+=("FAILED (exit $status) after $((SECONDS - started)) s")
  fi
}

step 'type check' TEST_KEEP=1 npm run --silent typecheck
step 'lint' TEST_KEEP=1 npm run --silent lint
step 'tests' vitest run --exclude test/integration/memory.test.ts
step 'shedding tests, alone' vitest run test/integration/memory.test.ts

failed=0
for i in "${!names[@]}"; do
  case "${results[$i]}" in FAILED*) ;; *) continue ;; esac
  failed=1
  if [ -s "$logs/$i.log" ]; then
    echo
    echo "test: === what the ${names[$i]} said (its last 30 lines) ==="
    sed 's/\x1b\[[0-9;]*m//g' "$logs/$i.log" | tail -n 30
  fi
done
echo
for i in "${!names[@]}"; do printf 'test: %-22s %s\n' "${names[$i]}" "${results[$i]}"; done
if [ "$failed" -ne 0 ]; then
  echo "test: npm test failed" >&2
  exit 1
fi
echo "test: npm test passed"
