"""Meeting points: where the ranks of a group are known to be together in a
correct job, and what the guard does there with the passes being read.

A meeting point is a DDP training forward (its backward all-reduces the
gradients: every rank of the model's group takes part) or a collective the
job itself calls on a group (all_gather, all_gather_into_tensor,
all_reduce). At the first meeting point of a pass, each rank pins a row
about it to the board (_board.py: a store write, never a wait) under a key
that every rank computes alike: the group, then the DDP model's ordinal on
that group and its training forward count, or the group's collective
sequence number. At a later meeting point, or at the pass's end, or right
after the collective the row was pinned before, the rows are read: the
job's own collective in between made every peer pin first. A missing row
(a peer in another loop, a joined rank, a rank fed by broadcast) means no
verdict, retried a few times, then given up: silence, never a wait.

Rule that keeps a correct job whole: the guard itself runs no collective
here, so no decision of this rank's alone can leave a peer waiting; every
verdict comes from the same rows on every rank.
"""
from . import _board, _data, _exchange, _state
from .checks import drop_last_hang, missing_set_epoch, small_batch_bn

MAX_TRIES = 8

# Row fields (ints).
N_SLOTS, MIN_PROMISED, TOTAL, BATCH, DROP_LAST, FINISHED, SAMPLES, YIELDED, SEED, REPEAT, \
    JOIN = range(11)

_seq = {}           # group tag -> the job's collectives on it so far (this rank)
_ddp_ordinals = {}  # group tag -> DDP models seen training on it so far


def _row(passes, p):
    seed = getattr(p.sampler, "seed", -1) if p.sampler is not None else -1
    promised = [q.promised for q in passes]
    return [len(passes), min(promised) if min(promised) >= 0 else -1, p.promised_samples,
            p.batch_size, int(p.drop_last), int(p.finished), p.samples, p.yielded, int(seed),
            int(p.repeat), int(_data.joins > 0)]


def _pin(p, key, grank, gworld):
    """Pins the passes read since the last meeting point, `p` (read last)
    among them, as one row."""
    fresh = [q for q in _data.recent if q.key is None]
    _data.recent.clear()
    if _board.pin(key, grank, _row(fresh, p)):
        for q in fresh:
            q.key, q.kworld, q.pinned_open = key, gworld, not q.finished
            q.pin_sync = _data.synced
            if q is not p:
                q.rows = []  # judged through p, the pass the loop reads last


def readable(p):
    """The pass's rows are on the board on every rank: pinned before a
    collective (it has completed since), or at a DDP forward whose
    gradient all-reduce has run since (a second forward in the same step,
    or one under no_sync(), is no meeting point yet)."""
    return not p.key.startswith("d/") or _data.synced > p.pin_sync


def meet(tag, n, grank, gworld):
    """The job's collective number `n` on the group tagged `tag`: pin the
    passes read since the last meeting point, or judge the pass pinned
    before. A pass judged and counted costs a few attribute reads (the
    step that logs metrics meets here several times)."""
    p = _data.latest
    if p is None:
        _data.recent.clear()
    elif p.counted and p.rows is not None:
        if _data.recent:
            _data.recent.clear()
    elif p.key is None and p in _data.recent:
        _pin(p, "c/%s/%d" % (tag, n), grank, gworld)
    else:
        _data.recent.clear()
        if p.key is not None and readable(p):
            if not p.finished:
                p.lockstep = True
            if p.rows is None:
                judge(p)
            elif p.rows and p.lockstep:
                _judge_counts(p)  # read right after the collective it was pinned at


def after_collective():
    """Right after a blocking collective of the job's: rows pinned before it
    (at a collective or a DDP forward) are there on every rank."""
    p = _data.latest
    if p is not None and p.key is not None and p.rows is None:
        judge(p)


def at_end(p):
    if p.key is not None and p.rows is None and _data.in_main_thread() and readable(p):
        judge(p)


_groups = {}  # process group -> (group rank, group size, tag): fixed for a group's life
_c10d = []    # torch.distributed.distributed_c10d, imported once (not at every collective)


def where(group):
    """(group rank, group size, tag) of this rank in `group` (None: the
    default group), or None when it is no meeting point (not a member, one
    rank, a group without a tag)."""
    if not _c10d:
        import torch.distributed.distributed_c10d as c10d
        _c10d.append(c10d)
    pg = _c10d[0].GroupMember.WORLD if group is None else group
    got = _groups.get(pg, False)
    if got is False:
        grank, gworld = _exchange.group_rank_world(group)
        tag = _board.group_tag(group)
        got = (grank, gworld, tag) if grank >= 0 and gworld > 1 and tag is not None else None
        if len(_groups) < 1024:
            _groups[pg] = got
    return got


