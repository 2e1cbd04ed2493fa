"""An all_gather of logits only to log a global accuracy: values, never
differentiated (correct). Injected: the gathered logits feed a contrastive
loss that is backpropagated, so the other ranks' slots carry no gradient
and the local one is lost (autograd_lost_gather)."""
import torch
import torch.distributed as dist

from ._common import data, ddp, loss_fn, mlp, sgd, shape, sharded

SRC = "issue 70"


@shape("values_only_gather", SRC, injects=["autograd_lost_gather"])
def run(rank, world, inject):
    loader = sharded(data(32), batch=8)
    model = ddp(mlp())
    opt = sgd(model)
    for x, y in loader:
        logits = model(x)
        loss = loss_fn(logits, y)
        everyone = [torch.empty_like(logits) for _ in range(world)]
        dist.all_gather(everyone, logits.detach() if inject is None else logits)
        if inject == "autograd_lost_gather":
            feats = torch.cat(everyone)
            loss = loss + (feats @ feats.t()).logsumexp(1).mean()
        else:
            acc = (torch.cat(everyone).argmax(1) >= 0).float().mean()
            assert acc.item() == 1.0
        opt.zero_grad()
        loss.backward()
        opt.step()
