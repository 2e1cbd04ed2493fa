#!/usr/bin/python3
"""Seed 001's find_unused_parameters advice, checked on PyTorch's DDP.

    /usr/bin/python3 fixes/drop_last_hang/pytorch/find_unused.py \\
        --out results/vs_pytorch/drop_last_hang_find_unused.torch1.13.json
    .venv-torch2.15/bin/python fixes/drop_last_hang/pytorch/find_unused.py \\
        --out results/vs_pytorch/drop_last_hang_find_unused.torch2.15.json

Evidence for the ledger's claim:drop_last_hang/find-unused-false-steadier-faster ("find_unused_parameters=False is
steadier and faster when the model has no dynamic branches"; PyTorch 1.13
and 2.15, gloo, CPU, real processes, one thread per rank). The seed's fixed
script sets `find_unused_parameters=False`, "steadier and faster without
dynamic branches", and advises `True` (slower) for models whose branches
may leave parameters out of the backward.

timing: a model with no dynamic branch, wrapped twice in DDP from the same
initial parameters, once with False and once with True, in the same
processes; every step trains both on the same batch, the order alternating
step by step (interleaved side by side, not two runs). Per step and wrapper:
rank 0's seconds for zero_grad + forward + backward (its gradient allreduce
included) + SGD step. Recorded: the median per wrapper, the median of the
per-step ratios True/False, the spread (10th to 90th percentile over the
median) per wrapper, whether the two wrappers' parameters stayed bit-
identical on every rank (the flag changes how gradients are found, not what
they are), and whether the rank printed PyTorch's "did not find any unused
parameters" warning. Two models: "post" is the seed's own
(Linear(3*224*224, 10), batch 2: one layer, 1.5 M parameters) and "deep"
32 x (Linear(64, 64), ReLU), batch 32: many small nodes for DDP's extra
graph traversal to walk.

dynamic: a trunk and two heads, each step using one head (the same head on
every rank: head a on even steps, head b on odd; or rank-dependent: rank r
uses head r % 2), with False and with True. Recorded: the steps completed,
what the first failing rank raised, and on every completed step how far
DDP's gradients are from the mean over ranks of each rank's own gradients
(zero for a head it did not use; computed by hand with all_reduce) and
from the rank's own gradient (0: DDP averaged nothing).
"""
import argparse
import datetime
import faulthandler
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
from tools.vs_pytorch import evidence  # noqa: E402

MODELS = {"post": {"what": "Linear(3*224*224, 10), batch 2 (seed 001's model)", "batch": 2},
          "deep": {"what": "32 x (Linear(64, 64), ReLU), then Linear(64, 10); batch 32",
                   "batch": 32}}
BRANCHES = ("same_on_all_ranks", "per_rank")
DYNAMIC_STEPS = 4
WARNING = "did not find any unused parameters"


def make_model(torch, name):
    if name == "post":
        return torch.nn.Linear(3 * 224 * 224, 10)
    layers = []
    for _ in range(32):
        layers += [torch.nn.Linear(64, 64), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(64, 10))


def timing_rank(args, torch, dist, DDP, log):
    torch.manual_seed(0)
    base = make_model(torch, args.model)
    ddp = {}
    for flag in (False, True):  # the same initial parameters in both
        copy = make_model(torch, args.model)
        copy.load_state_dict(base.state_dict())
        ddp[flag] = DDP(copy, find_unused_parameters=flag)
    opt = {f: torch.optim.SGD(m.parameters(), lr=0.01) for f, m in ddp.items()}
    g = torch.Generator().manual_seed(1000 + args.rank)
    batch = MODELS[args.model]["batch"]
    times = {False: [], True: []}
    for s in range(args.warmup + args.steps):
        if args.model == "post":
            x = torch.randn(batch, 3 * 224 * 224, generator=g)
        else:
            x = torch.randn(batch, 64, generator=g)
        y = torch.randint(0, 10, (batch,), generator=g)
        for flag in ((False, True) if s % 2 == 0 else (True, False)):
            t0 = time.perf_counter()
            opt[flag].zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(ddp[flag](x), y).backward()
            opt[flag].step()
            dt = time.perf_counter() - t0
            if s >= args.warmup:
                times[flag].append(dt)
        if s % 50 == 0:
            log["step"] = s
            log.dump()
    same = all(torch.equal(a, b) for a, b in zip(ddp[False].parameters(),
                                                  ddp[True].parameters()))
    log["times_s"] = {"false": times[False], "true": times[True]}
    log["identical_params"] = same


