"""Where the guard hooks into PyTorch: torch.distributed's all_gather,
all_gather_into_tensor and all_reduce; DataLoader.__iter__ and its
iterator's __next__; DistributedDataParallel's forward; torch.autograd.backward;
Join's context. Each wrapper does the least it can when nothing is wrong (a few
attribute reads) and hands the real work to the check modules.

Wrapped at class or module level, so objects made before install() are
covered too; `from torch.distributed import all_gather` made before install()
keeps the original (the guard README says to install first).
"""
import functools
import sys

from . import _data, _exchange, _points, _state
from .checks import (autograd_lost_gather, drop_last_hang, mean_of_means, missing_set_epoch,
                     small_batch_bn, wrong_all_gather)

# (owner, name, original, wrapper): built once, at the first install();
# install() and uninstall() then only swap attributes, so turning the guard
# on and off allocates nothing and is the same every time.
_installed = []
_active = [False]


def _wrap(owner, name, make):
    original = getattr(owner, name, None)
    if original is None:
        return None
    wrapper = functools.wraps(original)(make(original))
    _installed.append((owner, name, original, wrapper))
    return original


def _arg(args, kwargs, i, name, default=None):
    return args[i] if len(args) > i else kwargs.get(name, default)


_SYNC_BN = ("nn", "modules", "_functions.py")  # SyncBatchNorm's gathers: sizes fixed by the layer


def _gather_preflight(outputs, tensor, group, into_tensor):
    """Before the job's all_gather: a meeting point, then the size exchange
    (inside the job's own collective: every member makes it)."""
    if not hasattr(tensor, "requires_grad"):
        return None
    met = _points.collective(group)
    if met is None:
        return None
    rank, world = met
    if autograd_lost_gather._pending is not None:
        autograd_lost_gather.check_pending()
    if _state.on(autograd_lost_gather.BUG) and not into_tensor:
        autograd_lost_gather.remember(outputs, rank, tensor)
    if not _state.on(wrong_all_gather.BUG):
        return met
    caller = sys._getframe(2).f_code.co_filename
    if tuple(caller.split("/")[-3:]) == _SYNC_BN:
        return met
    row = wrong_all_gather.fields(outputs, tensor, into_tensor) + [
        wrong_all_gather.repeats_flag(tensor)]
    rows = _exchange.gather_ints(row, group, tensor.device)
    wrong_all_gather.judge(rows, into_tensor)
    wrong_all_gather.judge_repeats([r[3] for r in rows], tensor)
    return met


def _after(met, args, kwargs, i_async):
    if met is not None and not _arg(args, kwargs, i_async, "async_op", False):
        _points.after_collective()


def _all_gather(original):
    def all_gather(*args, **kwargs):
        met = _gather_preflight(_arg(args, kwargs, 0, "tensor_list"),
                                _arg(args, kwargs, 1, "tensor"), _arg(args, kwargs, 2, "group"),
                                False)
        work = original(*args, **kwargs)
        _after(met, args, kwargs, 3)
        return work
    return all_gather


def _all_gather_into_tensor(original):
    def all_gather_into_tensor(*args, **kwargs):
        met = _gather_preflight(_arg(args, kwargs, 0, "output_tensor"),
                                _arg(args, kwargs, 1, "input_tensor"),
                                _arg(args, kwargs, 2, "group"), True)
        work = original(*args, **kwargs)
        _after(met, args, kwargs, 3)
        return work
    return all_gather_into_tensor


def _all_reduce(original):
    import torch.distributed as dist
    op_sum = dist.ReduceOp.SUM

    def all_reduce(*args, **kwargs):
        # Read positionally where the job passed them (no _arg calls): a step
        # that logs metrics comes through here several times.
        n = len(args)
        tensor = args[0] if n else kwargs.get("tensor")
        if not hasattr(tensor, "numel"):
            return original(*args, **kwargs)
        if autograd_lost_gather._pending is not None:
            autograd_lost_gather.check_pending()
        met = _points.collective(args[2] if n > 2 else kwargs.get("group"))
        kind = None
        if met is not None and _state.config.enabled[mean_of_means.BUG]:
            kind = mean_of_means.kind(tensor, args[1] if n > 1 else kwargs.get("op", op_sum),
                                      sys._getframe(1))
        work = original(*args, **kwargs)
        if met is None:
            return work
        blocking = not (args[3] if n > 3 else kwargs.get("async_op", False))
        if blocking:
            _points.after_collective()
        if kind == "float":
            mean_of_means.after_float()
        elif kind == "int" and blocking:
            mean_of_means.after_int(tensor, args[2] if n > 2 else kwargs.get("group"))
        return work
    return all_reduce


