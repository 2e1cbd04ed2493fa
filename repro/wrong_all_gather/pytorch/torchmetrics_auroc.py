#!/usr/bin/python3
"""torchmetrics' BinaryAUROC / BinaryAveragePrecision with their default
distributed sync, over DistributedSampler(drop_last=False), on gloo.

    .venv-torch2.15/bin/python repro/wrong_all_gather/pytorch/torchmetrics_auroc.py \\
        --out results/vs_pytorch/wrong_all_gather_torchmetrics.torch2.15.json

torchmetrics issue 1297 ("AUROC on DDP returns inconsistent result": the
value changes with the GPU count; the maintainers pointed at the sampler's
padding). torchmetrics 1.9.0 needs PyTorch 2.x: this runs on the 2.15 stack
only. Real gloo processes, the validation set of unequal_all_gather.py
(N = 1003: our raw_unequal's scores and labels, raw_inputs.json; records
before 7b8517f used that script's own torch.Generator scores), W = 2, 3, 4 (N is not a
multiple of any). Every rank updates the metrics batch by batch (32) and
calls compute(), which syncs the states across ranks with torchmetrics'
gather_all_tensors. Cases:

  sampler_padding  DistributedSampler(shuffle=False, drop_last=False): pads
                   to a multiple of W by repeating the first indices
  uneven_shards    rank r holds samples r, r + W, ... (no padding, lengths
                   differ by one): gather_all_tensors with uneven lengths
  fix_dedupe       the sampler's shards plus each sample's index, gathered
                   with the same gather_all_tensors; repeated indices dropped
                   before the metric (what fixes/wrong_all_gather does)

Measured: every rank's value against the one-process value over the N
samples (torchmetrics and scikit-learn), and against the one-process value
over the padded list (the N samples plus the sampler's repeats): which one
torchmetrics returns says whether it counts the repeats. For uneven_shards
also whether gather_all_tensors returned each rank's true length.
"""
import datetime
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tools.vs_pytorch import evidence  # noqa: E402

N, BATCH = 1003, 32
CASES = ("sampler_padding", "uneven_shards", "fix_dedupe")


def samples():
    """The validation set of unequal_all_gather.py: our raw_unequal's samples
    (raw_inputs.json, the N = 1003 scores and labels fixes/wrong_all_gather
    gathers), as float64 scores and int64 labels."""
    from unequal_all_gather import INPUTS, load_inputs, samples as s
    inputs = load_inputs(INPUTS)
    if inputs["n"] != N:
        raise ValueError("%s holds %d samples, this script's N is %d" % (INPUTS, inputs["n"], N))
    return s(inputs)


def shard(case, w, r):
    from torch.utils.data import DistributedSampler
    if case == "uneven_shards":
        return list(range(r, N, w))
    return list(DistributedSampler(range(N), num_replicas=w, rank=r, shuffle=False,
                                   drop_last=False))


def one_process(indices):
    """(torchmetrics AUROC, AP, sklearn AUROC, AP) over these samples."""
    import torch
    from sklearn.metrics import average_precision_score, roc_auc_score
    from torchmetrics.classification import BinaryAUROC, BinaryAveragePrecision
    scores, labels = samples()
    idx = torch.tensor(indices)
    auroc, ap = BinaryAUROC(), BinaryAveragePrecision()
    auroc.update(scores[idx], labels[idx])
    ap.update(scores[idx], labels[idx])
    return {"auroc": auroc.compute().item(), "ap": ap.compute().item(),
            "sklearn_auroc": roc_auc_score(labels[idx].tolist(), scores[idx].tolist()),
            "sklearn_ap": average_precision_score(labels[idx].tolist(), scores[idx].tolist())}


def rank_main(args):
    import torch
    import torch.distributed as dist
    from torchmetrics.classification import BinaryAUROC, BinaryAveragePrecision
    from torchmetrics.utilities.distributed import gather_all_tensors
    w, r = args.world_size, args.rank
    out = evidence.RankLog(args.dir, r)
    dist.init_process_group("gloo", init_method=evidence.init_store(args.dir), rank=r,
                            world_size=w, timeout=datetime.timedelta(seconds=args.pg_timeout))
    scores, labels = samples()
    for case in CASES:
        mine = torch.tensor(shard(case, w, r))
        if case == "fix_dedupe":
            got_idx = gather_all_tensors(mine)
            got_scores = gather_all_tensors(scores[mine])
            got_labels = gather_all_tensors(labels[mine])
            seen, keep_s, keep_l = set(), [], []
            for ii, ss, ll in zip(got_idx, got_scores, got_labels):
                for i, s_, l_ in zip(ii.tolist(), ss, ll):
                    if i not in seen:
                        seen.add(i)
                        keep_s.append(s_)
                        keep_l.append(l_)
            auroc, ap = BinaryAUROC(), BinaryAveragePrecision()
            auroc.update(torch.stack(keep_s), torch.stack(keep_l))
            ap.update(torch.stack(keep_s), torch.stack(keep_l))
            out[case] = {"count": len(mine), "kept": len(keep_s),
                         "auroc": auroc.compute().item(), "ap": ap.compute().item()}
        else:
            auroc, ap = BinaryAUROC(), BinaryAveragePrecision()
            for b in range(0, len(mine), BATCH):
                part = mine[b:b + BATCH]
                auroc.update(scores[part], labels[part])
                ap.update(scores[part], labels[part])
            res = {"count": len(mine), "auroc": auroc.compute().item(), "ap": ap.compute().item()}
            if case == "uneven_shards":
                lengths = [t.numel() for t in gather_all_tensors(scores[mine])]
                res["gathered_lengths"] = lengths
            out[case] = res
        out.dump()
        dist.barrier()
    os._exit(0)


