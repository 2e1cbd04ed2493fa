"""The guard's test scenarios: each bug's trigger (the suite's own triggers,
small) and the correct code that must pass silently (the fixes' patterns).
Run on every rank of a real gloo world by rank_main.py (and by
guard/eval/coverage.py, also on NCCL); each function takes (rank, world)
and returns nothing (what it raises is the result).

The data sets stay on the CPU, as a real job's do; what reaches a model or
a collective goes through dev() to the rank's DEVICE. On gloo DEVICE is the
CPU and dev() returns its argument itself, so the gloo cases run exactly as
before; on NCCL coverage.py sets DEVICE to the rank's GPU. Tensors are made
on the CPU and then moved (not made on the GPU), so both backends see the
same values from the same CPU generator."""
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, Subset, TensorDataset
from torch.nn.parallel import DistributedDataParallel as DDP

DEVICE = torch.device("cpu")  # the rank's device; coverage.py sets it on NCCL


def dev(t):
    """A tensor (or module) on the rank's DEVICE: itself on the CPU."""
    return t.to(DEVICE)


def _data(n, features=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return TensorDataset(torch.randn(n, features, generator=g),
                         (torch.rand(n, generator=g) < 0.5).float())


def _model(norm=None):
    torch.manual_seed(0)
    layers = [torch.nn.Linear(4, 8)]
    if norm == "bn":
        layers.append(torch.nn.BatchNorm1d(8))
    elif norm == "gn":
        layers.append(torch.nn.GroupNorm(2, 8))
    layers += [torch.nn.ReLU(), torch.nn.Linear(8, 1)]
    return dev(torch.nn.Sequential(*layers))


def _train(ddp, loader, epochs=1, sampler=None):
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for epoch in range(epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for x, y in loader:
            x, y = dev(x), dev(y)
            opt.zero_grad()
            loss = torch.nn.functional.binary_cross_entropy_with_logits(ddp(x).squeeze(1), y)
            loss.backward()
            opt.step()


def _count_correct(loader):
    """(correct, samples) of a fixed rule (feature 0 > 0) over a loader."""
    correct = n = 0
    with torch.no_grad():
        for x, y in loader:
            correct += ((x[:, 0] > 0).float() == y).sum().item()
            n += len(y)
    return correct, n


# ---- triggers: each must be caught, with its bug, on every rank ----

def wrong_all_gather(rank, world):
    """Seed 000's gather_step_wrong on a strided split of 1003 (502/501)."""
    pred = dev(torch.rand(len(range(rank, 1003, world))))
    pred_list = [torch.zeros_like(pred) for _ in range(world)]
    dist.all_gather(pred_list, pred)


def missing_set_epoch(rank, world):
    """Two training epochs of a shuffling DistributedSampler, no set_epoch:
    the second replays the first's order."""
    sampler = DistributedSampler(_data(40), shuffle=True)
    _train(DDP(_model()), DataLoader(_data(40), batch_size=8, sampler=sampler), epochs=2)


def drop_last_hang(rank, world):
    """A hand-written strided split of 2*16+1 samples at W = 2: rank 0 gets
    a third batch of one sample, the others two batches."""
    ds = _data(2 * 16 + 1)
    loader = DataLoader(Subset(ds, range(rank, len(ds), world)), batch_size=8)
    _train(DDP(_model()), loader)


def small_batch_bn(rank, world):
    sampler = DistributedSampler(_data(16), shuffle=True)
    _train(DDP(_model("bn")), DataLoader(_data(16), batch_size=2, sampler=sampler), 1, sampler)


def autograd_lost_gather(rank, world):
    """Seed 002: features gathered with the c10d all_gather for a global
    loss, and that loss differentiated."""
    model = _model()
    feats = model(dev(torch.randn(3, 4)))
    gathered = [torch.zeros_like(feats) for _ in range(world)]
    dist.all_gather(gathered, feats)
    torch.cat(gathered).pow(2).mean().backward()


def autograd_reinsert(rank, world):
    """Seed 002's own fix as torchmetrics >= 1.6 ships it: gather under
    no_grad, put the local tensor back into its slot, differentiate (the
    gradient flows through this rank's slot only)."""
    model = _model()
    feats = model(dev(torch.randn(3, 4)))
    gathered = [torch.zeros_like(feats) for _ in range(world)]
    with torch.no_grad():
        dist.all_gather(gathered, feats)
    gathered[rank] = feats
    torch.cat(gathered).pow(2).mean().backward()


def reduce_tensor(tensor, world_size):
    """Seed 004's reduce_tensor, as the post writes it."""
    rt = tensor.clone()
    dist.all_reduce(rt, op=dist.ReduceOp.SUM)
    rt /= world_size
    return rt


def mean_of_means(rank, world):
    """Seed 004: per-rank accuracy over a strided split of 1003 (502/501),
    all-reduced and divided by the world size."""
    ds = _data(1003)
    loader = DataLoader(Subset(ds, range(rank, len(ds), world)), batch_size=64)
    correct, n = _count_correct(loader)
    reduce_tensor(dev(torch.tensor(correct / n)), world)


def lightning_int_count(rank, world):
    """Lightning's integer cumulated batch size, mean-synced on gloo: sum,
    then the quotient copied back into the int64 tensor (N = 5 at W = 2)."""
    count = dev(torch.tensor(3 if rank == 0 else 2))
    dist.all_reduce(count, op=dist.ReduceOp.SUM)
    world_size = dist.get_world_size()
    count.copy_(count / world_size)


def _padded_eval(world):
    """An evaluation loader over N = 1003 with the DistributedSampler
    (shuffle=False, drop_last=False: pads to a multiple of W)."""
    ds = TensorDataset(torch.rand(1003), torch.arange(1003))
    return DataLoader(ds, batch_size=64, sampler=DistributedSampler(ds, shuffle=False))


def _gather_padded(t, world):
    """The pad-gather-trim gather of fixes/wrong_all_gather, as a function
    (on t's device: NCCL gathers only GPU tensors)."""
    sizes = [torch.zeros(1, dtype=torch.int64, device=t.device) for _ in range(world)]
    dist.all_gather(sizes, torch.tensor([t.numel()], device=t.device))
    longest = max(int(s) for s in sizes)
    padded = torch.cat([t, t.new_zeros(longest - t.numel())])
    out = [torch.zeros_like(padded) for _ in range(world)]
    dist.all_gather(out, padded)
    return torch.cat([o[:int(s)] for o, s in zip(out, sizes)])


def sampler_repeats(rank, world):
    """Seed 000's sampler_duplicates: a correct gather of every score of a
    padded evaluation pass (the repeats counted twice)."""
    scores = torch.cat([s for s, _ in _padded_eval(world)])
    _gather_padded(dev(scores), world)


TRIGGERS = {
    "wrong_all_gather": wrong_all_gather,
    "missing_set_epoch": missing_set_epoch,
    "drop_last_hang": drop_last_hang,
    "small_batch_bn": small_batch_bn,
    "autograd_lost_gather": autograd_lost_gather,
    "autograd_reinsert": autograd_reinsert,
    "mean_of_means": mean_of_means,
    "mean_of_means_lightning": lightning_int_count,
    "sampler_repeats": sampler_repeats,
}


# ---- correct code (the fixes' patterns): must pass silently ----

def fix_gather_pad_trim(rank, world):
    """fixes/wrong_all_gather: lengths first, pad, gather, trim."""
    pred = dev(torch.rand(len(range(rank, 1003, world))))
    assert _gather_padded(pred, world).numel() == 1003


def fix_set_epoch_training(rank, world):
    """DistributedSampler (pads 203 to 204), set_epoch every epoch,
    drop_last=True, DDP with GroupNorm: the fixes of missing_set_epoch,
    drop_last_hang and small_batch_bn together, 2 epochs."""
    ds = _data(203)
    sampler = DistributedSampler(ds, shuffle=True)
    _train(DDP(_model("gn")), DataLoader(ds, batch_size=2, sampler=sampler, drop_last=True),
           2, sampler)


def fix_bn_eight_per_rank(rank, world):
    sampler = DistributedSampler(_data(64), shuffle=True)
    _train(DDP(_model("bn")), DataLoader(_data(64), batch_size=8, sampler=sampler), 1, sampler)


def fix_bn_eval_mode(rank, world):
    """Seed 003's debug step: BN layers in eval mode while training."""
    model = _model("bn")
    ddp = DDP(model)
    model[1].eval()
    sampler = DistributedSampler(_data(8), shuffle=True)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for x, y in DataLoader(_data(8), batch_size=2, sampler=sampler):
        opt.zero_grad()
        ddp(dev(x)).sum().backward()
        opt.step()


def fix_differentiable_gather(rank, world):
    """fixes/autograd_lost_gather: torch.distributed.nn.functional.all_gather;
    and a gather of values only, under no_grad and detached."""
    import torch.distributed.nn.functional as dfn
    model = _model()
    feats = model(dev(torch.randn(3, 4)))
    loss = torch.cat(dfn.all_gather(feats)).pow(2).mean()
    loss.backward()
    with torch.no_grad():
        dist.all_gather([torch.zeros_like(feats) for _ in range(world)], feats)
    dist.all_gather([torch.zeros_like(feats) for _ in range(world)], feats.detach())


def fix_sum_count(rank, world):
    """fixes/mean_of_means: one all_reduce of (sum, count); and a scalar sum
    and scalar count reduced apart, divided by each other."""
    ds = _data(1003)
    loader = DataLoader(Subset(ds, range(rank, len(ds), world)), batch_size=64)
    correct, n = _count_correct(loader)
    both = dev(torch.tensor([float(correct), float(n)], dtype=torch.float64))
    dist.all_reduce(both)
    total_correct = dev(torch.tensor(float(correct)))
    total_n = dev(torch.tensor(float(n)))
    dist.all_reduce(total_correct)
    dist.all_reduce(total_n)
    assert abs(total_correct.item() / total_n.item() - (both[0] / both[1]).item()) < 1e-9


def fix_equal_counts_mean(rank, world):
    """A mean of per-rank means over equal counts (1024 at W = 2, DistributedSampler
    without padding): exact, so not reported."""
    ds = _data(1024)
    loader = DataLoader(ds, batch_size=64, sampler=DistributedSampler(ds, shuffle=False))
    correct, n = _count_correct(loader)
    reduce_tensor(dev(torch.tensor(correct / n)), world)


def fix_rank0_only_loader(rank, world):
    """Rank 0 alone iterates an evaluation loader between training steps:
    the guard must not make it wait for peers (no collective of its own)."""
    ds = _data(64)
    sampler = DistributedSampler(ds, shuffle=True)
    ddp = DDP(_model())
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    sampler.set_epoch(0)
    for step, (x, y) in enumerate(DataLoader(ds, batch_size=8, sampler=sampler)):
        opt.zero_grad()
        ddp(dev(x)).sum().backward()
        opt.step()
        if rank == 0 and step == 1:
            ddp.eval()
            with torch.no_grad():
                for xe, _ in DataLoader(_data(20), batch_size=7):
                    ddp(dev(xe))
            ddp.train()


def fix_join_uneven(rank, world):
    """fixes/drop_last_hang: Join(divide_by_initial_world_size=False) over
    the uneven split of drop_last_hang (3 and 2 batches)."""
    from torch.distributed.algorithms.join import Join
    ds = _data(2 * 16 + 1)
    loader = DataLoader(Subset(ds, range(rank, len(ds), world)), batch_size=8)
    ddp = DDP(_model())
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    with Join([ddp], divide_by_initial_world_size=False):
        for x, y in loader:
            opt.zero_grad()
            ddp(dev(x)).sum().backward()
            opt.step()


def fix_dedupe_indices(rank, world):
    """fixes/wrong_all_gather: the same padded pass, the indices gathered
    first, repeats dropped by index."""
    scores, index = [dev(torch.cat(t)) for t in zip(*_padded_eval(world))]
    all_index = _gather_padded(index, world)
    all_scores = _gather_padded(scores, world)
    seen = {}
    for i, v in zip(all_index.tolist(), all_scores.tolist()):
        seen.setdefault(i, v)
    assert len(seen) == 1003


FIXES = {
    "fix_gather_pad_trim": fix_gather_pad_trim,
    "fix_set_epoch_training": fix_set_epoch_training,
    "fix_bn_eight_per_rank": fix_bn_eight_per_rank,
    "fix_bn_eval_mode": fix_bn_eval_mode,
    "fix_differentiable_gather": fix_differentiable_gather,
    "fix_sum_count": fix_sum_count,
    "fix_equal_counts_mean": fix_equal_counts_mean,
    "fix_rank0_only_loader": fix_rank0_only_loader,
    "fix_join_uneven": fix_join_uneven,
    "fix_dedupe_indices": fix_dedupe_indices,
}


def reset():
    """Forget the data pass of the scenario before (a scenario stopped by
    the guard leaves its pass open; a real job would have ended there)."""
    from ddp_pitfalls import _data
    from ddp_pitfalls.checks import autograd_lost_gather
    _data.latest = None
    del _data.recent[:]
    _data.completed.clear()
    autograd_lost_gather.stop()
