"""autograd_lost_gather: a c10d all_gather's outputs in a loss that is
differentiated.

torch.distributed.all_gather writes into fresh tensors outside autograd, so
whatever is gathered is a constant from then on. That is harmless when the
values are only logged (an accuracy over gathered logits), so the gather
itself is never reported. What is reported:

- a backward that fails because its loss holds no graph ("element 0 of
  tensors does not require grad") after a gather, with grad mode on, of a
  tensor that requires grad: the loss was built from the gathered
  constants. Reported at that backward, naming the gather's line.
- the seed's own fix as torchmetrics >= 1.6 ships it: a gather of a tensor
  that requires grad, then the local tensor put back into its own slot
  (`gathered[rank] = tensor`). The loss then has a graph through this
  rank's slot only (the DDP gradient is 1/W of the true one for a global
  loss). Putting the tensor back is the sign the gathered list is meant for
  a gradient; the guard's next hook (any wrapped collective, DDP forward or
  backward) looks whether the list's own slot now holds that very tensor.

Not caught: gathered constants added to a loss that also has local terms
(backward then works and their part of the gradient is silently missing).
Telling that from a values-only log needs the loss's data flow, which
autograd does not record for constants.
"""
from .. import _state

BUG = "autograd_lost_gather"
_lost = []       # call sites of grad-on gathers of tensors that require grad, since a backward
_pending = None  # (output list, this rank's index, the input tensor, call site)


def local_flag(tensor):
    import torch
    return int(bool(tensor.requires_grad) and torch.is_grad_enabled())


def remember(outputs, rank, tensor):
    global _pending
    if tensor.requires_grad and isinstance(outputs, list) and 0 <= rank < len(outputs):
        _pending = (outputs, rank, tensor, _state.call_site())
    if local_flag(tensor) and len(_lost) < 16:
        _lost.append(_state.call_site())


def check_pending():
    global _pending
    if _pending is None:
        return
    outputs, rank, tensor, site = _pending
    _pending = None
    if outputs[rank] is tensor:
        _state.report(BUG, "all_gather of a tensor that requires grad, then the local tensor put "
                      "back into its own slot: the gradient flows through this rank's slot only, "
                      "the peers' slots are constants", site)


def on_backward_error(error):
    """A backward raised `error`: explain it when a lost gather made it."""
    if _lost and "does not require grad" in str(error):
        site = _lost[0]
        _lost.clear()
        _state.report(BUG, "backward of a loss built from torch.distributed.all_gather's outputs "
                      "(gathered at %s with grad on, from a tensor that requires grad): the "
                      "gathered tensors carry no gradient, so the loss has none" % site, site)


def after_backward():
    _lost.clear()
