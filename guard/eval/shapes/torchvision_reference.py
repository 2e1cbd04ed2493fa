"""torchvision's references/classification train.py: train_one_epoch with a
MetricLogger whose SmoothedValue.synchronize_between_processes all-reduces a
[count, total] tensor; evaluate() in model.eval() (BatchNorm at any batch is
fine there); set_epoch every epoch. A small conv net with BatchNorm stands in
for the model. Injected: 2 images per rank in training, no set_epoch."""
import torch
import torch.distributed as dist

from ._common import convnet, ddp, images, loss_fn, sgd, shape, sharded

SRC = "pytorch/vision references/classification/train.py + utils.py (MetricLogger)"


class SmoothedValue:
    def __init__(self):
        self.count, self.total = 0, 0.0

    def update(self, value, n=1):
        self.count += n
        self.total += value * n

    def synchronize_between_processes(self):
        t = torch.tensor([self.count, self.total], dtype=torch.float64)
        dist.barrier()
        dist.all_reduce(t)
        self.count, self.total = int(t[0].item()), t[1].item()


@shape("torchvision_reference", SRC, injects=["small_batch_bn", "missing_set_epoch"])
def run(rank, world, inject):
    batch = 2 if inject == "small_batch_bn" else 8
    train_loader = sharded(images(64), batch=batch)
    test_loader = sharded(images(24, seed=1), batch=1, shuffle=False)
    model = ddp(convnet())
    opt = sgd(model)
    for epoch in range(2):
        if inject != "missing_set_epoch":
            train_loader.sampler.set_epoch(epoch)
        model.train()
        loss_meter = SmoothedValue()
        for image, target in train_loader:
            output = model(image)
            loss = loss_fn(output, target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss_meter.update(loss.item(), image.shape[0])
        model.eval()
        acc1 = SmoothedValue()
        with torch.inference_mode():
            for image, target in test_loader:
                acc1.update((model(image).argmax(1) == target).float().mean().item(), image.shape[0])
        acc1.synchronize_between_processes()
        loss_meter.synchronize_between_processes()
