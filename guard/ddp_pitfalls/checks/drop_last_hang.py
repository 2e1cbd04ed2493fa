"""drop_last_hang: ranks whose data loaders yield different numbers of
batches in an epoch.

Why at the first DDP training step of a pass: len(loader) is known when the
pass starts, but a rank-0-only loop (evaluation, logging) must not be made
to wait for peers that never iterate it. A DDP forward in training mode with
grad on is a point every rank reaches together (DDP synchronises it), so the
promised counts are compared there, before the first backward's allreduce,
and an uneven split stops at step 1 instead of at the last step. An
all_gather inside a loop carries the same count in its own size exchange
(wrong_all_gather), for loops that gather without DDP.

Inside `with Join(...)` (the fix that lets ranks run uneven counts) nothing
is reported: the counts are compared only to keep the exchange in step.

At the end of a pass each rank also checks itself against the count every
rank agreed on: a loader whose len() promised more or fewer batches than it
yields (an IterableDataset, a filtering batch sampler) is caught on the rank
that deviates, before its next collective.
"""
from .. import _data, _exchange, _state
from . import missing_set_epoch

BUG = "drop_last_hang"


def judge(counts, p):
    known = [c for c in counts if c >= 0]
    if len(known) != len(counts) or _data.joins:
        return
    if len(set(known)) > 1:
        _state.report(BUG, "the ranks' data loaders promise different numbers of batches this "
                      "epoch %s: the ranks with more will wait in a collective the others never "
                      "enter" % counts, _state.call_site(2))
    elif p is not None and p.agreed is None:
        p.agreed = known[0]


def at_ddp_forward(ddp):
    """The first DDP training forward of a pass: compare with the peers."""
    p = _data.latest
    if p is None or p.exchanged or p.finished:
        return
    p.exchanged = True
    seed = getattr(p.sampler, "seed", -1) if p.sampler is not None else -1
    device = next((t.device for t in ddp.parameters()), "cpu")
    rows = _exchange.gather_ints([p.promised, int(seed)], ddp.process_group, device)
    judge([r[0] for r in rows], p)
    if _state.on(missing_set_epoch.BUG):
        missing_set_epoch.judge_seeds([r[1] for r in rows])


def on_batch(p):
    if _data.joins:
        return
    if p.agreed is not None and p.yielded > p.agreed:
        _state.report(BUG, "this rank's data loader yields batch %d, but every rank agreed on %d "
                      "this epoch (its len() was wrong): the next collective would wait for "
                      "peers that have finished" % (p.yielded, p.agreed), p.site)


def on_end(p):
    if _data.joins:
        return
    if p.agreed is not None and p.yielded < p.agreed:
        _state.report(BUG, "this rank's data loader ended after %d batches, but every rank agreed "
                      "on %d this epoch (its len() was wrong): the other ranks are waiting in step "
                      "%d's collective" % (p.yielded, p.agreed, p.yielded + 1), p.site)
