"""Gradient accumulation with DDP's no_sync(): the first accum-1 micro
batches skip the gradient all-reduce, the last one syncs."""
import contextlib

from ._common import data, ddp, loss_fn, mlp, sgd, shape, sharded

SRC = "issue 70 (no_sync accumulation, as in accelerate's gradient_accumulation example)"


@shape("no_sync_accumulation", SRC)
def run(rank, world, inject):
    loader = sharded(data(64), batch=4)
    model = ddp(mlp())
    opt = sgd(model)
    accum = 2
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for i, (x, y) in enumerate(loader):
            ctx = model.no_sync() if (i + 1) % accum else contextlib.nullcontext()
            with ctx:
                (loss_fn(model(x), y) / accum).backward()
            if (i + 1) % accum == 0:
                opt.step()
                opt.zero_grad()
