#!/usr/bin/python3
"""Seed 000's AUC curve under its gather_step_wrong, per drop_last and batch size.

    /usr/bin/python3 repro/wrong_all_gather/pytorch/auc_curve.py \\
        --out results/vs_pytorch/wrong_all_gather_auc_curve.torch1.13.json
    .venv-torch2.15/bin/python repro/wrong_all_gather/pytorch/auc_curve.py \\
        --out results/vs_pytorch/wrong_all_gather_auc_curve.torch2.15.json

Evidence for the ledger's claim:wrong_all_gather/auc-curve-stays-unstable ("changing drop_last or batch_size
changes the shape of the AUC curve, but it stays unstable"; PyTorch 1.13
and 2.15, gloo, CPU, real processes). A validation set of N = 1003 samples
(40 % positive) is scored by a model that improves epoch by epoch (its
one-process AUC from about 0.61 to 0.85, near the post's one-GPU 0.86): the
score of sample i at epoch e is sigmoid(s_e * (2 y_i - 1) + noise_ie), s_e
rising linearly, the noise drawn per epoch from a fixed seed, so the
one-process AUC over the N samples is a smooth rising curve. Every epoch
each rank evaluates its share batch by batch and runs the post's own
gather_step_wrong on every batch (float32 scores [B, 1], int64 labels [B];
`zeros_like` buffers, two all_gathers, `torch.cat`); rank 0 concatenates
what it gathered and computes the AUC (sklearn's roc_auc_score), as the
post's evaluation does. The share:

  sampler   DistributedSampler(shuffle=False, drop_last=D) and batches of B
            with the DataLoader's drop_last=D: every rank holds the same
            count (padding repeats samples; D drops them), so every batch
            has the same shape on every rank
  strided   rank r holds samples r, r + W, ... (no padding) and batches of
            B with drop_last=D: with D False the last batches of the ranks
            differ in length (the post's trigger 1)

Cases: both shares, drop_last False and True, B = 32 and 64, W = 2 and 4.
Recorded per epoch: the gathered AUC (or why there is none: sizes that do
not match, an undefined AUC, an error or a dead process), the one-process
AUC, the gathered count against N; per case the largest distance from the
one-process curve and whether every epoch gave an AUC.
"""
import argparse
import datetime
import faulthandler
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
from tools.vs_pytorch import evidence  # noqa: E402

N, EPOCHS, POSITIVE = 1003, 8, 0.4
SHARES = ("sampler", "strided")


def scores_and_labels(torch, epoch):
    """Every sample's score at this epoch and the labels (the same on every rank)."""
    g = torch.Generator().manual_seed(0)
    labels = (torch.rand(N, generator=g) < POSITIVE).long()
    strength = 0.18 + 0.6 * epoch / (EPOCHS - 1)  # one-process AUC from about 0.61 to 0.85
    noise = torch.randn(N, generator=torch.Generator().manual_seed(100 + epoch))
    return torch.sigmoid(strength * (2 * labels.float() - 1) + noise), labels


def share(torch, how, w, r, drop_last):
    if how == "sampler":
        from torch.utils.data import DistributedSampler
        return list(DistributedSampler(range(N), num_replicas=w, rank=r, shuffle=False,
                                       drop_last=drop_last))
    return list(range(r, N, w))


def batches(idx, b, drop_last):
    out = [idx[a:a + b] for a in range(0, len(idx), b)]
    return out[:-1] if drop_last and out and len(out[-1]) < b else out


def gather_step_wrong(torch, dist, pred, label):
    """Seed 000's code, as posted."""
    ws = dist.get_world_size()
    pred_list = [torch.zeros_like(pred) for _ in range(ws)]
    label_list = [torch.zeros_like(label) for _ in range(ws)]
    dist.all_gather(pred_list, pred)
    dist.all_gather(label_list, label)
    pred_all = torch.cat(pred_list, dim=0)
    label_all = torch.cat(label_list, dim=0)
    return pred_all, label_all


def rank_main(args):
    import torch
    import torch.distributed as dist
    from sklearn.metrics import roc_auc_score

    w, r = args.world_size, args.rank
    log = evidence.RankLog(args.dir, r)
    faulthandler.dump_traceback_later(args.pg_timeout * 4 + 30, exit=True)
    dist.init_process_group("gloo", init_method=evidence.init_store(args.dir), rank=r, world_size=w,
                            timeout=datetime.timedelta(seconds=args.pg_timeout))
    drop_last = bool(args.drop_last)
    mine = batches(share(torch, args.share, w, r, drop_last), args.batch, drop_last)
    log["steps"] = len(mine)
    log["epochs"] = []
    log.dump()
    for epoch in range(EPOCHS):
        scores, labels = scores_and_labels(torch, epoch)
        entry = {"epoch": epoch, "one_process_auc": roc_auc_score(labels.tolist(), scores.tolist())}
        log["epochs"].append(entry)
        preds, labs = [], []
        try:
            for b in mine:
                p, l = gather_step_wrong(torch, dist, scores[b].unsqueeze(1), labels[b])
                preds.append(p)
                labs.append(l)
        except Exception as e:  # noqa: BLE001  what the gather raised is the measurement
            entry["error"] = "%s: %s" % (type(e).__name__, evidence.first_line(e))
            log.dump()
            return 1
        if r == 0:
            p, l = torch.cat(preds).squeeze(1), torch.cat(labs)
            entry["gathered_preds"], entry["gathered_labels"] = int(p.numel()), int(l.numel())
            if p.numel() != l.numel():
                entry["no_auc"] = "pred_all.size(0) != label_all.size(0)"
            else:
                try:
                    entry["auc"] = roc_auc_score(l.tolist(), p.tolist())
                except ValueError as e:  # labels out of {0, 1}, NaN among garbage
                    entry["no_auc"] = "ValueError: %s" % evidence.first_line(e, 120)
        log.dump()
    dist.destroy_process_group()
    log.dump()
    return 0