def one_world(w, pg_timeout):
    with tempfile.TemporaryDirectory(prefix="torchmetrics_auroc_") as d:
        procs = evidence.spawn_ranks(os.path.abspath(__file__), w,
                                     ["--pg_timeout", str(pg_timeout)], d, 6 * pg_timeout + 60)
        ranks = evidence.collect(d, procs)
    ref = one_process(list(range(N)))
    padded = [i for r in range(w) for i in shard("sampler_padding", w, r)]
    ref_padded = one_process(padded)
    cases = []
    for case in CASES:
        per = [x.get(case) for x in ranks]
        c = {"case": case, "world_size": w, "counts": [len(shard(case, w, r)) for r in range(w)]}
        if any(p is None for p in per):
            c["error"] = "; ".join("rank %d exit %s %s" % (i, x["exit"], x.get("died", ""))
                                   for i, x in enumerate(ranks) if x.get(case) is None)
            cases.append(c)
            continue
        c["auroc"] = [p["auroc"] for p in per]
        c["ap"] = [p["ap"] for p in per]
        c["auroc_error"] = max(abs(a - ref["auroc"]) for a in c["auroc"])
        c["ap_error"] = max(abs(a - ref["ap"]) for a in c["ap"])
        c["auroc_minus_padded_list"] = max(abs(a - ref_padded["auroc"]) for a in c["auroc"])
        c["ap_minus_padded_list"] = max(abs(a - ref_padded["ap"]) for a in c["ap"])
        if case == "uneven_shards":
            c["gathered_lengths"] = per[0]["gathered_lengths"]
            c["gathered_lengths_true"] = c["gathered_lengths"] == c["counts"]
        if case == "fix_dedupe":
            c["kept"] = per[0]["kept"]
        cases.append(c)
    return cases, ref, ref_padded


def print_table(paths):
    out = ["| PyTorch | W | case | per-rank counts | AUROC error vs one process | AP error | "
           "same as one process over the padded list (repeats counted)? |",
           "|---|---|---|---|---|---|---|"]
    for doc in evidence.load_docs(paths):
        v = doc["provenance"]["torch_version"]
        for c in doc["cases"]:
            if "error" in c:
                out.append("| %s | %d | %s | %s | error: %s | | |" % (
                    v, c["world_size"], c["case"], c["counts"], c["error"][:100]))
                continue
            note = ""
            if c["case"] == "uneven_shards":
                note = "; gather_all_tensors lengths %s (%s)" % (
                    c["gathered_lengths"], "true" if c["gathered_lengths_true"] else "WRONG")
            if c["case"] == "fix_dedupe":
                note = "; %d samples after dropping repeats" % c["kept"]
            out.append("| %s | %d | %s | %s | %.3g | %.3g | %s%s |" % (
                v, c["world_size"], c["case"], c["counts"], c["auroc_error"], c["ap_error"],
                "yes (AUROC %.3g, AP %.3g from it)" % (c["auroc_minus_padded_list"],
                                                       c["ap_minus_padded_list"])
                if max(c["auroc_minus_padded_list"], c["ap_minus_padded_list"]) < 1e-6 else "no",
                note))
        ref = doc["reference"]["one_process"]
        out.append("\nOne process, N = %d: AUROC %.6f, AP %.6f (scikit-learn %.6f, %.6f)." % (
            N, ref["auroc"], ref["ap"], ref["sklearn_auroc"], ref["sklearn_ap"]))
    out.append("\n" + evidence.footer(paths))
    return "\n".join(out) + "\n"


def main():
    ap = evidence.parser(__doc__.split("\n\n")[0], pg_timeout=30, worlds="2,3,4")
    evidence.add_table_flags(ap)
    args = evidence.dispatch(ap, rank_main, print_table)
    cases, refs = [], {}
    for w in evidence.worlds(args):
        c, ref, ref_padded = one_world(w, args.pg_timeout)
        cases += c
        refs["padded_list_w%d" % w] = ref_padded
    doc = {"what": "torchmetrics BinaryAUROC/BinaryAveragePrecision default dist sync on gloo",
           "config": {"n": N, "batch": BATCH, "sampler": "DistributedSampler(shuffle=False, "
                      "drop_last=False)"},
           "provenance": evidence.provenance(
               "repro/wrong_all_gather/pytorch/torchmetrics_auroc.py"),
           "reference": dict(refs, one_process=ref),
           "cases": cases}
    evidence.write_json(args.out, doc)
    for c in cases:
        print(c["world_size"], c["case"], c.get("error") or (c["auroc_error"], c["ap_error"],
                                                             c["auroc_minus_padded_list"]),
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
