"""Join, the documented fix for uneven inputs: rank 1 has no batch at all,
and Join wraps two epochs. Correct."""
from torch.distributed.algorithms.join import Join
from torch.utils.data import DataLoader, Subset

from ._common import data, ddp, loss_fn, mlp, sgd, shape

SRC = "issue 70"


@shape("join_two_epochs", SRC)
def run(rank, world, inject):
    ds = Subset(data(16), range(16) if rank == 0 else [])  # rank 1: no batch
    loader = DataLoader(ds, batch_size=4)
    model = ddp(mlp())
    opt = sgd(model)
    with Join([model]):
        for epoch in range(2):
            for x, y in loader:
                opt.zero_grad()
                loss_fn(model(x), y).backward()
                opt.step()
