"""torchvision's resnet18 at 3x32x32 in a references/classification-shaped
loop. Correct at 8 images per rank; injected at 2 per rank, where the site
must be this file's model(image) line, not torchvision's resnet.py."""
from ._common import ddp, images, loss_fn, sgd, shape, sharded

SRC = "pytorch/vision references/classification/train.py (resnet18)"


@shape("torchvision_resnet18", SRC, injects=["small_batch_bn"], wall="slow",
       requires=["torchvision"])
def run(rank, world, inject):
    import torchvision
    loader = sharded(images(32, size=32, classes=10), batch=2 if inject else 8)
    model = ddp(torchvision.models.resnet18(num_classes=10))
    opt = sgd(model)
    for epoch in range(1):
        loader.sampler.set_epoch(epoch)
        for image, target in loader:
            output = model(image)
            opt.zero_grad()
            loss_fn(output, target).backward()
            opt.step()
