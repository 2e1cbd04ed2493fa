"""small_batch_bn: BatchNorm in training mode under DDP with fewer than 8
samples per rank and no SyncBatchNorm.

Why at the layer's first training forward: the batch a BatchNorm layer
normalises over is known only there (a model may split or reshape its
input). The hooks go on at the first DDP training forward, only on the
plain BatchNorm layers inside that DDP model (SyncBatchNorm is the fix and is
left alone), and each removes itself after its first check, so a training
step pays nothing after step 1. 8 is where the suite measured the gap to
SyncBatchNorm falling under 1 pp (repro/small_batch_bn/README.md).
"""
from .. import _exchange, _state

BUG = "small_batch_bn"
MIN_PER_RANK = 8


def attach(ddp):
    import torch
    ddp._ddp_pitfalls_bn = True
    _, world = _exchange.group_rank_world(ddp.process_group)
    if world < 2:
        return
    sync = torch.nn.SyncBatchNorm
    for name, m in ddp.module.named_modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and not isinstance(m, sync):
            holder = []
            holder.append(m.register_forward_pre_hook(_hook(name, world, holder)))


def _hook(name, world, holder):
    def check(module, inputs):
        if not module.training or not inputs or not hasattr(inputs[0], "shape"):
            return
        holder[0].remove()
        n = int(inputs[0].shape[0])
        if n < MIN_PER_RANK:
            _state.report(BUG, "%s '%s' normalises over %d samples per rank in training mode "
                          "under DDP (W = %d), no SyncBatchNorm" %
                          (type(module).__name__, name, n, world))
    return check
