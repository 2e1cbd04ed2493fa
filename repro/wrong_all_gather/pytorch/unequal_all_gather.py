#!/usr/bin/python3
"""What PyTorch's all_gather (gloo, or NCCL on a GPU) does with per-rank tensors of unequal length.

    /usr/bin/python3 repro/wrong_all_gather/pytorch/unequal_all_gather.py \\
        --out results/vs_pytorch/wrong_all_gather_unequal.torch1.13.json
    .venv-torch2.15/bin/python repro/wrong_all_gather/pytorch/unequal_all_gather.py \\
        --out results/vs_pytorch/wrong_all_gather_unequal.torch2.15.json
    python3 repro/wrong_all_gather/pytorch/unequal_all_gather.py --backend nccl \
        --runs 10 --dtypes float32 --out wrong_all_gather_unequal.nccl.json   # on a GPU

Evidence for repro/wrong_all_gather's `raw_unequal` rows (PyTorch 1.13 and
2.15, gloo, CPU, real processes; with --backend nccl, the torch and NCCL of a
GPU machine: tensors on the GPU, ranks beyond the GPUs share one, each with
its own NCCL_HOSTID, which NCCL needs to accept two ranks on one GPU). N = 1003 validation samples split without padding
(rank r holds samples r, r + W, ...: lengths 502/501 at W = 2), and every rank
runs seed 000's `gather_step_wrong` on its whole share:

    pred_list  = [torch.zeros_like(pred)  for _ in range(ws)]
    label_list = [torch.zeros_like(label) for _ in range(ws)]
    dist.all_gather(pred_list,  pred)
    dist.all_gather(label_list, label)

For each rank and run it records what the FIRST all_gather returned: whether
it returned at all (or raised, or the process died), how many of the gathered
values are not the peers' data (a peer with fewer samples cannot have sent
them all; the rest is whatever the buffer held), and the ROC AUC rank 0 would
compute from it (the gathered scores paired with the labels of the samples
at those positions; a position past a peer's data gets label 0, the value of
the zero-initialised label buffers). A run is *silent* when some rank
returned from its first all_gather with no error but with values that are
not peer data. Then the second all_gather's outcome and the process's exit.

Stdlib + torch + sklearn; each run starts W fresh processes (FileStore
rendezvous in a temporary folder). Writes one JSON object (configuration,
provenance, every rank of every run, a summary per case) atomically.
"""
import argparse
import datetime
import math
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
from tools.vs_pytorch import evidence  # noqa: E402

N = 1003
SEED = 0


def samples(n):
    """Deterministic (score, label) of every sample: labels half 1, scores
    informative (sigmoid of a shifted normal), as a validation set."""
    import torch
    g = torch.Generator().manual_seed(SEED)
    labels = (torch.rand(n, generator=g) < 0.5).to(torch.int64)
    scores = torch.sigmoid(torch.randn(n, generator=g, dtype=torch.float64) + 1.5 * labels)
    return scores, labels


def share(n, w, r):
    return list(range(r, n, w))


