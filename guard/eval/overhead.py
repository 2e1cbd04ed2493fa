#!/usr/bin/python3
"""What the guard costs: a small model's DDP training step at W = 2 (gloo,
real processes), guard on (mode "raise", every check) against off (nothing
wrapped), in interleaved blocks inside the same processes; and the two
checks that add a collective, per call.

    /usr/bin/python3 guard/eval/overhead.py --out guard/eval/overhead.torch1.13.json
    python3 guard/eval/overhead.py --table guard/eval/overhead.torch1.13.json [...]

Each block is one epoch (a new DataLoader pass: its first step pins the
pass's row to the store, its second reads the peers') of --steps steps, timed step by step on rank 0; the
blocks alternate off, on, on, off, ... so a drift of the machine's speed
falls on both. Per block the median step; per (off, on) pair the ratio;
reported: the median ratio over pairs, and the same for the per-call rows
(an all_gather of 1000 floats: the size exchange before it; a one-element
all_reduce divided by the world size: what the mean check reads, no
exchange), and the step that logs four synced metrics (adjacent blocks of
--alt_block steps inside an epoch). A control arm wraps the same functions
in pass-through wrappers (against nothing, and against the guard): what it
reads is the method's own error on the machine. The guard_code rows time
the guard's wrappers around functions that return at once (no
communication); the table's goal line sets their sum for one four-metric
step beside that step's unguarded median.

--backend nccl: the same rows with each rank's model, batches and
collective tensors on GPU rank % device_count, each step (call) timed to
torch.cuda.synchronize() so a row is the whole step, not its launch; where
the ranks outnumber the GPUs each rank sets its own NCCL_HOSTID and they
talk over NET/Socket, and the record and its table rows say "ranks sharing
one GPU (NET/Socket), correctness only": the guard's cost beside a slow
step, not NCCL's speed. The guard_code rows need no communication and run
on the CPU as on gloo. Without a CUDA device it exits 2 with one line.
"""
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "guard"))
sys.path.insert(0, os.path.join(ROOT, "guard", "tests"))
sys.path.insert(0, ROOT)


# The rank's device and the wait that ends a timed step: the CPU and
# nothing on gloo; on NCCL the rank's GPU and torch.cuda.synchronize.
DEVICE = ["cpu"]
_sync = [lambda: None]

SHARED_GPU = "ranks sharing one GPU (NET/Socket), correctness only"

_null = []  # pass-through wrappers of what the guard wraps: (owner, name, original, wrapper)


def _null_wrappers():
    """The same functions the guard wraps, each wrapped by a function that
    only calls the original: the control arm ("null"). What it measures
    against no wrapper is the method's own reading of an extra Python frame
    per call (on a 2-core machine running two ranks, not always zero), so
    the guard's cost is read against it as well as against nothing."""
    import functools
    from ddp_pitfalls import _patches
    if not _null:
        _patches.install()  # builds the list of what it wraps
        _patches.uninstall()
        for owner, name, original, _ in _patches._installed:
            def make(original):
                def passthrough(*args, **kwargs):
                    return original(*args, **kwargs)
                return passthrough
            _null.append((owner, name, original, functools.wraps(original)(make(original))))
    return _null


def _set(guard, arm):
    """arm: False (nothing wrapped), True (the guard, raise, every check) or
    "null" (pass-through wrappers of the same functions)."""
    for owner, name, original, wrapper in _null:
        if getattr(owner, name, None) is wrapper:
            setattr(owner, name, original)
    guard.install(mode="raise" if arm is True else "off")
    if arm == "null":
        for owner, name, _, wrapper in _null_wrappers():
            setattr(owner, name, wrapper)


def _order(pairs):
    """off,on / on,off alternating: the pair index and whether 'on' runs first."""
    return [(i, i % 2 == 1) for i in range(pairs)]


