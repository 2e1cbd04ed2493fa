"""The coverage cases beyond guard/tests/scenarios.py: the suite's evidence
scripts' triggers at other world sizes, and the real-world variants
(torchmetrics, Lightning, SyncBatchNorm with uneven batches). Each function
takes (rank, world); what reaches a model, a metric or a collective goes
through scenarios.dev() to the rank's device (the CPU on gloo, the rank's
GPU on NCCL), the data sets staying on the CPU. Where PyTorch's own outcome
differs by backend, PYTORCH_ERRORS and NOT_ON below say so per case."""
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, Subset, TensorDataset

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "guard", "tests"))
import scenarios  # noqa: E402


def _evidence(relpath):
    """A suite evidence script's folder on sys.path (its triggers are
    imported, not copied)."""
    sys.path.insert(0, os.path.join(ROOT, os.path.dirname(relpath)))


def _seed000_validation(rank, world):
    """unequal_all_gather.py's validation set (raw_inputs.json, N = 1003) and
    this rank's strided share of it."""
    _evidence("repro/wrong_all_gather/pytorch/unequal_all_gather.py")
    import unequal_all_gather as u
    inputs = u.load_inputs(u.INPUTS)
    scores, labels = u.samples(inputs)
    return scores, labels, u.share(inputs["n"], world, rank)


def seed000_per_batch_gather(rank, world):
    """auc_curve.py's evaluation: seed 000's gather_step_wrong on every batch
    of a strided split of 1003 (B = 32): equal until the tail batch (22 vs 21)."""
    scores, labels, mine = _seed000_validation(rank, world)
    loader = DataLoader(TensorDataset(scores[mine].float(), labels[mine].float()), batch_size=32)
    for pred, label in loader:
        pred, label = scenarios.dev(pred), scenarios.dev(label)
        pred_list = [torch.zeros_like(pred) for _ in range(world)]
        label_list = [torch.zeros_like(label) for _ in range(world)]
        dist.all_gather(pred_list, pred)
        dist.all_gather(label_list, label)


def per_rank_seed(rank, world):
    """missing_set_epoch's per_rank_seed: each rank seeds its sampler with
    seed + rank (set_epoch called)."""
    ds = scenarios._data(64)
    sampler = DistributedSampler(ds, shuffle=True, seed=rank)
    scenarios._train(DDP(scenarios._model()), DataLoader(ds, batch_size=8, sampler=sampler),
                     1, sampler)


def _conv_bn():
    torch.manual_seed(0)
    return scenarios.dev(torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(4, 2)))


def bn_ddp_2_images(rank, world):
    """bn_eval_mode.py's DDP case: a BatchNorm2d network, 2 images per rank,
    train mode, two steps (the guard judges step 1's rows at step 2)."""
    ddp = DDP(_conv_bn())
    g = torch.Generator().manual_seed(rank)  # a CPU generator: images made there, then moved
    for _ in range(2):
        ddp(scenarios.dev(torch.randn(2, 1, 8, 8, generator=g))).sum().backward()


def bn_ddp_eval_mode(rank, world):
    """bn_eval_mode.py's other case: the same, BN layers in eval mode."""
    model = _conv_bn()
    ddp = DDP(model)
    model[1].eval()
    g = torch.Generator().manual_seed(rank)
    ddp(scenarios.dev(torch.randn(2, 1, 8, 8, generator=g))).sum().backward()


def sync_bn_uneven(rank, world):
    """sync_bn_cases.py's uneven_22192: SyncBatchNorm, 2 and 6 rows per rank.
    The guard must stay silent (SyncBatchNorm is the fix), whatever PyTorch
    then does: on gloo PyTorch itself refuses CPU inputs in forward
    (ValueError, PYTORCH_ERRORS); on NCCL the model is on the GPU and
    SyncBatchNorm runs, forward and backward, so no error is expected."""
    torch.manual_seed(0)
    model = scenarios.dev(torch.nn.SyncBatchNorm.convert_sync_batchnorm(
        torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8))))
    ddp = DDP(model)
    ddp(scenarios.dev(torch.randn(2 if rank == 0 else 6, 4))).sum().backward()


