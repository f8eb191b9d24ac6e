#!/usr/bin/env bash
# Builds, here, what the GPU check runs there (the device machine has no
# Rust): the device tests and TPIL's modes table, release builds, into
# .device-bin/ (ignored by git), which a device run carries.
#
# Usage: scripts/device-prepare.sh, then on the device machine, with
# .device-bin carried: bash scripts/device-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .device-bin
grep -qx '/.device-bin/' .git/info/exclude 2>/dev/null || echo '/.device-bin/' >> .git/info/exclude
# Each build's JSON messages name the executable it made, wherever the
# target directory is.
executable() {
  python3 -c 'import json, sys
name = sys.argv[1]
print(next(m["executable"] for m in map(json.loads, sys.stdin)
           if m.get("executable") and m["target"]["name"] == name))' "$1"
}
tests=$(cargo test --release -p flexio --test device_gpu --no-run --message-format=json | executable device_gpu)
modes=$(cargo build --release -p flexio --example device_modes --message-format=json | executable device_modes)
cp "$tests" .device-bin/device_gpu
cp "$modes" .device-bin/device_modes
ls -la .device-bin
