#!/usr/bin/env python3
"""Times `flexio copy --via M SRC DST` as processes, rounds in rotating order,
fresh destination each run (removed untimed). Prints median and min-max per via
and each via's median ratio to the best fixed mechanism."""
import os, subprocess, sys, time, statistics
exe, d, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
vias = sys.argv[4].split(",")
extra = sys.argv[5:]  # e.g. --profile P
src = os.path.join(d, "src256")
if not os.path.exists(src) or os.path.getsize(src) != 256 << 20:
    with open(src, "wb") as f:
        for _ in range(256):
            f.write(os.urandom(1 << 20))
dst = os.path.join(d, "dst256")
times = {v: [] for v in vias}
def load():
    return open("/proc/loadavg").read().split()[0]
print("load before", load())
for r in range(rounds):
    order = vias[r % len(vias):] + vias[:r % len(vias)]
    if r % 2: order = order[::-1]
    for v in order:
        if os.path.exists(dst): os.unlink(dst)
        argv = [exe, "copy", "--via", v] + (extra if v == "auto" else []) + [src, dst]
        t = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        times[v].append(time.perf_counter() - t)
print("load after", load())
med = {v: statistics.median(ts) for v, ts in times.items()}
fixed = [v for v in vias if v != "auto"]
best = min(fixed, key=lambda v: med[v])
for v in vias:
    ts = times[v]
    print(f"{v:16} median {med[v]*1000:7.1f} ms  min {min(ts)*1000:7.1f}  max {max(ts)*1000:7.1f}  time/best {med[v]/med[best]:.3f}")
os.unlink(dst)