def step_mean(rank, world):
    """Seed 004's step_mean: reduce_tensor(batch accuracy) every step over a
    strided split of 1003, B = 32: equal until the tail batch."""
    ds = scenarios._data(1003)
    for x, y in DataLoader(Subset(ds, range(rank, len(ds), world)), batch_size=32):
        acc = ((x[:, 0] > 0).float() == y).float().mean()
        scenarios.reduce_tensor(scenarios.dev(acc), world)


def _drop_large(batch):
    """mean_of_means' `filtered` collate: drops samples whose feature 0 > 1."""
    x = torch.stack([b[0] for b in batch])
    y = torch.stack([b[1] for b in batch])
    keep = x[:, 0] <= 1
    return x[keep], y[keep]


def filtered_mean(rank, world):
    """mean_of_means' `filtered` sharding, rank_mean: per-rank accuracy over
    what the collate kept, reduced and divided by W."""
    ds = scenarios._data(1024)
    loader = DataLoader(ds, batch_size=32, collate_fn=_drop_large,
                        sampler=DistributedSampler(ds, shuffle=False))
    correct, n = scenarios._count_correct(loader)
    scenarios.reduce_tensor(scenarios.dev(torch.tensor(correct / n)), world)


def lightning_sync(rank, world):
    """Lightning's own _sync_ddp (lightning_fabric 2.6.6) on what its
    _ResultMetric accumulates over a validation split without padding
    (N = 2W + 1: one rank 3 samples, the others 2): value x batch size summed
    as a float, the batch size as an int64, both mean-synced on gloo, value
    first (pytorch_lightning's compute())."""
    from lightning_fabric.utilities.distributed import _sync_ddp
    ds = scenarios._data(2 * world + 1)
    value = scenarios.dev(torch.tensor(0.0))
    count = scenarios.dev(torch.tensor(0))
    for x, _ in DataLoader(Subset(ds, range(rank, len(ds), world)), batch_size=4):
        value += scenarios.dev(x)[:, 0].mean() * len(x)
        count += len(x)
    value = _sync_ddp(value.clone(), reduce_op="mean")
    count = _sync_ddp(count, reduce_op="mean")


