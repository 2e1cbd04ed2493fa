"""The W-rank collective rows' Python side, without torch and without a GPU:
torch_dist_gpu.py's flags and exit 2, the commands it runs bench/sync_bn and
bench/padding with (fake binaries: scripts that write their JSON for the
flags given), the alternation of the two sides per repetition and the
renaming of our rows, PyTorch's plan from our repetition 0 (shapes, groups'
source, lengths re-derived and checked, iteration counts), the stops (a
binary refusing, one past --ours_timeout killed with the ranks it spawned,
rows that change, --budget), the rank protocol with fake rank processes
(replies among other output, a rank that never answers), the exits without
torch and with a torch that sees no GPU (fake torch packages), and
dist_gpu_table.py on a driven run and fake runs: per-repetition pairing,
ratios, shared-GPU marks, PyTorch's not-timed rows, and its refusals.

    dist_gpu_test.py   (run by //analysis:py_test.sh with Debian's python3)
"""
import json
import os
import stat
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import dist_gpu_table  # noqa: E402
import peers  # noqa: E402
import torch_dist_gpu as tdg  # noqa: E402
import script_test_util as util  # noqa: E402
from script_test_util import expect, failures  # noqa: E402


# A stand-in for bench/sync_bn or bench/padding (argv[1] of the script says
# which): logs each run (argv, LD_LIBRARY_PATH) to $FAKE_LOG, then writes
# their Google-Benchmark JSON for the flags given, named and counted as the
# real binaries do (padding adds its floor_allgatherv, as its filter keeps
# the floors). Run i (from 0) reports median_us $FAKE_TIMES[i];
# $FAKE_FAIL_AT makes run i refuse, $FAKE_SLEEP makes every run that long
# after starting a child that outlives it unless killed ($FAKE_CHILD: its
# pid file), $FAKE_EXTRA_AT adds a row to run i, $FAKE_SHARED says
# ddp_shared_gpu yes, $FAKE_BAD_LENGTHS reports other lengths.
FAKE_BINARY = r'''#!/usr/bin/python3
import json, os, subprocess, sys, time
kind = "sync_bn" if "sync_bn" in os.path.basename(sys.argv[0]) else "padding"
args = sys.argv[1:]
log = os.environ["FAKE_LOG"]
with open(log, "a+") as f:
    f.seek(0)
    run = sum(1 for line in f if line.startswith("ours "))
    f.write("ours " + json.dumps({"kind": kind, "argv": args, "ld": os.environ.get("LD_LIBRARY_PATH", "")}) + "\n")
if os.environ.get("FAKE_FAIL_AT") == str(run):
    print(f"{kind}: --backend nccl needs a GPU (fake)", file=sys.stderr)
    sys.exit(1)
if os.environ.get("FAKE_SLEEP"):
    child = subprocess.Popen(["sleep", "30"])
    with open(os.environ["FAKE_CHILD"], "w") as f:
        f.write(str(child.pid))
    time.sleep(float(os.environ["FAKE_SLEEP"]))
def flag(name, default):
    return args[args.index(name) + 1] if name in args else default
out = [a.split("=", 1)[1] for a in args if a.startswith("--benchmark_out=")][0]
w = int(flag("--world_size", "4"))
t = float(os.environ["FAKE_TIMES"].split(",")[run // 2])
benchmarks = []
def entry(name, iters, **counters):
    benchmarks.append(dict({"name": f"{name}/rep:0/iterations:{iters}/manual_time", "run_type": "iteration",
                            "iterations": iters, "real_time": t, "time_unit": "us", "median_us": t, "rep": 0.0,
                            "W": float(w)}, **counters))
if kind == "sync_bn":
    s = int(flag("--spatial", "8"))
    for c in flag("--channels", "16,64").split(","):
        for n in flag("--batch", "2").split(","):
            for k in ("bn", "sync_bn", "group_norm", "comm_floor"):
                entry(f"{k}/C:{c}/N:{n}/HW:{s}x{s}", 7)
    if os.environ.get("FAKE_EXTRA_AT") == str(run):
        entry("bn/C:999/N:2/HW:8x8", 7)
else:
    for p in flag("--profiles", "equal").split(","):
        for x in flag("--payloads", "1K").split(","):
            n = (int(x[:-1]) * 1024 if x.endswith("K") else int(x)) // 8
            lens = {"equal": [n] * w, "straggler": [n] * (w - 1) + [2 * n]}[p]
            if os.environ.get("FAKE_BAD_LENGTHS"):
                lens = [n] * w
            name = f"padding/{flag('--backend', 'gloo')}/W{w}/{p}/{x}iB"
            for m in ("floor_allgather", "floor_allgatherv", "pad_gather_trim"):
                entry(f"{name}/{m}", 11, bytes_per_rank=8.0 * sum(lens) / w, max_bytes=8.0 * max(lens))
ctx = {"date": f"run{run}", "ddp_commit": "c0ffee", "ddp_world_size": str(w),
       "ddp_shared_gpu": "yes: fake" if os.environ.get("FAKE_SHARED") else "no"}
with open(out, "w") as f:
    json.dump({"context": ctx, "benchmarks": benchmarks}, f)
print("console table")
'''


