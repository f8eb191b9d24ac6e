#!/bin/bash
# p99 of a 4 KiB request, idle and while 4 wrk clients download a large
# file, as `flexio bench --scenario server` measures it (probe: wrk -t1
# -c1, one request outstanding, so it measures latency, not queueing;
# load: wrk -t2 -c4 on the large file, started 0.4 s before the probe and
# outlasting it), for three servers:
#   flexio  flexio serve FLEXIO
#   nginx   nginx, sendfile on, a worker per CPU (when installed)
#   minimal minimal-4k-server.c: a fixed 4 KiB answer from memory, a
#           thread per connection; probed while flexio serve carries the
#           same four downloads: the least any server can do on this
#           machine, i.e. the floor of the loaded/idle ratio.
# Prints each round, then the medians over rounds and loaded/idle.
# Usage: p99-limit.sh FLEXIO [SECONDS] [ROUNDS]   (needs wrk and cc)
set -u
FLEXIO=${1:?usage: p99-limit.sh FLEXIO [SECONDS] [ROUNDS]}; SECS=${2:-2}; ROUNDS=${3:-5}
DIR=${DIR:-/dev/shm/p99-limit}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$DIR/www" "$DIR/nginx"
[ -f "$DIR/www/large" ] || head -c 1G /dev/urandom > "$DIR/www/large"
[ -f "$DIR/www/probe-4k" ] || head -c 4096 /dev/urandom > "$DIR/www/probe-4k"
chmod -R a+rX "$DIR"
cc -O2 -pthread -o "$DIR/minimal" "$HERE/minimal-4k-server.c" || exit 1
"$FLEXIO" serve "$DIR/www" --listen 127.0.0.1:18091 --max-connections 4096 >/dev/null 2>&1 & FP=$!
"$DIR/minimal" 18093 & MP=$!
NP=
if command -v nginx >/dev/null; then
  cat > "$DIR/nginx/nginx.conf" <<CONF
worker_processes auto; pid $DIR/nginx/nginx.pid; daemon off; user root;
events { worker_connections 4096; }
http { access_log off; sendfile on; tcp_nopush on; keepalive_requests 1000000;
  server { listen 127.0.0.1:18092; root $DIR/www; } }
CONF
  nginx -p "$DIR/nginx" -e "$DIR/nginx/error.log" -c "$DIR/nginx/nginx.conf" & NP=$!
fi
sleep 1
# wrk's p99 in microseconds.
p99() {
  wrk --latency -t1 -c1 -d"${SECS}s" --timeout=10s "$1" | awk '$1=="99%"{v=$2;
    if (v ~ /us$/) print v+0; else if (v ~ /ms$/) print v*1000; else print v*1e6}'
}
loaded() { # $1 probe URL, $2 load URL
  wrk -t2 -c4 -d$((SECS + 1))s --timeout=120s "$2" >/dev/null & local L=$!
  sleep 0.4; p99 "$1"; wait $L; }
LOG=$(mktemp)
for r in $(seq "$ROUNDS"); do
  # Interleaved: the order of the servers alternates from round to round.
  order="flexio nginx minimal"; [ $((r % 2)) = 0 ] && order="minimal nginx flexio"
  for s in $order; do
    case $s in
      flexio) u=http://127.0.0.1:18091/probe-4k; l=http://127.0.0.1:18091/large ;;
      nginx) [ -n "$NP" ] || continue; u=http://127.0.0.1:18092/probe-4k; l=http://127.0.0.1:18092/large ;;
      minimal) u=http://127.0.0.1:18093/; l=http://127.0.0.1:18091/large ;;
    esac
    echo "round $r $s idle_us $(p99 "$u") loaded_us $(loaded "$u" "$l")" | tee -a "$LOG"
  done
done
# The median of the numbers on stdin.
median() { sort -n | awk '{v[NR]=$1} END {if (NR) print NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
echo "medians over $ROUNDS rounds (p99 of a 4 KiB request, ms):"
for s in flexio nginx minimal; do
  idle=$(awk -v s="$s" '$3==s{print $5}' "$LOG" | median)
  load=$(awk -v s="$s" '$3==s{print $7}' "$LOG" | median)
  [ -n "$idle" ] && awk -v s="$s" -v i="$idle" -v l="$load" \
    'BEGIN{printf "  %-8s idle %8.3f  loaded %8.3f  loaded/idle %6.1fx\n", s, i/1e3, l/1e3, l/i}'
done
rm -f "$LOG"
kill $FP $MP $NP 2>/dev/null; wait 2>/dev/null
