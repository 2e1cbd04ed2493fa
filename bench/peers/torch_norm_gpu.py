#!/usr/bin/python3
"""bench/peers/torch_norm_gpu.py --ours_binary PATH [--ours_lib_path DIRS]
[--shapes S] [--dtypes D] [--rows R] [--reps 5] [--batches 10]
[--batch_us 300] [--device 0] [--no_sync_bn] [--require_gpu]
[--ours_timeout 600] [--budget 0] [--json FILE] [-- FLAGS FOR OUR BINARY]

bench/norm_kernels' W = 1 device rows and PyTorch's counterpart of each, in
one run on one GPU with interleaved repetitions: for repetition k this
script runs our binary (PATH) for one repetition of every row (`--reps 1`,
the same --shapes, --dtypes, --rows, --batches, --batch_us, --device; its
JSON to a temporary file, its row names' `rep:0` renamed `rep:k`), then
times PyTorch's repetition k of the same rows in this process, the order
flipping every repetition (ours first in 0, 2, ..., PyTorch first in 1, 3,
...). One JSON holds both sides' entries per repetition, so each ours /
PyTorch ratio pairs two numbers of the same repetition;
bench/peers/norm_gpu_table.py makes the table from it.

  row              PyTorch
  bn_stats         torch.batch_norm_stats (mean, invstd)
  bn_finalize      torch.batch_norm_gather_stats_with_counts of one rank
                   (merges the one rank's statistics, invstd, running stats)
  bn_normalize     torch.batch_norm_elemt
  bn_grad_sums     torch.batch_norm_backward_reduce (sum_dy, sum_dy_xmu,
                   grad_weight, grad_bias)
  bn_input_grad    torch.batch_norm_backward_elemt
  gn_forward       aten::native_group_norm
  gn_backward      aten::native_group_norm_backward (dx, dgamma, dbeta)
  bn_fwd_bwd       nn.BatchNorm2d(C), training forward + autograd backward
                   (dx, dgamma, dbeta)
  sync_bn_fwd_bwd  SyncBatchNorm's autograd function
                   (torch.nn.modules._functions.SyncBatchNorm) at W = 1 on a
                   one-rank NCCL process group: its kernels, its all-gather
                   and all-reduce of one rank and the host synchronisation it
                   makes; nn.SyncBatchNorm itself falls back to F.batch_norm
                   at W = 1 (need_sync = world_size > 1), which the record
                   states as observed (ddp_torch_sync_bn_module_w1)
  gn_fwd_bwd       nn.GroupNorm(G, C), training forward + autograd backward

PyTorch times the rows our binary's JSON names (the shapes, dtypes, rows,
groups and each row's bytes come from it). The autograd rows take the
gradients with torch.autograd.grad (nothing accumulates between calls, as
after zero_grad(set_to_none=True)).

Timing, as bench/norm_kernels times ours: a batch is `calls` back-to-back
calls between two torch.cuda.Event on the current stream, its time / calls
the time per call; each timed batch is paired with a batch of
`dst.copy_(src)` of half the row's bytes (a cudaMemcpyAsync device-to-device
copy: it moves the row's bytes), the order alternating; one untimed batch of
each first. Calls per batch: two untimed batches of one call, a timed batch
of 3, then enough for --batch_us (set again in every repetition, as our
binary, a new process per repetition, sets its own). A repetition's number
is its median batch.

JSON (Google-Benchmark-shaped): `benchmarks` has one entry per side, row and
repetition (`side` ours or torch, `rep`; ours as our binary wrote it,
PyTorch's with `median_us`, `copy_us`, `bytes` (ours), `calls_per_batch`);
`repetitions` says per repetition which side went first and when each ran;
`context` has the torch, CUDA, cuDNN and NCCL versions, the GPU and
`ddp_pairing`; `ours_context` is our binary's context (its provenance,
commit, GPU) from repetition 0. Exit 2 for bad usage; without torch, or
with a torch that sees no GPU: one line saying so and exit 0 before our
binary runs, no JSON written (exit 1 instead with --require_gpu); 1 when a
row fails, or when a repetition could not be completed (our binary refused,
crashed or ran past --ours_timeout; the JSON then holds the repetitions
completed before it and says why it stopped in `ddp_stopped`).
"""
import argparse
import datetime
import math
import os
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from peers import git_commit, loadavg_text, write_json  # the same folder

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tables  # noqa: E402  bench/tables.py: its JSON reader

