"""drop_last_hang: ranks whose data loaders promise different numbers of
batches in one loop of steps.

Where: the promised counts (len(loader); for loaders zipped together, the
fewest of them, since zip stops at the shortest) ride in each rank's row of
the pass (_points.py), pinned at the loop's first meeting point and read at
its second, or at its end. So the verdict comes from the same rows on every
rank, at step 2 of the loop, long before the short rank runs out.

Compared only what every rank agrees is the same loop: rows pinned under
the same key (the same DDP model's same training forward, or the same
collective of the group), by a pass still being read, in a loop that meets
at least twice (a DDP training loop, or one that calls a collective every
step: a loop that reduces once at its end does not wait on uneven counts).
Inside `with Join(...)` (the fix that lets ranks run uneven counts) nothing
is reported. Loaders that promise no count (an IterableDataset without
__len__) and a len() that is wrong alike on every rank are not judged: the
count that matters is known only when the short rank's pass ends, after the
extra step's collective was already paired.
"""
from .. import _state

BUG = "drop_last_hang"


def judge(counts, ddp):
    if any(c < 0 for c in counts) or len(set(counts)) < 2:
        return
    loop = "DDP training loop" if ddp else "loop (a collective every step)"
    _state.report(BUG, "the ranks' data loaders promise different numbers of batches in this %s "
                  "%s" % (loop, counts))
