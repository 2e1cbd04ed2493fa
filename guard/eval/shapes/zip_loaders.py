"""Semi-supervised training: zip(labeled, unlabeled), the step's loss from
both. Correct: equal batch counts on every rank. Injected: rank 0's
labeled shard has one batch more, so it runs one more DDP step."""
from torch.utils.data import DataLoader

from ._common import data, ddp, loss_fn, mlp, own_shard, sgd, shape, sharded

SRC = "issue 70"


@shape("zip_labeled_unlabeled", SRC, injects=["drop_last_hang"])
def run(rank, world, inject):
    extra = 8 if inject == "drop_last_hang" else 0
    labeled = DataLoader(own_shard(data(64), rank, world, extra=extra), batch_size=8)
    unlabeled = sharded(data(128, seed=1), batch=8)
    if inject == "drop_last_hang":
        unlabeled = sharded(data(160, seed=1), batch=8)
    model = ddp(mlp())
    opt = sgd(model)
    for (x, y), (u, _) in zip(labeled, unlabeled):
        opt.zero_grad()
        (loss_fn(model(x), y) + model(u).pow(2).mean()).backward()
        opt.step()
