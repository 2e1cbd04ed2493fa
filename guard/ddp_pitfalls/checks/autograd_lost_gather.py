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