ROWS = ("bn_stats", "bn_finalize", "bn_normalize", "bn_grad_sums", "bn_input_grad",
        "gn_forward", "gn_backward", "bn_fwd_bwd", "sync_bn_fwd_bwd", "gn_fwd_bwd")
EPS = 1e-5
MOMENTUM = 0.1
MAX_CALLS = 100000
# What norm_gpu_table.py looks for: the file pairs the two sides per repetition.
PAIRING = ("one run: per repetition k, our binary (--reps 1, its rows renamed rep:k) and PyTorch's "
           "repetition k of the same rows, ours first in even repetitions, PyTorch first in odd ones")
# Our binary's flags this script sets itself: the same on both sides, one
# repetition per run, its JSON where this script reads it.
OWN_FLAGS = ("--reps", "--batches", "--batch_us", "--device", "--shapes", "--dtypes", "--rows",
             "--benchmark_out", "--benchmark_out_format", "--benchmark_repetitions",
             "--benchmark_list_tests", "--help")


class UsageError(Exception):
    pass


class Stop(Exception):
    """A repetition that cannot be completed: the run stops there."""


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    ap.add_argument("--ours_binary", metavar="PATH", help="bench/norm_kernels' binary (required): run once per repetition")
    ap.add_argument("--ours_lib_path", default="", metavar="DIRS",
                    help="folders (colon-separated) put before LD_LIBRARY_PATH for our binary only, "
                         "e.g. a bundle's lib/ and libnccl's folder; PyTorch's process keeps its own")
    ap.add_argument("--shapes", help="our binary's --shapes, NxCxHxW,... (default: its own)")
    ap.add_argument("--dtypes", help="our binary's --dtypes (default: its own, float,double)")
    ap.add_argument("--rows", help="our binary's --rows (default: its own, all)")
    ap.add_argument("--reps", type=int, default=5, help="interleaved repetitions (1..100)")
    ap.add_argument("--batches", type=int, default=10, help="timed batches per repetition (1..1000)")
    ap.add_argument("--batch_us", type=float, default=300.0,
                    help="target length of a batch of back-to-back calls, us (10..1e6)")
    ap.add_argument("--device", type=int, default=0, help="CUDA device index (0..1023)")
    ap.add_argument("--no_sync_bn", action="store_true",
                    help="PyTorch skips the sync_bn_fwd_bwd rows (they need a one-rank NCCL process group)")
    ap.add_argument("--require_gpu", action="store_true",
                    help="exit 1, not 0, when torch or its GPU is missing")
    ap.add_argument("--ours_timeout", type=float, default=600.0,
                    help="seconds one repetition of our binary may take (1..86400)")
    ap.add_argument("--budget", type=float, default=0.0,
                    help="seconds for the whole run: no repetition starts that the slowest so far would not "
                         "finish in time, so the record is written before an outer timeout (0: no limit)")
    ap.add_argument("--json", help="write the record here (default: stdout)")
    ap.add_argument("ours_args", nargs="*", metavar="-- FLAG",
                    help="more flags for our binary, after -- (e.g. --benchmark_filter=...)")
    args = ap.parse_args(argv)
    binary = args.ours_binary
    checks = ((binary is not None, "--ours_binary PATH is required (bench/norm_kernels' binary: "
                                   "this script runs it once per repetition)"),
              (binary is None or (os.path.isfile(binary) and os.access(binary, os.X_OK)),
               f"--ours_binary {binary}: not an executable file"),
              (1 <= args.reps <= 100, f"--reps {args.reps}: allowed 1..100"),
              (1 <= args.batches <= 1000, f"--batches {args.batches}: allowed 1..1000"),
              (10 <= args.batch_us <= 1e6, f"--batch_us {args.batch_us:g}: allowed 10..1e6"),
              (0 <= args.device <= 1023, f"--device {args.device}: allowed 0..1023"),
              (1 <= args.ours_timeout <= 86400, f"--ours_timeout {args.ours_timeout:g}: allowed 1..86400"),
              (0 <= args.budget <= 86400, f"--budget {args.budget:g}: allowed 0..86400"))
    for ok, message in checks:
        if not ok:
            raise UsageError(message)
    for a in args.ours_args:
        if a.split("=", 1)[0] in OWN_FLAGS:
            raise UsageError(f"{a} after --: this script sets {a.split('=', 1)[0]} of our binary itself "
                             f"(allowed after --: flags other than {', '.join(OWN_FLAGS)})")
    return args


