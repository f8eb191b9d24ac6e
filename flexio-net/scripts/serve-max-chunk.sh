#!/bin/bash
# Measures serve's --max-chunk: 4 clients download a 512 MiB file (sparse,
# so the disk is not measured) while a 5th fetches 4 KiB 30 times; prints
# the 4 KiB p50/p99 latency and the big downloads' total throughput.
# Usage: serve-max-chunk.sh FLEXIO [CHUNKS...]  (needs curl and bc)
B=${1:-flexio}; shift
DIR=${DIR:-/tmp/mcsrv}
mkdir -p "$DIR"; [ -f "$DIR/big" ] || truncate -s 512M "$DIR/big"; [ -f "$DIR/small" ] || head -c 4096 /dev/urandom > "$DIR/small"
for chunk in "${@:-64K 256K 1M 4M 64M}"; do
  for c in $chunk; do
    "$B" serve "$DIR" --listen 127.0.0.1:39555 --workers 2 --max-chunk $c > /dev/null 2>&1 & SP=$!
    sleep 0.5
    start=$(date +%s.%N)
    for i in 1 2 3 4; do curl -s -o /dev/null http://127.0.0.1:39555/big & done
    sleep 0.1
    lat=$(for i in $(seq 30); do curl -s -o /dev/null -w "%{time_total}\n" http://127.0.0.1:39555/small; done | sort -n)
    wait $(jobs -p | grep -v "^$SP$") 2>/dev/null
    end=$(date +%s.%N)
    kill $SP; wait $SP 2>/dev/null
    p50=$(echo "$lat" | sed -n 15p); p99=$(echo "$lat" | tail -1)
    echo "max-chunk $c: 4KiB p50 ${p50}s p99(max of 30) ${p99}s; 4x512MiB in $(echo "$end - $start" | bc) s"
  done
done
