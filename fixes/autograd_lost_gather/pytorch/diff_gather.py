#!/usr/bin/python3
"""PyTorch's differentiable all_gathers on gloo: the gradient each rank gets.

    /usr/bin/python3 fixes/autograd_lost_gather/pytorch/diff_gather.py \\
        --out results/vs_pytorch/autograd_lost_gather_diff_gather.torch1.13.json
    .venv-torch2.15/bin/python fixes/autograd_lost_gather/pytorch/diff_gather.py \\
        --out results/vs_pytorch/autograd_lost_gather_diff_gather.torch2.15.json

Evidence for fixes/autograd_lost_gather's claim that its DifferentiableGather
has the adjoint PyTorch's has (backward = sum over ranks of the gradients at
a rank's rows: W x g* for a loss every rank computes alike; exactly g* after
DDP's average). Real gloo processes, float64. Rank r holds rows x_r (ROWS x
D, a leaf with requires_grad); every rank gathers all rows with

  dist_nn          torch.distributed.nn.functional.all_gather (users read
                   that it was removed in 2.4+: whether it is there is part
                   of the record)
  functional       torch.distributed._functional_collectives
                   .all_gather_tensor_autograd (PyTorch 2.x; absent in 1.13)
  plain            dist.all_gather into zero tensors (no autograd history)

and computes the same global loss L = sum(tanh(G) * C) (G the gathered
rows, C fixed weights). Measured per API and W: whether it exists, the
error if it fails, and rank r's gradient g_r against the one-process
gradient g*_r = dL/dx_r: the factor (g_r . g*_r) / |g*_r|^2 and the
residual |g_r - factor g*_r| / |g*_r| (0 when g_r is an exact multiple),
worst over ranks. plain: backward raises (no grad_fn), as expected.
"""
import datetime
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
from tools.vs_pytorch import evidence  # noqa: E402

ROWS, D = 3, 4
APIS = ("dist_nn", "functional", "plain")


def rows(rank):
    import torch
    g = torch.Generator().manual_seed(100 + rank)
    return torch.randn(ROWS, D, generator=g, dtype=torch.float64)


def weights(w):
    import torch
    g = torch.Generator().manual_seed(7)
    return torch.randn(w * ROWS, D, generator=g, dtype=torch.float64)


def loss(gathered, w):
    import torch
    return (torch.tanh(gathered) * weights(w)).sum()


def reference_grads(w):
    """dL/dx_r for every r, in one process."""
    import torch
    xs = [rows(r).requires_grad_(True) for r in range(w)]
    loss(torch.cat(xs), w).backward()
    return [x.grad for x in xs]


def resolve(api):
    """The API's function; raises ImportError/AttributeError where this torch
    has none."""
    import importlib
    module, name = {"dist_nn": ("torch.distributed.nn.functional", "all_gather"),
                    "functional": ("torch.distributed._functional_collectives",
                                   "all_gather_tensor_autograd"),
                    "plain": ("torch.distributed", "all_gather")}[api]
    return getattr(importlib.import_module(module), name)


def gather(api, fn, x, w):
    import torch
    import torch.distributed as dist
    if api == "dist_nn":
        return torch.cat(list(fn(x)))
    if api == "functional":
        return fn(x, 0, dist.group.WORLD)
    outs = [torch.zeros_like(x) for _ in range(w)]
    fn(outs, x)
    return torch.cat(outs)


def rank_main(args):
    import torch.distributed as dist
    w, r = args.world_size, args.rank
    out = evidence.RankLog(args.dir, r)
    dist.init_process_group("gloo", init_method=evidence.init_store(args.dir), rank=r,
                            world_size=w, timeout=datetime.timedelta(seconds=args.pg_timeout))
    for api in APIS:
        x = rows(r).requires_grad_(True)
        try:
            fn = resolve(api)
        except (ImportError, AttributeError) as e:
            out[api] = {"exists": False,
                        "error": "%s: %s" % (type(e).__name__, evidence.first_line(e))}
            out.dump()
            dist.barrier()
            continue
        try:
            l = loss(gather(api, fn, x, w), w)
            l.backward()
            out[api] = {"exists": True, "loss": l.item(),
                        "grad": None if x.grad is None else x.grad.reshape(-1).tolist()}
        except RuntimeError as e:  # plain: backward finds no grad_fn
            out[api] = {"exists": True,
                        "error": "%s: %s" % (type(e).__name__, evidence.first_line(e))}
        out.dump()
        dist.barrier()
    os._exit(0)


