"""What each pitfall does, in the suite's measured terms, and its fix.

Every number here is quoted from the pair README named beside it (the
suite's records, PyTorch 1.13 and 2.15 on gloo); a message names that README
so the reader can check the number and regenerate it. Kept in one place so
the wording can be compared with the READMEs at a glance. The count that
moves from run to run, wrong_all_gather's silent runs, is checked against
the committed records by //guard:guard_messages_test.
"""

# bug -> (what the mistake does, measured; the fix; the pair's README)
TERMS = {
    "wrong_all_gather": (
        "PyTorch's gloo all_gather of 502 and 501 elements at W = 2: the shorter rank aborted "
        "(gloo::EnforceNotMet) in 20 of 20 runs and the longer one returned silently with 252 of "
        "502 values garbage in 11 to 16 of 20 runs (repro/wrong_all_gather/README.md, PyTorch table)",
        "exchange the lengths first, pad every tensor to the longest, gather, and cut each peer's "
        "slot back to its length (what torchmetrics' gather_all_tensors does; "
        "fixes/wrong_all_gather/README.md)",
        "repro/wrong_all_gather/README.md"),
    "missing_set_epoch": (
        "without set_epoch the DistributedSampler seeds its shuffle with seed + 0 every time: every "
        "epoch replays epoch 0's order, position for position, on every rank (second pass "
        "'identical' on PyTorch 1.13 and 2.15; repro/missing_set_epoch/README.md)",
        "call sampler.set_epoch(epoch) before iterating each epoch, with a seed shared by all ranks "
        "(fixes/missing_set_epoch/README.md)",
        "repro/missing_set_epoch/README.md"),
    "drop_last_hang": (
        "on gloo the ranks' collectives pair off step by step until the short rank runs out; then "
        "the long rank's extra step waits for a peer that is not coming: if that peer exits, the "
        "long rank fails at once ('Connection reset by peer'); if it stays alive, gloo ends the "
        "wait at the process group's timeout, 30 minutes by default, and if it waits in "
        "dist.barrier() every rank times out (PyTorch 1.13 and 2.15; on NCCL, not measured here, "
        "2.15's documented default timeout is 10 minutes; repro/drop_last_hang/README.md)",
        "give every rank the same number of batches: a DistributedSampler (it pads every rank to "
        "ceil(N/W)) with drop_last=True in the DataLoader, or wrap the loop in "
        "torch.distributed.algorithms.Join with divide_by_initial_world_size=False "
        "(fixes/drop_last_hang/README.md)",
        "repro/drop_last_hang/README.md"),
    "small_batch_bn": (
        "at W = 4 x 2 samples per rank per-rank BatchNorm ended 6.0 pp worse in validation error "
        "than SyncBatchNorm at the same global batch (25.5% vs 19.5%, 95% interval [+3.3, +8.8] pp, "
        "5 seeds), +1.5 pp at 4 per rank, under 1 pp from 8 per rank on "
        "(repro/small_batch_bn/README.md)",
        "torch.nn.SyncBatchNorm.convert_sync_batchnorm(model) before wrapping in DDP (GPU "
        "backends), or GroupNorm, or at least 8 samples per rank (fixes/small_batch_bn/README.md)",
        "repro/small_batch_bn/README.md"),
    "autograd_lost_gather": (
        "torch.distributed.all_gather returns constants: a loss built only from them has zero "
        "gradient (backward raises 'element 0 of tensors does not require grad'), and with your own "
        "slot put back (torchmetrics >= 1.6) the DDP gradient is exactly 1/W of the true one "
        "(0.5 at W = 2, 0.25 at W = 4; repro/autograd_lost_gather/README.md)",
        "torch.distributed.nn.functional.all_gather (differentiable: its backward sends the "
        "gradients back, fixes/autograd_lost_gather/README.md), or .detach() the tensor (or gather "
        "under torch.no_grad()) if you only need the values",
        "repro/autograd_lost_gather/README.md"),
    "mean_of_means": (
        "an average of per-rank averages differs from the one-process value whenever ranks hold "
        "different counts: accuracy off by up to 0.0223 (once per evaluation) and 0.0318 (every "
        "step) in the suite's sweep; Lightning's floored integer count inflates every logged "
        "metric 1.375x at W = 16, N = 44 (repro/mean_of_means/README.md)",
        "all_reduce the sum and the count together, one tensor [sum, count], and divide after "
        "(fixes/mean_of_means/README.md)",
        "repro/mean_of_means/README.md"),
}

# A second face of wrong_all_gather: the gather is right, the data holds the
# DistributedSampler's padding repeats.
SAMPLER_REPEATS = (
    "a DistributedSampler with drop_last=False pads every rank to ceil(N/W) by repeating the "
    "first indices, and whatever is gathered counts those samples twice: torchmetrics 1.9.0's "
    "BinaryAUROC over N = 1003 was off by 0.000253 at W = 2 and 4 and 0.000515 at W = 3 (AP by "
    "up to 0.000537), a value that moves with the GPU count (torchmetrics issue 1297; "
    "repro/wrong_all_gather/README.md, torchmetrics table)",
    "gather each sample's index with its values and drop repeated indices before the metric "
    "(gather the indices first: the guard then knows), or evaluate on a split without padding "
    "(fixes/wrong_all_gather/README.md)")

BUGS = tuple(TERMS)


def format_message(bug, what, site, rank, world, terms=None):
    """One line: 'ddp-pitfalls: <bug>: ...' naming the call site, the
    measured consequence, the fix and the pair's README (`terms`: another
    (does, fix) of the same pair)."""
    does, fix, readme = TERMS[bug]
    if terms:
        does, fix = terms
    where = "rank %s of %s" % (rank, world) if rank is not None else "this process"
    return ("ddp-pitfalls: %s: %s at %s (%s). What it does: %s. Fix: %s. More: ddp-pitfalls "
            "%s." % (bug, what, site, where, does, fix, readme))
