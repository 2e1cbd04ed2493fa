"""What the guard knows about this rank's data: each DataLoader pass (what it
promises, what it yielded), which passes were touched since the last point
where every rank of a group meets (the passes of one loop: one, or several
zipped together), and the orders of the training passes that completed
(for missing_set_epoch)."""
import threading

_MAIN = threading.main_thread()


class Pass:
    """One pass over a DataLoader on this rank."""
    __slots__ = ("promised", "promised_samples", "batch_size", "drop_last", "yielded",
                 "samples", "last_batch", "finished", "sampler", "order", "repeat",
                 "training", "key", "kworld", "pinned_open", "rows", "tries", "lockstep", "counted", "pin_sync",
                 "indices_gathered", "uniform")

    def __init__(self, promised, promised_samples, batch_size, drop_last, sampler, order):
        self.promised = promised                  # len(loader), or -1
        self.promised_samples = promised_samples  # len(its sampler), or -1
        self.batch_size = batch_size              # the loader's batch_size, or -1
        self.drop_last = drop_last
        self.yielded = 0
        self.samples = 0
        self.last_batch = 0
        self.finished = False
        self.sampler = sampler          # its DistributedSampler, or None
        self.order = order              # what fixes a shuffling sampler's order, or None
        self.repeat = False             # that order is the last completed training pass's
        self.training = False           # a DDP training step ran while it was being read
        self.key = None                 # the board key its row was pinned under
        self.kworld = 0                 # ranks of that key's group
        self.pinned_open = False        # pinned before it finished
        self.rows = None                # every rank's row, once read
        self.tries = 0                  # reads that found a row missing
        self.lockstep = False           # two meeting points fell inside it: a loop of steps
        self.counted = False            # its batch counts were judged
        self.pin_sync = -1              # `synced` when it was pinned at a DDP forward
        self.indices_gathered = False   # the samples' indices were gathered (repeats can go)
        self.uniform = False            # every rank's row promises the same sizes


class Model:
    """The guard's state of one DDP model (_points.model)."""
    __slots__ = ("where", "forwards", "bn", "bn_pinned", "bn_sync", "bn_tries", "quiet")

    def __init__(self):
        self.where = None       # (group rank, group size, board key prefix), or None
        self.forwards = 0       # its training forwards so far
        self.bn = False         # its BatchNorm layers were looked at (hooks attached)
        self.bn_pinned = False  # its BatchNorm row is on the board
        self.bn_sync = -1       # `synced` when that row was pinned
        self.bn_tries = 0       # reads of the BatchNorm rows that found one missing
        self.quiet = None       # the pass judged with its BatchNorm: every later step is free


latest = None    # the pass that started or yielded most recently on this rank
recent = []      # passes that yielded since the last meeting point (one loop's passes)
joins = 0        # open `with Join(...)` blocks: uneven batch counts are what Join is for
bn_min = {}      # id(Model) -> fewest samples a plain BatchNorm saw at its first step
completed = {}   # a training pass's order without its epoch -> that epoch
synced = 0       # backwards after a DDP forward that all-reduces (every rank took part)
forward_synced = [False]  # the last DDP training forward's backward will all-reduce


def started(p):
    global latest
    latest = p


def yielded(p, n):
    global latest
    p.yielded += 1
    p.samples += n
    p.last_batch = n
    latest = p
    if p not in recent:
        recent.append(p)


def ended(p):
    """A pass ran to its end: a training pass's order becomes the one the
    next training pass must not repeat (peeks and partial passes never end
    here; evaluation passes are not training)."""
    p.finished = True
    if p.training and p.order is not None:
        completed[p.order[:-1]] = p.order[-1]


def in_main_thread():
    return threading.current_thread() is _MAIN


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


def expected_samples(row_total, row_batch, row_drop_last, steps):
    """Samples a pass of `row_total` samples in batches of `row_batch` has
    given after `steps` batches, or -1 when its sizes are unknown."""
    if row_total < 0 or row_batch <= 0:
        return -1
    full = row_total // row_batch if row_drop_last else -(-row_total // row_batch)
    done = min(steps, full)
    return done * row_batch if row_drop_last else min(done * row_batch, row_total)
