"""Where the guard hooks into PyTorch: torch.distributed's all_gather,
all_gather_into_tensor and all_reduce; DistributedSampler.__iter__;
DataLoader.__iter__ and its iterator's __next__; DistributedDataParallel's
forward. Each wrapper does the least it can when nothing is wrong (a few
attribute reads) and hands the real work to the check modules.

Wrapped at class or module level, so objects made before install() are
covered too; `from torch.distributed import all_gather` made before install()
keeps the original (the guard README says to install first).
"""
import functools
import sys

from . import _data, _exchange, _state
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


def _gather_preflight(outputs, tensor, group, into_tensor):
    rank, world = _exchange.group_rank_world(group)
    if rank < 0 or world < 2 or not hasattr(tensor, "requires_grad"):
        return
    if _state.on(autograd_lost_gather.BUG):
        autograd_lost_gather.check_pending()
        if not into_tensor:
            autograd_lost_gather.remember(outputs, rank, tensor)
    if _state.on(wrong_all_gather.BUG) and _data.latest is not None:
        wrong_all_gather.check_sampler_repeats(tensor)
    grad = autograd_lost_gather.local_flag(tensor)
    if not (_state.on(wrong_all_gather.BUG) or _state.on(drop_last_hang.BUG)):
        if grad:
            autograd_lost_gather.judge([grad])
        return
    row = wrong_all_gather.fields(outputs, tensor, into_tensor) + [grad, _data.active_promised()]
    rows = _exchange.gather_ints(row, group, tensor.device)
    if _state.on(wrong_all_gather.BUG):
        wrong_all_gather.judge(rows, into_tensor)
    if _state.on(drop_last_hang.BUG):
        drop_last_hang.judge([r[4] for r in rows], _data.latest)
    autograd_lost_gather.judge([r[3] for r in rows])


def _all_gather(original):
    def all_gather(*args, **kwargs):
        _gather_preflight(_arg(args, kwargs, 0, "tensor_list"), _arg(args, kwargs, 1, "tensor"),
                          _arg(args, kwargs, 2, "group"), False)
        return original(*args, **kwargs)
    return all_gather


def _all_gather_into_tensor(original):
    def all_gather_into_tensor(*args, **kwargs):
        _gather_preflight(_arg(args, kwargs, 0, "output_tensor"),
                          _arg(args, kwargs, 1, "input_tensor"),
                          _arg(args, kwargs, 2, "group"), True)
        return original(*args, **kwargs)
    return all_gather_into_tensor


def _all_reduce(original):
    import torch.distributed as dist

    def all_reduce(*args, **kwargs):
        tensor = _arg(args, kwargs, 0, "tensor")
        op = _arg(args, kwargs, 1, "op", dist.ReduceOp.SUM)
        group = _arg(args, kwargs, 2, "group")
        kind = None
        if autograd_lost_gather._pending is not None:
            autograd_lost_gather.check_pending()
        if _state.on(mean_of_means.BUG) and hasattr(tensor, "numel"):
            rank, world = _exchange.group_rank_world(group)
            if rank >= 0 and world > 1:
                kind = mean_of_means.kind(tensor, op, sys._getframe(1))
        if kind == "float":
            mean_of_means.before_float(tensor, group)
        work = original(*args, **kwargs)
        if kind == "int" and not _arg(args, kwargs, 3, "async_op", False):
            mean_of_means.after_int(tensor, group)
        return work
    return all_reduce


def _sampler_iter(original):
    def __iter__(self):
        if _state.on(missing_set_epoch.BUG):
            missing_set_epoch.on_sampler_iter(self)
        return original(self)
    return __iter__


def _loader_iter(original):
    from torch.utils.data import DistributedSampler

    def __iter__(self):
        it = original(self)
        try:
            promised = len(self)
        except TypeError:  # an IterableDataset without __len__
            promised = -1
        sampler = self.sampler if isinstance(self.sampler, DistributedSampler) else None
        p = _data.Pass(promised, None, sampler)
        try:
            it._ddp_pitfalls = p
        except AttributeError:
            return it
        _data.latest = p
        return it
    return __iter__


def _loader_next(original):
    def __next__(self):
        p = getattr(self, "_ddp_pitfalls", None)
        try:
            batch = original(self)
        except StopIteration:
            if p is not None:
                p.finished = True
                if _state.on(drop_last_hang.BUG):
                    drop_last_hang.on_end(p)
            raise
        if p is not None:
            p.yielded += 1
            n = _data.batch_size(batch)
            p.samples += n
            p.last_batch = n
            _data.latest = p
            if p.agreed is not None and p.yielded > p.agreed and _state.on(drop_last_hang.BUG):
                drop_last_hang.on_batch(p)
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
        if self.training and torch.is_grad_enabled():
            if not getattr(self, "_ddp_pitfalls_bn", False) and _state.on(small_batch_bn.BUG):
                small_batch_bn.attach(self)
            p = _data.latest
            if (p is not None and not p.exchanged and not p.finished and
                    (_state.on(drop_last_hang.BUG) or _state.on(missing_set_epoch.BUG))):
                drop_last_hang.at_ddp_forward(self)
        return original(self, *args, **kwargs)
    return forward


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
    from torch.utils.data import DataLoader, DistributedSampler
    from torch.utils.data.dataloader import _BaseDataLoaderIter

    for name, make in (("all_gather", _all_gather), ("all_reduce", _all_reduce),
                       ("all_gather_into_tensor", _all_gather_into_tensor)):
        original = _wrap(c10d, name, make)
        if original is not None:
            _exchange.ORIGINAL.setdefault(name, original)
            if getattr(dist, name, None) is original:  # torch.distributed's own name for it
                _installed.append((dist, name, original, _installed[-1][3]))
    _wrap(DistributedSampler, "__iter__", _sampler_iter)
    _wrap(DataLoader, "__iter__", _loader_iter)
    _wrap(_BaseDataLoaderIter, "__next__", _loader_next)
    _wrap(DistributedDataParallel, "forward", _ddp_forward)
    try:
        from torch.distributed.algorithms.join import Join
    except ImportError:
        return
    _wrap(Join, "__enter__", _join_enter)
    _wrap(Join, "__exit__", _join_exit)
