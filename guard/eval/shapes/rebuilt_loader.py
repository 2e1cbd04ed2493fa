"""Loader and DistributedSampler rebuilt at the top of every epoch (a
get_dataloader(epoch) helper). Correct: set_epoch(epoch) on the new sampler.
Injected: without it, every epoch has the same order (missing_set_epoch)."""
from torch.utils.data import DataLoader, DistributedSampler

from ._common import data, ddp, loss_fn, mlp, sgd, shape

SRC = "issue 70"


@shape("rebuilt_loader", SRC, injects=["missing_set_epoch"])
def run(rank, world, inject):
    ds = data(64)
    model = ddp(mlp())
    opt = sgd(model)
    for epoch in range(3):
        sampler = DistributedSampler(ds, shuffle=True)
        if inject is None:
            sampler.set_epoch(epoch)
        for x, y in DataLoader(ds, batch_size=8, sampler=sampler):
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
