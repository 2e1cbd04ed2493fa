"""W = 3: a head model in DDP over subgroup [0, 1] is forwarded first on
those ranks, then the trunk in DDP over the whole world on every rank."""
import torch.distributed as dist

from ._common import data, ddp, loss_fn, mlp, sgd, shape, sharded

SRC = "issue 70"


@shape("subgroup_head", SRC, world=3)
def run(rank, world, inject):
    group = dist.new_group([0, 1])
    loader = sharded(data(48), batch=8)
    trunk = ddp(mlp())
    head = ddp(mlp(d=4, classes=4, seed=1), group=group) if rank < 2 else None
    opt = sgd(trunk)
    loader.sampler.set_epoch(0)
    for x, y in loader:
        if head is not None:
            head(x[:, :4]).sum().backward()
        opt.zero_grad()
        loss_fn(trunk(x), y).backward()
        opt.step()
