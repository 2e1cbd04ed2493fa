"""Lightning's examples (a LightningModule with training_step and
self.log(..., sync_dist=True)), run by Fabric inside this world's process
group: Fabric's DDP strategy wraps the model and a DistributedSampler."""
from ._common import data, shape

SRC = "Lightning-AI/pytorch-lightning examples/fabric/image_classifier (Fabric DDP, sync_dist logging)"


@shape("lightning_fabric", SRC, wall="slow", requires=["lightning_fabric"])
def run(rank, world, inject):
    import os
    import torch
    from lightning_fabric import Fabric
    from torch.utils.data import DataLoader
    from ._common import loss_fn, mlp
    os.environ.update(LOCAL_RANK=str(rank), RANK=str(rank), WORLD_SIZE=str(world),
                      NODE_RANK="0", LOCAL_WORLD_SIZE=str(world))
    fabric = Fabric(accelerator="cpu", devices=world, strategy="ddp")
    fabric.launch()
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    model, opt = fabric.setup(model, opt)
    loader = fabric.setup_dataloaders(DataLoader(data(64), batch_size=8, shuffle=True))
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            fabric.backward(loss)
            opt.step()
        fabric.all_reduce(loss.detach(), reduce_op="mean")
