"""A BatchNorm model trained at 16 per rank, then evaluated in model.eval()
at one image per step (running statistics: no small-batch problem)."""
import torch

from ._common import convnet, ddp, images, loss_fn, sgd, shape, sharded

SRC = "pytorch/vision references/classification/train.py (evaluate at batch 1)"


@shape("bn_eval_batch1", SRC)
def run(rank, world, inject):
    model = ddp(convnet())
    opt = sgd(model)
    for image, target in sharded(images(64), batch=16):
        opt.zero_grad()
        loss_fn(model(image), target).backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        for image, _ in sharded(images(8, seed=1), batch=1, shuffle=False):
            model(image)
