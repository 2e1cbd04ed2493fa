"""The README's fix for mean_of_means: sum and count as two one-element
all_reduces, avg = sum / count, with a division by world_size nearby (the
per-rank batch from a global one). Correct. Injected: each rank's mean
all-reduced and divided by world_size over shards of unequal size."""
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader

from ._common import data, mlp, own_shard, shape

SRC = "issue 70"


@shape("sum_count_reduce", SRC, injects=["mean_of_means"])
def run(rank, world, inject):
    model = mlp()
    global_batch = 16
    per_rank = global_batch // dist.get_world_size()
    loss_sum, n = 0.0, 0
    with torch.no_grad():
        for x, y in DataLoader(own_shard(data(40), rank, world, extra=6), batch_size=per_rank):
            loss_sum += torch.nn.functional.cross_entropy(model(x), y, reduction="sum").item()
            n += len(y)
    if inject == "mean_of_means":
        mean = torch.tensor([loss_sum / n])
        dist.all_reduce(mean)
        mean /= dist.get_world_size()
        return
    s, c = torch.tensor([loss_sum]), torch.tensor([float(n)])
    dist.all_reduce(s)
    dist.all_reduce(c)
    avg = s / c
    lr = 0.1 * dist.get_world_size()  # linear scaling, a division-free line
    assert avg.item() > 0 and lr > 0
