#!/usr/bin/env python3
"""Two flexio builds' `bench --quick` interleaved, cell by cell.

    compare_bench.py BEFORE_EXE AFTER_EXE ROUNDS OUT_DIR [bench args...]

Runs `EXE bench --quick --out OUT_DIR/<name>-<round>` for the two
executables in the order A B B A A B ... (so a drifting machine weighs on
both alike), ROUNDS times each, then prints, for every (cell, contender)
both measured, the median over rounds of each build's median throughput,
AFTER / BEFORE, and the noise: half the relative min-max spread of the
runs inside each report (the band the report itself shows), the wider of
the two builds. A row is SLOWER when AFTER falls below BEFORE by more
than that noise. Rows are matched on the raw runs' cell and contender,
so builds whose reports summarise differently still compare; rows only
one build has are listed at the end. Extra arguments go to both benches
(e.g. --dir /tmp).
"""
import json
import os
import statistics
import subprocess
import sys


def label(cell):
    """A cell's key in words: scenario, size, chunk, cache, flows, path."""
    return (
        f"{cell['scenario']} {cell['size']} B chunk {cell.get('chunk', 0)} "
        f"{cell.get('cache', '')} x{cell.get('flows', 1)} {cell.get('path', '')}"
    ).strip()


def summaries(path):
    """{(cell, contender): (median, min, max)} bytes per second over the
    counted runs (round 1 on) of results.json: taken from the raw runs, so
    that builds whose reports summarise differently compare alike."""
    with open(os.path.join(path, "results.json")) as f:
        results = json.load(f)
    rates = {}
    for run in results["runs"]:
        if run["round"] < 1 or run["wall_ns"] <= 0:
            continue
        contender = run["contender"]
        name = contender.get("name") or " ".join(
            [str(contender.get("mechanism", "?"))]
            + [
                f"{k}={v}"
                for k, v in sorted(contender.items())
                if k not in ("type", "mechanism", "builtin_table")
            ]
        )
        key = (label(run["cell"]), f"{contender['type']}: {name}")
        rates.setdefault(key, []).append(run["bytes"] / run["wall_ns"] * 1e9)
    return {
        key: (statistics.median(values), min(values), max(values))
        for key, values in rates.items()
    }


def main():
    before, after, rounds, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    extra = sys.argv[5:]
    builds = [("before", before), ("after", after)]
    measured = {"before": [], "after": []}
    for r in range(rounds):
        order = builds if r % 2 == 0 else list(reversed(builds))
        for name, exe in order:
            dest = os.path.join(out, f"{name}-{r}")
            print(f"round {r}: {name} -> {dest}", file=sys.stderr, flush=True)
            subprocess.run(
                [exe, "bench", "--quick", "--out", dest, *extra],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            measured[name].append(summaries(dest))
    keys = sorted(set(measured["before"][0]) & set(measured["after"][0]))
    only = sorted(set(measured["before"][0]) ^ set(measured["after"][0]))
    slower = 0
    print(f"{'cell':<52} {'contender':<40} {'before':>10} {'after':>10} {'after/before':>12} {'noise':>7}")
    for key in keys:
        med = {}
        noise = 0.0
        for name in ("before", "after"):
            rows = [m[key] for m in measured[name] if key in m]
            med[name] = statistics.median(r[0] for r in rows)
            for median, low, high in rows:
                if median > 0:
                    noise = max(noise, (high - low) / median / 2)
        ratio = med["after"] / med["before"] if med["before"] > 0 else float("nan")
        flag = ""
        if ratio < 1 - noise:
            flag = "  SLOWER"
            slower += 1
        print(
            f"{key[0][:52]:<52} {key[1][:40]:<40} {med['before'] / 2**20:>9.1f}M {med['after'] / 2**20:>9.1f}M {ratio:>12.3f} {noise:>6.1%}{flag}"
        )
    print(f"\n{len(keys)} rows compared, {slower} slower than the noise; {len(only)} rows in one build only")
    for key in only:
        print(f"  only in one: {key[0]} / {key[1]}")


if __name__ == "__main__":
    main()