def write(folder, name, text, executable=False):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(text)
    if executable:
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def fake_binaries(tmp):
    return (write(tmp, "fake_sync_bn", FAKE_BINARY, True), write(tmp, "fake_padding", FAKE_BINARY, True))


def run_script(args, env_extra=None):
    return util.run_script('torch_dist_gpu.py', args, env_extra)


def usage(argv, want):
    util.usage(tdg, argv, want)


def test_arguments(tmp):
    sync_bn, padding = fake_binaries(tmp)
    plain = write(tmp, "not_executable", "{}")
    usage([], "--sync_bn_binary PATH or --padding_binary PATH")
    usage(["--sync_bn_binary", plain], "--sync_bn_binary " + plain + ": not an executable file")
    usage(["--padding_binary", os.path.join(tmp, "absent")], "not an executable file")
    ok = ["--sync_bn_binary", sync_bn]
    for argv, want in ((["--backend", "mpi"], "--backend mpi: allowed nccl, gloo"),
                       (["--world_size", "1"], "--world_size 1: allowed 2..64"),
                       (["--reps", "0"], "--reps 0"), (["--ours_timeout", "0"], "--ours_timeout 0"),
                       (["--torch_timeout", "1e6"], "--torch_timeout"), (["--pg_timeout", "0"], "--pg_timeout 0"),
                       (["--budget", "-1"], "--budget -1"), (["--channels", "16,x"], "--channels 16,x"),
                       (["--batch", "0"], "--batch 0"), (["--spatial", "8,8"], "--spatial 8,8"),
                       (["--target_s", "soon"], "--target_s soon"), (["--min_time", "99"], "--min_time 99"),
                       (["--sync_bn_extra=--reps 3"], "--sync_bn_extra --reps: this script sets --reps"),
                       (["--padding_extra=--share_gpu"], "sets --share_gpu of bench/padding itself"),
                       (["--padding_extra=--benchmark_filter=x"], "sets --benchmark_filter"),
                       (["--sync_bn_extra", "'unclosed"], "--sync_bn_extra:")):
        usage(ok + argv, want)
    args = tdg.parse_args(ok + ["--padding_binary", padding, "--sync_bn_extra=--sched other --pin_cpus"])
    expect(args.world_size == 2 and args.reps == 5 and args.backend == "nccl" and
           args.sync_bn_extra_list == ["--sched", "other", "--pin_cpus"] and args.padding_extra_list == [],
           f"parsed {args}")
    # Exit 2 with one line naming the flag, from the command line too.
    rc, err = run_script(["--sync_bn_binary", sync_bn, "--world_size", "1"])
    expect(rc == 2 and err.count("\n") == 1 and "--world_size 1" in err, f"--world_size 1: {rc} {err!r}")
    rc, err = run_script(["--reps", "many"])
    expect(rc == 2 and "--reps" in err, f"--reps many: {rc} {err}")


