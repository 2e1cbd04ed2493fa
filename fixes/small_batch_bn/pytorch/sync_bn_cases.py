#!/usr/bin/python3
"""PyTorch's SyncBatchNorm on CPU (gloo) on the tracker's cases, and PreciseBN
without synchronised batch counts.

    /usr/bin/python3 fixes/small_batch_bn/pytorch/sync_bn_cases.py \\
        --out results/vs_pytorch/small_batch_bn_sync_bn.torch1.13.json
    .venv-torch2.15/bin/python fixes/small_batch_bn/pytorch/sync_bn_cases.py \\
        --out results/vs_pytorch/small_batch_bn_sync_bn.torch2.15.json

Evidence for fixes/small_batch_bn's cases (our SyncBatchNorm is exact on
each; //fixes/small_batch_bn:sync_batch_norm_test). W = 2 real gloo
processes, float64, torch.nn.SyncBatchNorm(3) in train mode on rows x_r of
per-rank batch sizes

  equal           [4, 4]
  uneven_22192    [2, 6]   pytorch/pytorch issue 22192: running_var with
                           different per-rank batch sizes
  empty_74944     [0, 5]   a rank with an empty batch (PR 74944)

loss = sum(y * C) over every rank's rows (C fixed). Against one process's
BatchNorm1d on all rows: the output and input gradient of every rank's
rows, the parameter gradients summed over ranks, and every rank's
running_mean / running_var after the step (relative max error), or the
error PyTorch raises, with the stage (forward / backward).

  precise_bn_152  fvcore issue 152 (PreciseBN does not synchronise batch
                  counts): fvcore is not installed here; PyTorch's own
                  recompute of BN statistics, torch.optim.swa_utils.update_bn,
                  runs per rank with no communication. Rank 0 has 2 batches
                  of 4 rows, rank 1 has 5 (different data): each rank's
                  running_mean against the global one (update_bn over all 7
                  batches in one process), and the equal-weight average of
                  the ranks' statistics (what averaging them across ranks
                  without counts gives) against the global one.
"""
import datetime
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
from tools.vs_pytorch import evidence  # noqa: E402

C = 3
CASES = {"equal": [4, 4], "uneven_22192": [2, 6], "empty_74944": [0, 5]}


def rows(case, rank):
    import torch
    n = CASES[case][rank]
    g = torch.Generator().manual_seed(10 * rank + 1)
    return torch.randn(n, C, generator=g, dtype=torch.float64) * (1 + rank) + rank


def coeffs(case):
    import torch
    g = torch.Generator().manual_seed(3)
    return torch.randn(sum(CASES[case]), C, generator=g, dtype=torch.float64)


def offset(case, rank):
    return sum(CASES[case][:rank])


def rank_main(args):
    import torch
    import torch.distributed as dist
    w, r = args.world_size, args.rank
    out = evidence.RankLog(args.dir, r)
    dist.init_process_group("gloo", init_method=evidence.init_store(args.dir), rank=r,
                            world_size=w, timeout=datetime.timedelta(seconds=args.pg_timeout))
    for case in CASES:
        torch.manual_seed(0)
        bn = torch.nn.SyncBatchNorm(C).double()
        with torch.no_grad():
            bn.weight.copy_(torch.tensor([1.0, 0.5, 2.0]))
            bn.bias.copy_(torch.tensor([0.1, -0.2, 0.3]))
        x = rows(case, r).requires_grad_(True)
        cw = coeffs(case)[offset(case, r):offset(case, r) + x.shape[0]]
        stage = "forward"
        try:
            y = bn(x)
            stage = "backward"
            (y * cw).sum().backward()
            out[case] = {"y": y.detach().reshape(-1).tolist(),
                         "x_grad": x.grad.reshape(-1).tolist(),
                         "weight_grad": bn.weight.grad.tolist(), "bias_grad": bn.bias.grad.tolist(),
                         "running_mean": bn.running_mean.tolist(),
                         "running_var": bn.running_var.tolist()}
        except Exception as e:
            out[case] = {"stage": stage, "error": "%s: %s" % (type(e).__name__,
                                                              evidence.first_line(e))}
        out.dump()
        dist.barrier()
    os._exit(0)


def reference(case):
    import torch
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm1d(C).double()
    with torch.no_grad():
        bn.weight.copy_(torch.tensor([1.0, 0.5, 2.0]))
        bn.bias.copy_(torch.tensor([0.1, -0.2, 0.3]))
    x = torch.cat([rows(case, r) for r in range(len(CASES[case]))]).requires_grad_(True)
    y = bn(x)
    (y * coeffs(case)).sum().backward()
    return {"y": y.detach(), "x_grad": x.grad, "weight_grad": bn.weight.grad,
            "bias_grad": bn.bias.grad, "running_mean": bn.running_mean.detach(),
            "running_var": bn.running_var.detach()}


def rel(got, want):
    import torch
    got = torch.tensor(got, dtype=torch.float64).reshape(-1)
    want = want.reshape(-1)
    if want.numel() == 0:
        return 0.0
    return float((got - want).abs().max() / max(want.abs().max().item(), 1e-300))