def training(args, guard):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
    torch.manual_seed(0)
    n = args.steps * args.batch * dist.get_world_size()
    ds = TensorDataset(torch.randn(n, 32), torch.randn(n, 1))
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.BatchNorm1d(64),
                                torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 1)).to(DEVICE[0])
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    sampler = DistributedSampler(ds, shuffle=True)
    loader = DataLoader(ds, batch_size=args.batch, sampler=sampler, drop_last=True)
    epoch = [0]

    def block(on):
        _set(guard, on)
        sampler.set_epoch(epoch[0])
        epoch[0] += 1
        times = []
        t = time.perf_counter()
        for x, y in loader:
            x, y = x.to(DEVICE[0]), y.to(DEVICE[0])
            opt.zero_grad()
            torch.nn.functional.mse_loss(ddp(x), y).backward()
            opt.step()
            _sync[0]()
            now = time.perf_counter()
            times.append(now - t)
            t = now
        return times
    return _pairs(args, block)


def training_alternating(args, guard, metrics=0, arms=(False, True)):
    """The steady-state step, guard on and off in turn in short blocks of
    --alt_block adjacent steps (the order within each pair of blocks
    alternating), so both halves of a pair see the same machine and a
    block's median step shrugs off the single slow steps that a 2-core
    machine running two ranks deals out: every epoch starts with the guard
    on (its pass tracked, its row pinned at step 1, which is left out), then
    off/on pairs of blocks. One row per pair (each block's median step).
    With `metrics`, each step also logs that many synced metrics the way a
    training script does: a one-element all_reduce of each, divided by the
    world size (what the mean check reads). `arms`: what the rows call
    off and on (False: nothing wrapped, True: the guard, "null": pass-through
    wrappers)."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
    torch.manual_seed(0)
    k = args.alt_block
    per_epoch = max(1, args.steps // k)  # pairs of blocks per epoch
    n = (2 * k * per_epoch + 1) * args.batch * dist.get_world_size()
    ds = TensorDataset(torch.randn(n, 32), torch.randn(n, 1))
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.BatchNorm1d(64),
                                torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 1)).to(DEVICE[0])
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    sampler = DistributedSampler(ds, shuffle=True)
    loader = DataLoader(ds, batch_size=args.batch, sampler=sampler, drop_last=True)
    rows = []
    epoch = 0
    while len(rows) < args.alt_pairs:
        _set(guard, True)
        sampler.set_epoch(epoch)
        it = iter(loader)
        times = {True: [], False: []}
        for step in range(len(loader)):
            b, j = divmod(step - 1, k)      # block b, its step j
            pair, second = divmod(b, 2)     # the pair of blocks, and which half
            on = step > 0 and second == (pair % 2 == 0)
            if step > 0 and j == 0:
                _set(guard, arms[on])
            t = time.perf_counter()
            x, y = next(it)
            x, y = x.to(DEVICE[0]), y.to(DEVICE[0])
            opt.zero_grad()
            out = ddp(x)
            loss = torch.nn.functional.mse_loss(out, y)
            loss.backward()
            opt.step()
            for m in range(metrics):
                value = (loss.detach() if m == 0 else out.detach()[:, 0].mean() * m).clone()
                dist.all_reduce(value)
                value /= dist.get_world_size()
            _sync[0]()
            if step > 0:
                times[on].append(time.perf_counter() - t)
                if j == k - 1 and second == 1 and len(rows) < args.alt_pairs:
                    off, on_ = statistics.median(times[False]), statistics.median(times[True])
                    rows.append({"off_median_s": off, "on_median_s": on_,
                                 "on_mean_s": statistics.mean(times[True]),
                                 "off_mean_s": statistics.mean(times[False])})
                    times = {True: [], False: []}
        # The pass ends unguarded: the guard saw only its own steps' batches
        # (toggling inside a pass is this benchmark's doing, not a user's).
        _set(guard, False)
        for _ in it:
            pass
        epoch += 1
    return rows


def _pairs(args, block):
    block(False)
    block(True)  # warm-up of both (first DDP steps, the guard's first-step hooks)
    rows = []
    for _, on_first in _order(args.pairs):
        got = {}
        for on in ((True, False) if on_first else (False, True)):
            got[on] = block(on)
        rows.append({"off_median_s": statistics.median(got[False]),
                     "on_median_s": statistics.median(got[True]),
                     "on_first_step_s": got[True][0], "off_first_step_s": got[False][0],
                     "on_mean_s": statistics.mean(got[True]),
                     "off_mean_s": statistics.mean(got[False])})
    return rows


def per_call(args, guard, what, arms=(False, True)):
    import torch
    import torch.distributed as dist
    w = world_size = dist.get_world_size()
    from torch.utils.data import DataLoader
    x = torch.rand(1000).to(DEVICE[0])
    outs = [torch.zeros_like(x) for _ in range(w)]
    _set(guard, True)  # a data pass the mean check reads, equal on every rank
    for _ in DataLoader(list(range(8)), batch_size=4):
        pass

    def block(on):
        _set(guard, arms[on])
        times = []
        for _ in range(args.steps):
            t = time.perf_counter()
            if what == "all_gather":
                dist.all_gather(outs, x)
            else:
                v = torch.tensor(0.5, device=DEVICE[0])
                dist.all_reduce(v)
                v /= world_size  # the division the mean check looks for
            _sync[0]()
            times.append(time.perf_counter() - t)
        return times
    return _pairs(args, block)


def guard_code(args, guard):
    """The guard's own Python per training step, without communication:
    a DataLoader's next() (batch 32), DDP's forward entry, backward's entry
    and a one-element all_reduce's entry (each the wrapper around a function
    that returns at once), guard on vs off, in interleaved blocks of 500
    calls, in the state of every step after the first: the pass compared,
    the model's BatchNorm judged. Run on rank 0 alone, so the counters that
    key the board (collectives, DDP models) are put back after it."""
    import torch
    from torch.utils.data import DataLoader, TensorDataset
    from ddp_pitfalls import _data, _patches, _points
    loader = DataLoader(TensorDataset(torch.randn(32 * 500, 8)), batch_size=32)

    class Module:
        training = True
        process_group = None  # the default group

    wrapped = _patches._ddp_forward(lambda self, *a: None)
    module = Module()
    st = _points.model(module)  # the guard's state of it, as after step 2:
    st.bn = st.bn_pinned = True  # its BatchNorm row pinned and judged already
    st.bn_tries = 1 << 30

    def next_block(on):
        _set(guard, on)
        t = time.perf_counter()
        for _ in loader:
            pass
        return [(time.perf_counter() - t) / 500]

    world_size = 2
    reduce_wrapped = _patches._all_reduce(lambda *a, **k: None)
    backward_wrapped = _patches._backward(lambda *a, **k: None)
    loss = torch.zeros(())

    def judged_pass():
        p = _data.Pass(10, 320, 32, True, None, None)
        p.key, p.rows = "c/w/1", [[1, 10, 320, 32, 1, 0, 0, 0, 0, 0, 0]] * 2
        p.uniform = p.counted = p.lockstep = True
        _data.latest = p
        return p

    def reduce_block(on):
        _set(guard, on)
        judged_pass()
        all_reduce = reduce_wrapped if on else (lambda *a, **k: None)
        v = torch.tensor(0.5)
        t = time.perf_counter()
        for _ in range(500):
            all_reduce(v)
            v /= world_size  # the division the mean check reads
        return [(time.perf_counter() - t) / 500]

    def backward_block(on):
        _set(guard, on)
        f = backward_wrapped if on else (lambda *a, **k: None)
        t = time.perf_counter()
        for _ in range(500):
            f(loss)
        return [(time.perf_counter() - t) / 500]

    def forward_block(on):
        _set(guard, on)
        p = _data.Pass(10, 320, 32, True, None, None)
        p.key, p.rows = "d/w/0/1", []  # pinned and judged: every step after the first
        _data.latest = p
        f = wrapped if on else (lambda self, *a: None)
        t = time.perf_counter()
        for _ in range(500):
            f(module, None)
        return [(time.perf_counter() - t) / 500]
    seq, ordinals = dict(_points._seq), dict(_points._ddp_ordinals)
    out = {"dataloader_next": _pairs(args, next_block),
           "ddp_forward_entry": _pairs(args, forward_block),
           "backward_entry": _pairs(args, backward_block),
           "all_reduce_entry": _pairs(args, reduce_block)}
    _points._seq.clear()
    _points._seq.update(seq)
    _points._ddp_ordinals.clear()
    _points._ddp_ordinals.update(ordinals)
    _data.latest = None
    _data.recent.clear()
    return out


def rank_main(args):
    import datetime
    import torch
    import torch.distributed as dist
    from ddp_pitfalls import guard
    torch.set_num_threads(1)
    barrier = {}
    if args.backend == "nccl":
        from tools.vs_pytorch import evidence
        gpu = evidence.cuda_rank_device(torch, args.world_size, args.rank)  # NCCL_HOSTID too
        DEVICE[0] = torch.device("cuda", gpu)
        _sync[0] = torch.cuda.synchronize
        barrier = {"device_ids": [gpu]}
    dist.init_process_group(args.backend, init_method="file://" + os.path.join(args.dir, "store"),
                            rank=args.rank, world_size=args.world_size,
                            timeout=datetime.timedelta(seconds=120))
    out = {"training_step": training(args, guard),
           "training_step_alternating": training_alternating(args, guard),
           "training_step_four_metrics": training_alternating(args, guard, metrics=4),
           "training_step_four_metrics_null": training_alternating(args, guard, metrics=4,
                                                                   arms=(False, "null")),
           "training_step_four_metrics_vs_null": training_alternating(args, guard, metrics=4,
                                                                      arms=("null", True)),
           "guard_code": guard_code(args, guard) if args.rank == 0 else None,
           "all_gather_1000_floats": per_call(args, guard, "all_gather"),
           "scalar_all_reduce_mean": per_call(args, guard, "all_reduce"),
           "scalar_all_reduce_mean_null": per_call(args, guard, "all_reduce", (False, "null")),
           "scalar_all_reduce_mean_vs_null": per_call(args, guard, "all_reduce", ("null", True))}
    if args.rank == 0:
        print(json.dumps(out), flush=True)
    dist.barrier(**barrier)
    sys.stdout.flush()
    os._exit(0)


def bootstrap_median_ci(values, draws=2000, seed=0):
    """A 95% percentile-bootstrap interval of the median (stdlib only)."""
    import random
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(draws))
    return meds[int(0.025 * draws)], meds[int(0.975 * draws) - 1]


def summarise(rows):
    ratios = [r["on_median_s"] / r["off_median_s"] for r in rows]
    diffs = [r["on_median_s"] - r["off_median_s"] for r in rows]
    means = [r["on_mean_s"] / r["off_mean_s"] for r in rows]
    return {"pairs": len(rows), "ratio_median": statistics.median(ratios),
            "ratio_min": min(ratios), "ratio_max": max(ratios),
            "ratio_median_ci95": bootstrap_median_ci(ratios),
            "added_s_median": statistics.median(diffs),
            "mean_ratio_median": statistics.median(means),
            "off_step_median_s": statistics.median(r["off_median_s"] for r in rows),
            "on_step_median_s": statistics.median(r["on_median_s"] for r in rows),
            **({"on_first_step_median_s": statistics.median(r["on_first_step_s"] for r in rows),
                "off_first_step_median_s": statistics.median(r["off_first_step_s"] for r in rows)}
               if "on_first_step_s" in rows[0] else {})}


def measure(args):
    import tempfile
    import world
    gpus = 0
    if args.backend == "nccl":  # first: nothing else imported, no rank started
        gpus, why = world.nccl_or_reason()
        if why:
            print("overhead.py: --backend nccl: %s" % why, file=sys.stderr)
            return 2
    from tools.vs_pytorch import evidence
    with tempfile.TemporaryDirectory(prefix="guard_overhead_") as d:
        cmd = [sys.executable, os.path.abspath(__file__), "--world_size", "2", "--dir", d,
               "--steps", str(args.steps), "--pairs", str(args.pairs), "--batch", str(args.batch),
               "--alt_pairs", str(args.alt_pairs), "--alt_block", str(args.alt_block),
               "--backend", args.backend]
        codes, outs, errs = world.spawn(cmd, 2, args.timeout, {"PYTHONWARNINGS": "ignore"})
    docs = world.json_lines(outs[0])
    if codes != [0, 0] or not docs:
        print("overhead: ranks exited %s\n%s" % (codes, errs[0][-2000:]), file=sys.stderr)
        return 1
    raw = docs[0]
    config = {"backend": args.backend} if args.backend == "nccl" else {}
    if args.backend == "nccl":
        config.update(gpus=gpus, shared_gpu=2 > gpus,
                      **({"shared_gpu_note": SHARED_GPU + " (each rank its own NCCL_HOSTID)"}
                         if 2 > gpus else {}))
    doc = evidence.record(
        "the guard's overhead: guard on (raise, every check) vs off, interleaved blocks, W = 2" +
        (" on NCCL" if args.backend == "nccl" else ""),
        dict(config, **{"world_size": 2, "steps_per_block": args.steps, "pairs": args.pairs,
         "alternating_pairs": args.alt_pairs, "alternating_steps_per_block": args.alt_block,
         "batch_per_rank": args.batch,
         "model": "Linear(32,64), BatchNorm1d(64), ReLU, Linear(64,64), ReLU, Linear(64,1); SGD; "
                  "DistributedSampler + set_epoch, drop_last"}),
        "guard/eval/overhead.py",
        summary=dict({k: summarise(v) for k, v in raw.items() if k != "guard_code"},
                     **{"guard_code_" + k: summarise(v) for k, v in raw["guard_code"].items()}),
        blocks=raw)
    if args.backend == "nccl":  # the GPU, driver, CUDA and torch's NCCL
        doc["provenance"] = evidence.provenance("guard/eval/overhead.py", "nccl")
    doc["provenance"]["load_1min_at_end"] = os.getloadavg()[0]
    doc["guard_code_per_four_metric_step"] = code_per_step(doc["summary"])
    evidence.write_json(args.out, doc)
    for k, s in doc["summary"].items():
        print("%s: on/off %.4f [%.4f, %.4f] over %d pairs; off %.1f us, on %.1f us" % (
            k, s["ratio_median"], s["ratio_min"], s["ratio_max"], s["pairs"],
            s["off_step_median_s"] * 1e6, s["on_step_median_s"] * 1e6), file=sys.stderr)
    return 0


def code_per_step(summary):
    """The guard's own Python in one step that logs four synced metrics,
    from the rows without communication (medians of pair differences): a
    next(), a DDP forward, a backward and four all_reduces; and its share of
    that step's unguarded median in the same run."""
    parts = {"dataloader_next": 1, "ddp_forward_entry": 1, "backward_entry": 1,
             "all_reduce_entry": 4}
    added = sum(n * summary["guard_code_" + k]["added_s_median"] for k, n in parts.items())
    off = summary["training_step_four_metrics"]["off_step_median_s"]
    return {"calls": parts, "added_s": added, "off_step_median_s": off,
            "of_off_step": added / off}


