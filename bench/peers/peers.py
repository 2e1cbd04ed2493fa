#!/usr/bin/python3
"""bazel run -c opt //bench/peers -- [--world_size 2] [--reps 5] [--json PATH] [--quick]

Side by side with PyTorch on this CPU: the same workloads through PyTorch
1.13 (Debian's python3-torch, gloo backend, W processes, one thread each)
and through our binaries, interleaved, ours / PyTorch per row and
repetition.

Workloads:
  gathers      bench/padding's cases (float64, the same skew profiles and
               payloads per rank): `floor_allgather` (one equal-count
               all_gather of ceil(sum/W), the same Gloo call as PyTorch's
               dist.all_gather) and `pad_gather_trim` (torchmetrics'
               gather_all_tensors: sizes all_gather, pad, all_gather, trim +
               cat). PyTorch's gloo all_gather has no uneven variant (it
               aborts on unequal sizes), so allgatherv has no peer row.
  norm layers  training forward + backward, float32, x of N x C x 8 x 8 per
               rank, C in {16, 64, 256}, N in {2, 8, 32}: sync_bn,
               batch_norm (local), group_norm (8 groups). PyTorch's
               SyncBatchNorm refuses CPU tensors (aten::batch_norm_stats has
               no CPU kernel in 1.13), so its peer here is SyncBatchNorm's
               algorithm written with torch ops and the same two collectives
               (all_gather of mean/invstd/count forward, all_reduce of
               sum_dy/sum_dy_xmu backward).

Interleaving: the PyTorch ranks stay up for the whole run and take one
block of work at a time (one gather case, or one norm layer over all
shapes); for every repetition and block, our binary runs the block, then
PyTorch does (the order rotates every repetition: A B, B A, ...), so both
sides of a row's ratio are measured seconds apart. Our ranks run
SCHED_BATCH by default (--sched; bench/common/sched.h says why), PyTorch's
as PyTorch runs (--torch_sched normal); --torch_batch_control adds PyTorch
ranks under SCHED_BATCH as a third, interleaved side; --second_torch_python PYTHON adds the PyTorch
of another interpreter (e.g. PyTorch 2.15 in .venv-torch2.15, from
`tools/setup.sh --torch2.15`) as one more interleaved side, in its own
process (peers.py --torch_server) that runs its ranks the same way and
answers one JSON line per block. Timing, every side:
barrier; t0; op; the slowest rank's time (all_reduce max); mean over the
timed iterations after warm-up.

--json writes Google-Benchmark-shaped JSON (context + one entry per row and
repetition: real_time = ours, torch_us, ratio) that bench/tables.py turns
into the README tables. Exit 2 for bad usage, 1 when a run fails; exit 0
with a message when torch is missing.
"""
import argparse
import datetime
import json
import math
import os
import platform
import queue as queue_mod
import select
import socket
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
GATHER_METHODS = ("floor_allgather", "pad_gather_trim")
BLOCK_TIMEOUT_S = 900


def payload_bytes(text):
    scale = {"K": 1024, "M": 1024 * 1024}.get(text[-1], 1)
    return int(text[:-1] if scale != 1 else text) * scale


def payload_name(payload):
    """1KiB, 16MiB, ...: the names bench/padding and bench/peers use."""
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if payload % size == 0:
            return f"{payload // size}{unit}"
    return f"{payload}B"


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


def load1():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return -1.0


def loadavg_text():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "unknown"


def tcp_congestion():
    """What new TCP sockets (Gloo's) get in this network namespace; loopback
    timings depend on it (core/env/report.h)."""
    try:
        with open("/proc/sys/net/ipv4/tcp_congestion_control") as f:
            return f.read().strip() or "unknown"
    except OSError:
        return "unknown"


def write_json(data, path):
    """To `path` (relative to where `bazel run` started) atomically, or to
    stdout when `path` is empty."""
    if not path:
        json.dump(data, sys.stdout, indent=1)
        print()
        return
    path = os.path.join(os.environ.get("BUILD_WORKING_DIRECTORY", "."), path)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".bench-")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    os.chmod(tmp, 0o644)  # mkstemp makes it 0600; a result file is for everyone to read
    os.replace(tmp, path)
    print(f"wrote {path}", file=sys.stderr)


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


