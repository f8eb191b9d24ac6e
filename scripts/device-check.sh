#!/usr/bin/env bash
# On a machine with an NVIDIA GPU, the binaries scripts/device-prepare.sh
# built: the device tests, which may not skip there (FLEXIO_TEST_DEVICE=1),
# then each injection mode at each size (TPIL's figures 2-5 on a GPU).
set -uo pipefail
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,pcie.link.gen.current,pcie.link.width.current --format=csv || true
FLEXIO_TEST_DEVICE=1 .device-bin/device_gpu --test-threads 1
status=$?
.device-bin/device_modes "${TMPDIR:-/tmp}"
exit $status
