"""missing_set_epoch: a training pass of a shuffling DistributedSampler
whose order is the previous training pass's; ranks whose samplers have
different seeds.

The symptom, not a proxy: a DistributedSampler's order is fixed by (seed +
epoch, N, W, rank, drop_last), and the epoch changes only through
set_epoch. So when a pass starts, its order is compared with that of the
last *training* pass that ran to its end with the same sampler settings
(samplers rebuilt every epoch included). A training pass is one in which a
DDP training forward ran. Peeks (`next(iter(loader))`), passes left before
their end (a warm-up that breaks early) and evaluation passes (no training
step) never count, so a shuffling evaluation sampler without set_epoch is
left alone: its order does not change what the model learns.

The flag rides in the pass's row (_points.py) and is judged from every
rank's rows, with the ranks' seeds beside it (each rank shuffling with its
own seed: about 75% of the data per epoch at W = 2, the rest twice or
never).
"""
from .. import _state

BUG = "missing_set_epoch"


def order_of(sampler):
    """What fixes a shuffling DistributedSampler's order, its epoch last;
    None when it does not shuffle."""
    if not getattr(sampler, "shuffle", False):
        return None
    try:
        n = len(sampler.dataset)
    except Exception:  # noqa: BLE001 (no length: no order to compare)
        return None
    return (type(sampler).__name__, int(getattr(sampler, "seed", 0)), n,
            int(sampler.num_replicas), int(sampler.rank), bool(sampler.drop_last),
            int(getattr(sampler, "epoch", 0)))


def judge(repeats, seeds, p):
    if any(repeats):
        epoch = p.order[-1] if p.order is not None else "?"
        _state.report(BUG, "this training pass of a DistributedSampler(shuffle=True) repeats the "
                      "previous training pass's order, position for position (epoch %s again: "
                      "set_epoch not called since; ranks %s)" %
                      (epoch, [r for r, f in enumerate(repeats) if f]))
    known = [s for s in seeds if s >= 0]
    if len(known) == len(seeds) and len(set(known)) > 1:
        _state.report(BUG, "the ranks' DistributedSamplers have different seeds %s: their shards "
                      "overlap (about 75%% of the data per epoch at W = 2, the rest seen twice or "
                      "never; repro/missing_set_epoch/README.md, per_rank_seed)" % seeds)