def rank_main(args):
    import torch
    import torch.distributed as dist
    from sklearn.metrics import roc_auc_score

    dtype = {"float32": torch.float32, "float64": torch.float64}[args.dtype]
    w, r = args.world_size, args.rank
    scores, labels = samples(N)
    mine = share(N, w, r)
    pred = scores[mine].to(dtype)
    label = labels[mine].to(dtype)  # labels travel as floats (y.float())
    out = evidence.RankLog(args.dir, r)
    out["count"] = len(mine)
    nccl = args.backend == "nccl"
    if nccl:
        out["gpu"] = evidence.cuda_rank_device(torch, w, r)
        pred, label = pred.cuda(), label.cuda()
    dist.init_process_group(args.backend, init_method=evidence.init_store(args.dir),
                            rank=r, world_size=w,
                            timeout=datetime.timedelta(seconds=args.pg_timeout))
    dist.barrier(**({"device_ids": [torch.cuda.current_device()]} if nccl else {}))
    pred_list = [torch.zeros_like(pred) for _ in range(w)]
    label_list = [torch.zeros_like(label) for _ in range(w)]
    out["first"] = {"entered": True}
    out.dump()
    t0 = time.monotonic()
    try:
        dist.all_gather(pred_list, pred)
        if nccl:  # NCCL's all_gather only enqueues: its values exist once the stream is done
            torch.cuda.synchronize()
    except Exception as e:  # a peer died: gloo's connection error; NCCL's watchdog
        out["first"] = {"returned": False, "error": evidence.first_line(e),
                        "elapsed_s": time.monotonic() - t0}
        out.dump()
        return 3
    first = {"returned": True, "elapsed_s": time.monotonic() - t0}
    # Which gathered values are the peers' data, and what rank 0 would compute.
    not_peer, gathered, auc_scores, auc_labels = 0, 0, [], []
    for s in range(w):
        peer = share(N, w, s)
        got = pred_list[s].cpu().to(torch.float64)
        for i in range(len(mine)):
            gathered += 1
            real = i < len(peer) and got[i].item() == scores[peer[i]].to(dtype).item()
            not_peer += not real
            auc_scores.append(got[i].item())
            auc_labels.append(int(labels[peer[i]]) if i < len(peer) else 0)
    first["gathered"] = gathered
    first["not_peer_data"] = not_peer
    first["non_finite"] = sum(1 for v in auc_scores if not math.isfinite(v))
    try:
        first["auc"] = roc_auc_score(auc_labels, auc_scores)
    except ValueError as e:  # e.g. NaN among the garbage: sklearn refuses
        first["auc"] = None
        first["auc_error"] = evidence.first_line(e)
        finite = [(l, v) for l, v in zip(auc_labels, auc_scores) if math.isfinite(v)]
        first["auc_finite_values_only"] = roc_auc_score([l for l, _ in finite],
                                                        [v for _, v in finite])
    out["first"] = first
    out.dump()
    t0 = time.monotonic()
    try:
        dist.all_gather(label_list, label)
        if nccl:
            torch.cuda.synchronize()
        out["second"] = {"returned": True, "elapsed_s": time.monotonic() - t0}
    except Exception as e:
        out["second"] = {"returned": False, "error": evidence.first_line(e),
                         "elapsed_s": time.monotonic() - t0}
    out.dump()
    return 0


def reference_auc():
    from sklearn.metrics import roc_auc_score
    scores, labels = samples(N)
    return roc_auc_score(labels.tolist(), scores.tolist())


def one_run(w, dtype, pg_timeout, run_timeout, backend):
    with tempfile.TemporaryDirectory(prefix="unequal_gather_") as d:
        procs = evidence.spawn_ranks(os.path.abspath(__file__), w,
                                     ["--dtype", dtype, "--pg_timeout", str(pg_timeout),
                                      "--backend", backend], d,
                                     run_timeout)
        ranks = evidence.collect(d, procs)
    for info in ranks:
        first = info.get("first", {})
        if first.get("entered") and "returned" not in first:
            first["returned"] = False  # died inside the first all_gather
            first["error"] = "process died: %s" % info["exit"]
    return ranks


def print_table(paths):
    out = []
    docs = evidence.load_docs(paths)
    out.append("| PyTorch | W | dtype | counts | runs | silent runs | rank 0's first gather when "
               "silent: values not peer data | AUC rank 0 would compute (one process %.4f) | "
               "the shorter rank |" % docs[0]["config"]["reference_auc"])
    out.append("|---|---|---|---|---|---|---|---|---|")
    for doc in docs:
        for c in doc["cases"]:
            bad = c["rank0_not_peer_data"]
            silent0 = [run[0]["first"] for run in c["per_run"]
                       if run[0].get("first", {}).get("returned") and
                       run[0]["first"].get("not_peer_data", 0) > 0]
            aucs = sorted({("%.4f" % f["auc"]) if f.get("auc") is not None else
                           "undefined (%s; %.4f over the finite values)" % (
                               f["auc_error"], f["auc_finite_values_only"]) for f in silent0})
            short = c["counts"].index(min(c["counts"]))
            died = {}
            for run in c["per_run"]:
                k = "%s%s" % (run[short].get("exit"), ", gloo::EnforceNotMet"
                              if "EnforceNotMet" in run[short].get("died", "") else "")
                died[k] = died.get(k, 0) + 1
            prov = doc["provenance"]
            engine = "" if prov.get("backend", "gloo") == "gloo" else " (%s %s, %s)" % (
                prov["backend"], prov.get("nccl", "?"), prov.get("gpu", "?"))
            out.append("| %s | %d | %s | %s | %d | %d | %s | %s | %s |" % (
                prov["torch_version"] + engine, c["world_size"], c["dtype"], c["counts"],
                c["runs"], c["silent_runs"],
                "%s of %d" % (bad["min"] if bad["min"] == bad["max"] else
                              "%s-%s" % (bad["min"], bad["max"]), bad["peer_values"])
                if bad["min"] is not None else "-", "; ".join(aucs) if aucs else "-",
                "; ".join("%s (%d runs)" % kv for kv in sorted(died.items()))))
    out.append("\n" + evidence.footer(paths))
    return "\n".join(out) + "\n"


