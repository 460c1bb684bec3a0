#!/usr/bin/env bash
# Is this change slower? Builds another git ref beside the working tree and runs `npm run bench`
# with both, in the same run (BENCH_BEFORE): read the row `before`, whose geometric mean of the
# per-round CPU ratios (product / before) comes with a 95 % interval. An interval that lies wholly
# above 1.00 is a cost this change adds; one that holds 1.00 is a difference the run cannot see.
#
#   npm run bench:against -- main          # or any ref: HEAD~1, a tag, a commit
#
# Defaults: get-1k, 30 rounds of 2 s (about 5 minutes); BENCH_* variables override them
# (bench/README.md). The other build lives in a temporary worktree, removed at the end.
set -euo pipefail
ref="${1:-}"
if [ -z "$ref" ]; then
  echo "usage: npm run bench:against -- <git ref>   (e.g. main, HEAD~1)" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
commit=$(git rev-parse --verify --quiet "$ref^{commit}") || { echo "bench:against: '$ref' is not a commit of this repository" >&2; exit 2; }
other=$(mktemp -d "${TMPDIR:-/tmp}/tap-bench-against-XXXXXX")
cleanup() { git -C "$root" worktree remove --force "$other" >/dev/null 2>&1 || rm -rf "$other"; }
trap cleanup EXIT
git worktree add --detach --quiet "$other" "$commit"
# The other build's own dependencies when its lockfile differs (a package added or dropped since):
# this tree's node_modules would not build it.
if git -C "$root" diff --quiet "$commit" -- package-lock.json; then
  ln -s "$root/node_modules" "$other/node_modules"
else
  echo "bench:against: $ref has other dependencies; installing them in $other"
  (cd "$other" && npm ci --ignore-scripts --no-audit --no-fund --silent)
fi
echo "bench:against: building $ref ($(git rev-parse --short "$commit")) in $other"
(cd "$other" && npm run build --silent)
npm run build --silent
BENCH_BEFORE="$other/dist/main.js" \
  BENCH_SCENARIOS="${BENCH_SCENARIOS:-get-1k}" \
  BENCH_ROUNDS="${BENCH_ROUNDS:-30}" \
  BENCH_DURATION_S="${BENCH_DURATION_S:-2}" \
  node bench/run.js
