#!/usr/bin/python3
"""bench/peers/torch_dist_gpu.py [--sync_bn_binary PATH] [--padding_binary PATH]
[--backend nccl|gloo] [--world_size 2] [--reps 5] [--channels C,..] [--batch N,..]
[--spatial S] [--target_s T] [--profiles P,..] [--payloads X,..] [--min_time T]
[--sync_bn_extra FLAGS] [--padding_extra FLAGS] [--ours_lib_path DIRS]
[--ours_timeout 600] [--torch_timeout 600] [--pg_timeout 120] [--budget 0]
[--require_gpu] [--json FILE]

bench/sync_bn's and bench/padding's collective rows at W ranks beside
PyTorch's, in one run with interleaved repetitions: for repetition k this
script runs our binaries (each `--reps 1 --backend B --world_size W`, JSON to
a temporary file, its rows' `rep:0` renamed `rep:k`), then PyTorch's
repetition k of the same rows in W persistent rank processes (one per rank,
torch.distributed on B), the order flipping every repetition (ours first in
0, 2, ...; our repetition 0 must come first: PyTorch takes its rows and
iteration counts from it). One JSON holds both sides per repetition, so each
ours / PyTorch ratio pairs two numbers of the same repetition;
bench/peers/dist_gpu_table.py makes the table from it.

  ours (binary, row)             PyTorch (W ranks, the same shapes / lengths)
  sync_bn bn/C/N/HW              nn.BatchNorm2d(C), training forward + backward
  sync_bn sync_bn/C/N/HW         nn.SyncBatchNorm(C) on the W-rank group (W > 1:
                                 it syncs); refuses CPU tensors (gloo rehearsal:
                                 the row records PyTorch's refusal, not timed)
  sync_bn group_norm/C/N/HW      nn.GroupNorm(min(32, max(1, C/2)), C): our groups
  sync_bn comm_floor/C/N/HW      all_gather_into_tensor of 2C+1 float32, then
                                 all_reduce of 2C float32 (our floor's sizes)
  padding .../floor_allgather    dist.all_gather (a list of W tensors) and
                                 dist.all_gather_into_tensor, each of
                                 ceil(sum/W) float64 per rank: two PyTorch rows
  padding .../pad_gather_trim    torchmetrics-style gather_all_tensors: sizes
                                 all_gather, F.pad to the longest, all_gather,
                                 slices + torch.cat (output checked first)

The forward + backward is torch.autograd.grad of the module's output for
(x, weight, bias) with a fixed dy. The padding lengths are re-derived from
bench/padding/profiles.cc's formulas (peers.lengths) and checked against
our JSON's bytes_per_rank and max_bytes before PyTorch times them.

Timing, as ours times (bench/sync_bn.cc, bench/padding/run.cc): per
iteration a barrier, then the steady clock (time.perf_counter) around the
step, which ends with torch.cuda.synchronize() on NCCL (ours:
Device::Synchronize; our NCCL collectives return once complete), then a MAX
all-reduce of the elapsed time outside the timed span: each iteration's
time is the slowest rank's wall clock. A repetition's number is its median
iteration, after one untimed call. PyTorch runs each row for the iteration
count our repetition 0 used for it (our binaries calibrate their own).
The ratio is of the slowest rank's wall clock on both sides; our rows
also carry their kernels' time by CUDA events (kernel_us, pad_trim_us),
which this script does not pair with anything of PyTorch's.

NCCL: rank r on cuda:(r % device_count); when W exceeds the GPUs visible
the ranks share GPUs, each with its own NCCL_HOSTID (as
repro/wrong_all_gather/pytorch/unequal_all_gather.py), and bench/padding
gets --share_gpu (bench/sync_bn shares by itself). Such rows are marked
shared_gpu on both sides: W processes time-slicing one GPU, not performance
claims. `--backend gloo` is a rehearsal of the plumbing on CPU tensors.

JSON (Google-Benchmark-shaped, written atomically): `benchmarks` has our
binaries' entries (`side` ours, `binary`, `rep`) and PyTorch's (`side`
torch, `ours_row`: the our row it pairs with, `call`, `median_us`,
`iterations`, `shared_gpu`); `repetitions` the order and times per
repetition; `context` torch, CUDA, NCCL, GPU(s), driver, GPUs visible,
world size, whether ranks share a GPU, our binaries' commits and commands;
`ours_context` each binary's own context from repetition 0. Exit 2 for bad
usage (one line naming the flag); without torch, or on nccl with a torch
that sees no GPU: one line, exit 0 before anything runs, no JSON (1 with
--require_gpu); 1 when a row fails or a repetition could not be completed
(the JSON keeps the repetitions before it, `ddp_stopped` says why).
"""
import argparse
import datetime
import json
import os
import select
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from peers import git_commit, lengths, loadavg_text, write_json  # the same folder
from torch_norm_gpu import Stop, alternate, ours_env  # the same folder: the interleaving, what stops it

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tables  # noqa: E402  bench/tables.py: its JSON reader

