"""A warm-up pass that breaks after a few batches (to settle the learning
rate or benchmark), then the real epochs with set_epoch. Injected: the real
epochs without set_epoch."""
from ._common import data, ddp, loss_fn, mlp, sgd, shape, sharded

SRC = "issue 70"


@shape("warmup_break", SRC, injects=["missing_set_epoch"])
def run(rank, world, inject):
    loader = sharded(data(64), batch=8)
    model = ddp(mlp())
    opt = sgd(model, lr=0.001)
    for i, (x, y) in enumerate(loader):  # warm-up
        if i == 2:
            break
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    for epoch in range(3):
        if inject is None:
            loader.sampler.set_epoch(epoch)
        for x, y in loader:
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