def test_commands(tmp):
    sync_bn, padding = fake_binaries(tmp)
    args = tdg.parse_args(["--sync_bn_binary", sync_bn, "--padding_binary", padding, "--world_size", "4",
                           "--channels", "16,256", "--batch", "2", "--spatial", "8", "--target_s", "0.05",
                           "--profiles", "equal", "--payloads", "1K,1M", "--min_time", "0.01",
                           "--sync_bn_extra=--sched other", "--ours_lib_path", "/b/lib:/n/lib"])
    expect(tdg.ours_command(args, "sync_bn", "/t/o.json", True) ==
           [sync_bn, "--world_size", "4", "--backend", "nccl", "--reps", "1", "--channels", "16,256",
            "--batch", "2", "--spatial", "8", "--target_s", "0.05", "--sched", "other",
            "--benchmark_out=/t/o.json", "--benchmark_out_format=json"],
           f"sync_bn command {tdg.ours_command(args, 'sync_bn', '/t/o.json', True)}")
    # bench/padding shares GPUs only when told (--share_gpu), bench/sync_bn by itself.
    expect(tdg.ours_command(args, "padding", "/t/p.json", True) ==
           [padding, "--world_size", "4", "--backend", "nccl", "--reps", "1", "--profiles", "equal",
            "--payloads", "1K,1M", "--min_time", "0.01", "--benchmark_filter=floor_allgather$|pad_gather_trim$",
            "--share_gpu", "--benchmark_out=/t/p.json", "--benchmark_out_format=json"],
           f"padding command {tdg.ours_command(args, 'padding', '/t/p.json', True)}")
    expect("--share_gpu" not in tdg.ours_command(args, "padding", "/t/p.json", False), "no --share_gpu")
    bare = tdg.parse_args(["--padding_binary", padding, "--backend", "gloo"])
    expect(tdg.ours_command(bare, "padding", "o", False) ==
           [padding, "--world_size", "2", "--backend", "gloo", "--reps", "1",
            "--benchmark_filter=floor_allgather$|pad_gather_trim$", "--benchmark_out=o",
            "--benchmark_out_format=json"], "padding at its defaults")
    saved = os.environ.get("LD_LIBRARY_PATH")
    os.environ["LD_LIBRARY_PATH"] = "/old"
    try:
        expect(tdg.ours_env(args)["LD_LIBRARY_PATH"] == "/b/lib:/n/lib:/old", "LD_LIBRARY_PATH prepended")
    finally:
        if saved is None:
            del os.environ["LD_LIBRARY_PATH"]
        else:
            os.environ["LD_LIBRARY_PATH"] = saved
    expect(tdg.parse_sync_bn("comm_floor/C:256/N:32/HW:8x8/rep:0/iterations:9/manual_time") ==
           ("comm_floor", 256, 32, 8, 0), "parse_sync_bn")
    for bad in ("floor/C:1/N:2/HW:8x8/rep:0", "bn/N:2/C:1/HW:8x8/rep:0", "bn/C:1/N:2/HW:8x4/rep:0", "bn/C:1/N:2"):
        expect(tdg.parse_sync_bn(bad) is None, f"parse_sync_bn accepted {bad}")
    expect(tdg.parse_padding("padding/nccl/W2/straggler/16MiB/pad_gather_trim/rep:3/iterations:3/manual_time") ==
           ("straggler", 16 << 20, "pad_gather_trim", 3), "parse_padding")
    expect(tdg.groups_for(16) == 8 and tdg.groups_for(1024) == 32 and tdg.groups_for(1) == 1, "groups")


class FakeTorch:
    """PyTorch's side: logs its repetitions and returns rank 0's results,
    median_us times[k] for every row of the plan (the SyncBatchNorm row
    'not available' when cpu)."""

    def __init__(self, log_path, times, cpu=False):
        self.log_path, self.times, self.plans, self.cpu = log_path, times, [], cpu

    def block(self, k, plan):
        with open(self.log_path, "a") as f:
            f.write(f"torch {k}\n")
        self.plans.append(plan)
        results = [{"error": "not available on CPU: ValueError: SyncBatchNorm expected input tensor to be on GPU"}
                   if self.cpu and row.get("kind") == "sync_bn" else
                   {"iterations": row["iters"], "median_us": self.times[k], "mean_us": self.times[k]}
                   for row in plan]
        return tdg.torch_entries(results, k, plan, shared=not self.cpu)