BINARIES = ("sync_bn", "padding")
NORM_KINDS = ("bn", "sync_bn", "group_norm", "comm_floor")
# PyTorch's call per our row kind (the table's second column).
NORM_CALLS = {"bn": "nn.BatchNorm2d", "sync_bn": "nn.SyncBatchNorm", "group_norm": "nn.GroupNorm",
              "comm_floor": "all_gather_into_tensor + all_reduce"}
GATHER_CALLS = {"floor_allgather": ("all_gather", "all_gather_into_tensor"),
                "pad_gather_trim": ("gather_all_tensors",)}
PAIRING = ("one run: per repetition k, our binaries (--reps 1, their rows renamed rep:k) and PyTorch's "
           "repetition k of the same rows on W persistent ranks, ours first in even repetitions, "
           "PyTorch first in odd ones")
TIMING = ("per iteration: barrier, steady clock around the step (ending with torch.cuda.synchronize "
          "on NCCL), MAX all-reduce of the elapsed time: the slowest rank's wall clock; a "
          "repetition's number is its median iteration (as bench/sync_bn and bench/padding)")
PROTO = "@@torch_dist "  # a rank's protocol lines on its stdout begin with this
OWN_FLAGS = {
    "sync_bn": ("--world_size", "--backend", "--reps", "--channels", "--batch", "--spatial", "--target_s",
                "--benchmark_out", "--benchmark_out_format", "--benchmark_repetitions",
                "--benchmark_list_tests", "--help"),
    "padding": ("--world_size", "--backend", "--reps", "--profiles", "--payloads", "--min_time",
                "--share_gpu", "--benchmark_filter", "--benchmark_out", "--benchmark_out_format",
                "--benchmark_repetitions", "--benchmark_list_tests", "--help")}


class UsageError(Exception):
    pass


