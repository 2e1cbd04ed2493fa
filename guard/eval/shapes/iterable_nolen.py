"""An IterableDataset without __len__ sharding a stream by rank. Correct:
equal counts. Not injected: with rank 0's stream one batch longer its last
DDP step has no partner, but a loader without len() promises no count, and
the count that matters is known only when the short rank's pass ends, after
the long rank's extra all-reduce was paired with whatever the short rank
called next: the guard says nothing there (guard/README.md, what cannot be
known at run time). Run by hand with inject="drop_last_hang"."""
import torch
from torch.utils.data import DataLoader, IterableDataset

from ._common import ddp, loss_fn, mlp, sgd, shape

SRC = "issue 70"


class Shard(IterableDataset):
    def __init__(self, n, seed):
        self.n, self.seed = n, seed

    def __iter__(self):
        g = torch.Generator().manual_seed(self.seed)
        for _ in range(self.n):
            yield torch.randn(8, generator=g), int(torch.randint(0, 4, (1,), generator=g))


@shape("iterable_uneven_nolen", SRC, injects=[])
def run(rank, world, inject):
    n = 32 + (4 if inject == "drop_last_hang" and rank == 0 else 0)
    model = ddp(mlp())
    opt = sgd(model)
    for x, y in DataLoader(Shard(n, rank), batch_size=4):
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
