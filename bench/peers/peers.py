#!/usr/bin/python3
"""bazel run //bench/peers -- [--world_size 4] [--quick] [--out FILE.md]

Side by side with PyTorch on this CPU: the same workloads through PyTorch
1.13 (Debian's python3-torch, gloo backend, W processes from
torch.multiprocessing, one thread each) and through our binaries, in one
run; prints one Markdown row per workload with our time over PyTorch's.

Workloads:
  padded gather  bench/padding's cases (float64, the same skew profiles,
                 payloads per rank): `floor` (one equal-count all_gather of
                 ceil(sum/W)) and `pad_gather_trim` (torchmetrics'
                 gather_all_tensors: sizes all_gather, pad, all_gather, trim +
                 cat). PyTorch's gloo all_gather has no uneven variant (it
                 aborts on unequal sizes), so allgatherv has no peer row.
  norm layers    training forward + backward, float32, x of N x C x 8 x 8 per
                 rank, C in {16, 64, 256}, N in {2, 8, 32}: sync_bn,
                 batch_norm (local), group_norm (8 groups). PyTorch's
                 SyncBatchNorm refuses CPU tensors (aten::batch_norm_stats has
                 no CPU kernel in 1.13), so its peer here is SyncBatchNorm's
                 algorithm written with torch ops and the same two
                 collectives (all_gather of mean/invstd/count forward,
                 all_reduce of sum_dy/sum_dy_xmu backward).

Timing, both sides: barrier; t0; op; the slowest rank's time (all_reduce
max); mean over the timed iterations after warm-up. Exit 2 for bad usage, 1
when a run fails; exit 0 with a message when torch is missing.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

PROFILES = ("equal", "straggler", "heavy_tailed")
PAYLOADS = ("1K", "64K", "1M", "16M")
NORMS = ("sync_bn", "batch_norm", "group_norm")
CHANNELS = (16, 64, 256)
NS = (2, 8, 32)
HW = 8
GROUPS = 8


def payload_bytes(text):
    scale = {"K": 1024, "M": 1024 * 1024}.get(text[-1], 1)
    return int(text[:-1] if scale != 1 else text) * scale


def lengths(profile, w, n):
    """bench/padding/profiles.cc's Lengths(), same formulas."""
    out = [n] * w
    q = [(r + 0.5) / w for r in range(w)]
    if profile == "short_tail":
        out[-1] = max(1, round_half_away(n / 2))
    elif profile == "uniform10":
        out = [max(1, round_half_away(n * (1 + 0.1 * (2 * qr - 1)))) for qr in q]
    elif profile == "straggler":
        out[-1] = 2 * n
    elif profile == "heavy_tailed":
        p = [(1 - qr) ** (-1 / 1.5) for qr in q]
        mean = sum(p) / w
        out = [max(1, round_half_away(n * x / mean)) for x in p]
    return out


def round_half_away(x):  # C's llround
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


# ---------------------------------------------------------------- PyTorch side

def timed(dist, torch, fn, iters, warmup):
    for _ in range(warmup):
        fn()
    total = 0.0
    for _ in range(iters):
        dist.barrier()
        t0 = time.perf_counter()
        fn()
        dt = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
        dist.all_reduce(dt, op=dist.ReduceOp.MAX)
        total += dt.item()
    return total / iters


def iterations(dist, torch, fn, min_time, lo, hi):
    """Rank 0's probe, broadcast: every rank runs the same count."""
    fn()
    t = timed(dist, torch, fn, 2, 0)
    n = torch.tensor([min(hi, max(lo, math.ceil(min_time / max(t, 1e-9))))], dtype=torch.int64)
    dist.broadcast(n, 0)
    return int(n.item())