GOAL = 1.02  # issue 70: at most 2% per training step that logs four synced metrics


def _resolved(lo, hi):
    return ("met (the interval lies under %.2f)" % GOAL if hi <= GOAL else
            "exceeded (the interval lies over %.2f)" % GOAL if lo > GOAL else
            "not resolved (the interval holds %.2f)" % GOAL)


def goal_line(d):
    """What the record says of the 2% goal, in words made from its numbers."""
    s = d["summary"]
    v = row_label(d, "training_step_four_metrics")
    parts = []
    for k, what in (("training_step_four_metrics", "guard / nothing"),
                    ("training_step_four_metrics_vs_null", "guard / pass-through"),
                    ("training_step_four_metrics_null", "pass-through / nothing (control)")):
        if k in s:
            lo, hi = s[k]["ratio_median_ci95"]
            parts.append("%s %.3f [%.3f, %.3f]" % (what, s[k]["ratio_median"], lo, hi))
    line = "PyTorch %s, the step that logs four synced metrics: wall clock %s" % (v, "; ".join(parts))
    if "training_step_four_metrics" in s:
        line += ": the 2%% goal by wall clock %s" % _resolved(*s["training_step_four_metrics"]
                                                             ["ratio_median_ci95"])
    c = d.get("guard_code_per_four_metric_step")
    if c:
        line += ("; the guard's own code in that step (one next(), forward, backward, four "
                 "all_reduces; the rows without communication) %.1f us, %.2f%% of its unguarded "
                 "median (%.1f us) in the same run, %s the 2%% goal" % (
                     c["added_s"] * 1e6, 100 * c["of_off_step"], c["off_step_median_s"] * 1e6,
                     "under" if c["of_off_step"] <= GOAL - 1 else "over"))
        per_call = s.get("scalar_all_reduce_mean_vs_null")
        if per_call:
            # The real collective reads more per all_reduce than the code's own
            # time: counted with that reading instead, four times.
            added = c["added_s"] + 4 * (per_call["added_s_median"] -
                                        s["guard_code_all_reduce_entry"]["added_s_median"])
            line += ("; with each all_reduce counted at what the real collective adds (guard / "
                     "pass-through, %.1f us) instead of its code, %.1f us, %.2f%%, %s the 2%% goal"
                     % (per_call["added_s_median"] * 1e6, added * 1e6,
                        100 * added / c["off_step_median_s"],
                        "under" if added / c["off_step_median_s"] <= GOAL - 1 else "over"))
    return line + "."


