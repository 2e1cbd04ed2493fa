"""A validation DistributedSampler left at shuffle=True and never given
set_epoch, evaluated every epoch: the order changes nothing."""
import torch
from torch.utils.data import DataLoader, DistributedSampler

from ._common import data, ddp, loss_fn, mlp, sgd, shape, sharded

SRC = "issue 70"


@shape("val_sampler_shuffle", SRC)
def run(rank, world, inject):
    train = sharded(data(64), batch=8)
    val_ds = data(32, seed=1)
    val = DataLoader(val_ds, batch_size=8, sampler=DistributedSampler(val_ds, shuffle=True))
    model = ddp(mlp())
    opt = sgd(model)
    for epoch in range(3):
        train.sampler.set_epoch(epoch)
        model.train()
        for x, y in train:
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            for x, y in val:
                model(x)
