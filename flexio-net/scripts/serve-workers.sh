#!/bin/bash
# Requests/s and p99 of `flexio serve` with each worker count given, then of
# nginx (a worker per CPU, sendfile, tcp_nopush, no access log), alternating:
# wrk -t2 -d4s against one file. Usage: serve-workers.sh FLEXIO SIZE CLIENTS
# tls|plain [WORKERS...]  (needs wrk and nginx; TLS is flexio's self-signed
# certificate, so nginx is measured plain only: use `flexio bench --scenario
# server --with-tls` for TLS beside nginx).
B=$1; SIZE=$2; C=$3; MODE=$4; shift 4
# Interrupted, no server stays listening.
trap 'kill $(jobs -p) 2>/dev/null' EXIT
DIR=${DIR:-/tmp/serve-workers}; mkdir -p "$DIR/ng"
[ -f "$DIR/f-$SIZE" ] || head -c "$SIZE" /dev/urandom > "$DIR/f-$SIZE"
for w in "${@:-2 4 8}" nginx; do
  for w in $w; do
    PORT=39557
    if [ "$w" = nginx ]; then
      [ "$MODE" = plain ] || continue
      printf 'worker_processes auto; daemon off; pid %s/ng/pid; error_log %s/ng/err;\nevents { worker_connections 4096; }\nhttp { access_log off; sendfile on; tcp_nopush on; keepalive_requests 1000000;\n  server { listen 127.0.0.1:%s; root %s; } }\n' "$DIR" "$DIR" $PORT "$DIR" > "$DIR/ng/conf"
      nginx -c "$DIR/ng/conf" & SP=$!
    else
      T=(); [ "$MODE" = tls ] && T=(--tls-self-signed)
      "$B" serve "$DIR" --listen 127.0.0.1:$PORT --max-connections 4096 --workers $w "${T[@]}" > /dev/null 2>&1 & SP=$!
    fi
    sleep 0.5
    S=http; [ "$MODE" = tls ] && [ "$w" != nginx ] && S=https
    echo -n "$w: "; wrk -t2 -c$C -d4s --latency "$S://127.0.0.1:$PORT/f-$SIZE" | grep -E " 99%|Requests/sec" | tr -s ' ' | tr '\n' ' '; echo
    kill $SP; wait $SP 2>/dev/null
  done
done