def judge(got, want):
    import torch
    if got is None:
        return {"grad": "none (no autograd history)", "factor": 0.0, "residual": 0.0}
    g = torch.tensor(got, dtype=torch.float64)
    s = want.reshape(-1)
    factor = float(g.dot(s) / s.dot(s))
    return {"factor": factor, "residual": float((g - factor * s).norm() / s.norm())}


def one_world(w, pg_timeout):
    with tempfile.TemporaryDirectory(prefix="diff_gather_") as d:
        procs = evidence.spawn_ranks(os.path.abspath(__file__), w,
                                     ["--pg_timeout", str(pg_timeout)], d, 4 * pg_timeout + 60)
        ranks = evidence.collect(d, procs)
    ref = reference_grads(w)
    cases = []
    for api in APIS:
        per_rank = []
        for r, info in enumerate(ranks):
            got = info.get(api)
            if got is None:
                per_rank.append({"error": "no result: exit %s %s" % (info["exit"],
                                                                    info.get("died", ""))})
            elif "error" in got:
                per_rank.append({"exists": got["exists"], "error": got["error"]})
            else:
                per_rank.append(dict(judge(got["grad"], ref[r]), exists=True))
        ok = [p for p in per_rank if "error" not in p]
        case = {"api": api, "world_size": w, "per_rank": per_rank,
                "exists": all(p.get("exists") for p in per_rank),
                "available": len(ok) == w}
        if ok:
            case["factor_min"] = min(p["factor"] for p in ok)
            case["factor_max"] = max(p["factor"] for p in ok)
            case["residual_max"] = max(p["residual"] for p in ok)
        else:
            case["error"] = per_rank[0]["error"]
        cases.append(case)
    return cases


def print_table(paths):
    out = ["| PyTorch | W | API | exists | gradient factor g_r / g*_r (min-max over ranks) | "
           "residual after the factor |", "|---|---|---|---|---|---|"]
    for doc in evidence.load_docs(paths):
        v = doc["provenance"]["torch_version"]
        for c in doc["cases"]:
            name = {"dist_nn": "`torch.distributed.nn.functional.all_gather`",
                    "functional": "`_functional_collectives.all_gather_tensor_autograd`",
                    "plain": "`dist.all_gather` (plain)"}[c["api"]]
            if not c["available"]:
                out.append("| %s | %d | %s | %s | %s | - |" % (
                    v, c["world_size"], name,
                    "yes" if c["exists"] else "no: `%s`" % c["error"][:90],
                    "backward raises `%s`" % c["error"][:90] if c["exists"] else "-"))
                continue
            out.append("| %s | %d | %s | yes | %.12g - %.12g | %.2g |" % (
                v, c["world_size"], name, c["factor_min"], c["factor_max"], c["residual_max"]))
    out.append("\n" + evidence.footer(paths))
    return "\n".join(out) + "\n"


def main():
    ap = evidence.parser(__doc__.split("\n\n")[0], pg_timeout=30, worlds="2,4")
    evidence.add_table_flags(ap)
    args = evidence.dispatch(ap, rank_main, print_table)
    cases = []
    for w in evidence.worlds(args):
        cases += one_world(w, args.pg_timeout)
    doc = {"what": "differentiable all_gathers on gloo: gradient factor against one process",
           "config": {"rows_per_rank": ROWS, "dim": D, "loss": "sum(tanh(G) * C), every rank alike",
                      "ours": "fixes/autograd_lost_gather DifferentiableGather: factor W "
                              "(sum over ranks), exactly g* after DDP's average"},
           "provenance": evidence.provenance(
               "fixes/autograd_lost_gather/pytorch/diff_gather.py"),
           "cases": cases}
    evidence.write_json(args.out, doc)
    for c in cases:
        print("W=%d %s: %s" % (c["world_size"], c["api"], (
            "factor %.6g..%.6g residual %.2g" % (c["factor_min"], c["factor_max"],
                                                 c["residual_max"]))
            if c["available"] else c["error"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