LABELS = {"training_step": "DDP training step (small MLP with BatchNorm, batch 32 per rank), "
                          "blocks of one epoch",
          "training_step_alternating": "the same step after step 1 of an epoch, guard on and off "
                                      "in adjacent blocks of a few steps",
          "training_step_four_metrics": "the same step logging four synced metrics (four "
                                        "one-element all_reduces divided by the world size), "
                                        "adjacent blocks",
          "training_step_four_metrics_null": "control: the same four-metric step, pass-through "
                                             "wrappers (on) against none (off)",
          "training_step_four_metrics_vs_null": "the same four-metric step, the guard (on) "
                                                "against pass-through wrappers (off)",
          "all_gather_1000_floats": "all_gather of 1000 floats (+ the size exchange)",
          "scalar_all_reduce_mean_null": "control: the same all_reduce, a pass-through wrapper (on) "
                                         "against none (off)",
          "scalar_all_reduce_mean_vs_null": "the same all_reduce, the guard (on) against a "
                                            "pass-through wrapper (off)",
          "scalar_all_reduce_mean": "one-element all_reduce divided by the world size "
                                    "(no exchange: the pass's row is read once)",
          "guard_code_dataloader_next": "the guard's code per batch: DataLoader next() "
                                        "(batch 32), no communication",
          "guard_code_ddp_forward_entry": "the guard's code per step: DDP forward entry "
                                          "(after step 1), no communication",
          "guard_code_backward_entry": "the guard's code per step: backward entry, "
                                       "no communication",
          "guard_code_all_reduce_entry": "the guard's code per metric: a one-element "
                                         "all_reduce's entry and exit, divided by the world size "
                                         "(the pass compared), no communication"}


