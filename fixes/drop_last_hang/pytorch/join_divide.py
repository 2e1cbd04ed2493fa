#!/usr/bin/python3
"""PyTorch's Join with DDP: divide_by_initial_world_size=True vs False.

    /usr/bin/python3 fixes/drop_last_hang/pytorch/join_divide.py \\
        --out results/vs_pytorch/drop_last_hang_join.torch1.13.json
    .venv-torch2.15/bin/python fixes/drop_last_hang/pytorch/join_divide.py \\
        --out results/vs_pytorch/drop_last_hang_join.torch2.15.json

Evidence for fixes/drop_last_hang's `join` (= divide_by_initial_world_size
=False) and `join_initial_world_size` (= PyTorch's default, True) variants
(PyTorch 1.13 and 2.15, gloo, CPU, real processes, float64).

Each rank trains a small MLP (8 -> 16 -> tanh -> 1, MSE, SGD lr 0.05,
momentum 0.9) under DDP inside `with Join([model], divide_by_initial_world_size
=...)` on its own number of batches of 8 rows (ranks run out of data at
different steps: W = 2 holds [12, 6] batches, W = 4 [12, 10, 8, 6]). The
one-process computation: one model, every step the mean of the gradients of
the batches of the ranks that still have data, then the same SGD step.

Measured per case:
  * per step (teacher forcing): rank 0 (the longest rank, active at every
    step) records its parameters before each step and the gradient DDP left
    in .grad; the one-process mean gradient over the contributing ranks at
    those same parameters is computed afterwards; the normwise relative
    error max|g - g*| / max|g*| per step, with the number of contributors;
  * free-running: rank 0's final parameters vs the one-process run from the
    same initial model (normwise, and L2 |theta - theta*| / |theta*|);
  * whether every rank ended with rank 0's parameters (Join syncs the final
    model from the last rank to join).
"""
import argparse
import datetime
import faulthandler
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
from tools.vs_pytorch import evidence  # noqa: E402

LR, MOMENTUM, ROWS, DIM = 0.05, 0.9, 8, 8
COUNTS = {2: [12, 6], 4: [12, 10, 8, 6]}


def make_model():
    import torch
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(DIM, 16), torch.nn.Tanh(),
                               torch.nn.Linear(16, 1)).double()


def batch(rank, step):
    import torch
    g = torch.Generator().manual_seed(1000 * rank + step)
    x = torch.randn(ROWS, DIM, generator=g, dtype=torch.float64)
    y = x[:, :1] * 2.0 - x[:, 1:2] + 0.1 * torch.randn(ROWS, 1, generator=g, dtype=torch.float64)
    return x, y


def flat(params):
    import torch
    return torch.cat([p.detach().reshape(-1) for p in params])


def flat_grad(params):
    import torch
    return torch.cat([p.grad.detach().reshape(-1) for p in params])


def rank_main(args):
    import torch
    import torch.distributed as dist
    from torch.distributed.algorithms.join import Join
    from torch.nn.parallel import DistributedDataParallel as DDP

    w, r = args.world_size, args.rank
    faulthandler.dump_traceback_later(120, exit=True)  # a hang shows where, then ends
    dist.init_process_group("gloo", init_method=evidence.init_store(args.dir),
                            rank=r, world_size=w, timeout=datetime.timedelta(seconds=60))
    model = DDP(make_model())
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    before, grads = [], []
    with Join([model], divide_by_initial_world_size=args.divide_initial == 1):
        for s in range(COUNTS[w][r]):
            x, y = batch(r, s)
            opt.zero_grad()
            before.append(flat(model.parameters()))
            torch.nn.functional.mse_loss(model(x), y).backward()
            grads.append(flat_grad(model.parameters()))
            opt.step()
    torch.save({"before": before, "grads": grads, "final": flat(model.parameters())},
               os.path.join(args.dir, "rank%d.pt" % r))
    # Every rank is done; skip the process group's teardown, which hung now
    # and then here (1.13, gloo, after Join) and would only hide the results.
    dist.barrier()
    os._exit(0)


def mean_grad(model, w, step, counts):
    """The one-process gradient: mean over the ranks that have a batch."""
    import torch
    total, c = None, 0
    for r in range(w):
        if step >= counts[r]:
            continue
        model.zero_grad()
        x, y = batch(r, step)
        torch.nn.functional.mse_loss(model(x), y).backward()
        g = flat_grad(model.parameters())
        total = g if total is None else total + g
        c += 1
    return total / c, c


def load_flat(model, vec):
    import torch
    with torch.no_grad():
        at = 0
        for p in model.parameters():
            p.copy_(vec[at:at + p.numel()].view_as(p))
            at += p.numel()


