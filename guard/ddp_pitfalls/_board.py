"""The guard's notice board: each rank pins a few integers about a data pass
to the process group's own store, and reads its peers' when they are there.

Why a store and not a collective: a collective that the guard adds must be
entered by every rank, so deciding to run one from what this rank alone has
seen (a loader it iterated, a forward it ran) leaves a rank alone inside it
when its peers saw something else: the hangs of issue 70. A store write
never waits for a peer, and a read first asks how many peers' rows are there
(a counter read by `add(key, 0)`, which does not wait) and reads nothing otherwise. So a peer
that is elsewhere (a rank-0-only loop, a rank fed by broadcast, a joined
rank) costs nothing but a verdict not reached: the guard then says nothing.

A row is judged only once every rank of the group has pinned it under the
same key, and keys are built from what every rank counts alike in a correct
job (the group, the ordinal of a DDP model on it and its training forwards,
or the group's collective sequence number). Every rank thus judges the same
rows; the rows are there because a collective of the job's own (DDP's
gradient all-reduce, the user's all_reduce) separated the pinning from the
reading on every rank.

Any failure of the store turns the board off for the rest of the job: the
guard must never add a failure of its own.
"""
_PREFIX = "ddp_pitfalls/v2/"
_off = [False]


def _store():
    import torch.distributed.distributed_c10d as c10d
    return c10d._get_default_store()


def group_tag(group):
    """'w' for the default group, else its global ranks ('0-1'): the same
    string on every member."""
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d
    if group is None or group is dist.group.WORLD:
        return "w"
    ranks = getattr(c10d, "_pg_group_ranks", {}).get(group)
    if ranks is None:
        try:
            ranks = {r: i for i, r in enumerate(dist.get_process_group_ranks(group))}
        except Exception:  # noqa: BLE001 (an unknown group: no tag, no row)
            return None
    return "-".join(str(r) for r in sorted(ranks))


def pin(key, grank, values):
    """Pins this rank's row; True when the store took it."""
    if _off[0]:
        return False
    try:
        store = _store()
        store.set(_PREFIX + key + "/" + str(grank), ",".join(str(int(v)) for v in values))
        # add() is answered (after the set, on the same connection), so the
        # row and its count are in the store before this rank goes on.
        store.add(_PREFIX + key + "/n", 1)
        return True
    except Exception:  # noqa: BLE001
        _off[0] = True
        return False


def read(key, world):
    """Every rank's row under `key` (indexed by group rank), or None when
    any is missing. Never waits."""
    if _off[0]:
        return None
    try:
        store = _store()
        # add(.., 0) reads the count without waiting (PyTorch 1.13's
        # PrefixStore has no check()); get() of a row counted there does not
        # wait either.
        if store.add(_PREFIX + key + "/n", 0) < world:
            return None
        names = [_PREFIX + key + "/" + str(r) for r in range(world)]
        return [[int(v) for v in store.get(n).decode().split(",")] for n in names]
    except Exception:  # noqa: BLE001
        _off[0] = True
        return None
