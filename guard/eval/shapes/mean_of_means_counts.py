"""A per-rank mean over a filtered subset (only the samples of class 0..1
count), so the counts are not a DataLoader pass's. Correct: (sum, count)
reduced together. Not injected: the means reduced and divided by
world_size over those counts are a mean of means, but the counts live in
the loop's own variables, not in any pass (every rank's pass is 32
samples): the guard says nothing there (guard/README.md, what cannot be
known at run time). Run by hand with inject="mean_of_means"."""
import torch
import torch.distributed as dist

from ._common import data, mlp, shape, sharded

SRC = "issue 70"


@shape("mean_of_means_filtered", SRC, injects=[])
def run(rank, world, inject):
    model = mlp()
    total, count = 0.0, 0
    with torch.no_grad():
        for x, y in sharded(data(64, seed=rank), batch=8, shuffle=False):
            keep = y < 2
            total += model(x[keep]).sum().item()
            count += int(keep.sum())
    if inject == "mean_of_means":
        m = torch.tensor([total / max(count, 1)])
        dist.all_reduce(m)
        m /= world
    else:
        t = torch.tensor([total, float(count)])
        dist.all_reduce(t)
        assert t[1] > 0
