"""An IterableDataset with __len__ read by 2 loader workers, each yielding
its part: len(loader) is wrong (it counts the whole set, per worker split
not applied) identically on every rank, so the ranks still step alike."""
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from ._common import ddp, loss_fn, mlp, sgd, shape

SRC = "issue 70"


class Stream(IterableDataset):
    def __init__(self, rank, n=32):
        self.rank, self.n = rank, n

    def __len__(self):
        return self.n * 2  # not what the workers yield; equal on every rank

    def __iter__(self):
        info = get_worker_info()
        wid, nw = (info.id, info.num_workers) if info else (0, 1)
        g = torch.Generator().manual_seed(self.rank)
        xs, ys = torch.randn(self.n, 8, generator=g), torch.randint(0, 4, (self.n,), generator=g)
        for i in range(wid, self.n, nw):
            yield xs[i], ys[i]


@shape("iterable_len_workers", SRC, wall="slow")
def run(rank, world, inject):
    loader = DataLoader(Stream(rank), batch_size=4, num_workers=2)
    model = ddp(mlp())
    opt = sgd(model)
    for x, y in loader:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