def torch_gather_block(torch, dist, rank, w, profile, payload, min_time):
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
    results = {}
    for name, fn in (("floor_allgather", floor), ("pad_gather_trim", pad_gather_trim)):
        n = iterations(dist, torch, fn, min_time, 3, 1000)
        results[name] = (timed(dist, torch, fn, n, 1), n)
    return results


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


def torch_norm_block(torch, dist, rank, sync_fn, norm, channels, ns, iters, warmup):
    gen = torch.Generator().manual_seed(1234 + rank)
    results = {}
    for c in channels:
        for n in ns:
            x = torch.randn(n, c, HW, HW, generator=gen, requires_grad=True)
            dy = torch.randn(n, c, HW, HW, generator=gen)
            if norm == "group_norm":
                fwd = torch.nn.GroupNorm(GROUPS, c)
            elif norm == "batch_norm":
                fwd = torch.nn.BatchNorm2d(c)
            else:
                weight = torch.ones(c, requires_grad=True)
                bias = torch.zeros(c, requires_grad=True)

                def fwd(t, weight=weight, bias=bias):
                    return sync_fn.apply(t, weight, bias, 1e-5)

            def step(fwd=fwd, x=x, dy=dy):
                x.grad = None
                fwd(x).backward(dy)

            results[(c, n)] = (timed(dist, torch, step, iters, warmup), iters)
    return results


def torch_worker(rank, w, port, sched, commands, results):
    """One persistent PyTorch rank: runs the blocks it is sent, in order."""
    if sched == "batch":  # before any thread exists: Gloo's inherit it
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=w, timeout=datetime.timedelta(seconds=BLOCK_TIMEOUT_S))
    sync_fn = TorchSyncBN.make(torch, dist, w)
    while True:
        cmd = commands.get()
        if cmd[0] == "stop":
            break
        try:
            if cmd[0] == "gather":
                out = torch_gather_block(torch, dist, rank, w, *cmd[1:])
            else:
                out = torch_norm_block(torch, dist, rank, sync_fn, *cmd[1:])
        except Exception as e:  # reported by the parent, which stops everyone
            results.put(("error", f"rank {rank}: {e!r}"))
            raise
        if rank == 0:
            results.put(("ok", out))
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TorchRanks:
    """W PyTorch ranks that stay up and run one block per call."""

    def __init__(self, w, sched):
        import torch.multiprocessing as mp
        ctx = mp.get_context("spawn")
        self.results = ctx.Queue()
        self.commands = [ctx.Queue() for _ in range(w)]
        port = free_port()
        self.procs = [ctx.Process(target=torch_worker,
                                  args=(r, w, port, sched, self.commands[r], self.results))
                      for r in range(w)]
        for p in self.procs:
            p.start()

    def run(self, *cmd):
        for q in self.commands:
            q.put(cmd)
        try:
            status, out = self.results.get(timeout=BLOCK_TIMEOUT_S)
        except queue_mod.Empty:
            raise RuntimeError(f"PyTorch ranks gave no result for {cmd} within "
                               f"{BLOCK_TIMEOUT_S} s")
        if status != "ok":
            raise RuntimeError(f"a PyTorch rank failed on {cmd}: {out}")
        return out

    def close(self, ok):
        if ok:
            for q in self.commands:
                q.put(("stop",))
        for p in self.procs:
            p.join(timeout=60 if ok else 1)
            if p.is_alive():
                p.terminate()
        if ok and any(p.exitcode != 0 for p in self.procs):
            raise RuntimeError("a PyTorch rank failed: exit codes "
                               f"{[p.exitcode for p in self.procs]}")


