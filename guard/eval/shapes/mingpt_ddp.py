"""minGPT-ddp's Trainer: a train loader with set_epoch and an evaluation
loader over a DistributedSampler that shuffles (the default) and never gets
set_epoch; evaluation under no_grad after each epoch. Harmless: evaluation
order does not matter. Injected: no set_epoch on the training loader, or an
evaluation that gathers 51 vs 50 predictions from hand-made shards."""
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

from ._common import data, ddp, loss_fn, mlp, own_shard, sgd, shape

SRC = "pytorch/examples@77f55b912142e11fcfdf5b530231fb9c52f181e8 distributed/minGPT-ddp/mingpt/trainer.py"


@shape("mingpt_ddp", SRC, injects=["missing_set_epoch", "wrong_all_gather"])
def run(rank, world, inject):
    train_ds, test_ds = data(64), data(32, seed=1)
    train_loader = DataLoader(train_ds, batch_size=8, sampler=DistributedSampler(train_ds))
    test_loader = DataLoader(test_ds, batch_size=8, sampler=DistributedSampler(test_ds))
    model = ddp(mlp())
    opt = sgd(model)
    for epoch in range(2):
        if inject != "missing_set_epoch":
            train_loader.sampler.set_epoch(epoch)
        for x, y in train_loader:
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
        with torch.no_grad():
            for x, y in test_loader:  # never set_epoch: order is irrelevant here
                model(x)
    if inject == "wrong_all_gather":  # predictions of a hand-made 101-sample split
        mine = own_shard(data(101, seed=2), rank, world, extra=1)
        preds = torch.stack([mine[i][1] for i in range(len(mine))])
        out = [torch.zeros_like(preds) for _ in range(world)]
        dist.all_gather(out, preds)