def int_list(text, flag, lo, hi):
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        values = []
    if not values or not all(lo <= v <= hi for v in values):
        raise UsageError(f"{flag} {text}: allowed a comma-separated list of whole numbers in {lo}..{hi}")
    return text


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    ap.add_argument("--sync_bn_binary", metavar="PATH", help="bench/sync_bn (run once per repetition)")
    ap.add_argument("--padding_binary", metavar="PATH", help="bench/padding (run once per repetition)")
    ap.add_argument("--backend", default="nccl", help="nccl (GPU) or gloo (CPU tensors: a rehearsal)")
    ap.add_argument("--world_size", type=int, default=2, help="ranks on each side (2..64)")
    ap.add_argument("--reps", type=int, default=5, help="interleaved repetitions (1..100)")
    ap.add_argument("--channels", help="bench/sync_bn's --channels (default: its own)")
    ap.add_argument("--batch", help="bench/sync_bn's --batch, N per rank (default: its own)")
    ap.add_argument("--spatial", help="bench/sync_bn's --spatial, H = W (default: its own)")
    ap.add_argument("--target_s", help="bench/sync_bn's --target_s (default: its own)")
    ap.add_argument("--profiles", help="bench/padding's --profiles (default: its own, all)")
    ap.add_argument("--payloads", help="bench/padding's --payloads (default: its own)")
    ap.add_argument("--min_time", help="bench/padding's --min_time (default: its own)")
    ap.add_argument("--sync_bn_extra", default="", metavar="FLAGS",
                    help="more flags for bench/sync_bn, one string: --sync_bn_extra='--sched other'")
    ap.add_argument("--padding_extra", default="", metavar="FLAGS",
                    help="more flags for bench/padding, one string: --padding_extra='--pin_cpus'")
    ap.add_argument("--ours_lib_path", default="", metavar="DIRS",
                    help="folders put before LD_LIBRARY_PATH for our binaries only")
    ap.add_argument("--ours_timeout", type=float, default=600.0,
                    help="seconds one run of one of our binaries may take (1..86400)")
    ap.add_argument("--torch_timeout", type=float, default=600.0,
                    help="seconds PyTorch's ranks may take to start or for one repetition (1..86400)")
    ap.add_argument("--pg_timeout", type=float, default=120.0,
                    help="PyTorch process group timeout, seconds (1..3600)")
    ap.add_argument("--budget", type=float, default=0.0,
                    help="seconds for the whole run: no repetition starts that the slowest so far "
                         "would not finish in time (0: no limit)")
    ap.add_argument("--require_gpu", action="store_true",
                    help="exit 1, not 0, when torch or (on nccl) its GPU is missing")
    ap.add_argument("--json", help="write the record here (default: stdout)")
    ap.add_argument("--rank_main", help=argparse.SUPPRESS)  # a rank process (internal)
    args = ap.parse_args(argv)
    if args.rank_main:
        return args
    if args.backend not in ("nccl", "gloo"):
        raise UsageError(f"--backend {args.backend}: allowed nccl, gloo")
    if args.sync_bn_binary is None and args.padding_binary is None:
        raise UsageError("--sync_bn_binary PATH or --padding_binary PATH (or both) is required")
    for b in BINARIES:
        path = getattr(args, f"{b}_binary")
        if path is not None and not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise UsageError(f"--{b}_binary {path}: not an executable file")
    checks = ((2 <= args.world_size <= 64, f"--world_size {args.world_size}: allowed 2..64 (W > 1: "
                                           f"SyncBatchNorm syncs only there)"),
              (1 <= args.reps <= 100, f"--reps {args.reps}: allowed 1..100"),
              (1 <= args.ours_timeout <= 86400, f"--ours_timeout {args.ours_timeout:g}: allowed 1..86400"),
              (1 <= args.torch_timeout <= 86400, f"--torch_timeout {args.torch_timeout:g}: allowed 1..86400"),
              (1 <= args.pg_timeout <= 3600, f"--pg_timeout {args.pg_timeout:g}: allowed 1..3600"),
              (0 <= args.budget <= 86400, f"--budget {args.budget:g}: allowed 0..86400"))
    for ok, message in checks:
        if not ok:
            raise UsageError(message)
    for flag, lo, hi in (("channels", 1, 65536), ("batch", 1, 4096), ("spatial", 1, 256)):
        if getattr(args, flag) is not None:
            int_list(getattr(args, flag), f"--{flag}", lo, hi)
    if args.spatial is not None and "," in args.spatial:
        raise UsageError(f"--spatial {args.spatial}: allowed one whole number in 1..256")
    for flag, lo, hi in (("target_s", 1e-4, 60), ("min_time", 0, 60)):
        text = getattr(args, flag)
        if text is not None:
            try:
                ok = lo <= float(text) <= hi
            except ValueError:
                ok = False
            if not ok:
                raise UsageError(f"--{flag} {text}: allowed a number of seconds in {lo:g}..{hi:g}")
    for b in BINARIES:
        try:
            extra = shlex.split(getattr(args, f"{b}_extra"))
        except ValueError as e:
            raise UsageError(f"--{b}_extra: {e}")
        for a in extra:
            if a.split("=", 1)[0] in OWN_FLAGS[b]:
                raise UsageError(f"--{b}_extra {a}: this script sets {a.split('=', 1)[0]} of bench/{b} "
                                 f"itself (allowed there: flags other than {', '.join(OWN_FLAGS[b])})")
        setattr(args, f"{b}_extra_list", extra)
    return args


# ------------------------------------------------------------- our side

def ours_command(args, binary, out_path, share_gpu):
    """One repetition of one of our binaries, its JSON to out_path."""
    common = ["--world_size", str(args.world_size), "--backend", args.backend, "--reps", "1"]
    if binary == "sync_bn":
        cmd = [args.sync_bn_binary] + common
        for flag in ("channels", "batch", "spatial", "target_s"):
            if getattr(args, flag) is not None:
                cmd += [f"--{flag}", getattr(args, flag)]
    else:
        cmd = [args.padding_binary] + common
        for flag in ("profiles", "payloads", "min_time"):
            if getattr(args, flag) is not None:
                cmd += [f"--{flag}", getattr(args, flag)]
        cmd += ["--benchmark_filter=floor_allgather$|pad_gather_trim$"]
        if share_gpu:
            cmd += ["--share_gpu"]
    return cmd + getattr(args, f"{binary}_extra_list") + [f"--benchmark_out={out_path}",
                                                          "--benchmark_out_format=json"]


# Every session this process started and has not yet ended (our binaries'
# runs, PyTorch's ranks): killed on SIGTERM (lease.sh's `timeout`), which
# would otherwise leave them on the GPU after this driver is gone.
LIVE = set()


def on_term(signum, frame):
    for p in list(LIVE):
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
    raise SystemExit(128 + signum)


def run_bounded(cmd, env, timeout, what):
    """(exit status, stdout, stderr) of cmd in a session of its own; past
    `timeout` seconds the whole session (its spawned ranks too) is killed
    and Stop raised."""
    try:
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    except OSError as e:
        raise Stop(f"{what} did not start: {e.strerror}")
    LIVE.add(p)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_session(p)
        raise Stop(f"{what} ran past its timeout of {timeout:g} s")
    finally:
        LIVE.discard(p)
    return p.returncode, out, err


