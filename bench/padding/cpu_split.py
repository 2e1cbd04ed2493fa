#!/usr/bin/python3
"""bench/padding/cpu_split.py --gather_loop PATH [--payloads 1M,16M] [--reps 3] [--json FILE]

Which CPU does a skewed gather's work. Two Gloo ranks, pinned one per CPU
(rank r on the (r mod n)-th allowed CPU, as bench/padding --pin_cpus),
run bench/padding's known_counts call in a loop (//bench/peers:gather_loop
--counts: barrier; allgatherv with counts every rank knows; all_reduce of
one double) for these per-rank float64 counts, n = payload / 8:

  none              0, 0          the loop's fixed cost (barrier, all_reduce)
  equal             1.5n, 1.5n    the floor of `straggler`: the same total bytes
  straggler         n, 2n         bench/padding's straggler profile at W = 2
  short_tail_floor  0.75n, 0.75n  the floor of `short_tail`
  short_tail        n, 0.5n       bench/padding's short_tail profile at W = 2
  one_way           0, 2n         rank 1 only sends, rank 0 only receives

Each case runs twice (N and 2N iterations, N sized to about 1.5 s) and the
difference of the two, per iteration, is what one iteration costs each CPU
(from /proc/stat: busy = everything but idle and iowait; softirq apart),
free of start-up costs. Cases run interleaved, the order rotating per
repetition. `one_way` splits a byte's cost between the CPU that sends it
and the CPU that receives it; `straggler` against `equal` shows whether the
rank with the longer block makes its CPU the busiest, and `short_tail`
against `short_tail_floor` the same for the skew whose 1 MiB row misses
issue 19's target (there the longer block is rank 0's).

Needs 2 CPUs or more, and nothing else busy on them. --json writes
Google-Benchmark-shaped JSON for bench/tables.py. Exit 2 for bad usage, 1
when a run fails.
"""
import argparse
import datetime
import json
import os
import socket
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))
from peers import (git_commit, load1, loadavg_text, payload_bytes, payload_name,  # noqa: E402
                   tcp_congestion, write_json)

CASES = (("none", (0, 0)), ("equal", (1.5, 1.5)), ("straggler", (1, 2)),
         ("short_tail_floor", (0.75, 0.75)), ("short_tail", (1, 0.5)), ("one_way", (0, 2)))
USER_HZ = os.sysconf("SC_CLK_TCK")


def cpu_times(cpus):
    """{cpu: (busy jiffies, softirq jiffies)} from /proc/stat."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            name, *fields = line.split()
            if not name.startswith("cpu") or name == "cpu" or int(name[3:]) not in cpus:
                continue
            v = [int(x) for x in fields]
            # user nice system idle iowait irq softirq steal ...
            out[int(name[3:])] = (sum(v) - v[3] - v[4], v[6])
    return out


def run(gather_loop, counts, iters, cpus):
    """(rank 0's mean us per iteration, {cpu: (busy jiffies, softirq jiffies)})."""
    before = cpu_times(cpus)
    p = subprocess.run([gather_loop, "--world_size", "2", "--counts", ",".join(map(str, counts)),
                        "--iters", str(iters), "--pin_cpus"], capture_output=True, text=True)
    after = cpu_times(cpus)
    if p.returncode != 0:
        raise RuntimeError(f"gather_loop --counts {counts} failed ({p.returncode}): "
                           f"{p.stderr[-2000:]}")
    mean_us = json.loads(p.stdout.strip().splitlines()[-1])["mean_us"]
    return mean_us, {c: (after[c][0] - before[c][0], after[c][1] - before[c][1]) for c in cpus}


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    ap.add_argument("--gather_loop", required=True, help="path of //bench/peers:gather_loop")
    ap.add_argument("--payloads", default="1M,16M",
                    help="bytes of float64 per rank, comma-separated (K and M suffixes)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=1.5, help="length of the shorter run")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    try:
        payloads = [payload_bytes(x) for x in args.payloads.split(",")]
    except ValueError:
        payloads = []
    if not payloads or any(p < 16 or p % 16 or p > 32 << 20 for p in payloads) or \
            not 1 <= args.reps <= 20 or not 0.2 <= args.seconds <= 60:
        print("cpu_split: --payloads needs multiples of 16 bytes up to 32M (e.g. 1M,16M), "
              "--reps 1..20, --seconds 0.2..60", file=sys.stderr)
        return 2
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        print("cpu_split: needs 2 CPUs (one per rank); this process may use "
              f"{len(allowed)}", file=sys.stderr)
        return 2
    rank_cpu = [allowed[0], allowed[1]]  # gather_loop --pin_cpus: rank r on the r-th allowed
    load_start = loadavg_text()
    entries = []
    for payload in payloads:
        n = payload // 8
        plans = []
        for name, (f0, f1) in CASES:
            counts = (int(f0 * n), int(f1 * n))
            probe_us, _ = run(args.gather_loop, counts, 20, rank_cpu)
            plans.append((name, counts, max(50, int(args.seconds * 1e6 / max(probe_us, 1)))))
        for rep in range(args.reps):
            k = rep % len(plans)
            for name, counts, iters in plans[k:] + plans[:k]:
                _, short = run(args.gather_loop, counts, iters, rank_cpu)
                long_us, long = run(args.gather_loop, counts, 2 * iters, rank_cpu)
                per = {c: [(long[c][i] - short[c][i]) * 1e6 / USER_HZ / iters for i in (0, 1)]
                       for c in rank_cpu}
                entry = {
                    "name": f"cpu_split/W2/{payload_name(payload)}/{name}/rep:{rep}",
                    "run_type": "iteration", "iterations": 2 * iters, "real_time": long_us,
                    "cpu_time": 0.0, "time_unit": "us", "rep": rep, "bytes_per_rank": payload,
                    "count_rank0": counts[0], "count_rank1": counts[1],
                    "jiffies_per_run": min(long[c][0] for c in rank_cpu),
                    "load1": load1()}
                for r, c in enumerate(rank_cpu):
                    entry[f"rank{r}_cpu_busy_us"] = per[c][0]
                    entry[f"rank{r}_cpu_softirq_us"] = per[c][1]
                entries.append(entry)
                print(f"cpu_split: {payload_name(payload)} rep {rep + 1}/{args.reps} {name} "
                      f"{counts}: {long_us:.0f} us/iter wall; CPU busy rank 0 "
                      f"{entry['rank0_cpu_busy_us']:.0f} us (softirq "
                      f"{entry['rank0_cpu_softirq_us']:.0f}), rank 1 "
                      f"{entry['rank1_cpu_busy_us']:.0f} us (softirq "
                      f"{entry['rank1_cpu_softirq_us']:.0f}) (load {entry['load1']:.2f})",
                      file=sys.stderr)
    data = {"context": {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host_name": socket.gethostname(), "num_cpus": os.cpu_count() or 1,
        "ddp_tool": "bench/padding/cpu_split", "ddp_commit": git_commit(),
        "ddp_tcp_congestion": tcp_congestion(),
        "ddp_payloads": args.payloads,
        "ddp_reps": str(args.reps), "ddp_rank_cpus": ",".join(map(str, rank_cpu)),
        "ddp_user_hz": str(USER_HZ), "ddp_loadavg_start": load_start,
        "ddp_loadavg_end": loadavg_text()},
        "benchmarks": entries}
    write_json(data, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