def drive_fake(tmp, name, reps, ours_times, torch_times, extra_env=None, flags=(), budget=0.0, clock=None,
               cpu=False):
    """drive() with the fake binaries through run_ours and FakeTorch."""
    log_path = os.path.join(tmp, f"{name}.log")
    env = {"FAKE_LOG": log_path, "FAKE_TIMES": ",".join(map(str, ours_times)),
           "FAKE_CHILD": os.path.join(tmp, f"{name}.child")}
    env.update(extra_env or {})
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    sync_bn, padding = fake_binaries(tmp)
    args = tdg.parse_args(["--sync_bn_binary", sync_bn, "--padding_binary", padding, "--reps", str(reps),
                           "--channels", "16", "--batch", "2", "--profiles", "equal,straggler", "--payloads", "1K",
                           "--ours_lib_path", "/bundle/lib"] + list(flags))
    folder = os.path.join(tmp, name)
    os.makedirs(folder)
    torch = FakeTorch(log_path, torch_times, cpu)
    said = []

    def ours_block(k):
        ctxs, entries = {}, []
        for b in tdg.BINARIES:
            ctx, got = tdg.run_ours(args, b, k, folder, True, set(), said.append)
            ctxs[b] = ctx
            entries += got
        return ctxs, entries
    try:
        kwargs = {"clock": clock} if clock else {}
        result = tdg.drive(reps, args.world_size, ours_block, torch.block, said.append, budget, **kwargs)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    log = []
    if os.path.exists(log_path):
        with open(log_path) as f:
            log = [line.split(" ", 1) for line in f.read().splitlines()]
    return result, log, torch, said


def run_record(result, backend="nccl", shared="yes: 2 ranks on 1 GPU(s)"):
    ours_ctxs, reps, entries, stopped = result
    ctx = {"ddp_pairing": tdg.PAIRING, "ddp_reps": str(len(reps)), "ddp_torch": "9.9.9+fake", "date": "d",
           "ddp_backend": backend, "ddp_world_size": "2", "ddp_shared_gpu": shared}
    if backend == "nccl":
        ctx.update(ddp_torch_gpu="NVIDIA H100 80GB HBM3", ddp_gpus_visible="1", ddp_driver="fake driver")
    if stopped:
        ctx["ddp_stopped"] = stopped
    return {"context": ctx, "ours_context": ours_ctxs, "repetitions": reps, "benchmarks": entries}


