#!/usr/bin/env bash
# Where the test suite's time goes: runs every test binary of the workspace
# alone (as `cargo test` does, one after another), then the doc tests, and
# prints each binary's wall seconds, slowest first, with each test's own
# time in OUT/NAME.log (libtest's --report-time, unlocked for a stable
# toolchain by RUSTC_BOOTSTRAP=1 in the test's environment only).
#
# Usage: scripts/test-times.sh [OUT]   (default OUT: target/test-times)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/test-times}
mkdir -p "$out"
cargo test --workspace --no-run --message-format=json 2>/dev/null |
  python3 -c '
import json, os, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["executable"], os.path.dirname(m["manifest_path"]), m["target"]["name"])
' >"$out/list"
: >"$out/summary"
while read -r exe dir name; do
  start=$(date +%s.%N)
  (cd "$dir" && CARGO_MANIFEST_DIR="$dir" RUSTC_BOOTSTRAP=1 "$exe" -Z unstable-options --report-time) \
    >"$out/$name.log" 2>&1
  rc=$?
  awk -v a="$start" -v b="$(date +%s.%N)" -v n="$name" -v rc="$rc" \
    'BEGIN { printf "%8.1f %s rc=%s\n", b - a, n, rc }' >>"$out/summary"
done <"$out/list"
start=$(date +%s)
cargo test --workspace --doc >"$out/doctests.log" 2>&1
rc=$?
printf '%8.1f %s rc=%s\n' "$(($(date +%s) - start))" doctests "$rc" >>"$out/summary"
sort -rn "$out/summary"
awk '{ total += $1 } END { printf "%8.1f in all\n", total }' "$out/summary"
