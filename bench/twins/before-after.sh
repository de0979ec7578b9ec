#!/usr/bin/env bash
# Before and after in one run: bench/twins/ratio.ts of an older revision (unpacked with `git archive` into a
# scratch directory that shares this tree's node_modules) and of this working tree, twin by twin, the two
# taking turns at going first. Each row is still a ratio against the baseline measured in its own process;
# the turns only keep the two trees' rows apart by seconds, not minutes, on a machine whose load moves.
# Run: bash bench/twins/before-after.sh <old-rev> [twin ...]     (default: every twin in calls.ts)
set -euo pipefail
rev=${1:?usage: bench/twins/before-after.sh <old-rev> [twin ...]}
shift
here=$(cd "$(dirname "$0")/../.." && pwd)
old=$(bash "$here/bench/unpack-rev.sh" "$rev")
trap 'rm -rf "$old"' EXIT
# The same measurement on both sides: this tree's ratio.ts (its extra baseline and CPU columns) runs the old server code.
cp "$here/bench/twins/ratio.ts" "$old/bench/twins/ratio.ts"
twins=("$@")
if [ ${#twins[@]} -eq 0 ]; then
  twins=(github stripe slack resend twilio aws okta vercel mongoatlas google microsoft apple linear clerk)
fi
run() { # tree twin
  (cd "$1" && BENCH_TWINS_PART=ratio BENCH_RATIO_TWINS="$2" npx tsx bench/twins/run.ts 2>/dev/null | grep "^| $2 |" | tr '\n' ' ')
}
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
i=0
for twin in "${twins[@]}"; do
  if [ $((i % 2)) -eq 0 ]; then
    echo "before $(run "$old" "$twin")"
    echo "after  $(run "$here" "$twin")"
  else
    echo "after  $(run "$here" "$twin")"
    echo "before $(run "$old" "$twin")"
  fi
  echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
  i=$((i + 1))
done