def row_label(d, key):
    """The PyTorch column: the version, and on NCCL the backend and, for
    the rows that communicate with ranks sharing a GPU, that they are
    correctness only (gloo's rows as before)."""
    v = d["provenance"]["torch_version"]
    c = d["config"]
    if c.get("backend", "gloo") != "nccl":
        return v
    if key.startswith("guard_code_"):
        return "%s (NCCL run; no communication, CPU)" % v
    return "%s on NCCL%s" % (v, " (%s)" % SHARED_GPU if c.get("shared_gpu") else "")


def table(paths):
    out = ["| PyTorch | what | off (median, us) | on (median, us) | on minus off (median "
           "of pair differences, us) | on / off (median of pair ratios, 95% interval) | "
           "[min, max] | pairs |", "|---|---|---|---|---|---|---|---|"]
    for p in paths:
        d = json.load(open(p))
        for k, s in d["summary"].items():
            lo, hi = s["ratio_median_ci95"]
            out.append("| %s | %s | %.1f | %.1f | %.1f | %.3f [%.3f, %.3f] | [%.3f, %.3f] | %d |" % (
                row_label(d, k), LABELS.get(k, k), s["off_step_median_s"] * 1e6,
                s["on_step_median_s"] * 1e6, s["added_s_median"] * 1e6, s["ratio_median"], lo, hi,
                s["ratio_min"], s["ratio_max"], s["pairs"]))
    out.append("")
    for p in paths:
        d = json.load(open(p))
        out.append(goal_line(d))
    out.append("")
    for p in paths:
        pr = json.load(open(p))["provenance"]
        # evidence.record reads the load when it writes the record, so
        # "at the start" is only that when the measure recorded its own.
        start = pr.get("load_1min_at_start", float("nan"))
        end = pr.get("load_1min_at_end", float("nan"))
        load = ("load %.1f (1-minute average when the record was written; the benchmark's two "
                "ranks keep both cores busy)" % end if start == end else
                "load %.1f at the start, %.1f at the end" % (start, end))
        out.append("PyTorch %s (%s), %s, suite %s, %s, %s." % (
            pr["torch"], os.path.basename(p), pr["date"], pr["commit"][:12] +
            ("+dirty" if pr["commit"].endswith("+dirty") else ""), pr["host"], load))
    return "\n".join(out) + "\n"


