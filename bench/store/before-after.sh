#!/usr/bin/env bash
# Before and after on PostgreSQL in one run: an older revision (unpacked with `git archive` into a scratch
# directory sharing this tree's node_modules) and this working tree each run a Twinbox on a schema of its
# own; bench/store/run.ts measures them in alternating rounds (bench/store/api.ts `before`). The older
# tree's server code runs; the measurement is this tree's.
# Run: bash bench/store/before-after.sh <old-rev> [run.ts flags: --route POST --rounds 3 --duration 5 ...]
set -euo pipefail
rev=${1:?usage: bench/store/before-after.sh <old-rev> [run.ts flags]}
shift
here=$(cd "$(dirname "$0")/../.." && pwd)
old=$(bash "$here/bench/unpack-rev.sh" "$rev")
trap 'rm -rf "$old"' EXIT
echo "before: $(git -C "$here" rev-parse --short "$rev"), after: this tree; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
cd "$here" && npx tsx bench/store/run.ts --api-only --before "$old" "$@"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
