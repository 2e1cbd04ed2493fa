#!/usr/bin/python3
"""bench/peers/torch_norm_split.py [--reps 5] [--iters 50] [--json FILE]

Where PyTorch's time in the batch_norm and group_norm rows of bench/peers
goes: how much is the ATen kernels themselves and how much is the cost of
calling them from Python through the module and autograd.

One process, one thread (`torch.set_num_threads(1)`, as the peers ranks),
SCHED_BATCH (as our ranks), the nine shapes of bench/peers (x of N x C x 8 x 8,
C in {16, 64, 256}, N in {2, 8, 32}, float32). Per shape, two sides:

  module  what the peers rows time: `nn.BatchNorm2d(C)` / `nn.GroupNorm(8, C)`,
          forward, then `.backward(dy)` (autograd builds and runs the graph)
  native  the same kernels called directly, no autograd:
          aten::native_batch_norm + aten::native_batch_norm_backward, or
          aten::native_group_norm + aten::native_group_norm_backward

native / module is the kernels' share of the module's time; the rest is
Python, the dispatcher, autograd and allocation. The sides run interleaved
(A B, B A, ...) for --reps repetitions of 3 warm-up + --iters timed calls;
each cell is the median over repetitions with the min and max. The JSON
(Google-Benchmark-shaped: `real_time` = module, `native_us`, `native_share`)
records torch's version and its build configuration line "CPU capability
usage" (which vector kernels ATen dispatched to) and the optimisation flag
it was built with. Exit 2 for bad usage; without torch, a message and exit 0.
"""
import argparse
import datetime
import os
import re
import socket
import sys
import time

from peers import CHANNELS, GROUPS, HW, NS, git_commit, loadavg_text, write_json  # the same folder


def build_facts(torch):
    """What ATen dispatches to and how it was compiled, from its own config."""
    config = torch.__config__.show()
    capability = re.search(r"CPU capability usage: (\S+)", config)
    flags = re.search(r"CXX_FLAGS=([^,]*)", config)
    opt = sorted(set(re.findall(r"(?<!\S)-O\d", flags.group(1)))) if flags else []
    return (capability.group(1) if capability else "unknown"), " ".join(opt) or "unknown"


def sides(torch, norm, c, n, gen):
    x = torch.randn(n, c, HW, HW, generator=gen)
    dy = torch.randn(n, c, HW, HW, generator=gen)
    weight, bias = torch.ones(c), torch.zeros(c)
    xg = x.clone().requires_grad_()
    if norm == "batch_norm":
        module = torch.nn.BatchNorm2d(c)
        running_mean, running_var = torch.zeros(c), torch.ones(c)

        def native():
            y, mean, invstd = torch.ops.aten.native_batch_norm(
                x, weight, bias, running_mean, running_var, True, 0.1, 1e-5)
            torch.ops.aten.native_batch_norm_backward(
                dy, x, weight, running_mean, running_var, mean, invstd, True, 1e-5,
                [True, True, True])
    else:
        module = torch.nn.GroupNorm(GROUPS, c)

        def native():
            y, mean, rstd = torch.ops.aten.native_group_norm(
                x, weight, bias, n, c, HW * HW, GROUPS, 1e-5)
            torch.ops.aten.native_group_norm_backward(
                dy, x, mean, rstd, weight, n, c, HW * HW, GROUPS, [True, True, True])

    def step():
        xg.grad = None
        module(xg).backward(dy)

    return {"module": step, "native": native}


def timed(fn, iters, warmup=3):
    for _ in range(warmup):
        fn()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    return (time.perf_counter() - t0) / iters


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    ap.add_argument("--reps", type=int, default=5, help="interleaved repetitions (1..50)")
    ap.add_argument("--iters", type=int, default=50, help="timed calls per side and rep")
    ap.add_argument("--json", help="write the record here (default: stdout)")
    args = ap.parse_args(argv)
    if not 1 <= args.reps <= 50 or not 1 <= args.iters <= 100000:
        print("torch_norm_split: --reps needs 1..50 and --iters 1..100000", file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:
        print("torch_norm_split: no torch here (tools/setup.sh --dev installs it); skipped",
              file=sys.stderr)
        return 0
    os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    torch.set_num_threads(1)
    capability, opt = build_facts(torch)
    context = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host_name": socket.gethostname(), "num_cpus": os.cpu_count() or 1,
        "ddp_tool": "bench/peers/torch_norm_split", "ddp_commit": git_commit(),
        "ddp_torch": torch.__version__,
        "ddp_torch_cpu_capability": capability, "ddp_torch_opt": opt,
        "ddp_reps": str(args.reps), "ddp_iters": str(args.iters),
        "ddp_loadavg_start": loadavg_text()}
    gen = torch.Generator().manual_seed(1234)
    entries = []
    for norm in ("batch_norm", "group_norm"):
        for c in CHANNELS:
            for n in NS:
                fns = sides(torch, norm, c, n, gen)
                got = {"module": [], "native": []}
                for rep in range(args.reps):
                    order = ["module", "native"] if rep % 2 == 0 else ["native", "module"]
                    for side in order:
                        got[side].append(timed(fns[side], args.iters))
                for rep in range(args.reps):
                    module_s, native_s = got["module"][rep], got["native"][rep]
                    entries.append({
                        "name": f"torch_split/{norm}/C:{c}/N:{n}/rep:{rep}",
                        "run_type": "iteration", "iterations": args.iters,
                        "real_time": module_s * 1e6, "cpu_time": 0.0, "time_unit": "us",
                        "native_us": native_s * 1e6, "native_share": native_s / module_s,
                        "rep": rep})
                print(f"torch_norm_split: {norm} C={c} N={n}: module "
                      f"{min(got['module']) * 1e6:.1f} us, native "
                      f"{min(got['native']) * 1e6:.1f} us (best of {args.reps})",
                      file=sys.stderr)
    context["ddp_loadavg_end"] = loadavg_text()
    write_json({"context": context, "benchmarks": entries}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