def _promises(loader):
    """(batches, samples, batch size, drop_last) the loader promises; -1
    where it cannot say (no __len__, or a __len__ that raises)."""
    try:
        batches = len(loader)
    except Exception:  # noqa: BLE001 (TypeError, NotImplementedError, anything)
        batches = -1
    size = loader.batch_size if isinstance(getattr(loader, "batch_size", None), int) else -1
    try:
        samples = len(loader.sampler) if size > 0 else -1
    except Exception:  # noqa: BLE001
        samples = -1
    return batches, samples, size, bool(getattr(loader, "drop_last", False))


def _loader_iter(original):
    from torch.utils.data import DistributedSampler

    def __iter__(self):
        it = original(self)
        sampler = getattr(self, "sampler", None)
        if not isinstance(sampler, DistributedSampler):
            sampler = None
        order = missing_set_epoch.order_of(sampler) if sampler is not None else None
        p = _data.Pass(*_promises(self), sampler=sampler, order=order)
        if order is not None and _state.on(missing_set_epoch.BUG):
            p.repeat = _data.completed.get(order[:-1]) == order[-1]
        try:
            it._ddp_pitfalls = p
        except AttributeError:
            return it
        _data.started(p)
        return it
    return __iter__


def _loader_next(original):
    def __next__(self):
        p = getattr(self, "_ddp_pitfalls", None)
        try:
            batch = original(self)
        except StopIteration:
            if p is not None and not p.finished:
                _data.ended(p)
                _points.at_end(p)
            raise
        if p is not None:
            _data.yielded(p, _data.batch_size(batch))
        return batch
    return __next__


def _join_enter(original):
    def __enter__(self):
        _data.joins += 1
        return original(self)
    return __enter__


def _join_exit(original):
    def __exit__(self, *exc):
        _data.joins -= 1
        return original(self, *exc)
    return __exit__


def _ddp_forward(original):
    import torch

    def forward(self, *args, **kwargs):
        if autograd_lost_gather._pending is not None:
            autograd_lost_gather.check_pending()
        if not (self.training and torch.is_grad_enabled()):
            return original(self, *args, **kwargs)
        st = _points.model(self)
        if not st.bn and _state.on(small_batch_bn.BUG):
            small_batch_bn.attach(self, st)
        _points.ddp_enter(st)
        out = original(self, *args, **kwargs)
        _points.ddp_exit(self, st)
        return out
    return forward


def _backward(original):
    def backward(*args, **kwargs):
        if autograd_lost_gather._pending is not None:
            autograd_lost_gather.check_pending()
        if autograd_lost_gather._mode[0] is not None:
            autograd_lost_gather.before_backward(_arg(args, kwargs, 0, "tensors"))
        result = original(*args, **kwargs)
        _points.backward_done()
        return result
    return backward


def install():
    if not _installed:
        _build()
    if not _active[0]:
        for owner, name, _, wrapper in _installed:
            setattr(owner, name, wrapper)
        _active[0] = True


def uninstall():
    if _active[0]:
        for owner, name, original, _ in reversed(_installed):
            setattr(owner, name, original)
        _active[0] = False


def _build():
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DataLoader
    from torch.utils.data.dataloader import _BaseDataLoaderIter

    for name, make in (("all_gather", _all_gather), ("all_reduce", _all_reduce),
                       ("all_gather_into_tensor", _all_gather_into_tensor)):
        original = _wrap(c10d, name, make)
        if original is not None:
            _exchange.ORIGINAL.setdefault(name, original)
            if getattr(dist, name, None) is original:  # torch.distributed's own name for it
                _installed.append((dist, name, original, _installed[-1][3]))
    import torch.autograd
    _wrap(torch.autograd, "backward", _backward)  # Tensor.backward calls it by this name
    _wrap(DataLoader, "__iter__", _loader_iter)
    _wrap(_BaseDataLoaderIter, "__next__", _loader_next)
    _wrap(DistributedDataParallel, "forward", _ddp_forward)
    try:
        from torch.distributed.algorithms.join import Join
    except ImportError:
        return
    _wrap(Join, "__enter__", _join_enter)
    _wrap(Join, "__exit__", _join_exit)
