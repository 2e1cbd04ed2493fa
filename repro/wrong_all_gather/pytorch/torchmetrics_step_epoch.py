#!/usr/bin/python3
"""torchmetrics' BinaryAUROC synced at every step and again at the epoch's end.

    .venv-torch2.15/bin/python repro/wrong_all_gather/pytorch/torchmetrics_step_epoch.py \\
        --out results/vs_pytorch/wrong_all_gather_torchmetrics_step_epoch.torch2.15.json

Evidence for the ledger's claim:wrong_all_gather/torchmetrics-step-and-epoch-sync (seed 000's trigger 4: "torchmetrics
AUROC synchronised at both step and epoch aggregates duplicates or
misorders"). torchmetrics 1.9.0 needs PyTorch 2.x: 2.15 only. Real gloo
processes, the validation set of unequal_all_gather.py (N = 1003), split
without padding (rank r holds samples r, r + W, ...: the sampler's repeats,
which torchmetrics does count, are torchmetrics_auroc.py's case, kept out
of this one), batches of 32, W = 2 and 4. Each rank runs one epoch per
mode with a fresh BinaryAUROC and BinaryAveragePrecision:

  epoch_only      update() per batch, compute() at the end (one sync)
  forward_steps   forward() per batch (the value of the batch, as Lightning's
                  on_step logging calls it), compute() at the end
  step_and_epoch  dist_sync_on_step=True: forward() per batch returns the
                  value over every rank's current batch (a sync per step),
                  then compute() at the end (the epoch sync)

Measured per rank and mode: the epoch values against the one-process
values over the N samples; how many samples the epoch's synced state holds
(inside sync_context(), what compute() sees) against N and the sample
indices gathered with the same gather_all_tensors (repeats, order); for
step_and_epoch each step's value against the one-process value over that
step's batches of every rank.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tools.vs_pytorch import evidence  # noqa: E402

from torchmetrics_auroc import BATCH, N, samples  # noqa: E402  the same validation set and batches

MODES = ("epoch_only", "forward_steps", "step_and_epoch")


def one_process(torch, idx, scores, labels):
    from torchmetrics.classification import BinaryAUROC, BinaryAveragePrecision
    auroc, ap = BinaryAUROC(), BinaryAveragePrecision()
    auroc.update(scores[idx], labels[idx])
    ap.update(scores[idx], labels[idx])
    return auroc.compute().item(), ap.compute().item()


def run_mode(torch, mode, w, r, scores, labels):
    from torchmetrics.classification import BinaryAUROC, BinaryAveragePrecision
    from torchmetrics.utilities.distributed import gather_all_tensors
    on_step = mode == "step_and_epoch"
    auroc = BinaryAUROC(dist_sync_on_step=on_step)
    ap = BinaryAveragePrecision(dist_sync_on_step=on_step)
    shards = [list(range(k, N, w)) for k in range(w)]
    mine = torch.tensor(shards[r])
    step_diffs = []
    for b in range(0, len(mine), BATCH):
        part = mine[b:b + BATCH]
        if mode == "epoch_only":
            auroc.update(scores[part], labels[part])
            ap.update(scores[part], labels[part])
            continue
        step_auroc = auroc(scores[part], labels[part]).item()
        ap(scores[part], labels[part])
        if on_step:  # the step's value is over every rank's batch b
            union = torch.tensor([i for s in shards for i in s[b:b + BATCH]])
            step_diffs.append(abs(step_auroc - one_process(torch, union, scores, labels)[0]))
    with auroc.sync_context():  # the state compute() sees
        held = sum(int(p.numel()) for p in auroc.preds) if isinstance(auroc.preds, list) \
            else int(auroc.preds.numel())
    gathered_idx = torch.cat(gather_all_tensors(mine)).tolist()
    ref_auroc, ref_ap = one_process(torch, torch.arange(N), scores, labels)
    return {"epoch_auroc_error": abs(auroc.compute().item() - ref_auroc),
            "epoch_ap_error": abs(ap.compute().item() - ref_ap),
            "synced_state_samples": held,
            "gathered_indices": len(gathered_idx),
            "gathered_distinct": len(set(gathered_idx)),
            "step_auroc_max_error": max(step_diffs) if step_diffs else None,
            "steps": len(range(0, len(mine), BATCH))}


def rank_main(args):
    import torch
    import torch.distributed as dist
    log = evidence.RankLog(args.dir, args.rank)
    evidence.init_gloo(args)
    scores, labels = samples()
    for mode in MODES:
        log[mode] = run_mode(torch, mode, args.world_size, args.rank, scores, labels)
        log.dump()
        dist.barrier()
    os._exit(0)  # as torchmetrics_auroc.py: no teardown to wait on


def one_world(w, pg_timeout):
    ranks = evidence.run_world(os.path.abspath(__file__), w, pg_timeout)
    cases = []
    for mode in MODES:
        per = [x.get(mode) for x in ranks]
        c = {"mode": mode, "world_size": w}
        if any(p is None for p in per):
            c["error"] = "; ".join("rank %d exit %s %s" % (i, x["exit"], x.get("died", ""))
                                   for i, x in enumerate(ranks) if x.get(mode) is None)
        else:
            c["per_rank"] = per
            for key in ("epoch_auroc_error", "epoch_ap_error"):
                c[key] = max(p[key] for p in per)
            c["synced_state_samples"] = sorted({p["synced_state_samples"] for p in per})
            steps = [p["step_auroc_max_error"] for p in per if p["step_auroc_max_error"] is not None]
            c["step_auroc_max_error"] = max(steps) if steps else None
            c["gathered_distinct"] = per[0]["gathered_distinct"]
        cases.append(c)
    return cases


def print_table(paths):
    out = ["| PyTorch | W | mode | samples in the epoch's synced state (N = %d) | epoch AUROC "
           "error vs one process | epoch AP error | largest step AUROC error (every rank's batch) |"
           % N, "|---|---|---|---|---|---|---|"]
    for v, c in evidence.cases_by_version(paths):
        if "error" in c:
            out.append("| %s | %d | %s | error: %s | | | |" % (v, c["world_size"], c["mode"],
                                                              c["error"][:100]))
            continue
        step = c["step_auroc_max_error"]
        out.append("| %s | %d | %s | %s | %.3g | %.3g | %s |" % (
            v, c["world_size"], c["mode"], ", ".join(map(str, c["synced_state_samples"])),
            c["epoch_auroc_error"], c["epoch_ap_error"], "-" if step is None else "%.3g" % step))
    return evidence.with_footer(out, paths)


def main():
    ap = evidence.parser(__doc__.split("\n\n")[0], pg_timeout=30, worlds="2,4")
    evidence.add_table_flags(ap)
    args = evidence.dispatch(ap, rank_main, print_table)
    cases = [c for w in evidence.worlds(args) for c in one_world(w, args.pg_timeout)]
    for c in cases:
        print(c["world_size"], c["mode"], c.get("error") or (
            c["synced_state_samples"], c["epoch_auroc_error"], c["step_auroc_max_error"]),
            file=sys.stderr)
    evidence.write_json(args.out, evidence.record(
        "torchmetrics BinaryAUROC/BinaryAveragePrecision synced at the epoch only, with forward() "
        "per step, and with dist_sync_on_step=True plus the epoch sync, on gloo",
        {"n": N, "batch": BATCH, "split": "rank r: samples r, r + W, ... (no padding)"},
        "repro/wrong_all_gather/pytorch/torchmetrics_step_epoch.py", cases=cases))
    return 0


if __name__ == "__main__":
    sys.exit(main())
