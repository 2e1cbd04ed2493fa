#!/usr/bin/python3
"""pytorch-lightning's sync_dist mean of a logged metric, on gloo, with ranks
holding unequal numbers of samples.

    .venv-torch2.15/bin/python repro/mean_of_means/pytorch/lightning_accumulator.py \\
        --out results/vs_pytorch/mean_of_means_lightning.torch2.15.json

Lightning issues 21838 / 21859 (open for 2.6.x and 2.7.x; fix proposed in
PR 21839): `self.log(name, value, on_epoch=True, sync_dist=True)` keeps
`value * batch_size` (float) and `cumulated_batch_size` (an int64 tensor)
and mean-syncs both; on gloo the mean is SUM and then `result.copy_(result /
world_size)`, which truncates into the integer tensor, so the epoch value is
(sum / W) / floor(count / W): every metric inflated by 1.375x at W = 16 with
a 44-sample validation split. pytorch-lightning 2.6.6 needs PyTorch 2.x: this
runs on the 2.15 stack only.

W = 16 real processes (oversubscribed on a small machine: a correctness
check, not a timing), gloo, Lightning's own Trainer.validate with its DDP
strategy (processes started here, as a cluster launcher would: RANK,
LOCAL_RANK, WORLD_SIZE, MASTER_ADDR/PORT). Rank r validates samples r,
r + W, r + 2W, ... of the split in one batch (use_distributed_sampler=False,
as with an IterableDataset whose shards do not divide evenly); sample i's
metric value is 1 + i / N. Each rank logs

  val_metric        the batch mean, self.log(..., on_epoch=True, sync_dist=True)
  val_meanmetric    the same values through torchmetrics.MeanMetric (sums
                    and counts synced as floats): the workaround

Splits: N = 44 (12 ranks hold 3 samples, 4 hold 2) and the control N = 48
(3 each). Measured per rank: the logged values against the true mean over
the N samples, and the ratio, beside the closed form (N/W) / floor(N/W).
"""
import os
import socket
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
from tools.vs_pytorch import evidence  # noqa: E402

SPLITS = (44, 48)


def value(i, n):
    return 1.0 + i / n


