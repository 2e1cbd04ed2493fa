"""What the guard knows about this rank's data: the DataLoader pass being
consumed (how many batches it promises, how many it yielded, how many
samples) — shared by the checks that need it (drop_last_hang,
mean_of_means)."""


class Pass:
    """One pass over a DataLoader on this rank."""
    __slots__ = ("promised", "yielded", "samples", "last_batch", "finished", "exchanged",
                 "agreed", "site", "sampler", "indices_gathered")

    def __init__(self, promised, site, sampler):
        self.promised = promised        # len(loader), or -1 when it has none
        self.yielded = 0
        self.samples = 0
        self.last_batch = 0
        self.finished = False
        self.exchanged = False          # compared with the other ranks already
        self.agreed = None              # the count every rank promised, once compared
        self.site = site
        self.sampler = sampler          # its DistributedSampler, or None
        self.indices_gathered = False   # the samples' indices were gathered (repeats can go)


latest = None  # the pass that started or yielded most recently on this rank
joins = 0      # open `with Join(...)` blocks: uneven batch counts are what Join is for


def batch_size(batch, depth=0):
    """Samples in a batch: the first dimension of its first tensor (in a
    tuple, list or dict), or 0 when it holds none."""
    if hasattr(batch, "shape") and hasattr(batch, "dim"):
        return int(batch.shape[0]) if batch.dim() > 0 else 1
    if depth < 3:
        if isinstance(batch, (tuple, list)):
            for item in batch:
                n = batch_size(item, depth + 1)
                if n:
                    return n
        elif isinstance(batch, dict):
            for item in batch.values():
                n = batch_size(item, depth + 1)
                if n:
                    return n
    return 0


def active_promised():
    """The promised batch count of the pass being consumed, or -1 (no pass,
    finished, or no length)."""
    p = latest
    return p.promised if p is not None and not p.finished else -1
