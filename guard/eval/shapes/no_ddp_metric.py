"""No DDP: each rank evaluates its own shard and all-reduces a metric every
batch. Correct: equal shards. Injected: rank 0 has one batch more, so its
last all_reduce has no partner (drop_last_hang at the pass's first collective)."""
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader

from ._common import data, mlp, own_shard, shape

SRC = "issue 70"


@shape("no_ddp_metric_per_batch", SRC, injects=["drop_last_hang"])
def run(rank, world, inject):
    model = mlp()
    extra = 8 if inject == "drop_last_hang" else 0
    with torch.no_grad():
        for x, y in DataLoader(own_shard(data(64), rank, world, extra=extra), batch_size=8):
            hits = torch.tensor([(model(x).argmax(1) == y).sum().item(), len(y)])
            dist.all_reduce(hits)
