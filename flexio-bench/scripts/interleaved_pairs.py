#!/usr/bin/env python3
"""Whole-process wall time of commands run interleaved (A B C A B C ...).

    interleaved_pairs.py N 'CMD A' ['CMD B' ...] 'BASELINE'

Runs 20 warm-up rounds, then N rounds; prints each command's median and
minimum wall time and the median over rounds of its time divided by the
last command's time in the same round. Interleaving keeps a noisy
machine's drift out of the ratio, which back-to-back batches (hyperfine's
default) do not. stdout goes to /dev/null. WARMUP=N sets the warm-up
rounds (default 20). With PREP=PATH set, PATH is
removed before every run (a fresh destination each time).

Example (tmpfs):
    cd /dev/shm/x && head -c 4096 /dev/urandom > s4k
    interleaved_pairs.py 300 'target/release/flexio copy s4k d4k' 'cp s4k d4k'
"""
import os
import shlex
import statistics
import sys
import time

WARMUP_ROUNDS = int(os.environ.get("WARMUP", "20"))


def main():
    rounds = int(sys.argv[1])
    commands = [shlex.split(c) for c in sys.argv[2:]]
    prep = os.environ.get("PREP")
    devnull = os.open(os.devnull, os.O_WRONLY)

    def run(argv):
        if prep and os.path.lexists(prep):
            os.unlink(prep)
        started = time.perf_counter_ns()
        pid = os.posix_spawnp(
            argv[0], argv, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1)]
        )
        _, status = os.waitpid(pid, 0)
        elapsed = time.perf_counter_ns() - started
        if status != 0:
            sys.exit(f"{' '.join(argv)}: exit status {status}")
        return elapsed

    for _ in range(WARMUP_ROUNDS):
        for command in commands:
            run(command)
    times = [[] for _ in commands]
    for _ in range(rounds):
        for i, command in enumerate(commands):
            times[i].append(run(command))
    baseline = times[-1]
    for command, measured in zip(commands, times):
        ratio = statistics.median(a / b for a, b in zip(measured, baseline))
        print(
            f"{' '.join(command)[:60]:60} median {statistics.median(measured) / 1e6:8.3f} ms"
            f"  min {min(measured) / 1e6:8.3f} ms  ratio to last {ratio:.3f}"
        )


if __name__ == "__main__":
    main()
