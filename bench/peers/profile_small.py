#!/usr/bin/python3
"""bench/peers/profile_small.py --gather_loop PATH [--world_sizes 2,4] [--payloads 1K,16M]
    [--reps 3] [--json FILE]

Where a gather's time goes, ours and PyTorch's, on the same Gloo. Each side
runs the same loop on W ranks -- barrier; all_gather of the payload per
rank; all_reduce of one double, one timed iteration of bench/padding's
floor_allgather -- under `perf stat`, twice (N and 2N iterations; N is
--iters at 1 KiB and shrinks in proportion to the payload, at least 30), so
that the difference is per iteration and free of start-up costs:

  ours_normal   //bench/peers:gather_loop --sched normal (SCHED_OTHER)
  ours_batch    //bench/peers:gather_loop --sched batch (SCHED_BATCH)
  bare_normal   the same loop on Gloo's own collectives, no Comm layer
  bare_batch    (gather_loop --engine gloo), the two scheduling classes
  torch_normal  torch.distributed gloo, as PyTorch runs
  torch_batch   the same, under SCHED_BATCH

Per iteration (summed over every process of the run): wall time of rank
0's loop, CPU time, context switches, page faults, and the number of
epoll_wait and writev calls. Gloo's loop thread calls epoll_wait once per wake-up; when it
finds the connection's mutex held (try-lock) it goes straight back to a
level-triggered epoll_wait that fires at once, so epoll_wait calls far
above the writev count are the loop thread spinning. Sides run interleaved
(every repetition runs each side once, the order rotating).

Needs `perf` with syscall tracepoints (root or perf_event_paranoid <= 1);
without torch the torch sides are skipped. --json writes Google-Benchmark-
shaped JSON for bench/tables.py. Exit 2 for bad usage, 1 when a run fails.
"""
import argparse
import datetime
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import time

from peers import (git_commit, load1, loadavg_text, payload_bytes, payload_name,  # the same folder
                   tcp_congestion, write_json)

EVENTS = ("task-clock", "context-switches", "page-faults", "syscalls:sys_enter_epoll_wait",
          "syscalls:sys_enter_writev")


def torch_rank(rank, w, port, iters, count, sched, queue):
    if sched == "batch":
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=w)
    x = torch.ones(count, dtype=torch.float64)
    out = [torch.empty(count, dtype=torch.float64) for _ in range(w)]
    t = torch.zeros(1, dtype=torch.float64)

    def step():
        dist.barrier()
        dist.all_gather(out, x)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)

    for _ in range(20):
        step()
    t0 = time.perf_counter()
    for _ in range(iters):
        step()
    if rank == 0:
        queue.put((time.perf_counter() - t0) / max(iters, 1) * 1e6)
    dist.destroy_process_group()


def torch_child(w, iters, count, sched):
    """The torch side as its own process tree, so perf stat can wrap it."""
    import torch.multiprocessing as mp
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=torch_rank, args=(r, w, port, iters, count, sched, queue))
             for r in range(w)]
    for p in procs:
        p.start()
    mean_us = queue.get(timeout=600)
    for p in procs:
        p.join(timeout=60)
    if any(p.exitcode != 0 for p in procs):
        return 1
    print(json.dumps({"mean_us": mean_us}))
    return 0


def perf_run(cmd):
    """(rank 0's mean us per iteration, {event: count}) of one run."""
    with tempfile.NamedTemporaryFile(mode="r", suffix=".csv") as stats:
        p = subprocess.run(["perf", "stat", "-x,", "-o", stats.name,
                            "-e", ",".join(EVENTS), "--"] + cmd,
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr[-2000:]}")
        counts = {}
        for line in stats.read().splitlines():
            parts = line.split(",")
            if len(parts) > 2 and parts[2] in EVENTS:
                counts[parts[2]] = float(parts[0]) if parts[0] not in ("", "<not counted>",
                                                                        "<not supported>") \
                    else math.nan
    mean_us = json.loads(p.stdout.strip().splitlines()[-1])["mean_us"]
    return mean_us, counts


def command(side, w, iters, count, gather_loop):
    who, sched = side.split("_")
    if who in ("ours", "bare"):
        return [gather_loop, "--world_size", str(w), "--iters", str(iters), "--count",
                str(count), "--sched", sched, "--engine", "comm" if who == "ours" else "gloo"]
    return [sys.executable, os.path.abspath(__file__), "--torch_child", str(w), str(iters),
            str(count), sched]


