"""The distributed tutorial's average_gradients: no DDP, every parameter's
grad all-reduced then divided by world_size: a true mean (equal batches)."""
import torch.distributed as dist

from ._common import data, loss_fn, mlp, sgd, shape, sharded

SRC = "pytorch/tutorials intermediate_source/dist_tuto.rst (average_gradients)"


@shape("manual_grad_average", SRC)
def run(rank, world, inject):
    model = mlp()
    opt = sgd(model)
    for x, y in sharded(data(64), batch=8):
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        size = float(dist.get_world_size())
        for param in model.parameters():
            dist.all_reduce(param.grad.data, op=dist.ReduceOp.SUM)
            param.grad.data /= size
        opt.step()
