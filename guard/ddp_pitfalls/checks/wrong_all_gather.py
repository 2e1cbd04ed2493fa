"""wrong_all_gather: an all_gather whose ranks pass different sizes.

Why before the collective: on gloo the shorter rank aborts and the longer
one may return with half its buffer garbage (repro/wrong_all_gather), so the
only safe moment is before the data moves. Each rank sends a few integers
first, inside the job's own all_gather (every rank of the group is making
it, so every rank makes the guard's exchange too: it runs on no decision of
one rank's): its element count, a fingerprint of its tensor's shape and
dtype, one of the output list it passes, and the two flags below. Every
rank then checks every rank's list against the peers' tensors, so all reach
the same verdict. A list sized to each peer (NCCL's uneven all_gather)
passes; what fails is a list that does not match what a peer sends.
SyncBatchNorm's own gathers (sizes fixed by the layer on every rank) are
not checked.

The sampler's repeats: a gather of values that need no gradient while the
data pass being evaluated comes from a DistributedSampler that pads
(drop_last=False, N not a multiple of W) and does not shuffle (an evaluation
sampler) counts the repeated samples twice (torchmetrics' AUROC moving with
the GPU count). Known from the sampler's own sizes; the flag rides in the
exchange, so every rank reports it together. What the guard cannot see is
whether the code drops the repeats afterwards (the fix); it takes a gathered
integer tensor with one distinct entry per sample of the pass (the indices)
as that sign, so the fix's order is: indices first. Only floating-point
gathers are flagged (sizes, labels and counts are integers).
"""
from .. import _data, _exchange, _messages, _state

BUG = "wrong_all_gather"


def fields(outputs, tensor, into_tensor):
    """[numel, shape digest, output digest]. For all_gather_into_tensor the
    output digest is the output's own shape (checked through the inputs)."""
    mine = _exchange.shape_digest(tuple(tensor.shape), tensor.dtype)
    if into_tensor:
        out = _exchange.shape_digest(tuple(outputs.shape), outputs.dtype)
    else:
        out = _list_digest([_exchange.shape_digest(tuple(t.shape), t.dtype) for t in outputs])
    return [tensor.numel(), mine, out]


def _list_digest(digests):
    h = len(digests)
    for d in digests:
        h = (h * 1000003 + d) % (1 << 61)
    return h


def judge(rows, into_tensor):
    """rows[r] = fields() of rank r: report when any rank's output does not
    match what its peers send."""
    inputs = [r[1] for r in rows]
    if into_tensor:
        bad = len(set(inputs)) > 1
    else:
        expected = _list_digest(inputs)
        bad = any(r[2] != expected for r in rows)
    if bad:
        counts = [r[0] for r in rows]
        _state.report(BUG, "all_gather where the ranks pass tensors of different sizes or dtypes "
                      "(elements per rank %s), caught before the collective ran" % counts)


def repeats_flag(tensor):
    """Padded repeats in the pass being gathered from (see the module's
    note): the number of repeats, or 0."""
    p = _data.latest
    if p is None or p.sampler is None or p.indices_gathered or tensor.requires_grad:
        return 0
    sampler = p.sampler
    if getattr(sampler, "drop_last", True) or getattr(sampler, "shuffle", True):
        return 0
    try:
        n = len(sampler.dataset)
    except Exception:  # noqa: BLE001
        return 0
    if not tensor.is_floating_point():
        # Sizes, labels, counts: not flagged. One distinct integer per
        # sample of the pass: the indices (the fix's first gather).
        if (tensor.dtype != _bool() and tensor.numel() == p.samples and
                tensor.unique().numel() == tensor.numel()):
            p.indices_gathered = True
        return 0
    return max(0, sampler.total_size - n)


def judge_repeats(flags, tensor):
    if any(flags):
        p = _data.latest
        sampler = p.sampler if p is not None else None
        if sampler is None:
            _state.report(BUG, "all_gather of values from a DistributedSampler pass that pads "
                          "(repeats per rank %s)" % flags, None, _messages.SAMPLER_REPEATS)
            return
        n = len(sampler.dataset)
        _state.report(BUG, "all_gather of values from a DistributedSampler pass that pads %d "
                      "samples to %d (%d repeated, W = %d)" %
                      (n, sampler.total_size, sampler.total_size - n, sampler.num_replicas),
                      None, _messages.SAMPLER_REPEATS)


def _bool():
    import torch
    return torch.bool
