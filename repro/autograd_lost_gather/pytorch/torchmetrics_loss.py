#!/usr/bin/python3
"""A torchmetrics Metric as a DDP loss with dist_sync_on_step=True, on gloo.

    .venv-torch2.15/bin/python repro/autograd_lost_gather/pytorch/torchmetrics_loss.py \\
        --out results/vs_pytorch/autograd_lost_gather_torchmetrics.torch2.15.json

Evidence for seed 002's claim (claim:autograd_lost_gather/sync-on-step-loses-gradient): "with dist_sync_on_step=True
a TorchMetrics Metric used as a loss loses the gradient in the all_gather"
(torchmetrics issue 2745). Checked against the torchmetrics the venv has
(1.9.0) and, where installed, the last release before the change the post
proposes (PR 2754, first released in 1.6.0: `gathered_result[rank] =
result` after the all_gather): 1.5.2, installed beside the venv's own by
tools/setup.sh --torch2.15 into .venv-torch2.15/torchmetrics-1.5.2 and put
first on the rank processes' sys.path.

Real gloo processes, float64. Rank r holds n_r rows x (D features) with 0/1
labels; a linear scorer s = x . theta (one weight vector, the same initial
values on every rank) wrapped in DistributedDataParallel; every rank runs
loss = metric(s, y) (Metric.forward, which with dist_sync_on_step=True
syncs the batch states through torchmetrics' gather before compute) and
loss.backward(). Two custom Metrics, each the kind the post means (a metric
used as a loss):

  mse       states sse, n with dist_reduce_fx="sum": the global mean squared
            error of s against y
  soft_auc  states scores, labels with dist_reduce_fx="cat": the soft AUC
            loss mean(softplus(s_neg - s_pos)) over every (pos, neg) pair of
            the gathered rows, the suite's `global` loss

Both are global losses: every rank computes the same value, that of one
process on all rows. Measured per torchmetrics version, metric, W and layout
(even: 6 rows per rank; uneven: 3 + 2r rows): whether backward runs (the
error if not), the loss against the one-process value, and theta's gradient
after DDP's average g against the one-process gradient g* of the same
formula (plain torch, no torchmetrics): the factor (g . g*) / |g*|^2 and the
residual |g - factor g*| / |g*|. repro/autograd_lost_gather's README derives
what to expect: no gradient without the re-insertion; with it, only the own
rows' path, so DDP's average is exactly g*/W for a global loss.
"""
import datetime
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
from tools.vs_pytorch import evidence  # noqa: E402

D = 4
METRICS = ("mse", "soft_auc")
LAYOUTS = ("even", "uneven")
OLDER = "1.5.2"  # the last torchmetrics release before PR 2754 (1.6.0)


def older_dir():
    """Where tools/setup.sh --torch2.15 installs torchmetrics OLDER: beside
    the venv's packages, in the venv's own folder."""
    return os.path.join(sys.prefix, "torchmetrics-" + OLDER)


def batch_rows(layout, rank):
    return 6 if layout == "even" else 3 + 2 * rank


def batch(layout, rank):
    """Rank r's rows and labels (both classes on every rank)."""
    import torch
    g = torch.Generator().manual_seed(200 + rank)
    n = batch_rows(layout, rank)
    x = torch.randn(n, D, generator=g, dtype=torch.float64)
    y = torch.tensor([float(i % 2) for i in range(n)], dtype=torch.float64)
    return x, y


def theta0():
    import torch
    g = torch.Generator().manual_seed(11)
    return torch.randn(D, generator=g, dtype=torch.float64)


def formula(name, s, y):
    """The loss of one process on all rows, in plain torch."""
    import torch.nn.functional as F
    if name == "mse":
        return ((s - y) ** 2).sum() / s.numel()
    pos, neg = s[y == 1], s[y == 0]
    return F.softplus(neg[None, :] - pos[:, None]).mean()