def test_drive(tmp):
    # Ours per repetition 10, 30, 20 us (both binaries); PyTorch's 20, 30,
    # 80: per-repetition ratios 0.5, 1.0, 0.25 -> median 0.50 [0.25, 1.00]
    # (the ratio of the medians would be 20 / 30 = 0.67).
    result, log, torch, said = drive_fake(tmp, "ok", 3, [10, 30, 20], [20, 30, 80])
    ours_ctxs, reps, entries, stopped = result
    expect(stopped is None, f"stopped: {stopped}")
    sides = [(side, json.loads(rest)["kind"] if side == "ours" else rest) for side, rest in log]
    expect(sides == [("ours", "sync_bn"), ("ours", "padding"), ("torch", "0"), ("torch", "1"), ("ours", "sync_bn"),
                     ("ours", "padding"), ("ours", "sync_bn"), ("ours", "padding"), ("torch", "2")], f"order {sides}")
    expect([r["order"] for r in reps] == [["ours", "torch"], ["torch", "ours"], ["ours", "torch"]] and
           all("ours_s" in r and "torch_start" in r for r in reps), f"repetitions {reps}")
    for side, rest in log:
        if side == "ours":
            r = json.loads(rest)
            expect(r["argv"][r["argv"].index("--reps") + 1] == "1" and r["ld"].startswith("/bundle/lib") and
                   r["argv"][-1] == "--benchmark_out_format=json" and
                   ("--share_gpu" in r["argv"]) == (r["kind"] == "padding"), f"our run {r}")
    # PyTorch's plan: our repetition 0's rows, the padding floor twice (two
    # PyTorch calls), floor_allgatherv left out, lengths re-derived.
    plan = torch.plans[0]
    expect(all(p == plan for p in torch.plans) and len(torch.plans) == 3, "the same plan every repetition")
    expect([(p["ours_row"], p.get("kind") or p.get("call")) for p in plan] ==
           [("bn/C:16/N:2/HW:8x8", "bn"), ("sync_bn/C:16/N:2/HW:8x8", "sync_bn"),
            ("group_norm/C:16/N:2/HW:8x8", "group_norm"), ("comm_floor/C:16/N:2/HW:8x8", "comm_floor"),
            ("padding/nccl/W2/equal/1KiB/floor_allgather", "all_gather"),
            ("padding/nccl/W2/equal/1KiB/floor_allgather", "all_gather_into_tensor"),
            ("padding/nccl/W2/equal/1KiB/pad_gather_trim", "gather_all_tensors"),
            ("padding/nccl/W2/straggler/1KiB/floor_allgather", "all_gather"),
            ("padding/nccl/W2/straggler/1KiB/floor_allgather", "all_gather_into_tensor"),
            ("padding/nccl/W2/straggler/1KiB/pad_gather_trim", "gather_all_tensors")], f"plan {plan}")
    expect(plan[0]["c"] == 16 and plan[0]["n"] == 2 and plan[0]["hw"] == 8 and plan[0]["iters"] == 7 and
           plan[7]["lens"] == peers.lengths("straggler", 2, 128) == [128, 256] and plan[7]["iters"] == 11,
           f"plan details {plan[0]} {plan[7]}")
    ours = [e for e in entries if e["side"] == "ours"]
    expect(len(ours) == 3 * 8 and all(f"/rep:{e['rep']}/" in e["name"] for e in ours) and
           [e["median_us"] for e in ours if e["name"].startswith("bn/")] == [10, 30, 20] and
           not any("floor_allgatherv" in e["name"] for e in ours), f"our entries {[e['name'] for e in ours]}")
    expect(set(ours_ctxs) == {"sync_bn", "padding"} and ours_ctxs["sync_bn"]["date"] == "run0", f"ctx {ours_ctxs}")
    expect(said and all("repetition" in m for m in said), f"progress {said}")
    text = dist_gpu_table.render(run_record(result), "run.json")
    expect("| bn/C:16/N:2/HW:8x8 | nn.BatchNorm2d | 20.0 [10.0, 30.0] | 30.0 [20.0, 80.0] | 0.50 [0.25, 1.00] | "
           "shared GPU: not a performance claim |" in text, f"table of the driven run:\n{text}")
    expect("| padding/nccl/W2/straggler/1KiB/floor_allgather | all_gather_into_tensor | 20.0 [10.0, 30.0] |" in text
           and "10 of 10 rows ran with ranks sharing a GPU" in text and "GPU NVIDIA H100 80GB HBM3 (1 visible)"
           in text, f"table:\n{text}")

    # Our binary refuses in repetition 1 (PyTorch went first there): the run
    # keeps repetition 0 only and says why.
    result, log, _, _ = drive_fake(tmp, "refuse", 3, [10, 30, 20], [20, 30, 80], {"FAKE_FAIL_AT": "2"})
    expect(result[3] is not None and "repetition 1: bench/sync_bn exited 1, no JSON: sync_bn: --backend nccl needs a GPU"
           in result[3] and [r["rep"] for r in result[1]] == [0] and {e["rep"] for e in result[2]} == {0},
           f"refusal: {result[3]} {result[1]}")
    expect("The run stopped early: repetition 1" in dist_gpu_table.render(run_record(result), "r.json"),
           "stop in the table")
    # A binary past --ours_timeout is killed with what it started.
    t0 = time.monotonic()
    result, log, _, _ = drive_fake(tmp, "slow", 2, [10, 10], [20, 20], {"FAKE_SLEEP": "20"},
                                   ["--ours_timeout", "2"])
    expect(result[3] is not None and "repetition 0: bench/sync_bn ran past its timeout of 2 s" in result[3] and
           result[1] == [] and time.monotonic() - t0 < 15, f"timeout: {result[3]}")
    with open(os.path.join(tmp, "slow.child")) as f:
        child = int(f.read())
    time.sleep(0.2)
    try:  # gone, or a zombie its new parent has not reaped yet
        with open(f"/proc/{child}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        state = "gone"
    if state not in ("gone", "Z", "X"):
        failures.append(f"the timed-out binary's child still runs (state {state})")
        os.kill(child, 9)
    # SIGTERM (lease.sh's timeout) kills every live session before exiting.
    p = subprocess.Popen(["/bin/sh", "-c", "sleep 30 & wait"], start_new_session=True)
    tdg.LIVE.add(p)
    try:
        tdg.on_term(15, None)
        failures.append("on_term did not exit")
    except SystemExit as e:
        expect(e.code == 143 and p.wait(timeout=5) == -9, f"on_term: exit {e.code}, session {p.poll()}")
    finally:
        tdg.LIVE.discard(p)
    # Rows that change between repetitions cannot be paired.
    result, _, _, _ = drive_fake(tmp, "rows", 2, [10, 10], [20, 20], {"FAKE_EXTRA_AT": "2"})
    expect(result[3] is not None and "repetition 1: our binaries ran other rows than in repetition 0" in result[3],
           f"rows changed: {result[3]}")
    # Lengths that are not bench/padding's formulas: stop before PyTorch times them.
    result, log, _, _ = drive_fake(tmp, "lengths", 2, [10, 10], [20, 20], {"FAKE_BAD_LENGTHS": "1"})
    expect(result[3] is not None and "straggler/1KiB/floor_allgather" in result[3] and "lengths differ" in result[3]
           and not any(side == "torch" for side, _ in log), f"lengths: {result[3]}")
    # --budget: a repetition the slowest one so far would not finish is not started.
    ticks = iter([0, 0, 40, 40, 80, 80])  # start; per repetition its start, its end
    result, _, _, _ = drive_fake(tmp, "budget", 5, [10] * 5, [20] * 5, budget=100, clock=lambda: next(ticks))
    expect([r["rep"] for r in result[1]] == [0, 1] and result[3] is not None and
           "--budget 100 s: repetition 2 not started (80 s used, the slowest repetition took 40 s)" in result[3],
           f"budget: {result[1]} {result[3]}")
    # The gloo rehearsal's SyncBatchNorm row: PyTorch's refusal, listed, not a failure.
    result, _, _, _ = drive_fake(tmp, "cpu", 2, [10, 10], [20, 20], cpu=True)
    text = dist_gpu_table.render(run_record(result, "gloo", "no GPU"), "r.json")
    expect("| sync_bn/C:16/N:2/HW:8x8 | nn.SyncBatchNorm | 10.0 [10.0, 10.0] | not timed: not available on CPU: "
           "ValueError: SyncBatchNorm expected input tensor to be on GPU | - | - |" in text and
           "No GPU in this run" in text and "| bn/C:16/N:2/HW:8x8 | nn.BatchNorm2d | 10.0 [10.0, 10.0] | 20.0 "
           "[20.0, 20.0] | 0.50 [0.50, 0.50] | CPU |" in text and "Failed entries" not in text, f"cpu table:\n{text}")


# A fake interpreter for the rank processes: prints noise, then its
# description and one reply per command, each on a protocol line;
# FAKE_RANK_MUTE=r makes rank r never answer a block.
FAKE_RANK = r'''#!/usr/bin/python3
import json, os, sys, time
cfg = json.loads(sys.argv[sys.argv.index("--rank_main") + 1])
P = "@@torch_dist "
print("NCCL INFO noise", flush=True)
print(P + json.dumps({"torch": "9.9", "torch_cuda": "13.0", "gpus_visible": 1, "shared_gpu": True,
                      "device": "cuda:0", "rank": cfg["rank"], "store": cfg["store"]}), flush=True)
for line in sys.stdin:
    cmd = json.loads(line)
    if cmd["op"] != "block":
        break
    if os.environ.get("FAKE_RANK_MUTE") == str(cfg["rank"]):
        time.sleep(60)
    print("warning: noise", flush=True)
    print(P + json.dumps({"results": [{"median_us": 1.0 + cfg["rank"], "mean_us": 1.0, "iterations": r["iters"]}
                                      for r in cmd["plan"]]}), flush=True)
'''


def test_ranks(tmp):
    python = write(tmp, "fake_rank_python", FAKE_RANK, True)
    args = tdg.parse_args(["--padding_binary", fake_binaries(tmp)[1], "--world_size", "3", "--torch_timeout", "3"])
    folder = os.path.join(tmp, "ranks")
    os.makedirs(folder)
    ranks = tdg.Ranks(args, folder, python=python)
    ready = ranks.ready(5)
    expect([r["rank"] for r in ready] == [0, 1, 2] and ready[0]["store"] == f"file://{folder}/torch_store",
           f"ready {ready}")
    replies = ranks.ask({"op": "block", "rep": 0, "plan": [{"iters": 4}]}, 5)
    expect([r["results"][0]["median_us"] for r in replies] == [1.0, 2.0, 3.0], f"replies {replies}")
    ranks.close()
    expect(all(p.returncode == 0 for p in ranks.procs), "ranks quit")
    os.environ["FAKE_RANK_MUTE"] = "1"
    try:
        ranks = tdg.Ranks(args, folder, python=python)
        ranks.ready(5)
        t0 = time.monotonic()
        try:
            ranks.ask({"op": "block", "rep": 0, "plan": []}, 1.5)
            failures.append("a mute rank went unnoticed")
        except tdg.Stop as e:
            expect("PyTorch rank 1 did not answer in time (--torch_timeout)" in str(e) and
                   time.monotonic() - t0 < 5, f"mute rank: {e}")
        t0 = time.monotonic()
        ranks.close(grace=2)
        expect(time.monotonic() - t0 < 10 and all(p.poll() is not None for p in ranks.procs), "mute rank killed")
    finally:
        del os.environ["FAKE_RANK_MUTE"]


def test_no_torch_no_gpu(tmp):
    sync_bn, _ = fake_binaries(tmp)
    log_path = os.path.join(tmp, "no_gpu.log")
    out = os.path.join(tmp, "torch.json")
    absent = os.path.join(tmp, "absent", "torch")
    os.makedirs(absent)
    write(absent, "__init__.py", "raise ImportError('fake: no torch')\n")
    env = {"PYTHONPATH": os.path.dirname(absent), "FAKE_LOG": log_path, "FAKE_TIMES": "1,1,1"}
    for backend in ("nccl", "gloo"):
        rc, err = run_script(["--sync_bn_binary", sync_bn, "--backend", backend, "--json", out], env)
        expect(rc == 0 and "no torch" in err and err.count("\n") == 1 and not os.path.exists(out),
               f"no torch ({backend}): {rc} {err!r}")
    rc, err = run_script(["--sync_bn_binary", sync_bn, "--require_gpu"], env)
    expect(rc == 1 and "no torch" in err, f"no torch, --require_gpu: {rc} {err!r}")
    fake = os.path.join(tmp, "fake", "torch")
    os.makedirs(os.path.join(fake, "distributed"))
    write(fake, "__init__.py", "__version__ = '9.9.9+fake'\n"
                               "class cuda:\n    is_available = staticmethod(lambda: False)\n"
                               "class version:\n    cuda = '13.0'\n")
    write(os.path.join(fake, "distributed"), "__init__.py", "is_available = lambda: True\n")
    env["PYTHONPATH"] = os.path.dirname(fake)
    rc, err = run_script(["--sync_bn_binary", sync_bn, "--json", out], env)
    expect(rc == 0 and "torch 9.9.9+fake sees no CUDA device" in err and "--backend gloo rehearses" in err and
           err.count("\n") == 1 and not os.path.exists(out), f"no GPU: {rc} {err!r}")
    rc, err = run_script(["--sync_bn_binary", sync_bn, "--require_gpu"], env)
    expect(rc == 1 and "sees no CUDA device" in err, f"no GPU, --require_gpu: {rc} {err!r}")
    expect(not os.path.exists(log_path), "our binary ran although PyTorch could not")


def table_run():
    """Three repetitions: ours 100, 110, 120 us, PyTorch's 240, 200, 220 on
    one row; a failed PyTorch entry in repetition 2 of another."""
    reps = [{"rep": r, "order": ["ours", "torch"] if r % 2 == 0 else ["torch", "ours"]} for r in range(3)]
    bench = []
    for r, (o, t) in enumerate([(100.0, 240.0), (110.0, 200.0), (120.0, 220.0)]):
        for row, call in (("sync_bn/C:64/N:8/HW:8x8", "nn.SyncBatchNorm"), ("bn/C:64/N:8/HW:8x8", "nn.BatchNorm2d")):
            bench.append({"name": f"{row}/rep:{r}/iterations:5/manual_time", "side": "ours", "rep": r,
                          "median_us": o, "label": "shared_gpu"})
            e = {"name": f"torch_dist/{call}/{row}/rep:{r}", "side": "torch", "rep": r, "ours_row": row,
                 "call": call, "median_us": t, "shared_gpu": 1}
            if r == 2 and row.startswith("bn/"):
                e = dict(e, error_occurred=True, error_message="RuntimeError: x")
                del e["median_us"]
            bench.append(e)
    return {"context": {"ddp_pairing": tdg.PAIRING, "ddp_backend": "nccl", "ddp_world_size": "2",
                        "ddp_torch_gpu": "NVIDIA H100 80GB HBM3", "ddp_gpus_visible": "1", "ddp_reps": "3",
                        "ddp_shared_gpu": "yes: 2 ranks on 1 GPU(s)"},
            "ours_context": {"sync_bn": {"ddp_commit": "0123456789abcdef", "ddp_shared_gpu": "yes: ..."}},
            "repetitions": reps, "benchmarks": bench}


def refused(data, want, what):
    util.refused(dist_gpu_table, data, want, what)


def test_table(tmp):
    text = dist_gpu_table.render(table_run(), "run.json")
    # 100/240, 110/200, 120/220 -> 0.42, 0.55, 0.55 (the medians' ratio, 110/220 = 0.50, is not reported).
    row = ("| sync_bn/C:64/N:8/HW:8x8 | nn.SyncBatchNorm | 110.0 [100.0, 120.0] | 220.0 [200.0, 240.0] | "
           "0.55 [0.42, 0.55] | shared GPU: not a performance claim |")
    expect(row in text, f"row:\n{text}")
    # The failed PyTorch entry leaves repetition 2 of its row out: 100/240,
    # 110/200 -> 0.42, 0.55, median 0.48.
    expect("| bn/C:64/N:8/HW:8x8 | nn.BatchNorm2d | 105.0 [100.0, 110.0] | 220.0 [200.0, 240.0] | 0.48 [0.42, 0.55] |"
           in text and "Failed entries: 0 ours, 1 PyTorch's." in text and "commit `0123456789ab`" in text and
           "2 of 2 rows ran with ranks sharing a GPU" in text, f"table:\n{text}")
    run = table_run()
    del run["repetitions"]
    refused(run, "not one run pairing our binaries and PyTorch", "no repetitions")
    run = table_run()
    del run["context"]["ddp_pairing"]
    refused(run, "no ratio is taken between separate runs", "no pairing")
    run = table_run()
    run["repetitions"][1]["rep"] = 4
    refused(run, "its repetitions are [0, 4, 2]", "repetitions not 0..R-1")
    run = table_run()
    run["repetitions"][1]["order"] = ["torch"]
    refused(run, "repetition 1 ran ['torch']", "one side's turn")
    run = table_run()
    run["benchmarks"] = [b for b in run["benchmarks"] if not (b["side"] == "ours" and b["rep"] == 1)]
    refused(run, "repetition 1 has no ours entries", "a repetition without ours")
    run = table_run()
    run["benchmarks"].append(dict(run["benchmarks"][0]))
    refused(run, "appears twice in repetition 0", "an entry twice")
    run = table_run()
    run["benchmarks"][0]["rep"] = 2
    refused(run, "has rep 2: not one of the run's repetitions [0, 1, 2] as its name says", "rep against name")
    run = table_run()
    del run["benchmarks"][1]["ours_row"]
    refused(run, "is neither ours nor PyTorch's", "a PyTorch entry without its row")
    run = table_run()
    for b in run["benchmarks"]:
        if b["side"] == "torch":
            b["ours_row"] = "other"
    refused(run, "no row has both sides in one repetition", "nothing paired")
    path = os.path.join(tmp, "run.json")
    with open(path, "w") as f:
        json.dump(table_run(), f)
    readme = write(tmp, "README.md", "a\n<!-- table:dist_gpu:begin -->\nold\n<!-- table:dist_gpu:end -->\nb\n")
    expect(dist_gpu_table.main([path, "--update", readme]) == 0, "update exit")
    with open(readme) as f:
        doc = f.read()
    expect(row in doc and "old" not in doc and doc.startswith("a\n") and doc.endswith("b\n"), f"update:\n{doc}")
    for argv, want in (([path, path], "2 files given: give one"),
                       ([os.path.join(tmp, "absent.json")], "cannot read")):
        util.cli_refuses(dist_gpu_table.main, argv, want)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_arguments(tmp)
        test_commands(tmp)
        test_drive(tmp)
        test_ranks(tmp)
        test_no_torch_no_gpu(tmp)
        test_table(tmp)
    return util.finish('dist_gpu_test')


if __name__ == "__main__":
    sys.exit(main())
