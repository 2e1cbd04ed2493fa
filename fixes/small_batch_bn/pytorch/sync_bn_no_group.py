#!/usr/bin/python3
"""SyncBatchNorm where no process group exists: what DataParallel's replicas run.

    /usr/bin/python3 fixes/small_batch_bn/pytorch/sync_bn_no_group.py \\
        --out results/vs_pytorch/small_batch_bn_no_group.torch1.13.json
    .venv-torch2.15/bin/python fixes/small_batch_bn/pytorch/sync_bn_no_group.py \\
        --out results/vs_pytorch/small_batch_bn_no_group.torch2.15.json

Evidence for the ledger's claim:small_batch_bn/sync-bn-ddp-only-not-dataparallel ("SyncBatchNorm is not supported under
DataParallel"; PyTorch 1.13 and 2.15, CPU, one process). DataParallel is
one process: it copies the module to each GPU and calls each copy on its
chunk of the batch, with no process group (torch/nn/parallel/
data_parallel.py: replicate, scatter, parallel_apply). What a SyncBatchNorm
does in such a call is decided in its forward before any communication, so
it can be run here without GPUs, on float64 rows, in train mode:

  whole        one call on all 8 rows, no process group: against
               BatchNorm1d on the same rows (output, running_mean,
               running_var), or what it raises
  per_chunk    the calls DataParallel's two replicas would make, each on
               its 4 rows (one after the other, each from the same initial
               buffers): each chunk's output against BatchNorm1d on that
               chunk alone and against BatchNorm1d on all 8 rows (what a
               synchronised layer would give), or what it raises

  world_size_probe  the call 1.13's forward makes on a GPU input in train
               mode, torch.distributed.get_world_size(group.WORLD), made
               directly with no process group: its answer or what it raises
               (2.15 asks torch.distributed.is_initialized() first)

DataParallel itself is not run (it needs GPUs; with none it calls the
module directly).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
from tools.vs_pytorch import evidence  # noqa: E402

C, ROWS, CHUNKS = 3, 8, 2


def rel_err(a, b):
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-300)).item()


def fresh(torch, kind):
    torch.manual_seed(0)
    m = (torch.nn.SyncBatchNorm(C) if kind == "sync" else torch.nn.BatchNorm1d(C)).double()
    with torch.no_grad():  # non-trivial affine parameters
        m.weight.copy_(torch.tensor([1.5, -0.5, 2.0], dtype=torch.float64))
        m.bias.copy_(torch.tensor([0.1, 0.2, -0.3], dtype=torch.float64))
    return m.train()


def call(torch, kind, x):
    """(output, running_mean, running_var) of a fresh layer on x, or the error."""
    m = fresh(torch, kind)
    try:
        y = m(x)
    except Exception as e:  # noqa: BLE001  what PyTorch raises is the measurement
        return None, "%s: %s" % (type(e).__name__, evidence.first_line(e))
    return (y.detach(), m.running_mean.clone(), m.running_var.clone()), ""


def main():
    ap = evidence.parser(__doc__.split("\n\n")[0])
    evidence.add_table_flags(ap)
    args = evidence.dispatch(ap, lambda a: 2, print_table)  # no rank processes here
    import torch
    import torch.distributed as dist

    g = torch.Generator().manual_seed(7)
    x = torch.randn(ROWS, C, generator=g, dtype=torch.float64) * torch.tensor([1.0, 3.0, 0.5]) \
        + torch.tensor([0.0, 5.0, -2.0])
    group = dist.is_available() and dist.is_initialized()
    cases = []
    got, err = call(torch, "sync", x)
    ref, _ = call(torch, "bn", x)
    case = {"case": "whole", "rows": ROWS, "error": err}
    if got:
        case.update({"out_rel_err_vs_bn": rel_err(got[0], ref[0]),
                     "running_mean_rel_err_vs_bn": rel_err(got[1], ref[1]),
                     "running_var_rel_err_vs_bn": rel_err(got[2], ref[2])})
    cases.append(case)
    per = []
    for chunk in x.chunk(CHUNKS):
        got, err = call(torch, "sync", chunk)
        alone, _ = call(torch, "bn", chunk)
        entry = {"rows": int(chunk.shape[0]), "error": err}
        if got:
            lo = sum(c["rows"] for c in per)  # where this chunk starts
            entry.update({"out_rel_err_vs_bn_on_chunk": rel_err(got[0], alone[0]),
                          "out_rel_err_vs_bn_on_all_rows": rel_err(got[0],
                                                                   ref[0][lo:lo + chunk.shape[0]])})
        per.append(entry)
    cases.append({"case": "per_chunk", "chunks": per,
                  "error": next((c["error"] for c in per if c["error"]), "")})
    try:
        probe = "returned %d" % dist.get_world_size(dist.group.WORLD)
    except Exception as e:  # noqa: BLE001  what PyTorch raises is the measurement
        probe = "%s: %s" % (type(e).__name__, evidence.first_line(e))
    doc = {"what": "SyncBatchNorm called with no process group (what each DataParallel replica "
                   "does), CPU, float64, train mode, against BatchNorm1d",
           "config": {"channels": C, "rows": ROWS, "chunks": CHUNKS,
                      "process_group_initialized": group,
                      "cuda_available": torch.cuda.is_available()},
           "provenance": evidence.provenance("fixes/small_batch_bn/pytorch/sync_bn_no_group.py",
                                             backend="none (no process group)"),
           "cases": cases, "world_size_probe": probe}
    evidence.write_json(args.out, doc)
    return 0


def print_table(paths):
    out = ["| PyTorch | call | what it raised | output vs BatchNorm1d on the same rows "
           "(relative) | output vs BatchNorm1d on all 8 rows (a synchronised layer) |",
           "|---|---|---|---|---|"]
    for v, c in evidence.cases_by_version(paths):
        if c["case"] == "whole":
            same = c.get("out_rel_err_vs_bn")
            out.append("| %s | one call, all 8 rows | %s | %s | (the same rows) |" % (
                v, "`%s`" % c["error"] if c["error"] else "-",
                "-" if same is None else "%.3g (running stats %.3g, %.3g)" % (
                    same, c["running_mean_rel_err_vs_bn"], c["running_var_rel_err_vs_bn"])))
            continue
        for k, ch in enumerate(c["chunks"]):
            a, b = ch.get("out_rel_err_vs_bn_on_chunk"), ch.get("out_rel_err_vs_bn_on_all_rows")
            out.append("| %s | replica %d's call, its %d rows | %s | %s | %s |" % (
                v, k, ch["rows"], "`%s`" % ch["error"] if ch["error"] else "-",
                "-" if a is None else "%.3g" % a, "-" if b is None else "%.3g" % b))
    for doc in evidence.load_docs(paths):
        out.append("\nPyTorch %s, `torch.distributed.get_world_size(group.WORLD)` with no process "
                   "group: %s." % (doc["provenance"]["torch_version"], doc["world_size_probe"].rstrip(".")))
    out.append("\n" + evidence.footer(paths))
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