def torch_gather_worker(rank, w, port, cases, min_time, queue):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=w)
    results = []
    for profile, payload in cases:
        lens = lengths(profile, w, payload_bytes(payload) // 8)
        mine = torch.arange(lens[rank], dtype=torch.float64) + rank * 4294967296.0
        floor_n = -(-sum(lens) // w)
        floor_in = torch.arange(floor_n, dtype=torch.float64)
        floor_out = [torch.empty(floor_n, dtype=torch.float64) for _ in range(w)]

        def floor():
            dist.all_gather(floor_out, floor_in)

        def pad_gather_trim():
            # torchmetrics.utilities.distributed.gather_all_tensors, then cat.
            size = torch.tensor([mine.shape[0]], dtype=torch.int64)
            sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(w)]
            dist.all_gather(sizes, size)
            mx = int(max(s.item() for s in sizes))
            padded = torch.nn.functional.pad(mine, (0, mx - mine.shape[0]))
            out = [torch.empty(mx, dtype=torch.float64) for _ in range(w)]
            dist.all_gather(out, padded)
            return torch.cat([o[:int(s.item())] for o, s in zip(out, sizes)])

        got = pad_gather_trim()
        want = torch.cat([torch.arange(n, dtype=torch.float64) + r * 4294967296.0
                          for r, n in enumerate(lens)])
        if not torch.equal(got, want):
            raise RuntimeError(f"{profile}/{payload}: PyTorch pad_gather_trim output is wrong")
        for name, fn in (("floor", floor), ("pad_gather_trim", pad_gather_trim)):
            n = iterations(dist, torch, fn, min_time, 3, 1000)
            results.append(((profile, payload, name), timed(dist, torch, fn, n, 1), n))
    if rank == 0:
        queue.put(results)
    dist.destroy_process_group()


class TorchSyncBN:
    """PyTorch SyncBatchNorm's algorithm with CPU torch ops (its CUDA-only
    batch_norm_stats / gather_stats / backward_reduce / backward_elemt)."""

    @staticmethod
    def make(torch, dist, w):
        class Fn(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, weight, bias, eps):
                dims = (0, 2, 3)
                mean = x.mean(dims)
                invstd = torch.rsqrt(x.var(dims, unbiased=False) + eps)
                count = torch.full((1,), x.numel() // x.shape[1], dtype=x.dtype)
                combined = torch.cat([mean, invstd, count])
                parts = [torch.empty_like(combined) for _ in range(w)]
                dist.all_gather(parts, combined)
                c = x.shape[1]
                allp = torch.stack(parts)
                means, invstds, counts = allp[:, :c], allp[:, c:2 * c], allp[:, 2 * c:]
                total = counts.sum()
                gmean = (means * counts).sum(0) / total
                var = ((1 / invstds ** 2 - eps + (means - gmean) ** 2) * counts).sum(0) / total
                ginvstd = torch.rsqrt(var + eps)
                ctx.save_for_backward(x, weight, gmean, ginvstd, total)
                shape = (1, c, 1, 1)
                return (x - gmean.view(shape)) * (ginvstd * weight).view(shape) + bias.view(shape)

            @staticmethod
            def backward(ctx, dy):
                x, weight, mean, invstd, total = ctx.saved_tensors
                c = x.shape[1]
                shape = (1, c, 1, 1)
                xmu = x - mean.view(shape)
                sum_dy = dy.sum((0, 2, 3))
                sum_dy_xmu = (dy * xmu).sum((0, 2, 3))
                grad_weight = sum_dy_xmu * invstd
                grad_bias = sum_dy
                both = torch.cat([sum_dy, sum_dy_xmu])
                dist.all_reduce(both)
                mean_dy = (both[:c] / total).view(shape)
                mean_dy_xmu = (both[c:] / total).view(shape)
                dx = (dy - mean_dy - xmu * (invstd ** 2).view(shape) * mean_dy_xmu) * \
                    (invstd * weight).view(shape)
                return dx, grad_weight, grad_bias, None

        return Fn


def torch_norm_worker(rank, w, port, shapes, iters, warmup, queue):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=w)
    sync_fn = TorchSyncBN.make(torch, dist, w)
    gen = torch.Generator().manual_seed(1234 + rank)
    results = []
    for norm, c, n in shapes:
        x = torch.randn(n, c, HW, HW, generator=gen, requires_grad=True)
        dy = torch.randn(n, c, HW, HW, generator=gen)
        if norm == "group_norm":
            layer = torch.nn.GroupNorm(GROUPS, c)
            fwd = layer
        elif norm == "batch_norm":
            layer = torch.nn.BatchNorm2d(c)
            fwd = layer
        else:
            weight = torch.ones(c, requires_grad=True)
            bias = torch.zeros(c, requires_grad=True)

            def fwd(t):
                return sync_fn.apply(t, weight, bias, 1e-5)

        def step():
            x.grad = None
            fwd(x).backward(dy)

        results.append(((norm, c, n), timed(dist, torch, step, iters, warmup), iters))
    if rank == 0:
        queue.put(results)
    dist.destroy_process_group()


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_torch(worker, w, *args):
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=worker, args=(r, w, port) + args + (queue,)) for r in range(w)]
    for p in procs:
        p.start()
    try:
        results = queue.get(timeout=1800)
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.terminate()
    if any(p.exitcode != 0 for p in procs):
        raise RuntimeError(f"a PyTorch rank failed: exit codes {[p.exitcode for p in procs]}")
    return {key: (t, n) for key, t, n in results}


# ------------------------------------------------------------------- our side

