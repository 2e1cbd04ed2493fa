"""small_batch_bn: BatchNorm in training mode under DDP with fewer than 8
samples per rank and no SyncBatchNorm.

Where: the batch a BatchNorm layer normalises over is known only at its
forward (a model may split or reshape its input), so a pre-forward hook on
each plain BatchNorm layer of a DDP model (SyncBatchNorm, the fix, is left
alone) records the fewest samples seen at the model's first training step
and then removes itself: nothing is paid after step 1. The number is pinned
to the board (_board.py) after that forward and read before the model's
next training forward (step 1's backward all-reduced in between, so every
rank's row is there): the verdict is taken from every rank's rows at step 2,
so all ranks report together, also when their batches differ (under Join).
A model trained for one step only is not judged.
8 is where the suite measured the gap to SyncBatchNorm falling under 1 pp
(repro/small_batch_bn/README.md).
"""
from .. import _board, _data, _exchange, _points, _state

BUG = "small_batch_bn"
MIN_PER_RANK = 8


def attach(ddp, st):
    import torch
    st.bn = True
    _, world = _exchange.group_rank_world(ddp.process_group)
    if world < 2:
        return
    sync = torch.nn.SyncBatchNorm
    key = id(st)
    for name, m in ddp.module.named_modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and not isinstance(m, sync):
            holder = []
            holder.append(m.register_forward_pre_hook(_hook(name, key, holder)))


def _hook(name, key, holder):
    def check(module, inputs):
        if not module.training or not inputs or not hasattr(inputs[0], "shape"):
            return
        holder[0].remove()
        n = int(inputs[0].shape[0])
        seen = _data.bn_min.get(key)
        if seen is None or n < seen[0]:
            _data.bn_min[key] = (n, type(module).__name__, name)
    return check


def pin_ddp(st, grank, prefix):
    """After the model's first training forward: its row (the fewest
    samples a plain BatchNorm saw, or -1) on the board."""
    if st.bn_pinned:
        return
    st.bn_pinned = True
    st.bn_sync = _data.synced
    got = _data.bn_min.pop(id(st), None)
    _board.pin(prefix + "/bn", grank, [got[0] if got else -1])


def judged(st):
    return st.bn_tries >= _points.MAX_TRIES


def judge_ddp(st, gworld, prefix):
    """Before a later training forward: every rank's row, the same verdict
    on every rank."""
    if not st.bn_pinned or st.bn_tries >= _points.MAX_TRIES or _data.synced <= st.bn_sync:
        return
    rows = _board.read(prefix + "/bn", gworld)
    if rows is None:
        st.bn_tries += 1
        return
    st.bn_tries = _points.MAX_TRIES
    per_rank = [r[0] for r in rows]
    if _state.on(BUG) and any(0 < n < MIN_PER_RANK for n in per_rank):
        _state.report(BUG, "plain BatchNorm layers in training mode under DDP (W = %d, no "
                      "SyncBatchNorm) normalise over %s samples per rank at step 1" %
                      (gworld, per_rank))
