"""What the scenarios share: the registry and tiny data and models. Nothing
here calls a model, a collective or iterates a loader: those lines stay in
each scenario's own file, where the guard must name them."""
import collections
import importlib
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

Scenario = collections.namedtuple(
    "Scenario", "name source world injects wall requires file run")
REGISTRY = {}

# Expected wall time class of a correct run's body: "fast" under 3 s,
# "slow" under 10 s (loader workers, torchvision models).
WALL = ("fast", "slow")


def shape(name, source, world=2, injects=(), wall="fast", requires=()):
    """Registers run(rank, world, inject) as scenario `name`. `source`: the
    public program (repo, path, commit) whose shape it follows, or "issue 70"."""
    assert wall in WALL, wall

    def register(fn):
        assert name not in REGISTRY, name
        path = os.path.abspath(fn.__code__.co_filename)
        REGISTRY[name] = Scenario(name, source, world, tuple(injects), wall,
                                  tuple(requires), path, fn)
        return fn
    return register


def missing(requires):
    """The first of `requires` that cannot be imported, or None."""
    for mod in requires:
        try:
            importlib.import_module(mod)
        except ImportError:
            return mod
    return None


def data(n, d=8, classes=4, seed=0):
    """n samples of a d-feature, `classes`-class problem, alike on every rank."""
    g = torch.Generator().manual_seed(seed)
    return TensorDataset(torch.randn(n, d, generator=g),
                         torch.randint(0, classes, (n,), generator=g))


def images(n, size=8, classes=4, seed=0):
    """n 3 x size x size images and labels."""
    g = torch.Generator().manual_seed(seed)
    return TensorDataset(torch.randn(n, 3, size, size, generator=g),
                         torch.randint(0, classes, (n,), generator=g))


def mlp(d=8, classes=4, bn=False, seed=0):
    torch.manual_seed(seed)
    mid = [nn.BatchNorm1d(16)] if bn else []
    return nn.Sequential(nn.Linear(d, 16), *mid, nn.ReLU(), nn.Linear(16, classes))


def convnet(classes=4, seed=0):
    """A small conv net with BatchNorm (a ResNet stem's shape)."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, classes))


def ddp(model, group=None):
    return nn.parallel.DistributedDataParallel(model, process_group=group)


def sgd(model, lr=0.05):
    return torch.optim.SGD(model.parameters(), lr=lr)


def sharded(ds, batch, shuffle=True, drop_last=False, workers=0, **kw):
    """A DataLoader over a DistributedSampler of ds (the usual DDP input)."""
    return DataLoader(ds, batch_size=batch, num_workers=workers,
                      sampler=DistributedSampler(ds, shuffle=shuffle, drop_last=drop_last), **kw)


def own_shard(ds, rank, world, extra=0):
    """This rank's contiguous slice of ds, `extra` more samples on rank 0
    (a hand-made shard, as scripts that split files per rank make)."""
    per = (len(ds) - extra) // world
    lo = rank * per + (extra if rank else 0)
    hi = (rank + 1) * per + extra
    return torch.utils.data.Subset(ds, range(lo, hi))



loss_fn = nn.CrossEntropyLoss()