def rank_main(args):
    import datetime
    import torch
    import pytorch_lightning as pl
    from pytorch_lightning.strategies import DDPStrategy
    from torchmetrics import MeanMetric

    w, r = args.world_size, args.rank
    out = evidence.RankLog(args.dir, r)

    class Module(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(1, 1)  # DDP needs a parameter
            self.mean_metric = MeanMetric()

        def validation_step(self, batch, batch_idx):
            v = batch.double().reshape(-1)
            self.log("val_metric", v.mean(), on_epoch=True, sync_dist=True,
                     batch_size=v.numel())
            self.mean_metric.update(v)
            self.log("val_meanmetric", self.mean_metric, on_epoch=True, batch_size=v.numel())

    trainer = pl.Trainer(accelerator="cpu", devices=w, num_nodes=1,
                         strategy=DDPStrategy(process_group_backend="gloo",
                                              timeout=datetime.timedelta(seconds=args.pg_timeout)),
                         use_distributed_sampler=False, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False)
    model = Module()
    for n in SPLITS:
        mine = [value(i, n) for i in range(r, n, w)]
        loader = torch.utils.data.DataLoader(torch.tensor(mine, dtype=torch.float64),
                                             batch_size=len(mine))
        model.mean_metric.reset()
        got = trainer.validate(model, dataloaders=loader, verbose=False)[0]
        out["n%d" % n] = {"count": len(mine), "val_metric": float(got["val_metric"]),
                          "val_meanmetric": float(got["val_meanmetric"])}
        out.dump()
    os._exit(0)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def print_table(paths):
    out = ["| PyTorch / Lightning | W | N | per-rank counts | logged `val_metric` (sync_dist mean) "
           "/ true mean | closed form (N/W) / floor(N/W) | `MeanMetric` / true mean |",
           "|---|---|---|---|---|---|---|"]
    for doc in evidence.load_docs(paths):
        p = doc["provenance"]
        for c in doc["cases"]:
            if "error" in c:
                out.append("| %s / %s | %d | %d | - | error: %s | | |" % (
                    p["torch_version"], p.get("pytorch_lightning"), c["world_size"], c["n"],
                    c["error"][:100]))
                continue
            counts = sorted(set(c["counts"]), reverse=True)
            out.append("| %s / %s | %d | %d | %s | %s | %.6g | %s |" % (
                p["torch_version"], p.get("pytorch_lightning"), c["world_size"], c["n"],
                ", ".join("%d ranks x %d" % (c["counts"].count(k), k) for k in counts),
                "%.12g" % c["ratio_min"] if c["ratio_min"] == c["ratio_max"] else
                "%.12g-%.12g" % (c["ratio_min"], c["ratio_max"]), c["closed_form"],
                "%.12g" % c["meanmetric_ratio_max"]))
    out.append("\n" + evidence.footer(paths))
    return "\n".join(out) + "\n"


def main():
    ap = evidence.parser(__doc__.split("\n\n")[0], pg_timeout=120)
    ap.add_argument("--world", type=int, default=16, help="world size (default 16)")
    evidence.add_table_flags(ap)
    args = evidence.dispatch(ap, rank_main, print_table)
    w = args.world
    if w < 2:
        ap.error("--world must be >= 2")
    with tempfile.TemporaryDirectory(prefix="lightning_acc_") as d:
        port = free_port()
        procs = evidence.spawn_ranks(
            os.path.abspath(__file__), w, ["--pg_timeout", str(args.pg_timeout)], d,
            3 * args.pg_timeout + 120,
            env={"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "WORLD_SIZE": str(w),
                 "NODE_RANK": "0", "PL_DISABLE_FORK": "1", "OMP_NUM_THREADS": "1"},
            per_rank_env=lambda r: {"RANK": str(r), "LOCAL_RANK": str(r)})
        ranks = evidence.collect(d, procs)
    cases = []
    for n in SPLITS:
        key = "n%d" % n
        counts = [len(range(r, n, w)) for r in range(w)]
        truth = sum(value(i, n) for i in range(n)) / n
        per = [x.get(key) for x in ranks]
        c = {"world_size": w, "n": n, "counts": counts, "true_mean": truth,
             "closed_form": (n / w) / (n // w)}
        if any(p is None for p in per):
            c["error"] = "; ".join("rank %d exit %s: %s" % (i, x["exit"], x.get("died", ""))
                                   for i, x in enumerate(ranks) if x.get(key) is None)[:600]
        else:
            ratios = [p["val_metric"] / truth for p in per]
            c.update({"val_metric": [p["val_metric"] for p in per],
                      "ratio_min": min(ratios), "ratio_max": max(ratios),
                      "meanmetric_ratio_max": max(abs(p["val_meanmetric"] / truth - 1) + 1
                                                  for p in per)})
        cases.append(c)
    doc = {"what": "pytorch-lightning self.log(sync_dist=True) mean with unequal per-rank "
                   "sample counts, gloo",
           "config": {"world_size": w, "splits": list(SPLITS), "oversubscribed":
                      w > (os.cpu_count() or 1), "cpus": os.cpu_count(),
                      "value": "sample i: 1 + i / N"},
           "provenance": evidence.provenance(
               "repro/mean_of_means/pytorch/lightning_accumulator.py"),
           "cases": cases}
    evidence.write_json(args.out, doc)
    for c in cases:
        print(c["n"], c.get("error") or (c["ratio_min"], c["ratio_max"], c["closed_form"],
                                         c["meanmetric_ratio_max"]), file=sys.stderr)
    return 0 if all("error" not in c for c in cases) else 1


if __name__ == "__main__":
    sys.exit(main())
