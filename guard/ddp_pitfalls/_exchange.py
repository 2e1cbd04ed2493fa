"""One small collective the guard adds: every rank's few integers to every
rank, through the original (unwrapped) all_gather of the same group.

It is the price of judging sizes before the data moves: each rank sees the
same rows, so each reaches the same verdict before the job's all_gather
runs, and no rank is left alone inside it. The guard calls it only inside
the job's own all_gather (every member of the group is making that call);
everything else goes through the store (_board.py), never a collective.
"""
ORIGINAL = {}  # name -> torch.distributed function before the guard wrapped it


def group_rank_world(group):
    import torch.distributed as dist
    if not (dist.is_available() and dist.is_initialized()):
        return -1, 1
    return dist.get_rank(group), dist.get_world_size(group)


def gather_ints(values, group, device):
    """Every rank's `values` (the same count of ints on every rank), as a
    list of lists indexed by the rank in `group`."""
    import torch
    mine = torch.tensor(values, dtype=torch.int64, device=device)
    _, world = group_rank_world(group)
    rows = [torch.empty_like(mine) for _ in range(world)]
    ORIGINAL["all_gather"](rows, mine, group=group)
    return [r.tolist() for r in rows]


def shape_digest(shape, dtype):
    """An int64 fingerprint of a tensor's shape and dtype, equal on every
    rank for equal inputs (Python's hash of a string is salted per process,
    so it is not used)."""
    h = 1469598103934665603
    for v in (len(shape),) + tuple(shape) + tuple(str(dtype).encode()):
        h = ((h ^ int(v)) * 1099511628211) % (1 << 61)
    return h
