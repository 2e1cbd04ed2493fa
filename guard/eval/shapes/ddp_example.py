"""distributed/ddp/example.py: a ToyModel wrapped in DDP, one optimizer step
on random inputs, no DataLoader at all."""
import torch
from torch import nn

from ._common import ddp, shape

SRC = "pytorch/examples@77f55b912142e11fcfdf5b530231fb9c52f181e8 distributed/ddp/example.py"


@shape("ddp_example_toy", SRC)
def run(rank, world, inject):
    torch.manual_seed(rank)
    model = ddp(nn.Sequential(nn.Linear(10, 10), nn.ReLU(), nn.Linear(10, 5)))
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    for _ in range(3):
        opt.zero_grad()
        outputs = model(torch.randn(20, 10))
        nn.MSELoss()(outputs, torch.randn(20, 5)).backward()
        opt.step()