def one_case(script, w, how, drop_last, batch, pg_timeout):
    with tempfile.TemporaryDirectory() as d:
        procs = evidence.spawn_ranks(
            script, w, ["--share", how, "--drop_last", str(int(drop_last)), "--batch", str(batch),
                        "--pg_timeout", str(pg_timeout)], d, timeout=pg_timeout * 4 + 60)
        ranks = evidence.collect(d, procs)
    r0 = ranks[0]
    epochs = r0.get("epochs", [])
    diffs = [abs(e["auc"] - e["one_process_auc"]) for e in epochs if "auc" in e]
    return {"world_size": w, "share": how, "drop_last": drop_last, "batch": batch,
            "steps_per_rank": [x.get("steps") for x in ranks],
            "exits": [x["exit"] for x in ranks],
            "rank_errors": [x.get("died") or (x.get("epochs") or [{}])[-1].get("error", "")
                            for x in ranks],
            "epochs": epochs,
            "epochs_with_auc": len(diffs), "epochs_total": EPOCHS,
            "max_abs_diff_from_one_process": max(diffs) if diffs else None,
            "gathered_counts": sorted({e.get("gathered_preds") for e in epochs
                                       if "gathered_preds" in e})}


def print_table(paths):
    out = ["| PyTorch | W | share | drop_last | B | steps per rank | epochs with an AUC "
           "(of %d) | gathered count (N = %d) | largest distance from the one-process AUC | "
           "what stopped it |" % (EPOCHS, N),
           "|---|---|---|---|---|---|---|---|---|---|"]
    for v, c in evidence.cases_by_version(paths):
        d = c["max_abs_diff_from_one_process"]
        why = sorted({e for e in c["rank_errors"] if e} |
                     {e.get("no_auc", "") for e in c["epochs"] if e.get("no_auc")})
        out.append("| %s | %d | %s | %s | %d | %s | %d | %s | %s | %s |" % (
            v, c["world_size"], c["share"], c["drop_last"], c["batch"],
            ", ".join(str(s) for s in c["steps_per_rank"]), c["epochs_with_auc"],
            ", ".join(str(n) for n in c["gathered_counts"]) or "-",
            "-" if d is None else "%.2g" % d,
            "; ".join("`%s`" % e.replace("|", "/")[:110] for e in why) or "-"))
    docs = evidence.load_docs(paths)
    if docs:
        first = docs[0]["cases"][0]["epochs"]
        out.append("\nThe one-process AUC per epoch: %s." % ", ".join(
            "%.4f" % e["one_process_auc"] for e in first))
    out.append("\n" + evidence.footer(paths))
    return "\n".join(out) + "\n"


def main():
    ap = evidence.parser(__doc__.split("\n\n")[0], pg_timeout=15.0, worlds="2,4")
    ap.add_argument("--batches", default="32,64", help="batch sizes, comma-separated (default 32,64)")
    # The rank processes' own flags.
    ap.add_argument("--share", choices=SHARES, help=argparse.SUPPRESS)
    ap.add_argument("--drop_last", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    evidence.add_table_flags(ap)
    args = evidence.dispatch(ap, rank_main, print_table)
    sizes = evidence.int_list(args.batches, "--batches", 1)
    script = os.path.abspath(__file__)
    cases = []
    for w in evidence.worlds(args):
        for how in SHARES:
            for drop_last in (False, True):
                for b in sizes:
                    c = one_case(script, w, how, drop_last, b, args.pg_timeout)
                    print("W=%d %s drop_last=%s B=%d: %d of %d epochs with an AUC, largest "
                          "distance %s, exits %s" % (
                              w, how, drop_last, b, c["epochs_with_auc"], EPOCHS,
                              c["max_abs_diff_from_one_process"], c["exits"]), file=sys.stderr)
                    cases.append(c)
    evidence.write_json(args.out, evidence.record(
        "seed 000's gather_step_wrong on every evaluation batch, AUC per epoch on rank 0 against "
        "the one-process AUC, per share, drop_last and batch size",
        {"n": N, "epochs": EPOCHS, "positive_rate": POSITIVE, "pg_timeout_s": args.pg_timeout,
         "batches": sizes},
        "repro/wrong_all_gather/pytorch/auc_curve.py", cases=cases))
    return 0


if __name__ == "__main__":
    sys.exit(main())