def parse_name(name):
    """norm_kernels/float/bn_stats/N:2/C:16/HW:8x8/rep:0[/...] -> (dtype,
    row, (n, c, h, w), rep), or None for a name of another shape."""
    parts = name.split("/")
    if len(parts) < 7 or parts[0] != "norm_kernels" or not parts[6].startswith("rep:"):
        return None
    try:
        n, c = int(parts[3][2:]), int(parts[4][2:])
        h, w = (int(v) for v in parts[5][3:].split("x"))
        rep = int(parts[6][4:])
    except ValueError:
        return None
    if parts[1] not in ("float", "double") or parts[2] not in ROWS or \
            not parts[3].startswith("N:") or not parts[4].startswith("C:") or \
            not parts[5].startswith("HW:"):
        return None
    return parts[1], parts[2], (n, c, h, w), rep


# ------------------------------------------------------------- our side

def ours_command(args, out_path):
    """Our binary for one repetition of the rows, its JSON to out_path."""
    cmd = [args.ours_binary, "--reps", "1", "--batches", str(args.batches), "--batch_us", str(args.batch_us),
           "--device", str(args.device)]
    for flag in ("shapes", "dtypes", "rows"):
        if getattr(args, flag) is not None:
            cmd += [f"--{flag}", getattr(args, flag)]
    return cmd + list(args.ours_args) + [f"--benchmark_out={out_path}", "--benchmark_out_format=json"]


def ours_env(args):
    env = dict(os.environ)
    if args.ours_lib_path:
        old = env.get("LD_LIBRARY_PATH")
        env["LD_LIBRARY_PATH"] = args.ours_lib_path + (":" + old if old else "")
    return env


