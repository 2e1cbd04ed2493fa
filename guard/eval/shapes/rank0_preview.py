"""Rank 0 alone takes a preview batch (to print shapes or log a sample
grid) before training; the other ranks never touch that loader."""
from ._common import data, ddp, loss_fn, mlp, sgd, shape, sharded

SRC = "issue 70"


@shape("rank0_preview", SRC)
def run(rank, world, inject):
    loader = sharded(data(64), batch=8)
    if rank == 0:
        x, _ = next(iter(loader))
        print("preview", tuple(x.shape))
    model = ddp(mlp())
    opt = sgd(model)
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
