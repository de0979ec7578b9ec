#!/usr/bin/env bash
# Unpacks revision $1 of this checkout (`git archive`) into a new scratch directory that shares this tree's
# node_modules, and prints the directory; the caller removes it. The before-after scripts use it.
set -euo pipefail
rev=${1:?usage: bench/unpack-rev.sh <rev>}
here=$(cd "$(dirname "$0")/.." && pwd)
old=$(mktemp -d /tmp/twinbox-before-XXXXXX)
git -C "$here" archive "$rev" | tar -x -C "$old"
ln -s "$here/node_modules" "$old/node_modules"
echo "$old"
