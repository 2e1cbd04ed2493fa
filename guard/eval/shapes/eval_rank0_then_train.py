"""Evaluation on rank 0 only (an un-wrapped copy of the model, its own
loader), then training on every rank."""
import torch
from torch.utils.data import DataLoader

from ._common import data, ddp, loss_fn, mlp, sgd, shape, sharded

SRC = "issue 70"


@shape("eval_rank0_then_train", SRC)
def run(rank, world, inject):
    model = ddp(mlp())
    if rank == 0:
        with torch.no_grad():
            correct = sum((model.module(x).argmax(1) == y).sum().item()
                          for x, y in DataLoader(data(40, seed=1), batch_size=8))
        print("eval acc", correct / 40)
    loader = sharded(data(64), batch=8)
    opt = sgd(model)
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
