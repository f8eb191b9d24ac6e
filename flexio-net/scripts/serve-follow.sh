#!/bin/bash
# Requests/s and p99 of nginx, `flexio serve --no-follow-clients` and
# `flexio serve` (workers following their clients' CPU), all three
# listening at once and measured in turn, ROUNDS rounds of `wrk -t2
# -cCLIENTS -d2s` on one 4 KiB file. Usage: serve-follow.sh FLEXIO
# [CLIENTS] [ROUNDS] (needs wrk and nginx). One line per round:
#   nginx   floating   following   (each k requests/s / p99)
B=$1; C=${2:-4}; ROUNDS=${3:-10}
DIR=${DIR:-/tmp/serve-follow}; mkdir -p "$DIR/ng"
[ -f "$DIR/f4k" ] || head -c 4096 /dev/urandom > "$DIR/f4k"
printf 'worker_processes auto; daemon off; pid %s/ng/pid; error_log %s/ng/err;\nevents { worker_connections 4096; }\nhttp { access_log off; sendfile on; tcp_nopush on; keepalive_requests 1000000;\n  server { listen 127.0.0.1:39601; root %s; } }\n' "$DIR" "$DIR" "$DIR" > "$DIR/ng/conf"
nginx -c "$DIR/ng/conf" & NP=$!
"$B" serve "$DIR" --no-follow-clients --listen 127.0.0.1:39602 --max-connections 4096 > /dev/null 2>&1 & FP=$!
"$B" serve "$DIR" --listen 127.0.0.1:39603 --max-connections 4096 > /dev/null 2>&1 & GP=$!
# Interrupted, no server stays listening.
trap 'kill $NP $FP $GP 2>/dev/null; wait $NP $FP $GP 2>/dev/null' EXIT
sleep 0.5
for _ in $(seq "$ROUNDS"); do
  line=""
  for port in 39601 39602 39603; do
    out=$(wrk -t2 -c"$C" -d2s --latency "http://127.0.0.1:$port/f4k")
    rate=$(awk '/Requests\/sec/ {printf "%.0fk", $2 / 1000}' <<< "$out")
    p99=$(awk '$1 == "99%" {print $2}' <<< "$out")
    line="$line  $rate/$p99"
  done
  echo "$line"
done
