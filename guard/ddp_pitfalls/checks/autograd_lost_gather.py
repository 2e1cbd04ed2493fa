"""autograd_lost_gather: a c10d all_gather's outputs in a loss that is
differentiated.

torch.distributed.all_gather writes into fresh tensors outside autograd, so
whatever is gathered is a constant from then on. That is harmless when the
values are only logged (an accuracy over gathered logits), so the gather
itself is never reported. What is reported, judging the symptom:

- a backward of a loss computed from the gathered tensors, when they were
  gathered with grad on from a tensor that requires grad: the peers'
  contributions (and, unless the local tensor was put back, this rank's
  too) carry no gradient. To know whether the loss was computed from them,
  the outputs of such a gather are marked, and a torch function mode
  (torch.overrides.TorchFunctionMode) marks what every op computes from a
  marked tensor, until the next backward (or 100,000 ops). The backward of
  a marked loss is reported before it runs, naming the gather's line.
  Ops in between cost a few microseconds each, only in a step that made
  such a gather.
- the seed's own fix as torchmetrics >= 1.6 ships it: a gather of a tensor
  that requires grad, then the local tensor put back into its own slot
  (`gathered[rank] = tensor`). The loss then has a graph through this
  rank's slot only (the DDP gradient is 1/W of the true one for a global
  loss). Putting the tensor back is the sign the gathered list is meant for
  a gradient; the guard's next hook (any wrapped collective, DDP forward or
  backward) looks whether the list's own slot now holds that very tensor.

Never reported: a values-only gather (logits gathered for a log, with or
without grad), gathers under no_grad or of detached tensors whose outputs
reach no differentiated loss, torch.distributed.nn.functional.all_gather
(the fix: it runs inside an autograd Function, grad mode off).
"""
from .. import _state

BUG = "autograd_lost_gather"
MAX_OPS = 100000
_pending = None  # (output list, this rank's index, the input tensor, call site)
_marked = {}     # id(tensor) -> (weakref, gather site): computed from gathered constants
_mode = [None, 0]  # the active marking mode, ops seen


def local_flag(tensor):
    import torch
    return int(bool(tensor.requires_grad) and torch.is_grad_enabled())


def _tensors(obj, depth=0):
    import torch
    if isinstance(obj, torch.Tensor):
        yield obj
    elif depth < 3 and isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _tensors(o, depth + 1)
    elif depth < 3 and isinstance(obj, dict):
        for o in obj.values():
            yield from _tensors(o, depth + 1)


def _mark(obj, site):
    import weakref
    for t in _tensors(obj):
        if len(_marked) < 4096:
            _marked[id(t)] = (weakref.ref(t), site)


def _site_of(obj):
    for t in _tensors(obj):
        got = _marked.get(id(t))
        if got is not None and got[0]() is t:
            return got[1]
    return None


def _make_mode():
    from torch.overrides import TorchFunctionMode

    class Marking(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            _mode[1] += 1
            site = _site_of(args) or (_site_of(kwargs) if kwargs else None)
            if site is not None:
                _mark(out, site)
            if _mode[1] > MAX_OPS:
                stop()
            return out
    return Marking()


def remember(outputs, rank, tensor):
    global _pending
    if tensor.requires_grad and isinstance(outputs, list) and 0 <= rank < len(outputs):
        _pending = (outputs, rank, tensor, _state.call_site())
    if local_flag(tensor) and isinstance(outputs, list):
        _mark(outputs, _state.call_site())
        if _mode[0] is None:
            try:
                _mode[0] = _make_mode()
                _mode[0].__enter__()
                _mode[1] = 0
            except Exception:  # noqa: BLE001 (no function modes: the put-back check alone)
                _mode[0] = None


def stop():
    """Ends the marking (at a backward, after MAX_OPS ops, at the guard's reset)."""
    mode, _mode[0] = _mode[0], None
    _marked.clear()
    if mode is not None:
        try:
            mode.__exit__(None, None, None)
        except Exception:  # noqa: BLE001
            pass


def before_backward(tensors):
    """A backward is about to run on `tensors`: report when they were
    computed from gathered constants."""
    site = _site_of(tensors) if _marked else None
    stop()
    if site is not None:
        _state.report(BUG, "backward of a loss computed from torch.distributed.all_gather's "
                      "outputs (gathered at %s with grad on, from a tensor that requires grad): "
                      "the gathered tensors are constants, so the peers' part of the loss "
                      "contributes no gradient" % site)


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