def main(argv):
    if argv[:1] == ["--torch_child"]:
        return torch_child(int(argv[1]), int(argv[2]), int(argv[3]), argv[4])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    ap.add_argument("--gather_loop", required=True, help="path of //bench/peers:gather_loop")
    ap.add_argument("--world_sizes", default="2,4")
    ap.add_argument("--payloads", default="1K,16M",
                    help="bytes of float64 per rank, comma-separated (K and M suffixes)")
    ap.add_argument("--iters", type=int, default=2000,
                    help="N at 1 KiB (the runs do N and 2N; larger payloads fewer, at least 30)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    try:
        worlds = [int(x) for x in args.world_sizes.split(",")]
    except ValueError:
        worlds = []
    try:
        payloads = [payload_bytes(x) for x in args.payloads.split(",")]
    except ValueError:
        payloads = []
    if not worlds or any(not 1 <= w <= 16 for w in worlds) or args.iters < 1 or \
            not 1 <= args.reps <= 20 or not payloads or \
            any(p < 8 or p % 8 or p > 64 << 20 for p in payloads):
        print("profile_small: --world_sizes needs values in 1..16, --payloads multiples of 8 "
              "bytes up to 64M (e.g. 1K,16M), --iters >= 1, --reps 1..20", file=sys.stderr)
        return 2
    sides = ["ours_normal", "ours_batch", "bare_normal", "bare_batch"]
    try:
        import torch  # noqa: F401
        sides += ["torch_normal", "torch_batch"]
    except ImportError:
        print("profile_small: no torch here; profiling our side only", file=sys.stderr)
    load_start = loadavg_text()
    entries = []
    for w in worlds:
        for payload in payloads:
            count = payload // 8
            iters = max(30, args.iters * 1024 // max(payload, 1024))
            for rep in range(args.reps):
                k = rep % len(sides)
                for side in sides[k:] + sides[:k]:
                    short_us, short = perf_run(command(side, w, iters, count, args.gather_loop))
                    long_us, long = perf_run(command(side, w, 2 * iters, count,
                                                     args.gather_loop))
                    per = {e: (long[e] - short[e]) / iters for e in EVENTS}
                    entry = {
                        "name": f"profile/W{w}/{payload_name(payload)}/{side}/rep:{rep}",
                        "run_type": "iteration", "iterations": 2 * iters, "real_time": long_us,
                        "cpu_time": 0.0, "time_unit": "us", "W": w, "rep": rep,
                        "bytes_per_rank": payload,
                        "cpu_us_per_iter": per["task-clock"] * 1e3,  # perf reports ms
                        "context_switches_per_iter": per["context-switches"],
                        "page_faults_per_iter": per["page-faults"],
                        "epoll_wait_per_iter": per["syscalls:sys_enter_epoll_wait"],
                        "writev_per_iter": per["syscalls:sys_enter_writev"]}
                    entry["load1"] = load1()
                    entries.append(entry)
                    print(f"profile_small: W={w} {payload_name(payload)} rep {rep + 1}/"
                          f"{args.reps} {side}: {long_us:.0f} us/iter wall, "
                          f"{entry['cpu_us_per_iter']:.0f} us CPU, "
                          f"{entry['page_faults_per_iter']:.0f} page faults, "
                          f"{entry['epoll_wait_per_iter']:.0f} epoll_wait, "
                          f"{entry['writev_per_iter']:.1f} writev (load {entry['load1']:.2f})",
                          file=sys.stderr)
    load_end = loadavg_text()
    cpus = os.cpu_count() or 1
    data = {"context": {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host_name": socket.gethostname(), "num_cpus": cpus, "ddp_tool": "bench/peers/profile",
        "ddp_commit": git_commit(),
        "ddp_world_sizes": args.world_sizes, "ddp_payloads": args.payloads,
        "ddp_reps": str(args.reps),
        "ddp_iters": str(args.iters), "ddp_loadavg_start": load_start,
        "ddp_tcp_congestion": tcp_congestion(),
        "ddp_loadavg_end": load_end,
        "ddp_oversubscribed": ", ".join(f"W={w}: {'yes' if w > cpus else 'no'}" for w in worlds)},
        "benchmarks": entries}
    write_json(data, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
