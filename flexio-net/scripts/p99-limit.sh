#!/bin/bash
# p99 of a 4 KiB request, idle and while 4 wrk clients download a large
# file, as `flexio bench --scenario server` measures it (wrk -t1 -c1 probe,
# wrk -t2 -c4 load), for: flexio serve, nginx (if installed), and the
# least any server can do (minimal-4k-server.c: a fixed 4 KiB answer from
# memory, a thread per connection) probed while flexio serve carries the
# same four downloads.
# Usage: p99-limit.sh FLEXIO [SECONDS] [ROUNDS]   (needs wrk and cc)
set -u
FLEXIO=${1:?usage: p99-limit.sh FLEXIO [SECONDS] [ROUNDS]}; SECS=${2:-2}; ROUNDS=${3:-3}
DIR=${DIR:-/dev/shm/p99-limit}; LARGE=${LARGE:-1G}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$DIR/www" "$DIR/nginx"
[ -f "$DIR/www/large" ] || head -c "$LARGE" /dev/urandom > "$DIR/www/large" 2>/dev/null || dd if=/dev/urandom of="$DIR/www/large" bs=1M count=1024 status=none
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
p99() { wrk --latency -t1 -c1 -d${SECS}s --timeout=10s "$1" | awk '$1=="99%"{print $2}'; }
loaded() { # $1 probe URL, $2 load URL
  wrk -t2 -c4 -d$((SECS + 1))s --timeout=120s "$2" >/dev/null & local L=$!
  sleep 0.4; p99 "$1"; wait $L; }
for r in $(seq "$ROUNDS"); do
  echo "round $r: flexio idle $(p99 http://127.0.0.1:18091/probe-4k) loaded $(loaded http://127.0.0.1:18091/probe-4k http://127.0.0.1:18091/large)"
  [ -n "$NP" ] && echo "round $r: nginx  idle $(p99 http://127.0.0.1:18092/probe-4k) loaded $(loaded http://127.0.0.1:18092/probe-4k http://127.0.0.1:18092/large)"
  echo "round $r: minimal idle $(p99 http://127.0.0.1:18093/) loaded $(loaded http://127.0.0.1:18093/ http://127.0.0.1:18091/large) (load on flexio)"
done
kill $FP $MP $NP 2>/dev/null; wait 2>/dev/null
