#!/usr/bin/env bash
# Host to host over loopback, indicative: one 1 GiB file fetched by
# `flexio get` (1 and 4 streams, with and without BLAKE3 verification) and
# by curl, from `flexio serve` and from nginx (sendfile on), beside iperf3 on
# the same loopback as the ceiling; a tree of 2000 files of 4 KiB fetched
# by `flexio get URL/tree/` against `curl URL/tree/?tar | tar x`; then the
# server's CPU seconds per GiB (flexio serve vs nginx, 5 fetches each).
#
#   bash flexio-net/scripts/measure-loopback.sh [SIZE_MiB] [RUNS]
#
# Needs hyperfine, curl, iperf3; nginx optional. Uses a temp dir on the
# file system of $TMPDIR (default /tmp); the file is cached, destinations are
# removed before each run (outside the timing).
set -euo pipefail
cd "$(dirname "$0")/../.."
size_mib=${1:-1024}
runs=${2:-5}
cargo build --release -q -p flexio-cli
flexio=$PWD/target/release/flexio
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/srv" "$work/out" "$work/nginx"
head -c "$((size_mib << 20))" /dev/urandom > "$work/srv/file"
cat "$work/srv/file" > /dev/null

"$flexio" serve "$work/srv" > "$work/serve.out" &
pids+=($!)
serve_pid=$!
sleep 0.5
url=$(grep -o 'http://[^ ]*' "$work/serve.out" | sed 's|/$||')

nginx_url=
if command -v nginx >/dev/null || [ -x /usr/sbin/nginx ]; then
  nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  chmod 755 "$work" "$work/srv"
  cat > "$work/nginx/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1;
pid $work/nginx/nginx.pid; error_log $work/nginx/error.log;
events { worker_connections 64; }
http { access_log off; sendfile on;
  client_body_temp_path $work/nginx/b; proxy_temp_path $work/nginx/p; fastcgi_temp_path $work/nginx/f;
  uwsgi_temp_path $work/nginx/u; scgi_temp_path $work/nginx/s;
  server { listen 127.0.0.1:$port; root $work/srv; } }
CONF
  "$nginx_bin" -p "$work/nginx" -e "$work/nginx/error.log" -c "$work/nginx/nginx.conf" &
  pids+=($!)
  nginx_pid=$!
  sleep 0.5
  nginx_url="http://127.0.0.1:$port"
else
  echo "nginx not installed: its rows are skipped (apt-get install nginx-light)"
fi

echo "== iperf3 on loopback (ceiling), ${size_mib} MiB"
iperf3 -s -1 -p 5299 > /dev/null 2>&1 &
sleep 0.3
iperf3 -c 127.0.0.1 -p 5299 -n "${size_mib}M" | grep receiver

prepare="rm -f $work/out/*"
commands=(
  "$flexio get $url/file $work/out/a --streams 1 --no-verify"
  "$flexio get $url/file $work/out/a --streams 4 --no-verify"
  "$flexio get $url/file $work/out/a --streams 4"
  "curl -s -o $work/out/c $url/file"
)
if [ -n "$nginx_url" ]; then
  commands+=("$flexio get $nginx_url/file $work/out/a --streams 4" "curl -s -o $work/out/c $nginx_url/file")
fi
hyperfine -N -w 1 -r "$runs" --prepare "$prepare" "${commands[@]}"

echo "== a tree of 2000 files of 4 KiB in 20 directories"
for d in $(seq 1 20); do
  mkdir -p "$work/srv/tree/d$d"
  for f in $(seq 1 100); do head -c 4096 /dev/urandom > "$work/srv/tree/d$d/f$f"; done
done
hyperfine -w 1 -r "$runs" --prepare "rm -rf $work/out/t $work/out/tt; mkdir -p $work/out/tt" \
  "$flexio get $url/tree/ $work/out/t --streams 1" \
  "$flexio get $url/tree/ $work/out/t --streams 4" \
  "curl -s '$url/tree/?tar' | tar x -C $work/out/tt"

cpu_seconds() { awk '{ printf "%.2f", ($14 + $15) / 100 }' "/proc/$1/stat"; }
server_cpu() {
  local pid=$1 base=$2 before after
  before=$(cpu_seconds "$pid")
  for _ in 1 2 3 4 5; do rm -f "$work/out/a"; "$flexio" get "$base/file" "$work/out/a" --streams 1 --no-verify > /dev/null; done
  after=$(cpu_seconds "$pid")
  echo "$after $before $size_mib" | awk '{ printf "%.3f CPU s per GiB\n", ($1 - $2) / (5 * $3 / 1024) }'
}
echo "== server CPU per GiB served (5 fetches, one stream)"
echo "flexio serve: $(server_cpu "$serve_pid" "$url")"
if [ -n "$nginx_url" ]; then echo "nginx:        $(server_cpu "$nginx_pid" "$nginx_url")"; fi