def collective(group):
    """A collective of the job's on `group`: (group rank, group size) when
    it is a meeting point, else None (not a member, one rank)."""
    got = where(group)
    if got is None:
        return None
    grank, gworld, tag = got
    n = _seq.get(tag, 0) + 1
    _seq[tag] = n
    meet(tag, n, grank, gworld)
    return grank, gworld


def model(ddp):
    """The guard's state of a DDP model (_data.Model), made at its first
    training forward. Kept in one plain object set once in the module's
    __dict__: nn.Module's own __setattr__ and __getattr__ (a missing name
    raises through Python) would cost microseconds at every step."""
    st = ddp.__dict__.get("_ddp_pitfalls_model")
    if st is None:
        st = _data.Model()
        object.__setattr__(ddp, "_ddp_pitfalls_model", st)
        got = where(ddp.process_group)
        if got is not None:
            grank, gworld, tag = got
            ordinal = _ddp_ordinals.get(tag, 0)
            _ddp_ordinals[tag] = ordinal + 1
            st.where = (grank, gworld, "d/%s/%d" % (tag, ordinal))
    return st


def backward_done():
    """After a backward: when the DDP forward before it all-reduces its
    gradients, every rank has passed every pin made before it."""
    if _data.forward_synced[0]:
        _data.forward_synced[0] = False
        _data.synced += 1


def ddp_enter(st):
    """Before a DDP training forward (grad on, training mode): the rows
    pinned at an earlier step are there once that step's backward
    all-reduced, so they are judged before this forward's own collectives
    (DDP rebuilds its buckets with a broadcast at step 2)."""
    p = _data.latest
    if p is not None and p is st.quiet:
        return  # this pass is judged and the model's BatchNorm too: every later step
    if st.where is None:
        return
    small_batch_bn.judge_ddp(st, st.where[1], st.where[2])
    if p is None or p.key is None or not readable(p):
        return
    if not p.finished:
        p.lockstep = True
    if p.rows is None:
        judge(p)
    elif p.rows and p.lockstep:
        _judge_counts(p)
    if p.rows is not None and (p.counted or not p.rows) and small_batch_bn.judged(st):
        st.quiet = p


def ddp_exit(ddp, st):
    """After a DDP training forward: the passes read for this step are
    training passes; pin the fresh ones (their rows are read at the next
    step, after this step's backward all-reduced)."""
    if st.where is None:
        return
    grank, gworld, prefix = st.where
    st.forwards += 1
    _data.forward_synced[0] = bool(getattr(ddp, "require_backward_grad_sync", True))
    for q in _data.recent:
        q.training = True
    if _data.latest is not None and not _data.latest.finished:
        _data.latest.training = True
    small_batch_bn.pin_ddp(st, grank, prefix)
    p = _data.latest
    if p is not None and p.key is None and p in _data.recent:
        _pin(p, "%s/%d" % (prefix, st.forwards), grank, gworld)
    else:
        _data.recent.clear()


def judge(p):
    rows = _board.read(p.key, p.kworld)
    if rows is None:
        p.tries += 1
        if p.tries >= MAX_TRIES:
            p.rows = []
        return
    p.rows = rows
    p.uniform = len({(r[TOTAL], r[BATCH], r[DROP_LAST], r[FINISHED], r[SAMPLES])
                     for r in rows}) == 1
    if _state.on(missing_set_epoch.BUG) and p.training:
        missing_set_epoch.judge([r[REPEAT] for r in rows], [r[SEED] for r in rows], p)
    _judge_counts(p)


def _judge_counts(p):
    """drop_last_hang's verdict, once, when the pass is a loop of steps: a
    DDP training loop, or one that met the group at least twice."""
    rows = p.rows
    if p.counted or not rows or not (p.lockstep or p.key.startswith("d/")):
        return
    p.counted = True
    if (_state.on(drop_last_hang.BUG) and p.pinned_open and not any(r[JOIN] for r in rows) and
            len({r[N_SLOTS] for r in rows}) == 1):
        drop_last_hang.judge([r[MIN_PROMISED] for r in rows], p.key.startswith("d/"))
