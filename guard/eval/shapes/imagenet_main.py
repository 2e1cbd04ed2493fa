"""imagenet/main.py: set_epoch each epoch, AverageMeter for loss and top-1;
validation over DistributedSampler(shuffle=False, drop_last=True) plus an
auxiliary loader over the remainder on the ranks that have one, then
AverageMeter.all_reduce of (sum, count) and avg = sum / count. Correct.
Injected: the meters' averages all-reduced and divided by world_size, with
unequal counts (the auxiliary loader runs on rank 0 only)."""
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, Subset

from ._common import data, ddp, loss_fn, mlp, sgd, shape, sharded

SRC = "pytorch/examples@77f55b912142e11fcfdf5b530231fb9c52f181e8 imagenet/main.py"


class AverageMeter:
    """imagenet's meter: sum, count; all_reduce of both before summarizing."""

    def __init__(self):
        self.sum, self.count = 0.0, 0

    def update(self, val, n):
        self.sum += val * n
        self.count += n


@shape("imagenet_main", SRC, injects=["mean_of_means"])
def run(rank, world, inject):
    train_loader = sharded(data(64), batch=8)
    val_ds = data(37, seed=1)
    val_sampler = DistributedSampler(val_ds, shuffle=False, drop_last=True)
    val_loader = DataLoader(val_ds, batch_size=8, sampler=val_sampler)
    covered = len(val_sampler) * world
    aux = None
    if covered < len(val_ds) and rank < len(val_ds) - covered:  # the remainder
        aux = DataLoader(Subset(val_ds, range(covered + rank, len(val_ds), world)), batch_size=8)
    model = ddp(mlp())
    opt = sgd(model)
    for epoch in range(2):
        train_loader.sampler.set_epoch(epoch)
        for images, target in train_loader:
            opt.zero_grad()
            loss_fn(model(images), target).backward()
            opt.step()
        top1 = AverageMeter()
        with torch.no_grad():
            for loader in [val_loader] + ([aux] if aux is not None else []):
                for images, target in loader:
                    acc = (model(images).argmax(1) == target).float().mean().item()
                    top1.update(acc, images.size(0))
        if inject == "mean_of_means":
            avg = torch.tensor([top1.sum / top1.count])
            dist.all_reduce(avg)
            avg /= world
        else:
            total = torch.tensor([top1.sum, top1.count], dtype=torch.float64)
            dist.all_reduce(total)
            avg = total[0] / total[1]
