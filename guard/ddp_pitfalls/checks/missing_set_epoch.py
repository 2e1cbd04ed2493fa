"""missing_set_epoch: a shuffling DistributedSampler iterated twice at the
same epoch, or ranks whose samplers have different seeds.

Why in DistributedSampler.__iter__: its permutation is drawn from
seed + epoch, and epoch changes only through set_epoch, so the second pass
at one epoch is known to repeat the first the moment it starts (before a
single batch). No communication: every rank runs the same loop. Different
seeds per rank (each rank shuffling differently: 75% of the data per epoch
at W = 2, the rest twice or never) need the peers' seeds: they ride in the
drop_last_hang exchange at the first DDP training step.
"""
from .. import _state

BUG = "missing_set_epoch"


def on_sampler_iter(sampler):
    if not getattr(sampler, "shuffle", False):
        return
    seen = sampler.__dict__.setdefault("_ddp_pitfalls_epochs", set())
    epoch = getattr(sampler, "epoch", 0)
    if epoch in seen:
        _state.report(BUG, "DistributedSampler(shuffle=True) iterated a second time at epoch %d "
                      "(set_epoch not called since): this pass repeats the previous one's order" %
                      epoch, _state.call_site(2))
    seen.add(epoch)


def judge_seeds(seeds):
    known = [s for s in seeds if s >= 0]
    if len(known) == len(seeds) and len(set(known)) > 1:
        _state.report(BUG, "the ranks' DistributedSamplers have different seeds %s: their shards "
                      "overlap (about 75%% of the data per epoch at W = 2, the rest seen twice or "
                      "never; repro/missing_set_epoch/README.md, per_rank_seed)" % seeds,
                      _state.call_site(2))
