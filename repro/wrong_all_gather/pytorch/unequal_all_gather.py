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
its own NCCL_HOSTID, which NCCL needs to accept two ranks on one GPU). The
N = 1003 validation samples are ours: repro/wrong_all_gather/raw_inputs.json
(--inputs), every score and label exactly as our raw_unequal ranks gather
them (written by //repro/wrong_all_gather:raw_inputs, checked by
raw_inputs_test), so both engines gather the same values and have the same
one-process AUC; --dtypes picks what the gathers send (float32, the post's
tensors, or float64, our default), the same values rounded as ours rounds
them. Split without padding (rank r holds samples r, r + W, ...: lengths
502/501 at W = 2), and every rank runs seed 000's `gather_step_wrong` on its
whole share:

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

INPUTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "raw_inputs.json")


def load_inputs(path):
    """Our raw_unequal's samples (raw_inputs.json), without torch: n, seed, the
    scores as doubles (exact: hex floats), their float32 rounding as ours
    sends it, the labels, our one-process AUC and AP, and the file's sha256."""
    import hashlib
    import json
    with open(path, "rb") as f:
        raw = f.read()
    doc = json.loads(raw)
    if doc.get("columns") != ["index", "score", "score_float32", "label"]:
        raise ValueError("%s: columns %s, expected index, score, score_float32, label"
                         % (path, doc.get("columns")))
    rows = doc["samples"]
    if [r[0] for r in rows] != list(range(doc["n"])):
        raise ValueError("%s: samples are not indices 0..%d in order" % (path, doc["n"] - 1))
    return {"n": doc["n"], "seed": doc["seed"],
            "scores": [float.fromhex(r[1]) for r in rows],
            "scores_float32": [float.fromhex(r[2]) for r in rows],
            "labels": [int(r[3]) for r in rows],
            "one_process": doc["one_process"],
            "sha256": hashlib.sha256(raw).hexdigest()}


def samples(inputs):
    """The scores (float64) and labels (int64) as torch tensors."""
    import torch
    return (torch.tensor(inputs["scores"], dtype=torch.float64),
            torch.tensor(inputs["labels"], dtype=torch.int64))


def check_rounding(inputs):
    """torch's float32 rounding of every score must be ours (a float32 gather
    sends these): None when it is, else the first index where it is not."""
    import torch
    scores, _ = samples(inputs)
    mine = scores.to(torch.float32).to(torch.float64).tolist()
    for i, (a, b) in enumerate(zip(mine, inputs["scores_float32"])):
        if a != b:
            return i
    return None


def torch_version():
    import torch
    return torch.__version__


def evidence_root():
    """The checkout's root (record paths are relative to it)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")


def share(n, w, r):
    return list(range(r, n, w))


def rank_main(args):
    import torch
    import torch.distributed as dist
    from sklearn.metrics import roc_auc_score

    dtype = {"float32": torch.float32, "float64": torch.float64}[args.dtype]
    w, r = args.world_size, args.rank
    inputs = load_inputs(args.inputs)
    n = inputs["n"]
    scores, labels = samples(inputs)
    mine = share(n, w, r)
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
        peer = share(n, w, s)
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


def reference_auc(inputs, key="scores"):
    """sklearn's one-process AUC of the scores (float64, or key
    "scores_float32": as a float32 gather sends them)."""
    from sklearn.metrics import roc_auc_score
    return roc_auc_score(inputs["labels"], inputs[key])


def one_run(w, dtype, pg_timeout, run_timeout, backend, inputs_path):
    with tempfile.TemporaryDirectory(prefix="unequal_gather_") as d:
        procs = evidence.spawn_ranks(os.path.abspath(__file__), w,
                                     ["--dtype", dtype, "--pg_timeout", str(pg_timeout),
                                      "--backend", backend, "--inputs", inputs_path], d,
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
    ap.add_argument("--dtypes", default="float32,float64",
                    help="what the gathers send, comma-separated: float32 (the post's "
                         "tensors), float64 (our raw_unequal's default); default both")
    ap.add_argument("--inputs", default=INPUTS,
                    help="the samples both engines gather (default: our raw_unequal's, "
                         "repro/wrong_all_gather/raw_inputs.json)")
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
    dtypes = args.dtypes.split(",")
    bad = [d for d in dtypes if d not in ("float32", "float64")]
    if bad:
        ap.error("--dtypes: unknown dtype %r (allowed: float32, float64)" % bad[0])
    try:
        inputs = load_inputs(args.inputs)
    except (OSError, ValueError, KeyError) as e:
        ap.error("--inputs: cannot read %s: %s" % (args.inputs, e))
    off = check_rounding(inputs)
    if off is not None:
        sys.exit("unequal_all_gather.py: torch %s rounds sample %d's score to float32 unlike "
                 "ours (%s): the float32 gathers would not send the same values"
                 % (torch_version(), off, args.inputs))
    if args.backend == "nccl":
        import torch
        if not torch.cuda.is_available():
            ap.error("--backend nccl needs a GPU; torch %s sees none (use --backend gloo)"
                     % torch.__version__)
    cases = []
    for w in evidence.worlds(args):
        for dtype in dtypes:
            runs = []
            for k in range(args.runs):
                runs.append(one_run(w, dtype, args.pg_timeout, 4 * args.pg_timeout + 30,
                                    args.backend, args.inputs))
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
                "counts": [len(share(inputs["n"], w, r)) for r in range(w)],
                "runs": len(runs), "silent_runs": len(silent),
                "rank0_silent_runs": len(rank0_silent),
                "rank0_not_peer_data": {"min": min(bad, default=None),
                                        "max": max(bad, default=None),
                                        "peer_values": (w - 1) * len(share(inputs["n"], w, 0))},
                "rank0_auc": {"min": min(aucs, default=None), "max": max(aucs, default=None)},
                "per_run": runs})
    doc = {"what": "%s all_gather (list API) of per-rank tensors of unequal length, "
                   "seed 000's gather_step_wrong" % args.backend,
           "config": {"n": inputs["n"], "seed": inputs["seed"], "pg_timeout_s": args.pg_timeout,
                      # The samples: ours (raw_inputs.json), the one-process AUC by
                      # sklearn here and by our metrics when the file was made.
                      "inputs": os.path.relpath(os.path.abspath(args.inputs), evidence_root()),
                      "inputs_sha256": inputs["sha256"],
                      "reference_auc": reference_auc(inputs),
                      "reference_auc_float32": reference_auc(inputs, "scores_float32"),
                      "reference_auc_ours": inputs["one_process"]["float64"]["auc"],
                      # NCCL's protocol and algorithm when forced (lease.sh --raw-proto):
                      # what decides how a short peer's missing bytes are waited for.
                      "nccl_env": {k: os.environ[k] for k in ("NCCL_PROTO", "NCCL_ALGO")
                                   if k in os.environ}},
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
