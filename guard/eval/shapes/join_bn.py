"""Join with a BatchNorm model and uneven shards. Correct at 8 per rank.
Injected: 2 per rank (small_batch_bn), which every rank must report alike."""
from torch.distributed.algorithms.join import Join
from torch.utils.data import DataLoader

from ._common import data, ddp, loss_fn, mlp, own_shard, sgd, shape

SRC = "issue 70"


@shape("join_bn", SRC, injects=["small_batch_bn"])
def run(rank, world, inject):
    loader = DataLoader(own_shard(data(64), rank, world, extra=8),
                        batch_size=2 if inject else 8)
    model = ddp(mlp(bn=True))
    opt = sgd(model)
    with Join([model]):
        for x, y in loader:
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
