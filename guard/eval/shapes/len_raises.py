"""A map-style dataset whose __len__ raises NotImplementedError (a lazy
reader that cannot count), iterated with an explicit index sampler.
Also at W = 1, without DDP's gradient all-reduce partner."""
import torch
from torch.utils.data import DataLoader, Dataset

from ._common import ddp, loss_fn, mlp, sgd, shape

SRC = "issue 70"


class Lazy(Dataset):
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(8, generator=g), int(i % 4)

    def __len__(self):
        raise NotImplementedError("a stream of unknown length")


def body(rank, world):
    loader = DataLoader(Lazy(), batch_size=4, sampler=list(range(rank, 64, world)))
    model = ddp(mlp())
    opt = sgd(model)
    for x, y in loader:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()


@shape("len_raises", SRC)
def run(rank, world, inject):
    body(rank, world)


@shape("len_raises_w1", SRC, world=1)
def run_w1(rank, world, inject):
    body(rank, world)