def run_ours_padding(binary, w, profiles, payloads, min_time):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "padding.json")
        subprocess.run([binary, "--world_size", str(w), "--profiles", ",".join(profiles),
                        "--payloads", ",".join(payloads), "--min_time", str(min_time),
                        "--benchmark_filter=floor|pad_gather_trim",
                        "--benchmark_format=json", f"--benchmark_out={out}"],
                       check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            data = json.load(f)
    build = data.get("context", {}).get("ddp_build", "?")
    if build != "optimized":
        print(f"peers: warning: bench/padding build is {build}", file=sys.stderr)
    res = {}
    for b in data["benchmarks"]:
        parts = b["name"].split("/")  # padding/gloo/W4/profile/payload/method/...
        profile, payload, method = parts[3], parts[4], parts[5]
        payload = payload.replace("KiB", "K").replace("MiB", "M")
        scale = {"us": 1e-6, "ms": 1e-3, "ns": 1e-9, "s": 1.0}[b["time_unit"]]
        lens = lengths(profile, w, payload_bytes(payload) // 8)
        if abs(b["bytes_per_rank"] * w - 8 * sum(lens)) > 0.5 or \
                abs(b["max_bytes"] - 8 * max(lens)) > 0.5:
            raise RuntimeError(f"{b['name']}: lengths differ from this script's profiles")
        res[(profile, payload, method)] = (b["real_time"] * scale, b["iterations"])
    return res


def run_ours_norm(binary, w, norm, channels, ns, iters, warmup):
    p = subprocess.run([binary, "--world_size", str(w), "--norm", norm,
                        "--channels", ",".join(map(str, channels)), "--n", ",".join(map(str, ns)),
                        "--hw", str(HW), "--groups", str(GROUPS), "--iters", str(iters),
                        "--warmup", str(warmup)], check=True, capture_output=True, text=True)
    res = {}
    for line in p.stdout.splitlines():
        r = json.loads(line)
        if not r["optimized"]:
            print("peers: warning: norm_peer was built without optimization; run "
                  "`bazel run -c opt //bench/peers` for numbers to cite", file=sys.stderr)
        res[(norm, r["C"], r["N"])] = (r["mean_s"], r["iters"])
    return res


def optimized(args):
    """Whether our binaries were built with optimization (they say so)."""
    p = subprocess.run([args.norm_bin, "--world_size", "1", "--channels", "8", "--n", "2",
                        "--iters", "1", "--warmup", "0"], check=True, capture_output=True,
                       text=True)
    return json.loads(p.stdout.splitlines()[0])["optimized"]


def fmt_us(s):
    return f"{s * 1e6:.1f}"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    ap.add_argument("--world_size", type=int, default=4)
    ap.add_argument("--padding_bin", required=True, help="path of //bench/padding")
    ap.add_argument("--norm_bin", required=True, help="path of //bench/peers:norm_peer")
    ap.add_argument("--min_time", type=float, default=0.3,
                    help="padded gather: seconds of timed gathers per row (default 0.3)")
    ap.add_argument("--norm_iters", type=int, default=20)
    ap.add_argument("--quick", action="store_true",
                    help="1K and 64K payloads only, C=16 and N=2 only (a check that it runs)")
    ap.add_argument("--out", help="also write the Markdown table here")
    args = ap.parse_args(argv)
    if not 1 <= args.world_size <= 16:
        print("peers: --world_size must be in 1..16", file=sys.stderr)
        return 2
    if args.min_time < 0 or args.norm_iters < 1:
        print("peers: --min_time must be >= 0 and --norm_iters >= 1", file=sys.stderr)
        return 2
    try:
        import torch  # noqa: F401
    except ImportError:
        print("peers: skipped: PyTorch is not importable by this python "
              f"({sys.executable}); install Debian's python3-torch")
        return 0
    w = args.world_size
    payloads = PAYLOADS[:2] if args.quick else PAYLOADS
    channels = CHANNELS[:1] if args.quick else CHANNELS
    ns = NS[:1] if args.quick else NS
    cases = [(p, s) for p in PROFILES for s in payloads]

    ours = run_ours_padding(args.padding_bin, w, PROFILES, payloads, args.min_time)
    theirs = run_torch(torch_gather_worker, w, cases, args.min_time)
    for norm in NORMS:
        ours.update(run_ours_norm(args.norm_bin, w, norm, channels, ns, args.norm_iters, 3))
    shapes = [(norm, c, n) for norm in NORMS for c in channels for n in ns]
    theirs.update(run_torch(torch_norm_worker, w, shapes, args.norm_iters, 3))

    rows = ["| workload | ours (us) | PyTorch 1.13 (us) | ours / PyTorch |",
            "|---|---:|---:|---:|"]
    for p, s in cases:
        for m in ("floor", "pad_gather_trim"):
            o, t = ours[(p, s, m)][0], theirs[(p, s, m)][0]
            rows.append(f"| gather {p} {s}iB/rank {m} | {fmt_us(o)} | {fmt_us(t)} | {o / t:.2f} |")
    for norm, c, n in shapes:
        o, t = ours[(norm, c, n)][0], theirs[(norm, c, n)][0]
        rows.append(f"| {norm} C={c} N={n} {HW}x{HW} fwd+bwd | {fmt_us(o)} | {fmt_us(t)} | "
                    f"{o / t:.2f} |")
    header = (f"W={w} ranks, gloo, {os.cpu_count()} CPUs, torch {torch.__version__}, "
              f"ours {'optimized' if optimized(args) else 'UNOPTIMIZED (fastbuild)'}, "
              f"one thread per rank; {time.strftime('%Y-%m-%d %H:%M')}")
    text = header + "\n\n" + "\n".join(rows) + "\n"
    print(text)
    if args.out:
        with open(os.path.join(os.environ.get("BUILD_WORKING_DIRECTORY", "."), args.out), "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
