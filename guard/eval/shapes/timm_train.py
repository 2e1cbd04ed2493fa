"""timm's train.py: DistributedSampler, set_epoch, and every log_interval
steps reduce_tensor(loss): all_reduce(SUM) then /= world_size, of a loss every
rank computes from equally sized batches (a true mean; correct). Injected:
the same reduce_tensor of an eval accuracy over hand-made shards of unequal
size (a mean of means), or no set_epoch."""
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader

from ._common import data, ddp, loss_fn, mlp, own_shard, sgd, shape, sharded

SRC = "huggingface/pytorch-image-models train.py (train_one_epoch, utils/distributed.py reduce_tensor)"


def reduce_tensor(tensor, n):
    rt = tensor.clone()
    dist.all_reduce(rt, op=dist.ReduceOp.SUM)
    rt /= n
    return rt


@shape("timm_train", SRC, injects=["missing_set_epoch", "mean_of_means"])
def run(rank, world, inject):
    loader = sharded(data(96), batch=8, drop_last=True)
    model = ddp(mlp())
    opt = sgd(model)
    for epoch in range(2):
        if inject != "missing_set_epoch":
            loader.sampler.set_epoch(epoch)
        for batch_idx, (input, target) in enumerate(loader):
            loss = loss_fn(model(input), target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if batch_idx % 2 == 0:  # log_interval
                reduced_loss = reduce_tensor(loss.data, world)
                assert torch.isfinite(reduced_loss).all()
    if inject == "mean_of_means":
        correct = n = 0
        with torch.no_grad():
            for input, target in DataLoader(own_shard(data(40, seed=3), rank, world, extra=7),
                                            batch_size=8):
                correct += (model(input).argmax(1) == target).sum().item()
                n += len(target)
        acc = torch.tensor([correct / n])
        dist.all_reduce(acc, op=dist.ReduceOp.SUM)
        acc /= world