def dynamic_rank(args, torch, dist, DDP, log):
    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.trunk = torch.nn.Linear(8, 8)
            self.a = torch.nn.Linear(8, 1)
            self.b = torch.nn.Linear(8, 1)

        def forward(self, x, head):
            return (self.a if head == 0 else self.b)(torch.relu(self.trunk(x)))

    net = Net().double()
    plain = Net().double()  # the hand-made reference: local gradients, then all_reduce / W
    model = DDP(net, find_unused_parameters=bool(args.flag))
    g = torch.Generator().manual_seed(2000 + args.rank)
    w = args.world_size
    log["steps_done"] = 0
    log["grads_match"] = []
    log["grads_vs_local"] = []
    for s in range(DYNAMIC_STEPS):
        head = s % 2 if args.branch == "same_on_all_ranks" else args.rank % 2
        x = torch.randn(4, 8, generator=g, dtype=torch.float64)
        plain.load_state_dict(net.state_dict())
        for p in list(net.parameters()) + list(plain.parameters()):
            p.grad = None
        model(x, head).pow(2).mean().backward()
        plain(x, head).pow(2).mean().backward()
        worst = local = 0.0
        for p, q in zip(net.parameters(), plain.parameters()):
            mine = q.grad.clone() if q.grad is not None else torch.zeros_like(q)
            ref = mine.clone()
            dist.all_reduce(ref)
            got = p.grad if p.grad is not None else torch.zeros_like(p)
            worst = max(worst, (got - ref / w).abs().max().item())
            local = max(local, (got - mine).abs().max().item())  # 0: nothing was averaged
        log["grads_match"].append(worst)
        log["grads_vs_local"].append(local)
        with torch.no_grad():
            for p in net.parameters():
                if p.grad is not None:
                    p -= 0.1 * p.grad
        log["steps_done"] = s + 1
        log.dump()


def rank_main(args):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)  # a core per rank at W = 2 on this 2-core machine
    log = evidence.RankLog(args.dir, args.rank)
    faulthandler.dump_traceback_later(args.rank_bound, exit=True)
    try:
        dist.init_process_group("gloo", init_method=evidence.init_store(args.dir),
                                rank=args.rank, world_size=args.world_size,
                                timeout=datetime.timedelta(seconds=args.pg_timeout))
        (timing_rank if args.mode == "timing" else dynamic_rank)(args, torch, dist, DDP, log)
        dist.destroy_process_group()
    except Exception as e:  # noqa: BLE001  what the rank raised is the measurement
        log["raised"] = "%s: %s" % (type(e).__name__, evidence.first_line(e))
        log.dump()
        return 1
    log.dump()
    return 0


def quantile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]


def timing_case(script, w, model, args):
    with tempfile.TemporaryDirectory() as d:
        procs = evidence.spawn_ranks(
            script, w, ["--mode", "timing", "--model", model, "--steps", str(args.steps),
                        "--warmup", str(args.warmup), "--pg_timeout", str(args.pg_timeout),
                        "--rank_bound", str(args.rank_bound)], d, timeout=args.rank_bound + 30)
        ranks = evidence.collect(d, procs)
    out = {"world_size": w, "model": model, "what": MODELS[model]["what"],
           "steps": args.steps, "warmup": args.warmup,
           "exits": [x["exit"] for x in ranks],
           "raised": [x.get("raised") or x.get("died", "") for x in ranks if x["exit"] != 0],
           "warning_ranks": [r for r, p in enumerate(procs) if WARNING in p["output"]],
           "identical_params_ranks": [x.get("identical_params") for x in ranks]}
    t = ranks[0].get("times_s")
    if t:
        f, tr = t["false"], t["true"]
        ratios = [b / a for a, b in zip(f, tr)]
        out.update({
            "median_ms_false": 1e3 * statistics.median(f),
            "median_ms_true": 1e3 * statistics.median(tr),
            "median_ratio_true_over_false": statistics.median(ratios),
            "steps_true_slower": sum(1 for r in ratios if r > 1),
            "spread_false": (quantile(f, 0.9) - quantile(f, 0.1)) / statistics.median(f),
            "spread_true": (quantile(tr, 0.9) - quantile(tr, 0.1)) / statistics.median(tr),
            "rank0_times_s": t})
    return out


def dynamic_case(script, w, branch, flag, args):
    with tempfile.TemporaryDirectory() as d:
        procs = evidence.spawn_ranks(
            script, w, ["--mode", "dynamic", "--branch", branch, "--flag", str(int(flag)),
                        "--pg_timeout", str(args.pg_timeout), "--rank_bound",
                        str(args.rank_bound)], d, timeout=args.rank_bound + 30)
        ranks = evidence.collect(d, procs)
    failed = [x for x in ranks if x["exit"] != 0]
    matches = [m for x in ranks for m in x.get("grads_match", [])]
    local = [m for x in ranks for m in x.get("grads_vs_local", [])]
    return {"world_size": w, "branch": branch, "find_unused_parameters": flag,
            "steps": DYNAMIC_STEPS,
            "steps_done_min": min(x.get("steps_done", 0) for x in ranks),
            "exits": [x["exit"] for x in ranks],
            "first_error": (failed[0].get("raised") or failed[0].get("died", "")) if failed else "",
            "max_grad_diff_vs_hand": max(matches) if matches else None,
            "max_grad_diff_vs_local": max(local) if local else None}


