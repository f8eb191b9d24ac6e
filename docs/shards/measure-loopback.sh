#!/bin/bash
# Process-level timings for shards, mirrors and chain on loopback (hyperfine).
# Usage: docs/shards/measure-loopback.sh [WORKDIR]   (about 2 minutes)
# FLEXIO names the binary (default target/release/flexio). Not a target
# check: loopback, one machine, each link's rate set by flexio itself.
set -eu
F=$(realpath "${FLEXIO:-target/release/flexio}")
W=${1:-/tmp/flexio-hosts}
mkdir -p "$W/src/tree"
cd "$W"
for i in 0 1 2 3 4 5 6 7; do
  [ -f src/tree/f$i ] || head -c $((16 << 20)) /dev/urandom > src/tree/f$i
done
cat src/tree/f? > src/one.bin
export FLEXIO_PROFILE=/nonexistent
start_serve() { # dir extra... ; prints base URL
  local out; out=$(mktemp); "$F" serve "$@" > "$out" & echo $! >> pids
  for _ in $(seq 50); do grep -q http "$out" && break; sleep 0.1; done
  grep -o 'http://[^ ]*' "$out" | head -1 | sed 's|/$||'
}
rm -f pids
trap 'kill $(cat pids) 2>/dev/null' EXIT
R=32M
S0=$(start_serve src)
echo "A: shards, each client at --rate $R, tree of 8 x 16 MiB"
hyperfine -N --warmup 1 --runs 5 --export-json A.json --prepare "rm -rf $W/d" \
  -n one-client "$F get $S0/tree/ $W/d --rate $R" \
  -n four-shards "bash -c 'for k in 0 1 2 3; do $F get $S0/tree/ $W/d --rate $R --shard \$k/4 >/dev/null & done; wait'" 2>&1 | grep -E "Time|Range|±|one-client|four-shards|faster" || true
echo "B: mirrors, each server --rate-total $R, one 128 MiB file"
M1=$(start_serve src --rate-total $R); M2=$(start_serve src --rate-total $R); M3=$(start_serve src --rate-total $R); M4=$(start_serve src --rate-total $R)
hyperfine -N --warmup 1 --runs 5 --export-json B.json --prepare "rm -f $W/one.bin" \
  -n one-server "$F get $M1/one.bin $W/one.bin --streams 4" \
  -n four-mirrors "$F get $M1/one.bin --mirror $M2/one.bin --mirror $M3/one.bin --mirror $M4/one.bin $W/one.bin --streams 2" 2>&1 | grep -E "Time|Range|one-server|four-mirrors|faster" || true
echo "C: 4 hosts, source --rate-total $R, one 128 MiB file: one transfer, chain of 4, naive fan-out to 4"
C0=$(start_serve src --rate-total $R)
cat > chain.sh <<EOS
#!/bin/bash
set -e
rm -rf $W/c; mkdir -p $W/c/{1,2,3,4}
$F get $C0/one.bin $W/c/1/one.bin --serve 127.0.0.1:18101 --linger 0.3s >/dev/null &
sleep 0.05
$F get http://127.0.0.1:18101/one.bin $W/c/2/one.bin --serve 127.0.0.1:18102 --linger 0.3s >/dev/null &
sleep 0.05
$F get http://127.0.0.1:18102/one.bin $W/c/3/one.bin --serve 127.0.0.1:18103 --linger 0.3s >/dev/null &
sleep 0.05
$F get http://127.0.0.1:18103/one.bin $W/c/4/one.bin >/dev/null
wait
cmp -s $W/c/4/one.bin $W/src/one.bin
EOS
cat > fanout.sh <<EOS
#!/bin/bash
set -e
rm -rf $W/c; mkdir -p $W/c/{1,2,3,4}
for k in 1 2 3 4; do $F get $C0/one.bin $W/c/\$k/one.bin >/dev/null & done
wait
EOS
chmod +x chain.sh fanout.sh
hyperfine -N --warmup 1 --runs 5 --export-json C.json --prepare "bash -c 'mkdir -p $W/c/1; rm -f $W/c/1/one.bin'" \
  -n one-transfer "$F get $C0/one.bin $W/c/1/one.bin" \
  -n chain-of-4 "$W/chain.sh" \
  -n fanout-4 "$W/fanout.sh" 2>&1 | grep -E "Time|Range|one-transfer|chain-of-4|fanout-4|faster" || true
