"""mean_of_means: an average of per-rank averages over uneven counts.

What cannot be known at run time: whether a reduced number is a mean or a
sum. The tensor does not say; the code around the call does. So the guard
reads the calling source (a few lines around the all_reduce, once per call
site) and treats a one-element all_reduce as averaging per-rank values when
it is ReduceOp.AVG or the code divides by the world size (world_size,
get_world_size(), num_replicas). Then:

- a floating value: the ranks' sample counts the guard saw in the current
  DataLoader pass (samples so far, and the last batch) are exchanged first;
  if they differ, the average of per-rank values is not the one-process
  value, reported before the reduce on every rank;
- an integer value (Lightning's cumulated batch size): after the reduce, a
  sum that the world size does not divide loses its remainder when the
  quotient goes back into the integer tensor (1.375x at W = 16, N = 44).

Not caught: a division by a name the pattern does not know (a literal 2, a
variable called W), a count kept outside a DataLoader, and NCCL's
ReduceOp.AVG on integers (the floor happens inside the collective).
"""
import linecache
import re

from .. import _data, _exchange, _state

BUG = "mean_of_means"
_WORLD = r"[\w.\[\]'\"]*(?:world_size|get_world_size\([^)]*\)|num_replicas|nprocs)\b"
_DIVIDES = re.compile(r"(?:/{1,2}=?|\.div_?\()\s*\(?\s*" + _WORLD)
_FLOORS = re.compile(r"(?://=?\s*\(?\s*" + _WORLD + r"|copy_\([^)]*/\s*\(?\s*" + _WORLD + r")")
_verdicts = {}  # (file, line) -> (divides, floors)


def _source(frame):
    key = (frame.f_code.co_filename, frame.f_lineno)
    got = _verdicts.get(key)
    if got is None:
        text = "\n".join(linecache.getline(key[0], n) for n in range(key[1] - 3, key[1] + 11))
        got = (bool(_DIVIDES.search(text)), bool(_FLOORS.search(text)))
        _verdicts[key] = got
    return got


def kind(tensor, op, frame):
    """None, "float" or "int": what the reduce will be checked as."""
    import torch.distributed as dist
    if tensor.numel() != 1:
        return None
    avg = getattr(dist.ReduceOp, "AVG", None)
    if op not in (dist.ReduceOp.SUM, avg):
        return None
    divides, floors = _source(frame)
    if tensor.is_floating_point():
        return "float" if (op == avg or divides) else None
    return "int" if floors else None


def before_float(tensor, group):
    p = _data.latest
    mine = [p.samples, p.last_batch] if p is not None else [-1, -1]
    rows = _exchange.gather_ints(mine, group, tensor.device)
    if any(r[0] < 0 for r in rows):
        return
    samples, batches = [r[0] for r in rows], [r[1] for r in rows]
    if len(set(samples)) > 1 or len(set(batches)) > 1:
        _state.report(BUG, "a one-element all_reduce averaged over the ranks (divided by the world "
                      "size) while they hold different sample counts (this pass so far %s, last "
                      "batch %s): a mean of per-rank means" % (samples, batches),
                      _state.call_site(2))


def after_int(tensor, group):
    _, world = _exchange.group_rank_world(group)
    total = int(tensor.item())
    if total % world:
        _state.report(BUG, "an integer all_reduce (sum %d) divided by the world size %d back into "
                      "an integer tensor: the count becomes %d instead of %.4g, every value "
                      "divided by it inflated %.4gx" %
                      (total, world, total // world, total / world,
                       (total / world) / max(1, total // world)), _state.call_site(2))
