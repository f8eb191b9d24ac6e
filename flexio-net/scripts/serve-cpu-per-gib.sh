#!/bin/bash
# Server CPU for one large download: curl fetches a file from /dev/shm over
# loopback from each server in turn (A B A B ...), `perf stat` counts the
# server's task-clock and context switches over the download: every thread
# of the server process, and for nginx the master and its worker (perf -p
# is given each pid).
# Prints one line per run (with curl's own task-clock: on loopback the
# receive path's softirq work is charged to whichever side runs it, so a
# sender that never sleeps pays more of it) and the median server
# task-clock ms per GiB of each.
# Usage: serve-cpu-per-gib.sh RUNS FLEXIO [FLEXIO2 ...]   (NGINX=0 to skip
# nginx; SIZE=1G; needs perf, curl, nginx)
RUNS=${1:-5}; shift
DIR=${DIR:-/dev/shm/srvbench}; SIZE=${SIZE:-1G}
mkdir -p "$DIR"; [ -f "$DIR/big" ] || head -c "$SIZE" /dev/urandom > "$DIR/big"
SCRATCH=$(mktemp -d); PORT=39581
cat > "$SCRATCH/nginx.conf" <<NGX
daemon off; user root; worker_processes 1; pid $SCRATCH/nginx.pid; error_log $SCRATCH/error.log;
events { worker_connections 1024; }
http { access_log off; sendfile on; tcp_nopush on;
  client_body_temp_path $SCRATCH/b; proxy_temp_path $SCRATCH/p; fastcgi_temp_path $SCRATCH/f;
  uwsgi_temp_path $SCRATCH/u; scgi_temp_path $SCRATCH/s;
  server { listen 127.0.0.1:$PORT; root $DIR; } }
NGX
servers=("$@"); [ "${NGINX:-1}" = 1 ] && servers+=(nginx)
one() { # server -> "task-clock-ms context-switches seconds"
  if [ "$1" = nginx ]; then nginx -c "$SCRATCH/nginx.conf" & SP=$!; else "$1" serve "$DIR" --listen 127.0.0.1:$PORT >/dev/null 2>&1 & SP=$!; fi
  for _ in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:$PORT/ 2>/dev/null && break; sleep 0.05; done
  pids=$(echo $SP $(pgrep -P $SP) | tr ' ' ,)
  perf stat -x, -e task-clock,context-switches -p "$pids" -o "$SCRATCH/perf" &
  PP=$!; sleep 0.2
  t=$(perf stat -x, -e task-clock -o "$SCRATCH/client" curl -s -o /dev/null -w "%{time_total}" http://127.0.0.1:$PORT/big)
  sleep 0.1; kill -INT $PP; wait $PP 2>/dev/null
  kill $SP; wait $SP 2>/dev/null
  echo "$(awk -F, '/task-clock/{printf "%.1f ", $1} /context-switches/{printf "%d ", $1}' "$SCRATCH/perf")$t $(awk -F, '/task-clock/{printf "%.1f", $1}' "$SCRATCH/client")"
}
declare -A all
for run in $(seq "$RUNS"); do
  for s in "${servers[@]}"; do
    r=$(one "$s"); echo "run $run $(basename "$s"): server task-clock ms, server context switches, s, curl task-clock ms: $r"
    all[$s]+="$(echo "$r" | cut -d' ' -f1) "
  done
done
gib=$(numfmt --from=iec "$SIZE" | awk '{print $1/1073741824}')
for s in "${servers[@]}"; do
  echo "$(basename "$s"): median server CPU $(echo ${all[$s]} | tr ' ' '\n' | sort -n | awk -v g="$gib" '{a[NR]=$1} END{printf "%.1f ms/GiB (min %.1f, max %.1f) over %d runs", a[int((NR+1)/2)]/g, a[1]/g, a[NR]/g, NR}')"
done
rm -rf "$SCRATCH"
