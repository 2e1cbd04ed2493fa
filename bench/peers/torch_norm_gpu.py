#!/usr/bin/python3
"""bench/peers/torch_norm_gpu.py --ours OURS.json [--reps 5] [--batches 10]
[--batch_us 300] [--device 0] [--no_sync_bn] [--require_gpu] [--json FILE]

PyTorch's counterpart of bench/norm_kernels' W = 1 device rows, on the same
GPU: for every row of OURS.json (bench/norm_kernels' JSON from this machine:
its shapes, dtypes, rows and the bytes each row moves), the same work done by
PyTorch, timed the way bench/norm_kernels times it, with the same
device-to-device copy baseline measured in this process.

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

The autograd rows take the gradients with torch.autograd.grad (nothing
accumulates between calls, as after zero_grad(set_to_none=True)). GroupNorm
uses OURS.json's groups (bench/sync_bn's rule, min(32, max(1, C / 2))).

Timing: a batch is `calls` back-to-back calls between two torch.cuda.Event
on the current stream, its time / calls the time per call; each timed batch
is paired with a batch of `dst.copy_(src)` of half the row's bytes (a
cudaMemcpyAsync device-to-device copy: it moves the row's bytes), the order
alternating; one untimed batch of each first. Calls per batch: two untimed
batches of one call, a timed batch of 3, then enough for --batch_us. Per
shape and dtype the rows run in --reps interleaved repetitions; a
repetition's number is its median batch.

JSON (Google-Benchmark-shaped, one entry per row and repetition:
`median_us`, `copy_us`, `bytes` (ours), `calls_per_batch`) with the torch,
CUDA, cuDNN and NCCL versions, the GPU, and OURS.json's commit and date;
bench/peers/norm_gpu_table.py puts the two side by side. Exit 2 for bad
usage or an unreadable OURS.json; without torch, or with a torch that sees
no GPU: one line saying so and exit 0, no JSON written (exit 1 instead with
--require_gpu); 1 when a row fails.
"""
import argparse
import datetime
import math
import os
import socket
import statistics
import sys
import tempfile

from peers import git_commit, loadavg_text, write_json  # the same folder

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tables  # noqa: E402  bench/tables.py: its JSON reader

ROWS = ("bn_stats", "bn_finalize", "bn_normalize", "bn_grad_sums", "bn_input_grad",
        "gn_forward", "gn_backward", "bn_fwd_bwd", "sync_bn_fwd_bwd", "gn_fwd_bwd")
EPS = 1e-5
MOMENTUM = 0.1
MAX_CALLS = 100000


class UsageError(Exception):
    pass


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    ap.add_argument("--ours", help="bench/norm_kernels' JSON from this machine (required)")
    ap.add_argument("--reps", type=int, default=5, help="interleaved repetitions (1..100)")
    ap.add_argument("--batches", type=int, default=10, help="timed batches per repetition (1..1000)")
    ap.add_argument("--batch_us", type=float, default=300.0,
                    help="target length of a batch of back-to-back calls, us (10..1e6)")
    ap.add_argument("--device", type=int, default=0, help="CUDA device index")
    ap.add_argument("--no_sync_bn", action="store_true",
                    help="skip the sync_bn_fwd_bwd rows (they need a one-rank NCCL process group)")
    ap.add_argument("--require_gpu", action="store_true",
                    help="exit 1, not 0, when torch or its GPU is missing")
    ap.add_argument("--json", help="write the record here (default: stdout)")
    args = ap.parse_args(argv)
    checks = ((args.ours is not None, "--ours FILE is required (bench/norm_kernels' JSON from this "
                                      "machine: its rows and bytes are the ones timed here)"),
              (1 <= args.reps <= 100, f"--reps {args.reps}: allowed 1..100"),
              (1 <= args.batches <= 1000, f"--batches {args.batches}: allowed 1..1000"),
              (10 <= args.batch_us <= 1e6, f"--batch_us {args.batch_us:g}: allowed 10..1e6"),
              (args.device >= 0, f"--device {args.device}: allowed 0 or more"))
    for ok, message in checks:
        if not ok:
            raise UsageError(message)
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