def lightning_trainer_validate(rank, world, meanmetric=False):
    """lightning_accumulator.py's run, smaller: pytorch-lightning's own
    Trainer.validate with its DDP strategy on gloo (the ranks already in
    their process group, found from the variables a cluster launcher sets),
    self.log(..., sync_dist=True) over a split of N = 2W + 1 without
    padding (one rank 3 samples, the others 2). Gloo only (NOT_ON)."""
    import datetime
    import pytorch_lightning as pl
    from pytorch_lightning.strategies import DDPStrategy
    from torchmetrics import MeanMetric
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world),
                      NODE_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT="1")

    class Module(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(1, 1)  # DDP needs a parameter
            self.mean_metric = MeanMetric()

        def validation_step(self, batch, batch_idx):
            v = batch.double().reshape(-1)
            if meanmetric:  # the workaround: its sums and counts sync as floats
                self.mean_metric.update(v)
                self.log("val_meanmetric", self.mean_metric, on_epoch=True,
                         batch_size=v.numel())
            else:
                self.log("val_metric", v.mean(), on_epoch=True, sync_dist=True,
                         batch_size=v.numel())

    trainer = pl.Trainer(accelerator="cpu", devices=world, num_nodes=1,
                         strategy=DDPStrategy(process_group_backend="gloo",
                                              timeout=datetime.timedelta(seconds=60)),
                         use_distributed_sampler=False, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False)
    n = 2 * world + 1
    mine = [1.0 + i / n for i in range(rank, n, world)]
    loader = DataLoader(torch.tensor(mine, dtype=torch.float64), batch_size=len(mine))
    got = trainer.validate(Module(), dataloaders=loader, verbose=False)[0]
    assert ("val_meanmetric" if meanmetric else "val_metric") in got, got


def lightning_meanmetric(rank, world):
    """The same Trainer.validate logging a torchmetrics MeanMetric instead."""
    lightning_trainer_validate(rank, world, meanmetric=True)


def torchmetrics_loss(rank, world):
    """torchmetrics_loss.py's trigger (seed 002): its own MSE Metric with
    dist_sync_on_step=True as a DDP loss."""
    _evidence("repro/autograd_lost_gather/pytorch/torchmetrics_loss.py")
    from torchmetrics_loss import make_metric
    torch.manual_seed(0)
    ddp = DDP(scenarios.dev(torch.nn.Linear(3, 1, bias=False, dtype=torch.float64)))
    x = scenarios.dev(torch.randn(6, 3, dtype=torch.float64))
    loss = scenarios.dev(make_metric("mse"))(ddp(x).squeeze(-1),
                                             scenarios.dev(torch.zeros(6, dtype=torch.float64)))
    loss.backward()


def torchmetrics_auroc_uneven(rank, world):
    """torchmetrics_auroc.py's uneven_shards: BinaryAUROC over a strided
    split of 1003 batch by batch, compute() syncing with gather_all_tensors
    (lengths first, pad, gather, trim: correct)."""
    from torchmetrics.classification import BinaryAUROC
    scores, labels, mine = _seed000_validation(rank, world)
    auroc = scenarios.dev(BinaryAUROC())
    with torch.no_grad():
        for s, y in DataLoader(TensorDataset(scores[mine], labels[mine]), batch_size=32):
            auroc.update(scenarios.dev(s), scenarios.dev(y))
    auroc.compute()


def _seed000_padded_loader(world):
    """torchmetrics_auroc.py's sampler_padding: the validation set through
    DistributedSampler(shuffle=False, drop_last=False), batches of 32, with
    each sample's index."""
    _evidence("repro/wrong_all_gather/pytorch/unequal_all_gather.py")
    import unequal_all_gather as u
    inputs = u.load_inputs(u.INPUTS)
    scores, labels = u.samples(inputs)
    ds = TensorDataset(scores, labels, torch.arange(len(scores)))
    return DataLoader(ds, batch_size=32, sampler=DistributedSampler(ds, shuffle=False))


def torchmetrics_auroc_padding(rank, world):
    """torchmetrics issue 1297 (seed 000, 'AUC changes with the GPU count'):
    BinaryAUROC updated batch by batch over the padded sampler, compute()."""
    from torchmetrics.classification import BinaryAUROC
    auroc = scenarios.dev(BinaryAUROC())
    with torch.no_grad():
        for s, y, _ in _seed000_padded_loader(world):
            auroc.update(scenarios.dev(s), scenarios.dev(y))
    auroc.compute()


def torchmetrics_auroc_dedupe(rank, world):
    """torchmetrics_auroc.py's fix_dedupe: the indices gathered first with
    gather_all_tensors, then scores and labels; repeats dropped by index."""
    from torchmetrics.classification import BinaryAUROC
    from torchmetrics.utilities.distributed import gather_all_tensors
    parts = list(zip(*_seed000_padded_loader(world)))
    s, y, idx = (scenarios.dev(torch.cat(p)) for p in parts)
    got_idx = torch.cat(gather_all_tensors(idx))
    got_s = torch.cat(gather_all_tensors(s))
    got_y = torch.cat(gather_all_tensors(y))
    keep = {}
    for i, pos in zip(got_idx.tolist(), range(len(got_idx))):
        keep.setdefault(i, pos)
    pos = scenarios.dev(torch.tensor(sorted(keep.values())))
    auroc = scenarios.dev(BinaryAUROC())
    auroc.update(got_s[pos], got_y[pos])
    assert auroc.compute() > 0.5


def torchmetrics_mean_metric(rank, world):
    """The workaround for Lightning's count: torchmetrics' MeanMetric over
    uneven per-rank counts (its sums and weights sync as floats)."""
    from torchmetrics import MeanMetric
    ds = scenarios._data(2 * world + 1)
    metric = scenarios.dev(MeanMetric())
    for x, _ in DataLoader(Subset(ds, range(rank, len(ds), world)), batch_size=4):
        metric.update(scenarios.dev(x)[:, 0])
    metric.compute()


def correct_training(rank, world):
    """A correct DDP loop: DistributedSampler, set_epoch each epoch,
    drop_last=True, BatchNorm with 16 per rank, 2 epochs, then an
    evaluation with (sum, count) in one all_reduce."""
    ds = scenarios._data(203)
    sampler = DistributedSampler(ds, shuffle=True)
    ddp = DDP(scenarios._model("bn"))
    scenarios._train(ddp, DataLoader(ds, batch_size=16, sampler=sampler, drop_last=True), 2,
                     sampler)
    ddp.eval()
    correct, n = scenarios._count_correct(DataLoader(Subset(ds, range(rank, len(ds), world)),
                                                     batch_size=32))
    both = scenarios.dev(torch.tensor([float(correct), float(n)]))
    dist.all_reduce(both)


# name -> (the bug it must be caught as, or None for correct code; the
#          suite's source; the world sizes; needs torchmetrics/Lightning; function)
CASES = {
    "seed000_gather_step_wrong": ("wrong_all_gather", "repro/wrong_all_gather/pytorch/unequal_all_gather.py", (2, 4), False, scenarios.wrong_all_gather),
    "sampler_repeats_gather": ("wrong_all_gather", "repro/wrong_all_gather (sampler_duplicates)", (2, 4), False, scenarios.sampler_repeats),
    "torchmetrics_auroc_sampler_padding": ("wrong_all_gather", "repro/wrong_all_gather/pytorch/torchmetrics_auroc.py (sampler_padding)", (2, 3, 4), True, torchmetrics_auroc_padding),
    "seed000_per_batch_gather": ("wrong_all_gather", "repro/wrong_all_gather/pytorch/auc_curve.py", (2,), False, seed000_per_batch_gather),
    "no_set_epoch": ("missing_set_epoch", "repro/missing_set_epoch/pytorch/sampler_vs_golden.py", (2,), False, scenarios.missing_set_epoch),
    "per_rank_seed": ("missing_set_epoch", "repro/missing_set_epoch (per_rank_seed)", (2,), False, per_rank_seed),
    "one_extra_step": ("drop_last_hang", "repro/drop_last_hang/pytorch/uneven_steps_timeout.py", (2, 4), False, scenarios.drop_last_hang),
    "bn_2_per_rank_linear": ("small_batch_bn", "repro/small_batch_bn (W x 2 per rank)", (2,), False, scenarios.small_batch_bn),
    "bn_2_images_conv": ("small_batch_bn", "repro/small_batch_bn/pytorch/bn_eval_mode.py", (2, 4), False, bn_ddp_2_images),
    "c10d_gather_requires_grad": ("autograd_lost_gather", "fixes/autograd_lost_gather/pytorch/diff_gather.py (plain)", (2, 4), False, scenarios.autograd_lost_gather),
    "torchmetrics_metric_as_loss": ("autograd_lost_gather", "repro/autograd_lost_gather/pytorch/torchmetrics_loss.py", (2,), True, torchmetrics_loss),
    "seed004_rank_mean": ("mean_of_means", "repro/mean_of_means (rank_mean, strided)", (2, 4), False, scenarios.mean_of_means),
    "seed004_step_mean": ("mean_of_means", "repro/mean_of_means (step_mean, strided)", (2,), False, step_mean),
    "seed004_filtered": ("mean_of_means", "repro/mean_of_means (rank_mean, filtered)", (2,), False, filtered_mean),
    "lightning_int_count_inline": ("mean_of_means", "repro/mean_of_means (lightning_int_count)", (2,), False, scenarios.lightning_int_count),
    "lightning_trainer_validate": ("mean_of_means", "repro/mean_of_means/pytorch/lightning_accumulator.py (Trainer.validate)", (2,), True, lightning_trainer_validate),
    "lightning_sync_ddp": ("mean_of_means", "repro/mean_of_means/pytorch/lightning_accumulator.py (its _sync_ddp)", (2,), True, lightning_sync),
    # correct code: nothing may be reported
    "fix_pad_gather_trim": (None, "fixes/wrong_all_gather", (2, 4), False, scenarios.fix_gather_pad_trim),
    "fix_dedupe_indices": (None, "fixes/wrong_all_gather (indices first, repeats dropped)", (2, 4), False, scenarios.fix_dedupe_indices),
    "fix_torchmetrics_auroc_dedupe": (None, "repro/wrong_all_gather/pytorch/torchmetrics_auroc.py (fix_dedupe)", (2, 3), True, torchmetrics_auroc_dedupe),
    "fix_torchmetrics_auroc_uneven": (None, "repro/wrong_all_gather/pytorch/torchmetrics_auroc.py (uneven_shards)", (2, 3), True, torchmetrics_auroc_uneven),
    "fix_set_epoch_drop_last": (None, "fixes/missing_set_epoch, fixes/drop_last_hang", (2,), False, scenarios.fix_set_epoch_training),
    "fix_join_uneven": (None, "fixes/drop_last_hang/pytorch/join_divide.py (False)", (2,), False, scenarios.fix_join_uneven),
    "fix_bn_8_per_rank": (None, "fixes/small_batch_bn (8 per rank)", (2,), False, scenarios.fix_bn_eight_per_rank),
    "fix_bn_eval_mode": (None, "repro/small_batch_bn/pytorch/bn_eval_mode.py (BN eval)", (2,), False, bn_ddp_eval_mode),
    "fix_sync_bn_uneven": (None, "fixes/small_batch_bn/pytorch/sync_bn_cases.py (uneven_22192)", (2,), False, sync_bn_uneven),
    "fix_differentiable_gather": (None, "fixes/autograd_lost_gather/pytorch/diff_gather.py", (2, 4), False, scenarios.fix_differentiable_gather),
    "fix_sum_count": (None, "fixes/mean_of_means", (2,), False, scenarios.fix_sum_count),
    "fix_equal_counts_mean": (None, "repro/mean_of_means (control: equal counts)", (2,), False, scenarios.fix_equal_counts_mean),
    "fix_lightning_meanmetric": (None, "repro/mean_of_means/pytorch/lightning_accumulator.py (MeanMetric, Trainer.validate)", (2,), True, lightning_meanmetric),
    "fix_torchmetrics_mean_metric": (None, "repro/mean_of_means (MeanMetric workaround)", (2,), True, torchmetrics_mean_metric),
    "fix_rank0_only_loader": (None, "a rank-0-only evaluation loop between steps", (2,), False, scenarios.fix_rank0_only_loader),
    "correct_training": (None, "a correct DDP loop (sampler, set_epoch, drop_last, BN 16 per rank, sum+count)", (2, 4), False, correct_training),
}


# PyTorch's own error each case is expected to raise on every rank, per
# backend, as the start of "Type: message"; a correct case counts as silent
# only when every rank raised what is expected here and nothing else, so a
# case broken by the move to the GPU is never counted as silent.
PYTORCH_ERRORS = {
    "fix_sync_bn_uneven": {"gloo": "ValueError: SyncBatchNorm layers only work with GPU modules"},
}

# backend -> {case: why it is not run there}.
NOT_ON = {
    "nccl": {
        name: "Lightning's Trainer places its own ranks on devices=W GPUs (accelerator 'gpu'); "
              "the ranks here are one process each in a world coverage.py made, possibly sharing "
              "one GPU, which the Trainer cannot be given: run on gloo only"
        for name in ("lightning_trainer_validate", "fix_lightning_meanmetric")},
}
