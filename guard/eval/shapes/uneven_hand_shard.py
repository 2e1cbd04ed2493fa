"""A script that splits the data by hand, rank by rank, with no
DistributedSampler. Correct: 32 steps each. Injected: 33 vs 32 steps, the
long rank's last gradient all-reduce has no partner (drop_last_hang)."""
from torch.utils.data import DataLoader

from ._common import data, ddp, loss_fn, mlp, own_shard, sgd, shape

SRC = "issue 70"


@shape("uneven_hand_shard", SRC, injects=["drop_last_hang"])
def run(rank, world, inject):
    extra = 1 if inject == "drop_last_hang" else 0
    loader = DataLoader(own_shard(data(64), rank, world, extra=extra), batch_size=1)
    model = ddp(mlp())
    opt = sgd(model)
    for x, y in loader:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