def kill_session(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except OSError:
        pass
    p.communicate()


def parse_sync_bn(name):
    """bn/C:16/N:2/HW:8x8/rep:0[/...] -> (kind, c, n, h, rep) or None."""
    parts = name.split("/")
    try:
        if len(parts) < 5 or parts[0] not in NORM_KINDS or not parts[4].startswith("rep:"):
            return None
        c, n = int(parts[1].removeprefix("C:")), int(parts[2].removeprefix("N:"))
        h, w = (int(v) for v in parts[3].removeprefix("HW:").split("x"))
        rep = int(parts[4][4:])
    except ValueError:
        return None
    if not (parts[1].startswith("C:") and parts[2].startswith("N:") and parts[3].startswith("HW:")) or h != w:
        return None
    return parts[0], c, n, h, rep


def parse_padding(name):
    """padding/nccl/W2/equal/1KiB/floor_allgather/rep:0[/...] -> (profile,
    payload bytes, method, rep) or None."""
    parts = name.split("/")
    if len(parts) < 7 or parts[0] != "padding" or parts[5] not in GATHER_CALLS or \
            not parts[6].startswith("rep:"):
        return None
    try:
        return parts[3], tables.payload_bytes(parts[4]), parts[5], int(parts[6][4:])
    except (tables.InputError, ValueError):
        return None


def ours_row(name):
    """Our entry's row: its name up to /rep:."""
    return name.split("/rep:", 1)[0]


def ours_entries(binary, data, rep, what, world_size):
    """The binary's entries of its one repetition, renamed rep:`rep`,
    marked side ours; Stop for a file that is not that."""
    parse = parse_sync_bn if binary == "sync_bn" else parse_padding
    out = []
    for b in data["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration":
            continue
        name = b.get("name", "")
        if binary == "padding" and name.startswith("padding/") and len(name.split("/")) > 5 and \
                name.split("/")[5] not in GATHER_CALLS:
            continue  # the floors bench/padding runs beside every filter: no PyTorch row
        parsed = parse(name)
        if parsed is None or parsed[-1] != 0:
            raise Stop(f"{what}: {b.get('name')!r} is not repetition 0 of a bench/{binary} row")
        if not b.get("error_occurred") and ("median_us" not in b or "iterations" not in b):
            raise Stop(f"{what}: {b['name']!r} has no median_us or iterations")
        if binary == "padding" and not b.get("error_occurred"):
            profile, payload, _, _ = parsed
            lens = lengths(profile, world_size, payload // 8)
            if abs(b.get("bytes_per_rank", -1) * world_size - 8 * sum(lens)) > 0.5 or \
                    abs(b.get("max_bytes", -1) - 8 * max(lens)) > 0.5:
                raise Stop(f"{what}: {b['name']}: its lengths differ from bench/padding/profiles.cc's "
                           f"formulas as this script re-derives them")
        parts = b["name"].split("/rep:0", 1)
        out.append(dict(b, name=f"{parts[0]}/rep:{rep}{parts[1]}", side="ours", binary=binary, rep=rep))
    if not out:
        raise Stop(f"{what}: no bench/{binary} rows")
    return out


def plan_from(entries, world_size):
    """PyTorch's rows from our repetition 0: [{ours_row, kind or method,
    shape or lengths, iterations}], one per our row that ran."""
    plan = []
    for b in entries:
        if b.get("error_occurred"):
            continue
        row, iters = ours_row(b["name"]), int(b["iterations"])
        if b["binary"] == "sync_bn":
            kind, c, n, h, _ = parse_sync_bn(b["name"])
            plan.append({"ours_row": row, "bench": "norm", "kind": kind, "c": c, "n": n, "hw": h,
                         "iters": iters})
        else:
            profile, payload, method, _ = parse_padding(b["name"])
            for call in GATHER_CALLS[method]:
                plan.append({"ours_row": row, "bench": "gather", "call": call, "profile": profile,
                             "payload": payload, "lens": lengths(profile, world_size, payload // 8),
                             "iters": iters})
    return plan


def run_ours(args, binary, rep, folder, share_gpu, seen, log):
    """One repetition of one binary: (its context, its entries as rep)."""
    out = os.path.join(folder, f"{binary}_rep{rep}.json")
    what = f"repetition {rep}: bench/{binary}"
    rc, _, err = run_bounded(ours_command(args, binary, out, share_gpu), ours_env(args), args.ours_timeout, what)
    said = [line for line in err.splitlines() if line.strip()]
    if rc != 0 or not os.path.exists(out):
        raise Stop(f"{what} exited {rc}{', no JSON' if not os.path.exists(out) else ''}: "
                   f"{said[-1] if said else 'nothing on stderr'}")
    for line in said:  # its warnings (the DEBUG build of Google Benchmark, shared GPUs), once each
        if line not in seen and any(w in line.lower() for w in ("warning", "error", "shared")):
            seen.add(line)
            log(f"torch_dist_gpu: bench/{binary}: {line}")
    try:
        data = tables.load(out)
    except tables.InputError as e:
        raise Stop(f"{what}: {e}")
    return data.get("context", {}), ours_entries(binary, data, rep, what, args.world_size)


def drive(reps, world_size, ours_block, torch_block, log, budget_s=0.0, clock=time.monotonic):
    """For k in 0..reps-1: our binaries' repetition k (ours_block(k) ->
    ({binary: context}, entries)) and PyTorch's (torch_block(k, plan) ->
    entries), ours first when k is even (torch_norm_gpu.alternate; budget_s
    as there). Returns (our repetition 0's contexts, the completed
    repetitions, their entries, why the run stopped or None)."""
    first = {}

    def side_block(k, side, rep):
        if side == "torch":
            return torch_block(k, first["plan"])
        ctxs, side_entries = ours_block(k)
        names = [ours_row(e["name"]) for e in side_entries]
        if not first:
            first.update(contexts=ctxs, plan=plan_from(side_entries, world_size), names=names)
        elif names != first["names"]:
            raise Stop(f"repetition {k}: our binaries ran other rows than in repetition 0")
        for b, ctx in ctxs.items():
            for key in ("ddp_commit", "ddp_gpu", "ddp_shared_gpu", "ddp_world_size"):
                if ctx.get(key) != first["contexts"][b].get(key):
                    raise Stop(f"repetition {k}: bench/{b}'s {key} is {ctx.get(key)!r}, "
                               f"{first['contexts'][b].get(key)!r} in repetition 0")
        return side_entries
    done, entries, stopped = alternate(reps, side_block, log, "torch_dist_gpu", budget_s, clock)
    return first.get("contexts", {}), done, entries, stopped


def torch_entries(results, rep, plan, shared):
    """PyTorch's JSON entries of repetition `rep` from rank 0's results
    (one per plan row, in order)."""
    out = []
    for row, res in zip(plan, results):
        name = f"torch_dist/{row['call'] if row['bench'] == 'gather' else NORM_CALLS[row['kind']]}/" \
               f"{row['ours_row']}/rep:{rep}"
        e = {"name": name, "run_type": "iteration", "side": "torch", "rep": rep, "ours_row": row["ours_row"],
             "call": row.get("call") or NORM_CALLS[row["kind"]], "shared_gpu": 1 if shared else 0}
        if "error" in res:
            e.update(error_occurred=True, error_message=res["error"][:500])
        else:
            e.update(iterations=res["iterations"], real_time=res["median_us"], cpu_time=0.0, time_unit="us",
                     median_us=res["median_us"], mean_us=res["mean_us"])
        out.append(e)
    return out


# ------------------------------------------------------------- PyTorch's ranks

class Ranks:
    """W rank processes of this script (--rank_main), each a torch.distributed
    rank that stays up for the run: ask() sends every rank one JSON command
    on stdin and waits, at most `timeout` s, for each one's JSON reply."""

    def __init__(self, args, folder, python=sys.executable):
        self.procs, self.errs, self.pending = [], [], [b""] * args.world_size
        store = f"file://{folder}/torch_store"
        for r in range(args.world_size):
            cfg = {"rank": r, "world_size": args.world_size, "backend": args.backend, "store": store,
                   "pg_timeout": args.pg_timeout}
            err = open(os.path.join(folder, f"torch_rank{r}.err"), "w+")
            self.errs.append(err)
            self.procs.append(subprocess.Popen(
                [python, os.path.abspath(__file__), "--rank_main", json.dumps(cfg)], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1, start_new_session=True))
            LIVE.add(self.procs[-1])

    def _reply(self, r, end):
        """Rank r's next protocol line (other output skipped), read from its
        pipe unbuffered: select() sees only what no reader has taken yet."""
        fd = self.procs[r].stdout.fileno()
        while True:
            while b"\n" not in self.pending[r]:
                left = end - time.monotonic()
                if left <= 0 or not select.select([fd], [], [], left)[0]:
                    raise Stop(f"PyTorch rank {r} did not answer in time (--torch_timeout){self._last_err(r)}")
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise Stop(f"PyTorch rank {r} exited {self.procs[r].wait()}{self._last_err(r)}")
                self.pending[r] += chunk
            line, self.pending[r] = self.pending[r].split(b"\n", 1)
            text = line.decode(errors="replace")
            if text.startswith(PROTO):
                return json.loads(text[len(PROTO):])

    def _last_err(self, r):
        self.errs[r].seek(0)
        lines = [line.strip() for line in self.errs[r].read().splitlines() if line.strip()]
        return f": {lines[-1][:300]}" if lines else ""

    def ready(self, timeout):
        """Every rank's description once it has joined the process group."""
        end = time.monotonic() + timeout
        return self._checked([self._reply(r, end) for r in range(len(self.procs))])

    def _checked(self, replies):
        for r, rep in enumerate(replies):
            if "fatal" in rep:
                raise Stop(f"PyTorch rank {r}: {rep['fatal']}")
        return replies

    def ask(self, cmd, timeout):
        end = time.monotonic() + timeout
        try:
            for p in self.procs:
                p.stdin.write(json.dumps(cmd) + "\n")
                p.stdin.flush()
        except OSError as e:
            raise Stop(f"PyTorch's ranks cannot be reached: {e.strerror}")
        return self._checked([self._reply(r, end) for r in range(len(self.procs))])

    def close(self, grace=30.0):
        """Asks every rank to quit; one still up after `grace` s (stuck in
        a collective) is killed with its session."""
        for p in self.procs:
            try:
                p.stdin.write(json.dumps({"op": "quit"}) + "\n")
                p.stdin.close()
            except OSError:
                pass
        end = time.monotonic() + grace
        for p in self.procs:
            try:
                p.wait(timeout=max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
                p.wait()
            LIVE.discard(p)
        for e in self.errs:
            e.close()


def evidence_module():
    """tools/vs_pytorch/evidence.py of this tree (what the PyTorch evidence
    scripts record), imported where a rank needs it."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if root not in sys.path:
        sys.path.insert(0, root)
    from tools.vs_pytorch import evidence
    return evidence


def groups_for(c):
    """bench/sync_bn.cc's GroupsFor."""
    return min(32, max(1, c // 2))


def rank_main(cfg):
    """One PyTorch rank: set up, then answer the driver's commands."""
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever a library prints goes to stderr, not into the protocol

    def say(obj):
        proto.write(PROTO + json.dumps(obj) + "\n")
        proto.flush()

    try:
        import torch
        import torch.distributed as dist
        r, w, backend = cfg["rank"], cfg["world_size"], cfg["backend"]
        nccl = backend == "nccl"
        gpus = torch.cuda.device_count() if nccl else 0
        shared = nccl and w > gpus
        if nccl:
            if shared:  # NCCL refuses two ranks on one GPU unless they look like hosts
                os.environ["NCCL_HOSTID"] = f"ddp-pitfalls-rank{r}"
            device = torch.device("cuda", r % gpus)
            torch.cuda.set_device(device)
        else:  # one thread per rank, as our ranks (and bench/peers/peers.py's) run
            device = torch.device("cpu")
            torch.set_num_threads(1)
        kwargs = {"device_id": device} if nccl else {}
        dist.init_process_group(backend, init_method=cfg["store"], rank=r, world_size=w,
                                timeout=datetime.timedelta(seconds=cfg["pg_timeout"]), **kwargs)
        side = RankSide(torch, dist, device, r, w, nccl)
        say(side.describe(gpus, shared))
    except Exception as e:  # reported to the driver, which stops the run
        say({"fatal": f"setup: {type(e).__name__}: {e}"[:500]})
        return 1
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd.get("op") != "block":
            break
        try:
            say({"results": [side.row(row) for row in cmd["plan"]]})
        except Exception as e:
            say({"fatal": f"repetition {cmd.get('rep')}: {type(e).__name__}: {e}"[:500]})
            return 1
    dist.destroy_process_group()
    return 0


class RankSide:
    """A rank's rows: each built, checked where there is an expected output,
    run once untimed, then timed as ours are."""

    def __init__(self, torch, dist, device, rank, world_size, nccl):
        self.torch, self.dist, self.device, self.rank, self.w, self.nccl = torch, dist, device, rank, world_size, nccl
        self.dt = torch.zeros(1, dtype=torch.float64, device=device)

    def describe(self, gpus, shared):
        torch = self.torch
        out = {"torch": torch.__version__, "torch_cuda": str(torch.version.cuda), "gpus_visible": gpus,
               "shared_gpu": shared, "device": str(self.device), "python": sys.executable}
        if self.nccl:
            out["gpu"] = torch.cuda.get_device_name(self.device)
            out["nccl"] = ".".join(str(v) for v in torch.cuda.nccl.version())
            out["driver"] = evidence_module().driver_version()
        return out

    def sync(self):
        if self.nccl:
            self.torch.cuda.synchronize()

    def barrier(self):
        if self.nccl:
            self.dist.barrier(device_ids=[self.device.index])
            self.torch.cuda.synchronize()
        else:
            self.dist.barrier()

    def timed(self, fn, iters):
        fn()
        self.sync()
        dts = []
        for _ in range(iters):
            self.barrier()
            t0 = time.perf_counter()
            fn()
            self.sync()
            self.dt.fill_(time.perf_counter() - t0)
            self.dist.all_reduce(self.dt, op=self.dist.ReduceOp.MAX)  # outside the timed span
            dts.append(self.dt.item())
        return {"iterations": iters, "median_us": 1e6 * statistics.median(dts),
                "mean_us": 1e6 * statistics.mean(dts)}

    def row(self, row):
        try:
            fn = self.norm_step(row) if row["bench"] == "norm" else self.gather_step(row)
        except NotTimed as e:
            return {"error": str(e)}
        result = self.timed(fn, row["iters"])
        del fn
        if self.nccl:  # our binaries find the GPU's memory free
            self.torch.cuda.empty_cache()
        return result

    def norm_step(self, row):
        torch, dist, device = self.torch, self.dist, self.device
        kind, c, n, hw = row["kind"], row["c"], row["n"], row["hw"]
        if kind == "comm_floor":  # our floor's sizes: all_gather 2C+1, all_reduce 2C (float32)
            a = torch.ones(2 * c + 1, device=device)
            gathered = torch.empty(self.w * (2 * c + 1), device=device)
            reduced = torch.ones(2 * c, device=device)

            def floor():
                dist.all_gather_into_tensor(gathered, a)
                dist.all_reduce(reduced)
            return floor
        gen = torch.Generator().manual_seed(self.rank * 7919 + c * 31 + n)
        x = (torch.randn(n, c, hw, hw, generator=gen) * 2 + 3).to(device).requires_grad_()
        dy = torch.randn(n, c, hw, hw, generator=gen).to(device)
        module = {"bn": lambda: torch.nn.BatchNorm2d(c), "sync_bn": lambda: torch.nn.SyncBatchNorm(c),
                  "group_norm": lambda: torch.nn.GroupNorm(groups_for(c), c)}[kind]().to(device).train()
        if kind == "sync_bn" and not self.nccl:
            try:  # PyTorch's own answer on CPU tensors, recorded; every rank gets it before any collective
                module(x)
            except (ValueError, RuntimeError) as e:
                raise NotTimed(f"not available on CPU: {type(e).__name__}: {e}")

        def step():
            torch.autograd.grad(module(x), (x, module.weight, module.bias), dy)
        return step

    def gather_step(self, row):
        torch, dist, device, w = self.torch, self.dist, self.device, self.w
        lens, f64 = row["lens"], torch.float64
        if row["call"] in ("all_gather", "all_gather_into_tensor"):
            count = -(-sum(lens) // w)
            inp = torch.arange(count, dtype=f64, device=device)
            if row["call"] == "all_gather":
                outs = [torch.empty(count, dtype=f64, device=device) for _ in range(w)]
                return lambda: dist.all_gather(outs, inp)
            out = torch.empty(w * count, dtype=f64, device=device)
            return lambda: dist.all_gather_into_tensor(out, inp)
        mine = torch.arange(lens[self.rank], dtype=f64, device=device) + self.rank * 4294967296.0

        def gather_all_tensors():  # torchmetrics-style: sizes, pad, all_gather, trim; then cat
            size = torch.tensor([mine.shape[0]], dtype=torch.int64, device=device)
            sizes = [torch.zeros(1, dtype=torch.int64, device=device) for _ in range(w)]
            dist.all_gather(sizes, size)
            counts = [int(s.item()) for s in sizes]
            padded = torch.nn.functional.pad(mine, (0, max(counts) - mine.shape[0]))
            out = [torch.empty(max(counts), dtype=f64, device=device) for _ in range(w)]
            dist.all_gather(out, padded)
            return torch.cat([o[:k] for o, k in zip(out, counts)])

        want = torch.cat([torch.arange(k, dtype=f64, device=device) + r * 4294967296.0 for r, k in enumerate(lens)])
        if not torch.equal(gather_all_tensors(), want):
            raise RuntimeError(f"{row['ours_row']}: PyTorch's gather_all_tensors output is wrong")
        return gather_all_tensors


class NotTimed(Exception):
    """A row PyTorch does not offer here (its reason is the row's record)."""


# ------------------------------------------------------------- the run

def torch_or_reason(args):
    """(torch, None) or (None, why nothing can be timed)."""
    try:
        import torch
        import torch.distributed as dist
    except ImportError:
        return None, ("no torch in this Python (tools/setup.sh --torch2.15 makes .venv-torch2.15; the GPU "
                      "machines have torch 2.11)")
    if not dist.is_available():
        return None, f"torch {torch.__version__} has no torch.distributed"
    if args.backend == "nccl":
        if not torch.cuda.is_available():
            return None, (f"torch {torch.__version__} sees no CUDA device (torch.cuda.is_available() is "
                          f"False; built for CUDA {torch.version.cuda}); --backend gloo rehearses on CPU")
        if not dist.is_nccl_available():
            return None, f"torch {torch.__version__} has no NCCL backend"
    return torch, None


def run(args, log):
    torch, why = torch_or_reason(args)
    if why:
        log(f"torch_dist_gpu: {why}; nothing timed")
        return 1 if args.require_gpu else 0
    signal.signal(signal.SIGTERM, on_term)
    binaries = [b for b in BINARIES if getattr(args, f"{b}_binary")]
    commit = os.environ.get("DDP_PITFALLS_COMMIT") or git_commit()
    context = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "host_name": socket.gethostname(), "num_cpus": os.cpu_count() or 1,
               "ddp_tool": "bench/peers/torch_dist_gpu", "ddp_commit": commit, "ddp_backend": args.backend,
               "ddp_world_size": str(args.world_size), "ddp_reps": str(args.reps), "ddp_timing": TIMING,
               "ddp_loadavg_start": loadavg_text()}
    seen = set()
    with tempfile.TemporaryDirectory(prefix="torch_dist_gpu-") as folder:
        ranks = Ranks(args, folder)
        try:
            ready = ranks.ready(args.torch_timeout)
        except Stop as e:
            ranks.close(grace=10)
            log(f"torch_dist_gpu: stopped: {e}")
            return 1
        r0 = ready[0]
        shared = bool(r0["shared_gpu"])
        context.update({"ddp_torch": r0["torch"], "ddp_torch_cuda": r0["torch_cuda"],
                        "ddp_gpus_visible": str(r0["gpus_visible"]),
                        "ddp_torch_devices": ", ".join(rep["device"] for rep in ready),
                        "ddp_shared_gpu": (f"yes: {args.world_size} ranks on {r0['gpus_visible']} GPU(s), each "
                                           f"rank its own NCCL_HOSTID; not for performance claims")
                        if shared else ("no" if args.backend == "nccl" else
                                        "no GPU: gloo rehearsal on CPU tensors (plumbing, not a GPU measurement)")})
        for key in ("gpu", "nccl", "driver"):
            if key in r0:
                context[f"ddp_torch_{key}" if key != "driver" else "ddp_driver"] = r0[key]

        def ours_block(k):
            ctxs, entries = {}, []
            for b in binaries:
                ctx, got = run_ours(args, b, k, folder, shared, seen, log)
                ctxs[b] = ctx
                entries += got
            return ctxs, entries

        def torch_block(k, plan):
            results = ranks.ask({"op": "block", "rep": k, "plan": plan}, args.torch_timeout)[0]["results"]
            for row, res in zip(plan, results):
                if "error" in res and k == 0:  # the same every repetition: said once
                    log(f"torch_dist_gpu: PyTorch {row['ours_row']}: {res['error'][:300]}")
            return torch_entries(results, k, plan, shared)

        ours_ctxs, reps, entries, stopped = drive(args.reps, args.world_size, ours_block, torch_block, log,
                                                  args.budget)
        ranks.close(grace=10 if stopped else 30)
    if stopped:
        log(f"torch_dist_gpu: stopped: {stopped}")
    if not reps:
        log("torch_dist_gpu: no repetition completed; nothing written")
        return 1
    context.update({
        "ddp_pairing": PAIRING, "ddp_reps_done": str(len(reps)), "ddp_loadavg_end": loadavg_text(),
        "ddp_ours_lib_path": args.ours_lib_path or "(LD_LIBRARY_PATH as given)"})
    for b in binaries:
        ctx = ours_ctxs.get(b, {})
        context[f"ddp_ours_{b}_command"] = " ".join(shlex.quote(a) for a in ours_command(args, b, "TMP.json", shared))
        context[f"ddp_ours_{b}_commit"] = ctx.get("ddp_commit", "?")
        context[f"ddp_ours_{b}_shared_gpu"] = ctx.get("ddp_shared_gpu", "(not recorded: gloo)")
    if stopped:
        context["ddp_stopped"] = stopped
    write_json({"context": context, "ours_context": ours_ctxs, "repetitions": reps, "benchmarks": entries},
               args.json)
    failed = [e["name"] for e in entries if e.get("error_occurred")]
    if failed:
        log(f"torch_dist_gpu: {len(failed)} entr{'y' if len(failed) == 1 else 'ies'} not timed, e.g. {failed[0]}")
    # A row PyTorch does not offer on this backend (SyncBatchNorm on CPU) is a record, not a failure.
    real = [e for e in entries if e.get("error_occurred") and not e["error_message"].startswith("not available")]
    return 1 if real or stopped else 0


def main(argv, log=lambda m: print(m, file=sys.stderr)):
    try:
        args = parse_args(argv)
    except UsageError as e:
        log(f"torch_dist_gpu: {e}")
        return 2
    if args.rank_main:
        return rank_main(json.loads(args.rank_main))
    return run(args, log)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
