#!/bin/bash
# The p99 of a 4 KiB GET while 8 clients each ask ?manifest of a different
# 1 GiB file serve has not hashed yet (a fresh server each round), and how
# long the manifests took. Extra arguments go to `flexio serve`
# (e.g. --hash-threads 4). Usage: manifest-probe.sh FLEXIO [SERVE ARGS...]
# (needs wrk and curl; DIR holds 8 GiB of files, made once).
B=${1:-flexio}; shift
DIR=${DIR:-/tmp/manifest-probe}
mkdir -p "$DIR"
for i in 0 1 2 3 4 5 6 7; do
  [ -f "$DIR/manifest-$i" ] || head -c 1G /dev/urandom > "$DIR/manifest-$i"
done
[ -f "$DIR/probe" ] || head -c 4096 /dev/urandom > "$DIR/probe"
cat "$DIR"/manifest-* > /dev/null   # page-cached: the CPU is measured, not the disk
PORT=39556
"$B" serve "$DIR" --listen 127.0.0.1:$PORT "$@" > /dev/null 2>&1 & SP=$!
# Interrupted, nothing stays: the server and the manifest clients go too.
trap 'kill $(jobs -p) 2>/dev/null' EXIT
sleep 0.3
# IDLE=1: the pool's threads at SCHED_IDLE (the docs' third row).
if [ "${IDLE:-0}" = 1 ]; then
  for t in /proc/$SP/task/*; do grep -q serve-offload "$t/comm" && chrt -i -p 0 "${t##*/}"; done
fi
start=$(date +%s.%N)
for i in 0 1 2 3 4 5 6 7; do curl -s -o /dev/null "http://127.0.0.1:$PORT/manifest-$i?manifest" & done
sleep 0.1
wrk -t1 -c1 -d2s --latency "http://127.0.0.1:$PORT/probe" | grep -E " 50%| 99%|Requests/sec" | tr -s ' ' | tr '\n' ' '
wait $(jobs -p | grep -v "^$SP$") 2>/dev/null
echo "manifests done in $(echo "$(date +%s.%N) - $start" | bc) s"
kill $SP; wait $SP 2>/dev/null