def ours_entries(data, rep, what):
    """Our binary's entries of its one repetition (rep:0), renamed rep:`rep`
    and marked side ours; Stop for a file that is not that."""
    out = []
    for b in data["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration":
            continue
        parsed = parse_name(b.get("name", ""))
        if parsed is None or parsed[3] != 0:
            raise Stop(f"{what}: {b.get('name')!r} is not repetition 0 of a bench/norm_kernels row")
        if not b.get("error_occurred") and ("bytes" not in b or "groups" not in b):
            raise Stop(f"{what}: {b['name']!r} has no bytes or groups counter")
        parts = b["name"].split("/")
        parts[6] = f"rep:{rep}"
        out.append(dict(b, name="/".join(parts), side="ours", rep=rep))
    if not out:
        raise Stop(f"{what}: no bench/norm_kernels rows")
    return out


def rows_from(entries):
    """[{dtype, row, shape, bytes, groups}] in the entries' order, one per
    row that ran (a failed entry has no bytes: PyTorch does not time it)."""
    rows = {}
    for b in entries:
        if b.get("error_occurred"):
            continue
        dtype, row, shape, _ = parse_name(b["name"])
        rows.setdefault((dtype, row, shape), {"dtype": dtype, "row": row, "shape": shape,
                                              "bytes": int(b["bytes"]), "groups": int(b["groups"])})
    return list(rows.values())


def run_ours(args, rep, folder, seen, log):
    """One repetition of our binary: (its context, its entries as rep)."""
    out = os.path.join(folder, f"ours_rep{rep}.json")
    what = f"repetition {rep}: our binary"
    try:
        p = subprocess.run(ours_command(args, out), env=ours_env(args), capture_output=True, text=True,
                           timeout=args.ours_timeout)
    except subprocess.TimeoutExpired:
        raise Stop(f"{what} ran past --ours_timeout {args.ours_timeout:g} s")
    except OSError as e:
        raise Stop(f"{what} did not start: {e.strerror}")
    said = [line for line in p.stderr.splitlines() if line.strip()]
    if p.returncode not in (0, 1) or not os.path.exists(out):
        raise Stop(f"{what} exited {p.returncode}{', no JSON' if not os.path.exists(out) else ''}: "
                   f"{said[-1] if said else 'nothing on stderr'}")
    for line in said:  # a failed row's message, the fastbuild warning: seen, once each
        if line not in seen:
            seen.add(line)
            log(f"torch_norm_gpu: our binary: {line}")
    try:
        data = tables.load(out)
    except tables.InputError as e:
        raise Stop(f"{what}: {e}")
    return data.get("context", {}), ours_entries(data, rep, what)


def same_rows(first, ctx, entries, rep):
    """Every repetition of our binary must run the rows of repetition 0 on
    the same GPU and commit: Stop otherwise."""
    for key in ("ddp_device", "ddp_commit", "ddp_gpu"):
        if ctx.get(key) != first["context"].get(key):
            raise Stop(f"repetition {rep}: our binary's {key} is {ctx.get(key)!r}, "
                       f"{first['context'].get(key)!r} in repetition 0")
    names = [e["name"].rsplit("/rep:", 1)[0] for e in entries]
    if names != first["names"]:
        raise Stop(f"repetition {rep}: our binary ran other rows than in repetition 0")


def alternate(reps, side_block, log, tool, budget_s=0.0, clock=time.monotonic):
    """For k in 0..reps-1: side_block(k, side, rep) -> that side's entries,
    for side ours then torch when k is even, torch then ours when odd (rep:
    the repetition's record, which side_block may add to). A repetition that
    the slowest so far would not finish within budget_s (when > 0) is not
    started. Returns (the completed repetitions, their entries, why the run
    stopped or None); a Stop raised by side_block stops it."""
    done, entries, start, slowest = [], [], clock(), 0.0
    for k in range(reps):
        rep_start = clock()
        if budget_s > 0 and k > 0 and rep_start - start + slowest > budget_s:
            return done, entries, (f"--budget {budget_s:g} s: repetition {k} not started ({rep_start - start:.0f} s "
                                   f"used, the slowest repetition took {slowest:.0f} s)")
        order = ("ours", "torch") if k % 2 == 0 else ("torch", "ours")
        rep = {"rep": k, "order": list(order)}
        got = []
        try:
            for side in order:
                t0 = time.time()
                rep[f"{side}_start"] = datetime.datetime.now(datetime.timezone.utc).isoformat(
                    timespec="milliseconds")
                got += side_block(k, side, rep)
                rep[f"{side}_s"] = round(time.time() - t0, 3)
        except Stop as e:
            return done, entries, str(e)
        done.append(rep)
        entries += got
        slowest = max(slowest, clock() - rep_start)
        log(f"{tool}: repetition {k + 1} of {reps} ({'ours' if order[0] == 'ours' else 'PyTorch'} first): ours "
            f"{rep['ours_s']:.1f} s, PyTorch {rep['torch_s']:.1f} s")
    return done, entries, None


def drive(reps, ours_block, torch_block, log, budget_s=0.0, clock=time.monotonic):
    """For k in 0..reps-1: our binary's repetition k (ours_block(k) ->
    (context, entries)) and PyTorch's (torch_block(k, rows) -> entries), ours
    first when k is even (alternate; budget_s as there). Returns (our
    repetition 0's context, the completed repetitions, their entries, why
    the run stopped or None)."""
    first = {}

    def side_block(k, side, rep):
        if side == "torch":
            return torch_block(k, first["rows"])
        ctx, side_entries = ours_block(k)
        if not first:
            first.update(context=ctx, rows=rows_from(side_entries),
                         names=[e["name"].rsplit("/rep:", 1)[0] for e in side_entries])
        else:
            same_rows(first, ctx, side_entries, k)
        rep["ours_date"] = ctx.get("date", "?")
        return side_entries
    done, entries, stopped = alternate(reps, side_block, log, "torch_norm_gpu", budget_s, clock)
    return first.get("context", {}), done, entries, stopped


# ------------------------------------------------------------- PyTorch's side

def row_name(r, rep):
    n, c, h, w = r["shape"]
    return f"torch_norm_gpu/{r['dtype']}/{r['row']}/N:{n}/C:{c}/HW:{h}x{w}/rep:{rep}"


def calls_for(timer, fn, batch_s):
    timer.per_call(fn, 1)
    timer.per_call(fn, 1)
    per = max(timer.per_call(fn, 3), 1e-9)
    return min(MAX_CALLS, max(1, math.ceil(batch_s / per)))


def measure(rows, fns, copies, timer, rep, batches, batch_s, log=None):
    """Repetition `rep` of the rows of one shape and dtype: {row: fn} and
    {row: copy fn}; timer.per_call(fn, calls) -> seconds per call of one
    batch. Returns the JSON entries, one per row; a row whose function
    raises gets an entry with `error_occurred` and its message."""
    entries = []
    for r in rows:
        name = row_name(r, rep)
        try:
            fn, copy = fns[r["row"]], copies[r["row"]]
            k, kc = calls_for(timer, fn, batch_s), calls_for(timer, copy, batch_s)
            timer.per_call(fn, k)
            timer.per_call(copy, kc)
            kernel_s, copy_s = [], []
            for b in range(batches):
                if b % 2 == 0:
                    kernel_s.append(timer.per_call(fn, k))
                    copy_s.append(timer.per_call(copy, kc))
                else:
                    copy_s.append(timer.per_call(copy, kc))
                    kernel_s.append(timer.per_call(fn, k))
        except Exception as e:  # one row's failure is that row's record
            entries.append({"name": name, "run_type": "iteration", "side": "torch", "rep": rep,
                            "error_occurred": True, "error_message": f"{type(e).__name__}: {e}"[:500]})
            if log:  # its first line: PyTorch's dispatcher errors list every backend
                log(f"torch_norm_gpu: {name}: {type(e).__name__}: {(str(e).splitlines() or [''])[0][:300]}")
            continue
        median_us, copy_us = 1e6 * statistics.median(kernel_s), 1e6 * statistics.median(copy_s)
        entries.append({
            "name": name, "run_type": "iteration", "side": "torch", "rep": rep, "iterations": batches,
            "real_time": 1e6 * statistics.mean(kernel_s), "cpu_time": 0.0, "time_unit": "us",
            "median_us": median_us, "copy_us": copy_us, "bytes": r["bytes"],
            "copy_bytes": max(1, r["bytes"] // 2), "groups": r["groups"],
            "calls_per_batch": k, "copy_calls_per_batch": kc})
    return entries


# ------------------------------------------------------------- PyTorch only

class EventTimer:
    """Seconds per call of a batch of back-to-back calls, from two CUDA
    events on the current stream."""

    def __init__(self, torch):
        self.torch = torch
        self.start = torch.cuda.Event(enable_timing=True)
        self.stop = torch.cuda.Event(enable_timing=True)

    def per_call(self, fn, calls):
        self.start.record()
        for _ in range(calls):
            fn()
        self.stop.record()
        self.stop.synchronize()
        return self.start.elapsed_time(self.stop) * 1e-3 / calls


def one_rank_group(torch, dist, device):
    """A one-rank NCCL process group (its FileStore in a fresh folder), or
    the reason there is none."""
    if not dist.is_available() or not dist.is_nccl_available():
        return None, "torch.distributed or its NCCL backend is not available"
    folder = tempfile.mkdtemp(prefix="torch_norm_gpu-")
    try:
        dist.init_process_group("nccl", init_method=f"file://{folder}/store", rank=0, world_size=1,
                                device_id=torch.device("cuda", device))
    except Exception as e:  # recorded, and the sync rows say why they are missing
        return None, f"init_process_group(nccl, world_size=1) failed: {type(e).__name__}: {e}"
    return dist.group.WORLD, None


def sync_bn_module_fact(torch, shape, dtype, device):
    """What nn.SyncBatchNorm does at W = 1: whether one training forward
    calls SyncBatchNorm's autograd function (watched through the name the
    module calls it by)."""
    import torch.nn.modules.batchnorm as bn_module
    calls = []
    original = bn_module.sync_batch_norm

    class Watch:
        @staticmethod
        def apply(*a):
            calls.append(1)
            return original.apply(*a)

    bn_module.sync_batch_norm = Watch
    try:
        m = torch.nn.SyncBatchNorm(shape[1]).to(device=device, dtype=dtype).train()
        m(torch.randn(*shape, device=device, dtype=dtype))
        torch.cuda.synchronize()
    finally:
        bn_module.sync_batch_norm = original
    if calls:
        return "calls SyncBatchNorm's autograd function (sync_batch_norm.apply) at W = 1"
    return "falls back to F.batch_norm at W = 1 (sync_batch_norm.apply not called)"


def row_functions(torch, r, device, group, no_group_reason):
    """{row: fn} for one shape and dtype: each fn enqueues one call (the
    sync_bn_fwd_bwd one raises when there is no process group)."""
    n, c, h, w = r["shape"]
    dtype = {"float": torch.float32, "double": torch.float64}[r["dtype"]]
    g = r["groups"]
    gen = torch.Generator(device=device).manual_seed(n * 1000003 + c * 1009 + h * 31 + w)
    x = torch.randn(n, c, h, w, device=device, dtype=dtype, generator=gen) * 2 + 3
    dy = torch.randn(n, c, h, w, device=device, dtype=dtype, generator=gen)
    weight = 1 + 0.1 * torch.randn(c, device=device, dtype=dtype, generator=gen)
    bias = 0.1 * torch.randn(c, device=device, dtype=dtype, generator=gen)
    running_mean = torch.zeros(c, device=device, dtype=dtype)
    running_var = torch.ones(c, device=device, dtype=dtype)
    mean, invstd = torch.batch_norm_stats(x, EPS)
    count = torch.full((1,), n * h * w, device=device, dtype=dtype)
    count_int = torch.full((1,), n * h * w, device=device, dtype=torch.int32)
    sum_dy, sum_dy_xmu, _, _ = torch.batch_norm_backward_reduce(dy, x, mean, invstd, weight,
                                                                True, True, True)
    _, gmean, grstd = torch.ops.aten.native_group_norm(x, weight, bias, n, c, h * w, g, EPS)
    x_leaf = x.detach().requires_grad_()
    bn = torch.nn.BatchNorm2d(c, eps=EPS, momentum=MOMENTUM).to(device=device, dtype=dtype).train()
    gn = torch.nn.GroupNorm(g, c, eps=EPS).to(device=device, dtype=dtype)
    wleaf, bleaf = weight.detach().requires_grad_(), bias.detach().requires_grad_()
    for m in (bn, gn):
        with torch.no_grad():
            m.weight.copy_(weight)
            m.bias.copy_(bias)

    def module_step(m):
        def step():
            torch.autograd.grad(m(x_leaf), (x_leaf, m.weight, m.bias), dy)
        return step

    fns = {
        "bn_stats": lambda: torch.batch_norm_stats(x, EPS),
        "bn_finalize": lambda: torch.batch_norm_gather_stats_with_counts(
            x, mean.view(1, c), invstd.view(1, c), running_mean, running_var, MOMENTUM, EPS, count),
        "bn_normalize": lambda: torch.batch_norm_elemt(x, weight, bias, mean, invstd, EPS),
        "bn_grad_sums": lambda: torch.batch_norm_backward_reduce(dy, x, mean, invstd, weight,
                                                                 True, True, True),
        "bn_input_grad": lambda: torch.batch_norm_backward_elemt(dy, x, mean, invstd, weight, sum_dy,
                                                                 sum_dy_xmu, count_int),
        "gn_forward": lambda: torch.ops.aten.native_group_norm(x, weight, bias, n, c, h * w, g, EPS),
        "gn_backward": lambda: torch.ops.aten.native_group_norm_backward(
            dy, x, gmean, grstd, weight, n, c, h * w, g, [True, True, True]),
        "bn_fwd_bwd": module_step(bn),
        "gn_fwd_bwd": module_step(gn),
    }
    if group is not None:
        from torch.nn.modules._functions import SyncBatchNorm as SyncFn

        def sync_step():
            y = SyncFn.apply(x_leaf, wleaf, bleaf, running_mean, running_var, EPS, MOMENTUM, group, 1)
            torch.autograd.grad(y, (x_leaf, wleaf, bleaf), dy)
        fns["sync_bn_fwd_bwd"] = sync_step
    else:
        def no_group():
            raise RuntimeError(f"not timed: {no_group_reason}")
        fns["sync_bn_fwd_bwd"] = no_group
    return fns


def gpu_or_reason(torch, device):
    if not torch.cuda.is_available():
        return (f"torch {torch.__version__} sees no CUDA device (torch.cuda.is_available() is "
                f"False; built for CUDA {torch.version.cuda})")
    if device >= torch.cuda.device_count():
        return f"--device {device}: torch sees {torch.cuda.device_count()} device(s)"
    return None


class TorchSide:
    """PyTorch's repetitions in this process: block(k, rows) times
    repetition k of the rows and frees each shape's tensors after it, so
    that our binary finds the GPU's memory free."""

    def __init__(self, torch, args, log):
        import torch.distributed as dist
        self.torch, self.dist, self.args, self.log = torch, dist, args, log
        self.device = torch.device("cuda", args.device)
        torch.cuda.set_device(self.device)
        self.timer = EventTimer(torch)
        self.group, self.no_group, self.src, self.dst = None, "--no_sync_bn", None, None
        self.context = {
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "host_name": socket.gethostname(), "num_cpus": os.cpu_count() or 1,
            "ddp_tool": "bench/peers/torch_norm_gpu",
            "ddp_commit": os.environ.get("DDP_PITFALLS_COMMIT") or git_commit(),
            "ddp_torch": torch.__version__, "ddp_torch_cuda": str(torch.version.cuda),
            "ddp_torch_cudnn": str(torch.backends.cudnn.version()),
            "ddp_torch_cudnn_enabled": str(torch.backends.cudnn.enabled),
            "ddp_torch_nccl": ".".join(str(v) for v in torch.cuda.nccl.version())
            if dist.is_nccl_available() else "none",
            "ddp_device": f"{args.device}: {torch.cuda.get_device_name(self.device)}",
            "ddp_world_size": "1", "ddp_reps": str(args.reps), "ddp_batches": str(args.batches),
            "ddp_batch_us": str(args.batch_us), "ddp_loadavg_start": loadavg_text()}

    def setup(self, rows):
        torch = self.torch
        if not self.args.no_sync_bn and any(r["row"] == "sync_bn_fwd_bwd" for r in rows):
            self.group, self.no_group = one_rank_group(torch, self.dist, self.args.device)
            self.context["ddp_torch_sync_bn_group"] = self.no_group or "one-rank NCCL process group"
            if self.group is not None:
                self.context["ddp_torch_sync_bn_module_w1"] = sync_bn_module_fact(
                    torch, rows[0]["shape"], torch.float32, self.device)
        copy_max = max(max(1, r["bytes"] // 2) for r in rows)
        self.src = torch.full((copy_max,), 0x3C, dtype=torch.uint8, device=self.device)
        self.dst = torch.empty(copy_max, dtype=torch.uint8, device=self.device)

    def block(self, rep, rows):
        torch = self.torch
        try:
            if self.src is None:
                self.setup(rows)
            by_shape = {}
            for r in rows:
                if not (self.args.no_sync_bn and r["row"] == "sync_bn_fwd_bwd"):
                    by_shape.setdefault((r["dtype"], r["shape"]), []).append(r)
            entries = []
            for shape_rows in by_shape.values():
                fns = row_functions(torch, shape_rows[0], self.device, self.group, self.no_group)
                copies = {r["row"]: (lambda s: lambda: self.dst[:s].copy_(self.src[:s]))(max(1, r["bytes"] // 2))
                          for r in shape_rows}
                entries += measure(shape_rows, fns, copies, self.timer, rep, self.args.batches,
                                   self.args.batch_us * 1e-6, self.log)
                del fns
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
            return entries
        except Exception as e:  # a shape's tensors that cannot be made: the run stops here
            raise Stop(f"repetition {rep}: PyTorch: {type(e).__name__}: {e}"[:500])

    def close(self):
        if self.group is not None:
            self.dist.destroy_process_group()
        self.context["ddp_loadavg_end"] = loadavg_text()


def run(args, log):
    try:
        import torch
    except ImportError:
        log("torch_norm_gpu: no torch in this Python (tools/setup.sh --torch2.15 makes "
            ".venv-torch2.15; the GPU machines have torch 2.11); nothing timed")
        return 1 if args.require_gpu else 0
    why = gpu_or_reason(torch, args.device)
    if why:
        log(f"torch_norm_gpu: {why}; nothing timed")
        return 1 if args.require_gpu else 0
    side = TorchSide(torch, args, log)
    seen = set()

    def ours_block(k):
        ctx, entries = run_ours(args, k, folder, seen, log)
        if ctx.get("ddp_device") != side.context["ddp_device"]:
            raise Stop(f"repetition {k}: our binary ran on {ctx.get('ddp_device')!r}, PyTorch on "
                       f"{side.context['ddp_device']!r}: not the same GPU")
        return ctx, entries

    with tempfile.TemporaryDirectory(prefix="torch_norm_gpu-") as folder:
        ours_ctx, reps, entries, stopped = drive(args.reps, ours_block, side.block, log, args.budget)
    side.close()
    if stopped:
        log(f"torch_norm_gpu: stopped: {stopped}")
    if not reps:
        log("torch_norm_gpu: no repetition completed; nothing written")
        return 1
    context = dict(side.context)
    context.update({
        "ddp_pairing": PAIRING, "ddp_reps_done": str(len(reps)),
        "ddp_ours_command": " ".join(shlex.quote(a) for a in ours_command(args, "TMP.json")),
        "ddp_ours_lib_path": args.ours_lib_path or "(LD_LIBRARY_PATH as given)",
        "ddp_ours_commit": ours_ctx.get("ddp_commit", "?"), "ddp_ours_device": ours_ctx.get("ddp_device", "?")})
    if stopped:
        context["ddp_stopped"] = stopped
    write_json({"context": context, "ours_context": ours_ctx, "repetitions": reps, "benchmarks": entries},
               args.json)
    failed = [e["name"] for e in entries if e.get("error_occurred")]
    if failed:
        log(f"torch_norm_gpu: {len(failed)} entr{'y' if len(failed) == 1 else 'ies'} failed, e.g. {failed[0]}")
    return 1 if failed or stopped else 0


def main(argv, log=lambda m: print(m, file=sys.stderr)):
    try:
        return run(parse_args(argv), log)
    except UsageError as e:
        log(f"torch_norm_gpu: {e}")
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