def load_ours(path):
    """(context, [{dtype, row, shape, bytes, groups}] in the file's order,
    one per row), or UsageError naming what is wrong."""
    try:
        data = tables.load(path)
    except tables.InputError as e:
        raise UsageError(f"--ours {e}")
    rows = {}
    for b in data["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
            continue
        parsed = parse_name(b.get("name", ""))
        if parsed is None or "bytes" not in b or "groups" not in b:
            raise UsageError(f"--ours {path}: {b.get('name')!r} is not a bench/norm_kernels row")
        dtype, row, shape, _ = parsed
        rows.setdefault((dtype, row, shape), {"dtype": dtype, "row": row, "shape": shape,
                                              "bytes": int(b["bytes"]), "groups": int(b["groups"])})
    if not rows:
        raise UsageError(f"--ours {path}: no bench/norm_kernels rows")
    return data.get("context", {}), list(rows.values())


def row_name(r, rep):
    n, c, h, w = r["shape"]
    return f"torch_norm_gpu/{r['dtype']}/{r['row']}/N:{n}/C:{c}/HW:{h}x{w}/rep:{rep}"


def calls_for(timer, fn, batch_s):
    timer.per_call(fn, 1)
    timer.per_call(fn, 1)
    per = max(timer.per_call(fn, 3), 1e-9)
    return min(MAX_CALLS, max(1, math.ceil(batch_s / per)))


def measure(groups, timer, reps, batches, batch_s, log=None):
    """groups: [(rows, {row name: fn}, {row name: copy fn})], one per shape
    and dtype; the rows of a group run in `reps` interleaved repetitions.
    timer.per_call(fn, calls) -> seconds per call of one batch. Returns the
    JSON entries (one per row and repetition) in run order; a row whose
    function raises gets an entry with `error_occurred` and its message."""
    entries = []
    for rows, fns, copies in groups:
        calls = {}
        for rep in range(reps):
            for r in rows:
                name = row_name(r, rep)
                try:
                    fn, copy = fns[r["row"]], copies[r["row"]]
                    if r["row"] not in calls:
                        calls[r["row"]] = (calls_for(timer, fn, batch_s),
                                           calls_for(timer, copy, batch_s))
                    k, kc = calls[r["row"]]
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
                    entries.append({"name": name, "run_type": "iteration", "error_occurred": True,
                                    "error_message": f"{type(e).__name__}: {e}"[:500]})
                    if log:
                        log(f"torch_norm_gpu: {name}: {type(e).__name__}: {e}")
                    continue
                median_us, copy_us = 1e6 * statistics.median(kernel_s), 1e6 * statistics.median(copy_s)
                entries.append({
                    "name": name, "run_type": "iteration", "iterations": batches,
                    "real_time": 1e6 * statistics.mean(kernel_s), "cpu_time": 0.0, "time_unit": "us",
                    "rep": rep, "median_us": median_us, "copy_us": copy_us, "bytes": r["bytes"],
                    "copy_bytes": max(1, r["bytes"] // 2), "groups": r["groups"],
                    "calls_per_batch": k, "copy_calls_per_batch": kc})
            if log:
                r = rows[0]
                log(f"torch_norm_gpu: {r['dtype']} N={r['shape'][0]} C={r['shape'][1]} "
                    f"{r['shape'][2]}x{r['shape'][3]}: repetition {rep + 1} of {reps}")
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


def run(args, log):
    ours_ctx, rows = load_ours(args.ours)
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
    import torch.distributed as dist
    device = torch.device("cuda", args.device)
    torch.cuda.set_device(device)
    context = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host_name": socket.gethostname(), "num_cpus": os.cpu_count() or 1,
        "ddp_tool": "bench/peers/torch_norm_gpu",
        "ddp_commit": os.environ.get("DDP_PITFALLS_COMMIT") or git_commit(),
        "ddp_torch": torch.__version__, "ddp_torch_cuda": str(torch.version.cuda),
        "ddp_torch_cudnn": str(torch.backends.cudnn.version()),
        "ddp_torch_cudnn_enabled": str(torch.backends.cudnn.enabled),
        "ddp_torch_nccl": ".".join(str(v) for v in torch.cuda.nccl.version())
        if dist.is_nccl_available() else "none",
        "ddp_device": f"{args.device}: {torch.cuda.get_device_name(device)}",
        "ddp_world_size": "1", "ddp_reps": str(args.reps), "ddp_batches": str(args.batches),
        "ddp_batch_us": str(args.batch_us),
        "ddp_ours_file": os.path.basename(args.ours),
        "ddp_ours_commit": ours_ctx.get("ddp_commit", "?"), "ddp_ours_date": ours_ctx.get("date", "?"),
        "ddp_loadavg_start": loadavg_text()}
    group, no_group = None, "--no_sync_bn"
    if not args.no_sync_bn and any(r["row"] == "sync_bn_fwd_bwd" for r in rows):
        group, no_group = one_rank_group(torch, dist, args.device)
        context["ddp_torch_sync_bn_group"] = no_group or "one-rank NCCL process group"
        if group is not None:
            r0 = rows[0]
            context["ddp_torch_sync_bn_module_w1"] = sync_bn_module_fact(
                torch, r0["shape"], torch.float32, device)
    copy_max = max(max(1, r["bytes"] // 2) for r in rows)
    src = torch.full((copy_max,), 0x3C, dtype=torch.uint8, device=device)
    dst = torch.empty(copy_max, dtype=torch.uint8, device=device)
    timer = EventTimer(torch)
    entries = []
    by_shape = {}
    for r in rows:
        if args.no_sync_bn and r["row"] == "sync_bn_fwd_bwd":
            continue
        by_shape.setdefault((r["dtype"], r["shape"]), []).append(r)
    for shape_rows in by_shape.values():
        fns = row_functions(torch, shape_rows[0], device, group, no_group)
        copies = {}
        for r in shape_rows:
            size = max(1, r["bytes"] // 2)
            copies[r["row"]] = (lambda s: lambda: dst[:s].copy_(src[:s]))(size)
        entries += measure([(shape_rows, fns, copies)], timer, args.reps, args.batches,
                           args.batch_us * 1e-6, log)
        del fns
        torch.cuda.empty_cache()
    if group is not None:
        dist.destroy_process_group()
    context["ddp_loadavg_end"] = loadavg_text()
    write_json({"context": context, "benchmarks": entries}, args.json)
    failed = [e["name"] for e in entries if e.get("error_occurred")]
    if failed:
        log(f"torch_norm_gpu: {len(failed)} row(s) failed, e.g. {failed[0]}")
        return 1
    return 0


def main(argv, log=lambda m: print(m, file=sys.stderr)):
    try:
        return run(parse_args(argv), log)
    except UsageError as e:
        log(f"torch_norm_gpu: {e}")
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