def normwise(got, want):
    d = (got - want).abs().max().item()
    s = want.abs().max().item()
    return 0.0 if d == 0 else d / s


def one_case(w, divide_initial):
    import torch
    with tempfile.TemporaryDirectory(prefix="join_divide_") as d:
        procs = evidence.spawn_ranks(os.path.abspath(__file__), w,
                                     ["--divide_initial", str(int(divide_initial))], d, 600)
        if any(p["exit"] != 0 for p in procs):
            raise RuntimeError("a rank failed: %s" % [(p["exit"], p["output"][-500:])
                                                      for p in procs])
        ranks = [torch.load(os.path.join(d, "rank%d.pt" % r)) for r in range(w)]
    counts = COUNTS[w]
    # Per step, from rank 0's own parameters (teacher forcing).
    ref = make_model()
    steps = []
    for s, (theta, g) in enumerate(zip(ranks[0]["before"], ranks[0]["grads"])):
        load_flat(ref, theta)
        want, c = mean_grad(ref, w, s, counts)
        steps.append({"step": s, "contributors": c, "grad_rel_err": normwise(g, want)})
    # Free-running one-process run.
    free = make_model()
    opt = torch.optim.SGD(free.parameters(), lr=LR, momentum=MOMENTUM)
    for s in range(max(counts)):
        g, _ = mean_grad(free, w, s, counts)
        at = 0
        for p in free.parameters():
            p.grad = g[at:at + p.numel()].view_as(p).clone()
            at += p.numel()
        opt.step()
    final, want = ranks[0]["final"], flat(free.parameters())
    return {
        "world_size": w, "counts": counts,
        "divide_by_initial_world_size": divide_initial,
        "per_step": steps,
        "worst_step_grad_rel_err": max(x["grad_rel_err"] for x in steps),
        "worst_step_grad_rel_err_all_contributing": max(
            [x["grad_rel_err"] for x in steps if x["contributors"] == w], default=0.0),
        "expected_worst": 1 - min(x["contributors"] for x in steps) / w if divide_initial else 0.0,
        "trajectory_rel_err": normwise(final, want),
        "trajectory_rel_err_l2": ((final - want).norm() / want.norm()).item(),
        "ranks_equal_final": all(torch.equal(r["final"], final) for r in ranks),
    }


def print_table(paths):
    out = ["| PyTorch | W | batches per rank | divide_by_initial_world_size | worst per-step "
           "gradient error (expected) | worst on steps with every rank | final distance, "
           "normwise (L2) | ranks equal at the end |", "|---|---|---|---|---|---|---|---|"]
    for doc in evidence.load_docs(paths):
        for c in doc["cases"]:
            out.append("| %s | %d | %s | %s | %.3g (%.3g) | %.2g | %.3g (%.3g) | %s |" % (
                doc["provenance"]["torch_version"], c["world_size"], c["counts"],
                c["divide_by_initial_world_size"], c["worst_step_grad_rel_err"],
                c["expected_worst"], c["worst_step_grad_rel_err_all_contributing"],
                c["trajectory_rel_err"], c["trajectory_rel_err_l2"],
                "yes" if c["ranks_equal_final"] else "no"))
    out.append("\n" + evidence.footer(paths))
    return "\n".join(out) + "\n"


def main():
    ap = evidence.parser(__doc__.split("\n\n")[0])
    ap.add_argument("--divide_initial", type=int, help=argparse.SUPPRESS)
    evidence.add_table_flags(ap)
    args = ap.parse_args()
    if args.rank is not None:
        return rank_main(args)
    if args.table:
        return evidence.emit_table(args, print_table(args.table))
    cases = [one_case(w, flag) for w in (2, 4) for flag in (True, False)]
    doc = {"what": "DDP + Join over uneven per-rank batch counts vs one process",
           "config": {"lr": LR, "momentum": MOMENTUM, "rows_per_batch": ROWS,
                      "model": "Linear(8,16)-Tanh-Linear(16,1), float64, MSE"},
           "provenance": evidence.provenance("fixes/drop_last_hang/pytorch/join_divide.py"),
           "cases": cases}
    evidence.write_json(args.out, doc)
    for c in cases:
        print("W=%d counts %s divide_by_initial_world_size=%s: worst step grad error %.3g "
              "(expected %.3g; steps with all ranks %.2g); final deviation %.3g (L2 %.3g); "
              "ranks equal at the end: %s" % (
                  c["world_size"], c["counts"], c["divide_by_initial_world_size"],
                  c["worst_step_grad_rel_err"], c["expected_worst"],
                  c["worst_step_grad_rel_err_all_contributing"], c["trajectory_rel_err"],
                  c["trajectory_rel_err_l2"], c["ranks_equal_final"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