def judge(case, ranks):
    import torch
    ref = reference(case)
    per = [x.get(case, {"error": "no result: exit %s %s" % (x["exit"], x.get("died", ""))})
           for x in ranks]
    errs = [p for p in per if "error" in p]
    out = {"case": case, "batch_sizes": CASES[case]}
    if errs:
        out["error"] = errs[0]["error"]
        out["stage"] = errs[0].get("stage", "")
        out["ranks_with_error"] = len(errs)
        return out
    errors = {"y": 0.0, "x_grad": 0.0, "running_mean": 0.0, "running_var": 0.0}
    for r, p in enumerate(per):
        a, b = offset(case, r), offset(case, r) + CASES[case][r]
        errors["y"] = max(errors["y"], rel(p["y"], ref["y"][a:b]))
        errors["x_grad"] = max(errors["x_grad"], rel(p["x_grad"], ref["x_grad"][a:b]))
        errors["running_mean"] = max(errors["running_mean"],
                                     rel(p["running_mean"], ref["running_mean"]))
        errors["running_var"] = max(errors["running_var"],
                                    rel(p["running_var"], ref["running_var"]))
    for k in ("weight_grad", "bias_grad"):
        errors[k] = rel(sum(torch.tensor(p[k]) for p in per).tolist(), ref[k])
    out["rel_err"] = errors
    out["worst_rel_err"] = max(errors.values())
    out["running_var_rank0"] = per[0]["running_var"]
    out["running_var_one_process"] = ref["running_var"].tolist()
    return out


def precise_bn_case():
    """torch.optim.swa_utils.update_bn per rank, uneven batch counts."""
    import torch
    from torch.optim.swa_utils import update_bn

    def batches(rank, count):
        g = torch.Generator().manual_seed(50 + rank)
        return [torch.randn(4, C, generator=g, dtype=torch.float64) * (1 + 2 * rank) + 3 * rank
                for _ in range(count)]

    counts = [2, 5]
    per_rank = []
    for r, k in enumerate(counts):
        model = torch.nn.Sequential(torch.nn.BatchNorm1d(C)).double()
        update_bn(batches(r, k), model)
        per_rank.append(model[0].running_mean.clone())
    model = torch.nn.Sequential(torch.nn.BatchNorm1d(C)).double()
    update_bn([b for r, k in enumerate(counts) for b in batches(r, k)], model)
    glob = model[0].running_mean
    avg = sum(per_rank) / len(per_rank)

    def rel_t(a, b):
        return float((a - b).abs().max() / b.abs().max())
    return {"case": "precise_bn_152", "api": "torch.optim.swa_utils.update_bn (no communication)",
            "batches_per_rank": counts, "rows_per_batch": 4,
            "ranks_differ_rel": rel_t(per_rank[0], per_rank[1]),
            "rank_vs_global_rel": max(rel_t(p, glob) for p in per_rank),
            "equal_average_vs_global_rel": rel_t(avg, glob)}


def cpu_kernel_probe():
    """SyncBatchNorm's statistics kernel, called directly on a CPU tensor: if
    it had a CPU kernel the layer's check would be the only obstacle."""
    import torch
    try:
        torch.batch_norm_stats(torch.ones(4, C, dtype=torch.float64), 1e-5)
        return {"batch_norm_stats_on_cpu": "runs"}
    except Exception as e:
        return {"batch_norm_stats_on_cpu": "%s: %s" % (type(e).__name__, evidence.first_line(e, 160))}


def print_table(paths):
    out = ["| PyTorch | case | per-rank batch sizes | PyTorch's SyncBatchNorm on CPU (gloo) | "
           "worst relative error vs one process (output, gradients, running stats) |",
           "|---|---|---|---|---|"]
    for doc in evidence.load_docs(paths):
        v = doc["provenance"]["torch_version"]
        for c in doc["cases"]:
            if c["case"] == "precise_bn_152":
                out.append("| %s | %s | %s batches of %d | `update_bn` per rank, no sync: ranks "
                           "differ by %.3g | rank vs global %.3g; equal-weight average of the "
                           "ranks vs global %.3g |" % (
                               v, c["case"], c["batches_per_rank"], c["rows_per_batch"],
                               c["ranks_differ_rel"], c["rank_vs_global_rel"],
                               c["equal_average_vs_global_rel"]))
            elif "error" in c:
                out.append("| %s | %s | %s | raises in %s: `%s` | - |" % (
                    v, c["case"], c["batch_sizes"], c["stage"], c["error"][:120]))
            else:
                worst = max(c["rel_err"], key=c["rel_err"].get)
                out.append("| %s | %s | %s | runs | %.3g (worst: %s) |" % (
                    v, c["case"], c["batch_sizes"], c["worst_rel_err"], worst))
    for doc in evidence.load_docs(paths):
        out.append("\nPyTorch %s, `torch.batch_norm_stats` (SyncBatchNorm's statistics kernel) "
                   "called on a CPU tensor: `%s`." % (
                       doc["provenance"]["torch_version"],
                       doc["cpu_kernel_probe"]["batch_norm_stats_on_cpu"][:160]))
    out.append("\n" + evidence.footer(paths))
    return "\n".join(out) + "\n"


def main():
    ap = evidence.parser(__doc__.split("\n\n")[0], pg_timeout=30)
    evidence.add_table_flags(ap)
    args = evidence.dispatch(ap, rank_main, print_table)
    with tempfile.TemporaryDirectory(prefix="sync_bn_cases_") as d:
        procs = evidence.spawn_ranks(os.path.abspath(__file__), 2,
                                     ["--pg_timeout", str(args.pg_timeout)], d,
                                     4 * args.pg_timeout + 60)
        ranks = evidence.collect(d, procs)
    cases = [judge(case, ranks) for case in CASES] + [precise_bn_case()]
    doc = {"what": "torch.nn.SyncBatchNorm on CPU/gloo on the tracker's cases; update_bn per rank",
           "config": {"world_size": 2, "channels": C, "dtype": "float64",
                      "batch_sizes": CASES},
           "provenance": evidence.provenance("fixes/small_batch_bn/pytorch/sync_bn_cases.py"),
           "cases": cases, "cpu_kernel_probe": cpu_kernel_probe()}
    evidence.write_json(args.out, doc)
    for c in cases:
        print(c["case"], c.get("error") or c.get("worst_rel_err") or c, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