def make_metric(name):
    """A torchmetrics Metric computing formula(name) with dist_sync_on_step."""
    import torch
    from torchmetrics import Metric
    from torchmetrics.utilities import dim_zero_cat

    class LossMetric(Metric):
        """A metric meant as a loss: synced at every forward (the seed's setting)."""
        is_differentiable = True
        higher_is_better = False
        full_state_update = False

        def __init__(self):
            super().__init__(dist_sync_on_step=True)

    class MseLoss(LossMetric):
        def __init__(self):
            super().__init__()
            self.add_state("sse", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
            self.add_state("n", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")

        def update(self, s, y):
            self.sse = self.sse + ((s - y) ** 2).sum()
            self.n = self.n + s.numel()

        def compute(self):
            return self.sse / self.n

    class SoftAucLoss(LossMetric):
        def __init__(self):
            super().__init__()
            self.add_state("scores", default=[], dist_reduce_fx="cat")
            self.add_state("labels", default=[], dist_reduce_fx="cat")

        def update(self, s, y):
            self.scores.append(s)
            self.labels.append(y)

        def compute(self):
            return formula("soft_auc", dim_zero_cat(self.scores), dim_zero_cat(self.labels))

    return MseLoss() if name == "mse" else SoftAucLoss()


def rank_main(args):
    if args.tm_dir:
        sys.path.insert(0, args.tm_dir)
    import torch
    import torch.distributed as dist
    import torchmetrics
    from torch.nn.parallel import DistributedDataParallel as DDP
    w, r = args.world_size, args.rank
    out = evidence.RankLog(args.dir, r)
    out["torchmetrics"] = torchmetrics.__version__
    out["torchmetrics_file"] = torchmetrics.__file__
    dist.init_process_group("gloo", init_method=evidence.init_store(args.dir), rank=r,
                            world_size=w, timeout=datetime.timedelta(seconds=args.pg_timeout))
    for name in METRICS:
        model = torch.nn.Linear(D, 1, bias=False, dtype=torch.float64)
        with torch.no_grad():
            model.weight.copy_(theta0()[None, :])
        ddp = DDP(model)
        x, y = batch(args.layout, r)
        loss = make_metric(name)(ddp(x).squeeze(-1), y)
        res = {"loss": float(loss.detach()), "requires_grad": bool(loss.requires_grad)}
        try:
            loss.backward()
            grad = model.weight.grad
            res["grad"] = None if grad is None else grad.reshape(-1).tolist()
        except RuntimeError as e:  # no grad_fn: nothing to backpropagate
            res["error"] = "%s: %s" % (type(e).__name__, evidence.first_line(e))
        out[name] = res
        out.dump()
        dist.barrier()
    os._exit(0)


def reference(name, layout, w):
    """(loss, gradient) of one process on every rank's rows."""
    import torch
    xs, ys = zip(*(batch(layout, r) for r in range(w)))
    theta = theta0().requires_grad_(True)
    loss = formula(name, torch.cat(xs) @ theta, torch.cat(ys))
    loss.backward()
    return float(loss.detach()), theta.grad


def judge(got, want):
    import torch
    g = torch.tensor(got, dtype=torch.float64)
    factor = float(g.dot(want) / want.dot(want))
    return {"factor": factor, "residual": float((g - factor * want).norm() / want.norm())}


def one_world(w, layout, tm_dir, pg_timeout):
    args = ["--pg_timeout", str(pg_timeout), "--layout", layout] + (["--tm_dir", tm_dir] if tm_dir else [])
    with tempfile.TemporaryDirectory(prefix="tm_loss_") as d:
        procs = evidence.spawn_ranks(os.path.abspath(__file__), w, args, d, 4 * pg_timeout + 60)
        ranks = evidence.collect(d, procs)
    versions = sorted({info.get("torchmetrics", "?") for info in ranks})
    cases = []
    for name in METRICS:
        ref_loss, ref_grad = reference(name, layout, w)
        per_rank = []
        for info in ranks:
            got = info.get(name)
            if got is None:
                per_rank.append({"error": "no result: exit %s %s" % (info["exit"], info.get("died", ""))})
                continue
            p = {"loss_error": abs(got["loss"] - ref_loss) / abs(ref_loss),
                 "requires_grad": got["requires_grad"]}
            if "error" in got:
                p["error"] = got["error"]
            elif got["grad"] is None:
                p["error"] = "theta.grad is None after backward"
            else:
                p.update(judge(got["grad"], ref_grad))
            per_rank.append(p)
        ok = [p for p in per_rank if "factor" in p]
        case = {"torchmetrics": versions[0] if len(versions) == 1 else versions, "metric": name,
                "world_size": w, "layout": layout,
                "rows": [batch_rows(layout, r) for r in range(w)],
                "per_rank": per_rank, "backward_ok": len(ok) == w,
                "loss_error_max": max((p["loss_error"] for p in per_rank if "loss_error" in p),
                                      default=None)}
        if ok:
            case["factor_min"] = min(p["factor"] for p in ok)
            case["factor_max"] = max(p["factor"] for p in ok)
            case["residual_max"] = max(p["residual"] for p in ok)
            case["factor_times_w_error"] = max(abs(p["factor"] * w - 1.0) for p in ok)
        if len(ok) < w:
            case["error"] = next(p["error"] for p in per_rank if "error" in p)
        cases.append(case)
    return cases


def print_table(paths):
    out = ["| torchmetrics | metric | W | rows per rank | backward | loss vs one process "
           "(max rel. error) | DDP gradient / one-process gradient (factor, min-max over ranks) | "
           "residual after the factor |", "|---|---|---|---|---|---|---|---|"]
    for doc in evidence.load_docs(paths):
        for c in doc["cases"]:
            head = "| %s | %s | %d | %s |" % (c["torchmetrics"], c["metric"], c["world_size"],
                                              ", ".join(str(n) for n in c["rows"]))
            loss = "%.2g" % c["loss_error_max"] if c["loss_error_max"] is not None else "-"
            if not c["backward_ok"]:
                failed = sum(1 for p in c["per_rank"] if "error" in p)
                out.append("%s fails on %d of %d ranks: `%s` | %s | - | - |" % (
                    head, failed, c["world_size"], c["error"][:110], loss))
            else:
                out.append("%s runs | %s | %.15g - %.15g (1/W = %.15g) | %.2g |" % (
                    head, loss, c["factor_min"], c["factor_max"], 1.0 / c["world_size"],
                    c["residual_max"]))
        for v, why in doc.get("not_run", {}).items():
            out.append("| %s | - | - | - | not run: %s | - | - | - |" % (v, why))
    out.append("\n" + evidence.footer(paths))
    return "\n".join(out) + "\n"


def main():
    ap = evidence.parser(__doc__.split("\n\n")[0], pg_timeout=30, worlds="2,4")
    ap.add_argument("--layout", choices=LAYOUTS, help=__import__("argparse").SUPPRESS)
    ap.add_argument("--tm_dir", help=__import__("argparse").SUPPRESS)
    ap.add_argument("--older", default=older_dir(),
                    help="a folder holding torchmetrics %s (default %s; tools/setup.sh --torch2.15 "
                         "installs it there)" % (OLDER, older_dir()))
    evidence.add_table_flags(ap)
    args = evidence.dispatch(ap, rank_main, print_table)
    sources, not_run = [], {}
    if os.path.isdir(os.path.join(args.older, "torchmetrics")):
        sources.append(args.older)
    else:
        not_run[OLDER] = "no torchmetrics in %s (tools/setup.sh --torch2.15 installs it)" % args.older
    sources.append(None)  # the venv's own torchmetrics
    cases = []
    for tm_dir in sources:
        for w in evidence.worlds(args):
            for layout in LAYOUTS:
                cases += one_world(w, layout, tm_dir, args.pg_timeout)
    doc = {"what": "a torchmetrics Metric with dist_sync_on_step=True as a DDP loss on gloo: "
                   "backward and theta's gradient against one process",
           "config": {"dim": D, "metrics": list(METRICS), "layouts": {"even": "6 rows per rank",
                                                                      "uneven": "3 + 2r rows"},
                      "older_torchmetrics_dir": args.older,
                      "expected": "no gradient without PR 2754's re-insertion; with it, DDP's "
                                  "average is g*/W for a global loss (factor 1/W, residual 0)"},
           "provenance": evidence.provenance(
               "repro/autograd_lost_gather/pytorch/torchmetrics_loss.py"),
           "cases": cases}
    if not_run:
        doc["not_run"] = not_run
    evidence.write_json(args.out, doc)
    for c in cases:
        print("torchmetrics %s %s W=%d %s: %s" % (
            c["torchmetrics"], c["metric"], c["world_size"], c["layout"],
            "factor %.6g..%.6g residual %.2g" % (c["factor_min"], c["factor_max"], c["residual_max"])
            if c["backward_ok"] else c["error"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
