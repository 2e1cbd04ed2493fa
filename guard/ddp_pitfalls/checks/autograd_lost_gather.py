"""autograd_lost_gather: a c10d all_gather of a tensor that requires grad.

Why at the gather: torch.distributed.all_gather writes into fresh tensors
outside autograd, so whatever is gathered is a constant from then on; the
moment the input requires grad (with grad mode on) is the moment the
gradient is lost. Under torch.no_grad(), or inside an autograd Function's
forward (torch.distributed.nn.functional.all_gather, the fix), grad mode is
off and nothing is reported. The flag rides in the wrong_all_gather
exchange when that runs, so every rank reports it together.
"""
from .. import _state

BUG = "autograd_lost_gather"


def local_flag(tensor):
    import torch
    return int(bool(tensor.requires_grad) and torch.is_grad_enabled())


def judge(flags):
    if any(flags):
        _state.report(BUG, "torch.distributed.all_gather of a tensor that requires grad (ranks %s): "
                      "the gathered tensors carry no gradient" %
                      [r for r, f in enumerate(flags) if f], _state.call_site(2))


# The seed's own fix (torchmetrics >= 1.6): gather under torch.no_grad(),
# then put the local tensor back into its slot, `gathered[rank] = tensor`,
# so the loss has a graph again, through this rank's slot only (the DDP
# gradient is then 1/W of the true one for a global loss). At the gather
# this looks like a values-only gather; what tells them apart comes after
# it. So a no_grad gather of a tensor that requires grad is remembered, and
# the guard's next hook (any wrapped collective or DDP forward) looks
# whether the list's own slot now holds that very tensor.
_pending = None  # (output list, this rank's index, the input tensor, call site)


def remember(outputs, rank, tensor):
    global _pending
    import torch
    if (not torch.is_grad_enabled() and tensor.requires_grad and isinstance(outputs, list)
            and 0 <= rank < len(outputs)):
        _pending = (outputs, rank, tensor, _state.call_site())


def check_pending():
    global _pending
    if _pending is None:
        return
    outputs, rank, tensor, site = _pending
    _pending = None
    if outputs[rank] is tensor:
        _state.report(BUG, "all_gather under no_grad of a tensor that requires grad, then the "
                      "local tensor put back into its own slot: the gradient flows through this "
                      "rank's slot only, the peers' slots are constants", site)