def main():
    ap = evidence.parser(__doc__.split("\n\n")[0], pg_timeout=20, worlds="2,4")
    ap.add_argument("--runs", type=int, default=20, help="runs per case (default 20)")
    ap.add_argument("--dtypes", default="float32,float64", help="score dtypes")
    ap.add_argument("--backend", choices=["gloo", "nccl"], default="gloo",
                    help="gloo (CPU tensors) or nccl (GPU tensors; needs a GPU)")
    evidence.add_table_flags(ap)
    ap.add_argument("--dtype", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rank is not None:
        return rank_main(args)
    if args.table:
        return evidence.emit_table(args, print_table(args.table))
    if args.runs < 1:
        ap.error("--runs must be >= 1")
    if args.backend == "nccl":
        import torch
        if not torch.cuda.is_available():
            ap.error("--backend nccl needs a GPU; torch %s sees none (use --backend gloo)"
                     % torch.__version__)
    cases = []
    for w in evidence.worlds(args):
        for dtype in args.dtypes.split(","):
            runs = []
            for k in range(args.runs):
                runs.append(one_run(w, dtype, args.pg_timeout, 4 * args.pg_timeout + 30,
                                    args.backend))
                print("W=%d %s run %d/%d done" % (w, dtype, k + 1, args.runs), file=sys.stderr)
            silent = [run for run in runs
                      if any(r.get("first", {}).get("returned") and
                             r["first"].get("not_peer_data", 0) > 0 for r in run)]
            rank0_silent = [run for run in runs if run[0].get("first", {}).get("returned") and
                            run[0]["first"].get("not_peer_data", 0) > 0]
            bad = [run[0]["first"]["not_peer_data"] for run in rank0_silent]
            aucs = [run[0]["first"]["auc"] for run in rank0_silent
                    if run[0]["first"].get("auc") is not None]
            cases.append({
                "world_size": w, "dtype": dtype,
                "counts": [len(share(N, w, r)) for r in range(w)],
                "runs": len(runs), "silent_runs": len(silent),
                "rank0_silent_runs": len(rank0_silent),
                "rank0_not_peer_data": {"min": min(bad, default=None),
                                        "max": max(bad, default=None),
                                        "peer_values": (w - 1) * len(share(N, w, 0))},
                "rank0_auc": {"min": min(aucs, default=None), "max": max(aucs, default=None)},
                "per_run": runs})
    doc = {"what": "%s all_gather (list API) of per-rank tensors of unequal length, "
                   "seed 000's gather_step_wrong" % args.backend,
           "config": {"n": N, "seed": SEED, "pg_timeout_s": args.pg_timeout,
                      "reference_auc": reference_auc()},
           "provenance": evidence.provenance("repro/wrong_all_gather/pytorch/unequal_all_gather.py",
                                             args.backend),
           "cases": cases}
    evidence.write_json(args.out, doc)
    for c in cases:
        print("W=%d %s counts %s: %d/%d runs silent (rank 0: %d; values not peer data %s..%s of "
              "%d; AUC %s..%s, reference %.6f)" % (
                  c["world_size"], c["dtype"], c["counts"], c["silent_runs"], c["runs"],
                  c["rank0_silent_runs"], c["rank0_not_peer_data"]["min"],
                  c["rank0_not_peer_data"]["max"], c["rank0_not_peer_data"]["peer_values"],
                  c["rank0_auc"]["min"], c["rank0_auc"]["max"], doc["config"]["reference_auc"]),
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