def main():
    import argparse
    sys.path.insert(0, HERE)
    import readme_table
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="where to write the JSON record (default: print it)")
    ap.add_argument("--steps", type=int, default=30, help="steps (calls) per block (default 30)")
    ap.add_argument("--pairs", type=int, default=40, help="(off, on) block pairs (default 40)")
    ap.add_argument("--batch", type=int, default=32, help="samples per rank and step (default 32)")
    ap.add_argument("--alt_pairs", type=int, default=200,
                    help="pairs of adjacent blocks in the alternating rows (default 200)")
    ap.add_argument("--alt_block", type=int, default=5,
                    help="steps per block in the alternating rows (default 5)")
    ap.add_argument("--timeout", type=float, default=500, help="seconds for the world (default 500)")
    ap.add_argument("--backend", default="gloo",
                    help="gloo (default) or nccl (each rank on a GPU; without one, exit 2)")
    readme_table.add_flags(ap, "overhead")
    ap.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--world_size", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.table:
        return readme_table.emit(args, table(args.table))
    if args.backend not in ("gloo", "nccl"):
        print("overhead.py: --backend must be gloo or nccl, got %r" % args.backend,
              file=sys.stderr)
        return 2
    if min(args.steps, args.pairs, args.batch, args.alt_pairs, args.alt_block) < 1:
        print("overhead.py: --steps, --pairs, --batch, --alt_pairs and --alt_block must be >= 1",
              file=sys.stderr)
        return 2
    return rank_main(args) if args.rank is not None else measure(args)


if __name__ == "__main__":
    sys.exit(main())
