"""The tutorial's multinode.py: a snapshot holds EPOCHS_RUN and the Trainer
resumes at epoch k, calling set_epoch(k) first (issue 70: resuming at epoch k)."""
from ._common import data, ddp, loss_fn, mlp, sgd, shape, sharded

SRC = "pytorch/examples@77f55b912142e11fcfdf5b530231fb9c52f181e8 distributed/ddp-tutorial-series/multinode.py"


@shape("resume_at_epoch_k", SRC, injects=["missing_set_epoch"])
def run(rank, world, inject):
    snapshot = {"EPOCHS_RUN": 2}  # as if loaded from snapshot.pt
    loader = sharded(data(64), batch=8)
    model = ddp(mlp())
    opt = sgd(model)
    for epoch in range(snapshot["EPOCHS_RUN"], 5):
        if inject != "missing_set_epoch":
            loader.sampler.set_epoch(epoch)
        for source, targets in loader:
            opt.zero_grad()
            out = model(source)
            loss_fn(out, targets).backward()
            opt.step()
