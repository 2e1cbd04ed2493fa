"""wrong_all_gather: an all_gather whose ranks pass different sizes.

Why before the collective: on gloo the shorter rank aborts and the longer
one may return with half its buffer garbage (repro/wrong_all_gather), so the
only safe moment is before the data moves. Each rank sends three integers
first (its element count, a fingerprint of its tensor's shape and dtype, and
one of the output list it passes); every rank then checks every rank's list
against the peers' tensors, so all reach the same verdict. A list sized to
each peer (NCCL's uneven all_gather) passes; what fails is a list that does
not match what a peer sends.

The sampler's repeats: a gather of values that need no gradient while the
data pass being evaluated comes from a DistributedSampler that pads
(drop_last=False, N not a multiple of W) and does not shuffle (an evaluation
sampler) counts the repeated samples twice (torchmetrics' AUROC moving with
the GPU count). Known locally, from the sampler's own sizes, on every rank
alike, before the gather. What the guard cannot see is whether the code
drops the repeats afterwards (the fix); it takes a gathered integer tensor
with one distinct entry per sample of the pass (the indices) as that sign,
so the fix's order is: indices first. Only floating-point gathers are
reported (sizes, labels and counts are integers).
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
                      "(elements per rank %s), caught before the collective ran" % counts,
                      _state.call_site(2))


def check_sampler_repeats(tensor):
    """Local, before the gather: see the module's note."""
    p = _data.latest
    if p is None or p.sampler is None or p.indices_gathered or tensor.requires_grad:
        return
    sampler = p.sampler
    if getattr(sampler, "drop_last", True) or getattr(sampler, "shuffle", True):
        return
    try:
        n = len(sampler.dataset)
    except TypeError:
        return
    if not tensor.is_floating_point():
        # Sizes, labels, counts: not reported. One distinct integer per
        # sample of the pass: the indices (the fix's first gather).
        if (tensor.dtype != _bool() and tensor.numel() == p.samples and
                tensor.unique().numel() == tensor.numel()):
            p.indices_gathered = True
        return
    repeats = sampler.total_size - n
    if repeats > 0:
        _state.report(BUG, "all_gather of values from a DistributedSampler pass that pads %d "
                      "samples to %d (%d repeated, W = %d)" %
                      (n, sampler.total_size, repeats, sampler.num_replicas),
                      _state.call_site(2), _messages.SAMPLER_REPEATS)


def _bool():
    import torch
    return torch.bool
