"""Rank 0 reads the data (a file only it opens) and broadcasts it; every
rank then trains from the broadcast tensors without a DataLoader on ranks > 0."""
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader

from ._common import data, ddp, loss_fn, mlp, sgd, shape

SRC = "issue 70"


@shape("rank0_broadcast", SRC)
def run(rank, world, inject):
    x = torch.zeros(64, 8)
    y = torch.zeros(64, dtype=torch.long)
    if rank == 0:
        for i, (xb, yb) in enumerate(DataLoader(data(64), batch_size=16)):  # rank 0 reads
            x[i * 16:(i + 1) * 16], y[i * 16:(i + 1) * 16] = xb, yb
    dist.broadcast(x, 0)
    dist.broadcast(y, 0)
    model = ddp(mlp())
    opt = sgd(model)
    for i in range(rank, 64 // 8, world):
        opt.zero_grad()
        loss_fn(model(x[i * 8:(i + 1) * 8]), y[i * 8:(i + 1) * 8]).backward()
        opt.step()
