"""The DDP tutorial series' Trainer: each epoch peeks at the batch size with
next(iter(loader)) before set_epoch, then trains; rank 0 saves a checkpoint
every few epochs. The peek is not a training pass (issue 70's first false alarm)."""
import os
import tempfile

import torch

from ._common import data, ddp, loss_fn, mlp, sgd, shape, sharded

SRC = "pytorch/examples@77f55b912142e11fcfdf5b530231fb9c52f181e8 distributed/ddp-tutorial-series/multigpu_torchrun.py"


@shape("tutorial_torchrun", SRC, injects=["missing_set_epoch"])
def run(rank, world, inject):
    loader = sharded(data(64), batch=8)
    model = ddp(mlp())
    opt = sgd(model)
    for epoch in range(3):
        b_sz = len(next(iter(loader))[0])  # the tutorial's peek, before set_epoch
        assert b_sz == 8
        if inject != "missing_set_epoch":
            loader.sampler.set_epoch(epoch)
        for source, targets in loader:
            opt.zero_grad()
            loss_fn(model(source), targets).backward()
            opt.step()
        if rank == 0 and epoch % 2 == 0:  # _save_checkpoint on rank 0 only
            torch.save(model.module.state_dict(), os.path.join(tempfile.gettempdir(),
                                                               "nh_ckpt_%d.pt" % os.getpid()))
