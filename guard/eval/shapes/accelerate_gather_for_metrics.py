"""accelerate's nlp_example.py evaluation: a DistributedSampler pads the
evaluation set to a multiple of the world size, predictions are gathered
(equal sizes) and gather_for_metrics drops the duplicated tail before the
metric. Correct. Injected: unpadded hand-made shards, so the gathered
tensors differ in size (wrong_all_gather)."""
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader

from ._common import data, ddp, loss_fn, mlp, own_shard, sgd, shape, sharded

SRC = "huggingface/accelerate examples/nlp_example.py (Accelerator.gather_for_metrics)"


def gather_for_metrics(t, world, total):
    out = [torch.empty_like(t) for _ in range(world)]
    dist.all_gather(out, t)
    # the sampler interleaves: sample i is on rank i % world
    return torch.stack(out, 1).reshape(-1, *t.shape[1:])[:total]


@shape("accelerate_gather_for_metrics", SRC, injects=["wrong_all_gather"])
def run(rank, world, inject):
    model = ddp(mlp())
    opt = sgd(model)
    for x, y in sharded(data(32), batch=8):
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    eval_ds = data(45, seed=1)
    if inject == "wrong_all_gather":
        loader = DataLoader(own_shard(eval_ds, rank, world, extra=1), batch_size=64)
    else:
        loader = sharded(eval_ds, batch=64, shuffle=False)
    model.eval()
    with torch.no_grad():
        for x, y in loader:
            preds = model(x).argmax(1)
            out = [torch.empty_like(preds) for _ in range(world)]
            dist.all_gather(out, preds)
            if inject is None:
                assert len(gather_for_metrics(preds, world, len(eval_ds))) == len(eval_ds)