def print_table(paths):
    docs = evidence.load_docs(paths)
    out = ["| PyTorch | W | model | steps | median step, False (ms) | median step, True (ms) "
           "| True / False (median of per-step ratios) | steps in which True was slower "
           "| spread, False | spread, True | parameters identical | 'no unused parameters' "
           "warning printed |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for doc in docs:
        v = doc["provenance"]["torch_version"]
        for c in doc["timing"]:
            if "median_ms_false" not in c:
                out.append("| %s | %d | %s | %d | failed: %s | | | | | | | |" % (
                    v, c["world_size"], c["model"], c["steps"], "; ".join(c["raised"])[:200]))
                continue
            out.append("| %s | %d | %s | %d | %.3f | %.3f | %.3f | %d of %d | %.2f | %.2f | %s | %s |"
                       % (v, c["world_size"], c["model"], c["steps"], c["median_ms_false"],
                          c["median_ms_true"], c["median_ratio_true_over_false"],
                          c["steps_true_slower"], c["steps"], c["spread_false"],
                          c["spread_true"],
                          "yes" if all(c["identical_params_ranks"]) else "no",
                          "rank %s" % ", ".join(map(str, c["warning_ranks"]))
                          if c["warning_ranks"] else "no"))
    out += ["", "| PyTorch | W | which head | find_unused_parameters | steps done of %d | "
            "first error | largest gradient difference from the hand-made mean | from the "
            "rank's own gradient (0: no averaging) |"
            % DYNAMIC_STEPS, "|---|---|---|---|---|---|---|---|"]
    for doc in docs:
        v = doc["provenance"]["torch_version"]
        for c in doc["dynamic"]:
            diff, local = c["max_grad_diff_vs_hand"], c.get("max_grad_diff_vs_local")
            out.append("| %s | %d | %s | %s | %d | %s | %s | %s |" % (
                v, c["world_size"],
                "a on even steps, b on odd" if c["branch"] == "same_on_all_ranks"
                else "rank r uses head r % 2",
                c["find_unused_parameters"], c["steps_done_min"],
                ("`%s`" % c["first_error"].replace("|", "/")[:160]) if c["first_error"] else "-",
                "-" if diff is None else "%.3g" % diff, "-" if local is None else "%.3g" % local))
    out.append("\n" + evidence.footer(paths))
    return "\n".join(out) + "\n"


def main():
    ap = evidence.parser(__doc__.split("\n\n")[0], pg_timeout=60.0, worlds="2")
    ap.add_argument("--steps", type=int, default=300,
                    help="timed steps per wrapper and model (default 300)")
    ap.add_argument("--warmup", type=int, default=20, help="untimed steps first (default 20)")
    ap.add_argument("--rank_bound", type=float, default=300.0,
                    help="seconds after which a rank prints where it is and exits (default 300)")
    # The rank processes' own flags.
    ap.add_argument("--mode", choices=("timing", "dynamic"), help=argparse.SUPPRESS)
    ap.add_argument("--model", choices=tuple(MODELS), help=argparse.SUPPRESS)
    ap.add_argument("--branch", choices=BRANCHES, help=argparse.SUPPRESS)
    ap.add_argument("--flag", type=int, help=argparse.SUPPRESS)
    evidence.add_table_flags(ap)
    args = evidence.dispatch(ap, rank_main, print_table)
    if args.steps < 10 or args.warmup < 0 or args.rank_bound <= 0:
        print("--steps must be at least 10, --warmup at least 0 and --rank_bound above 0, "
              "got %d, %d and %g" % (args.steps, args.warmup, args.rank_bound), file=sys.stderr)
        return 2
    script = os.path.abspath(__file__)
    timing, dynamic = [], []
    for w in evidence.worlds(args):
        for model in MODELS:
            c = timing_case(script, w, model, args)
            print("W=%d %s: exits %s, True/False %s, params identical %s, warning on %s" % (
                w, model, c["exits"], "%.3f" % c["median_ratio_true_over_false"]
                if "median_ratio_true_over_false" in c else "-",
                c["identical_params_ranks"], c["warning_ranks"]), file=sys.stderr)
            timing.append(c)
        for branch in BRANCHES:
            for flag in (False, True):
                c = dynamic_case(script, w, branch, flag, args)
                print("W=%d dynamic %s find_unused=%s: %d of %d steps, %s" % (
                    w, branch, flag, c["steps_done_min"], DYNAMIC_STEPS,
                    c["first_error"] or "no error"), file=sys.stderr)
                dynamic.append(c)
    doc = {"what": "find_unused_parameters False vs True: step time side by side on a model "
                   "without dynamic branches; what each does with a model whose steps use one "
                   "of two heads",
           "config": {"steps": args.steps, "warmup": args.warmup, "threads_per_rank": 1,
                      "pg_timeout_s": args.pg_timeout, "dynamic_steps": DYNAMIC_STEPS,
                      "models": {k: v["what"] for k, v in MODELS.items()},
                      "cpus": os.cpu_count()},
           "provenance": evidence.provenance("fixes/drop_last_hang/pytorch/find_unused.py"),
           "timing": timing, "dynamic": dynamic}
    evidence.write_json(args.out, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