class OtherPythonTorchRanks:
    """TorchRanks under another python (another PyTorch): that python runs
    this file as --torch_server, which keeps its own TorchRanks up; one JSON
    line per block each way. A separate interpreter, not multiprocessing's
    set_executable: a spawned child takes the parent's sys.path, and would
    import this python's torch."""

    def __init__(self, python, w, sched):
        self.proc = subprocess.Popen([python, os.path.abspath(__file__), "--torch_server",
                                      str(w), sched], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.version = self._read("start")["torch"]

    def _read(self, what):
        ready, _, _ = select.select([self.proc.stdout], [], [], BLOCK_TIMEOUT_S)
        line = self.proc.stdout.readline() if ready else None
        if line is None:
            raise RuntimeError(f"the PyTorch server gave no answer to {what} within "
                               f"{BLOCK_TIMEOUT_S} s")
        if not line:
            raise RuntimeError(f"the PyTorch server exited on {what} "
                               f"(exit code {self.proc.wait()})")
        msg = json.loads(line)
        if "error" in msg:
            raise RuntimeError(f"the PyTorch server failed on {what}: {msg['error']}")
        return msg

    def run(self, *cmd):
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return {tuple(k) if isinstance(k, list) else k: tuple(v)
                for k, v in self._read(cmd)["ok"]}

    def close(self, ok):
        if ok:
            self.proc.stdin.write(json.dumps(["stop"]) + "\n")
            self.proc.stdin.close()
        else:
            self.proc.terminate()
        try:
            code = self.proc.wait(timeout=90 if ok else 5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        if ok and code != 0:
            raise RuntimeError(f"the PyTorch server failed: exit code {code}")


def torch_server(argv):
    """peers.py --torch_server W SCHED: TorchRanks under this python; reads
    one JSON command per line on stdin, writes one JSON answer per line."""
    w, sched = int(argv[0]), argv[1]
    # Answers go to a private copy of stdout; fd 1 becomes stderr, so nothing
    # the ranks or torch print can end up in the protocol.
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)

    def say(msg):
        out.write(json.dumps(msg) + "\n")
        out.flush()

    import torch
    ranks = TorchRanks(w, sched)
    say({"torch": torch.__version__})
    ok = False
    try:
        for line in sys.stdin:
            cmd = json.loads(line)
            if cmd[0] == "stop":
                ok = True
                break
            got = ranks.run(*cmd)
            say({"ok": [[list(k) if isinstance(k, tuple) else k, list(v)]
                        for k, v in got.items()]})
    except Exception as e:  # the parent reports it and stops
        say({"error": repr(e)})
    finally:
        ranks.close(ok)
    return 0 if ok else 1


# ------------------------------------------------------------------- our side

def ours_gather(binary, w, profile, payload, min_time, sched, context):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "padding.json")
        subprocess.run([binary, "--world_size", str(w), "--sched", sched, "--profiles", profile,
                        "--payloads", payload, "--min_time", str(min_time), "--reps", "1",
                        "--benchmark_filter=floor_allgather$|pad_gather_trim$",
                        "--benchmark_format=json", f"--benchmark_out={out}"],
                       check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            data = json.load(f)
    ctx = data.get("context", {})
    for key in ("ddp_build", "ddp_gloo", "ddp_backend"):
        if key in ctx:
            context[key] = ctx[key]
    lens = lengths(profile, w, payload_bytes(payload) // 8)
    res = {}
    for b in data["benchmarks"]:
        method = b["name"].split("/")[5]  # padding/gloo/W2/profile/payload/method/rep:0/...
        if method not in GATHER_METHODS:
            continue
        if abs(b["bytes_per_rank"] * w - 8 * sum(lens)) > 0.5 or \
                abs(b["max_bytes"] - 8 * max(lens)) > 0.5:
            raise RuntimeError(f"{b['name']}: lengths differ from this script's profiles")
        scale = {"us": 1e-6, "ms": 1e-3, "ns": 1e-9, "s": 1.0}[b["time_unit"]]
        res[method] = (b["real_time"] * scale, b["iterations"])
    return res


def ours_norm(binary, w, norm, channels, ns, iters, warmup, sched, context):
    p = subprocess.run([binary, "--world_size", str(w), "--sched", sched, "--norm", norm,
                        "--channels", ",".join(map(str, channels)), "--n", ",".join(map(str, ns)),
                        "--hw", str(HW), "--groups", str(GROUPS), "--iters", str(iters),
                        "--warmup", str(warmup)], check=True, capture_output=True, text=True)
    res = {}
    for line in p.stdout.splitlines():
        r = json.loads(line)
        context["ddp_norm_build"] = "optimized" if r["optimized"] else "UNOPTIMIZED (fastbuild)"
        res[(r["C"], r["N"])] = (r["mean_s"], r["iters"])
    return res


def git_commit():
    """HEAD, "+dirty" when tracked code outside results/ differs from it (as
    core/results/provenance.h: a regeneration rewrites results/ as it runs)."""
    where = os.environ.get("BUILD_WORKSPACE_DIRECTORY", os.getcwd())
    try:
        head = subprocess.run(["git", "-C", where, "rev-parse", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", where, "status", "--porcelain", "--untracked-files=no",
                                "--", ".", ":(exclude)results"],
                               check=True, capture_output=True, text=True).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    ap.add_argument("--world_size", type=int, default=2)
    ap.add_argument("--padding_bin", required=True, help="path of //bench/padding")
    ap.add_argument("--norm_bin", required=True, help="path of //bench/peers:norm_peer")
    ap.add_argument("--reps", type=int, default=5,
                    help="interleaved repetitions (ours, PyTorch) per block (default 5)")
    ap.add_argument("--min_time", type=float, default=0.1,
                    help="gathers: seconds of timed gathers per row and repetition (default 0.1)")
    ap.add_argument("--norm_iters", type=int, default=50,
                    help="norm layers: timed iterations per shape and repetition (default 50)")
    ap.add_argument("--quick", action="store_true",
                    help="1K and 64K payloads only, C=16 and N=2 only (a check that it runs)")
    ap.add_argument("--sched", choices=("batch", "normal"), default="batch",
                    help="scheduling class of our ranks (default batch; bench/common/sched.h)")
    ap.add_argument("--torch_sched", choices=("normal", "batch"), default="normal",
                    help="scheduling class of the PyTorch ranks (default normal, as PyTorch runs)")
    ap.add_argument("--torch_batch_control", action="store_true",
                    help="also time a second set of PyTorch ranks under SCHED_BATCH, interleaved "
                         "(a control: how much of a ratio is the scheduling class)")
    ap.add_argument("--second_torch_python", metavar="PYTHON",
                    help="also time the PyTorch of this python (e.g. "
                         ".venv-torch2.15/bin/python), SCHED_OTHER, interleaved, as one more side")
    ap.add_argument("--json", help="write the results here (Google-Benchmark-shaped JSON)")
    args = ap.parse_args(argv)
    for bad, msg in ((not 1 <= args.world_size <= 16, "--world_size must be in 1..16"),
                     (not 1 <= args.reps <= 100, "--reps must be in 1..100"),
                     (args.min_time < 0, "--min_time must be >= 0"),
                     (args.norm_iters < 1, "--norm_iters must be >= 1")):
        if bad:
            print(f"peers: {msg}", file=sys.stderr)
            return 2
    second = args.second_torch_python
    if second and not (os.path.isfile(second) and os.access(second, os.X_OK)):
        print(f"peers: --second_torch_python {second!r} is not an executable file",
              file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:
        print("peers: skipped: PyTorch is not importable by this python "
              f"({sys.executable}); install Debian's python3-torch")
        return 0
    w = args.world_size
    payloads = PAYLOADS[:2] if args.quick else PAYLOADS
    channels = CHANNELS[:1] if args.quick else CHANNELS
    ns = NS[:1] if args.quick else NS
    blocks = [("gather", p, s) for p in PROFILES for s in payloads] + \
             [("norm", norm) for norm in NORMS]
    cpus = os.cpu_count() or 1
    context = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host_name": socket.gethostname(),
        "num_cpus": cpus,
        "ddp_tool": "bench/peers",
        "ddp_commit": git_commit(),
        "ddp_cpu": cpu_model(),
        "ddp_tcp_congestion": tcp_congestion(),
        "ddp_world_size": str(w),
        "ddp_reps": str(args.reps),
        "ddp_oversubscribed": f"yes: {w} ranks on {cpus} CPUs" if w > cpus else "no",
        "ddp_loadavg_start": loadavg_text(),
        "ddp_torch": torch.__version__,
        "ddp_sched": args.sched,
        "ddp_torch_sched": args.torch_sched,
        "ddp_order": "per block and repetition, every side once; the order rotates "
                     "every repetition (ours, PyTorch[, control]; PyTorch, ..., ours; ...)",
    }
    print(f"peers: W={w}, {args.reps} interleaved repetitions of {len(blocks)} blocks; "
          f"load average {context['ddp_loadavg_start']}", file=sys.stderr)
    entries = []
    torch_sides = {"torch": TorchRanks(w, args.torch_sched)}
    if args.torch_batch_control:
        torch_sides["torch_batch"] = TorchRanks(w, "batch")
        context["ddp_control"] = "torch_batch: PyTorch ranks under SCHED_BATCH, interleaved"
    ok = False
    try:
        if second:  # inside the try: if it fails, the ranks above are stopped
            torch_sides["torch_second"] = OtherPythonTorchRanks(second, w, "normal")
            context["ddp_torch_second"] = torch_sides["torch_second"].version
            context["ddp_torch_second_python"] = second
        for rep in range(args.reps):
            for block in blocks:
                # The order rotates every repetition: A B (C), B (C) A, ...
                order = ["ours"] + list(torch_sides)
                k = rep % len(order)
                got = {}
                for side in order[k:] + order[:k]:
                    if side == "ours" and block[0] == "gather":
                        got[side] = ours_gather(args.padding_bin, w, block[1], block[2],
                                                args.min_time, args.sched, context)
                    elif side == "ours":
                        got[side] = ours_norm(args.norm_bin, w, block[1], channels, ns,
                                              args.norm_iters, 3, args.sched, context)
                    elif block[0] == "gather":
                        got[side] = torch_sides[side].run("gather", block[1], block[2],
                                                          args.min_time)
                    else:
                        got[side] = torch_sides[side].run("norm", block[1], channels, ns,
                                                          args.norm_iters, 3)
                load = load1()
                ratios = []
                for key, (ours_s, ours_n) in got["ours"].items():
                    torch_s, torch_n = got["torch"][key]
                    if block[0] == "gather":
                        name = f"peers/W{w}/gather/{block[1]}/{block[2]}iB/{key}/rep:{rep}"
                    else:
                        name = f"peers/W{w}/{block[1]}/C:{key[0]}/N:{key[1]}/rep:{rep}"
                    entry = {
                        "name": name, "run_type": "iteration", "iterations": ours_n,
                        "real_time": ours_s * 1e6, "cpu_time": 0.0, "time_unit": "us",
                        "torch_us": torch_s * 1e6, "torch_iterations": torch_n,
                        "ratio": ours_s / torch_s, "rep": rep, "W": w, "load1": load}
                    for side in ("torch_batch", "torch_second"):
                        if side in got:
                            entry[f"{side}_us"] = got[side][key][0] * 1e6
                            entry[f"ratio_{side}"] = ours_s / got[side][key][0]
                    entries.append(entry)
                    ratios.append(ours_s / torch_s)
                print(f"peers: rep {rep + 1}/{args.reps} {' '.join(block[1:])}: ours/PyTorch "
                      f"{min(ratios):.2f}..{max(ratios):.2f} (load {load:.2f})", file=sys.stderr)
        ok = True
    finally:
        for ranks in torch_sides.values():
            ranks.close(ok)
    context["ddp_loadavg_end"] = loadavg_text()
    write_json({"context": context, "benchmarks": entries}, args.json)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--torch_server"]:
        sys.exit(torch_server(sys.argv[2:]))
    sys.exit(main(sys.argv[1:]))
