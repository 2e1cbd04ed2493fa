"""mean_of_means: an average of per-rank averages over uneven counts.

What cannot be known at run time: whether a reduced number is a mean or a
sum. The tensor does not say; the code around the call does. So the guard
reads the calling source (once per call site) and treats a one-element
floating all_reduce as averaging per-rank values when it is ReduceOp.AVG,
or when the very tensor it reduced is divided by the world size next to the
call (`t /= world_size`, `t / dist.get_world_size()`, `t.div_(world_size)`;
world_size, world, get_world_size(), num_replicas, nprocs). A division of another
name nearby does not count (the (sum, count) fix reduces two tensors and
divides one by the other).

The counts: the pass being read when the reduce runs has a row on the board
(_points.py) with every rank's promised samples and batch size, and its
real totals when it had ended before its row was pinned. After the reduce
(a collective of the job's, so every rank's row is there) each rank
computes every rank's samples so far from the same rows; when they differ,
the average of per-rank values is not the one-process value. Counts that
are not a DataLoader pass's (a mean over the positives only, tokens that
are not padding, a collate that filters mid-pass) are in the user's
variables, not in any pass: the guard says nothing there.

An integer value (Lightning's cumulated batch size): after the reduce, a sum
that the world size does not divide loses its remainder when the quotient
goes back into the integer tensor (1.375x at W = 16, N = 44).
"""
import linecache
import re

from .. import _data, _exchange, _points, _state

BUG = "mean_of_means"
_WORLD = r"\(?\s*[\w.\[\]'\"]*(?:world_size|world|get_world_size\([^)]*\)|num_replicas|nprocs)\b"
_ARG = re.compile(r"all_reduce\(\s*([A-Za-z_][\w.]*)\s*[,)]")
_verdicts = {}  # (file, line) -> (divides, floors)
_ops = []       # (ReduceOp.SUM, ReduceOp.AVG or None), read once


def _source(frame):
    key = (frame.f_code.co_filename, frame.f_lineno)
    got = _verdicts.get(key)
    if got is None:
        lines = [linecache.getline(key[0], n) for n in range(key[1] - 3, key[1] + 11)]
        m = _ARG.search(lines[3])
        got = (False, False)
        if m:
            name = re.escape(m.group(1))
            text = "\n".join(lines)
            divides = re.search(r"\b%s\s*/{1,2}=?\s*%s|\b%s\.div_?\(\s*%s" %
                                (name, _WORLD, name, _WORLD), text)
            floors = re.search(r"\b%s\s*//=?\s*%s|\b%s\.copy_\(\s*%s\s*/\s*%s" %
                               (name, _WORLD, name, name, _WORLD), text)
            got = (bool(divides), bool(floors))
        _verdicts[key] = got
    return got


def kind(tensor, op, frame):
    """None, "float" or "int": what the reduce will be checked as."""
    if not _ops:
        import torch.distributed as dist
        _ops.append((dist.ReduceOp.SUM, getattr(dist.ReduceOp, "AVG", None)))
    op_sum, avg = _ops[0]
    divides, floors = _source(frame)
    is_avg = avg is not None and op is not op_sum and op == avg
    if not (divides or floors or is_avg):
        return None  # most reduces: decided by the cached source alone
    if tensor.numel() != 1:
        return None
    if not (is_avg or op is op_sum or op == op_sum):
        return None
    if tensor.is_floating_point():
        return "float" if (is_avg or divides) else None
    return "int" if floors else None


def _so_far(row, steps, own_finished):
    if row[_points.FINISHED]:
        return row[_points.SAMPLES]
    if own_finished:
        steps = 1 << 62  # the whole pass
    return _data.expected_samples(row[_points.TOTAL], row[_points.BATCH],
                                  row[_points.DROP_LAST], steps)


def after_float():
    """After an averaging one-element float reduce."""
    p = _data.latest
    if p is None or not p.rows or p.uniform:
        return  # every rank's row the same sizes: the same counts at every step
    counts = [_so_far(r, p.yielded, p.finished) for r in p.rows]
    if min(counts) >= 0 and len(set(counts)) > 1:
        _state.report(BUG, "a one-element all_reduce averaged over the ranks (divided by the world "
                      "size) while they hold different sample counts in this pass %s: a mean of "
                      "per-rank means" % counts)


def after_int(tensor, group):
    _, world = _exchange.group_rank_world(group)
    total = int(tensor.item())
    if total % world:
        _state.report(BUG, "an integer all_reduce (sum %d) divided by the world size %d back into "
                      "an integer tensor: the count becomes %d instead of %.4g, every value "
                      "divided by it inflated %.4gx" %
                      (total, world, total // world, total / world,
                       (total / world) / max(1, total // world)))
