"""The hangs of the Flight Recorder corpus, written as users write them.

Each scenario is a function run(rank, world, ctx) executed by every rank of a
real PyTorch gloo job (run.py starts the processes). ctx.mark() on the
culprit's path records the line of the culprit's last user call (the line
after it, or `offset` lines from it): the call site the ground truth names. TRUTH gives, per scenario, the world size,
the ranks at fault (empty: a healthy job), the process group and the
collective where the ranks part ways.
"""
import os
import signal
import time

import torch
import torch.distributed as dist

STEPS = 3


def _loop(x, steps):
    for _ in range(steps):
        dist.all_reduce(x)


def extra_step(rank, world, ctx):
    # drop_last=False with uneven shards: rank 2 has one batch more.
    x = torch.ones(8)
    steps = STEPS + (1 if rank == 2 else 0)
    for step in range(steps):
        if step == STEPS:
            ctx.mark()
        dist.all_reduce(x)


def skip_one(rank, world, ctx):
    # Rank 1 skips the metric all_reduce of step 1 (an `if` on local data).
    loss, metric = torch.ones(4), torch.ones(4)
    for step in range(STEPS):
        dist.all_reduce(loss)
        if not (rank == 1 and step == 1):
            dist.all_reduce(metric)
    if rank == 1:
        ctx.mark(-2)  # its last call: the metric all_reduce (the one it skipped)


def allreduce_vs_barrier(rank, world, ctx):
    x = torch.ones(4)
    _loop(x, 2)
    if rank == 0:
        ctx.mark()
        dist.barrier()
    else:
        dist.all_reduce(x)


def size_mismatch(rank, world, ctx):
    _loop(torch.ones(4), 2)
    n = 5 if rank == 1 else 4
    if rank == 1:
        ctx.mark()
    dist.all_reduce(torch.ones(n))


def dtype_mismatch(rank, world, ctx):
    _loop(torch.ones(4), 2)
    # int32 where the others send float32: the same bytes per element, so
    # gloo cannot notice; the sums are garbage and nothing fails.
    dtype = torch.int32 if rank == 2 else torch.float32
    if rank == 2:
        ctx.mark()
    dist.all_reduce(torch.ones(4, dtype=dtype))


def uneven_ok(rank, world, ctx):
    # Legitimately uneven: all_to_all_single with per-rank split sizes, and
    # an all_reduce whose tensors have the same numel in different shapes.
    send = [rank + 1 + dst for dst in range(world)]
    recv = [src + 1 + rank for src in range(world)]
    out = torch.empty(sum(recv))
    dist.all_to_all_single(out, torch.full((sum(send),), float(rank)), recv, send)
    x = torch.ones(2, 3) if rank == 0 else torch.ones(6)
    dist.all_reduce(x)
    _loop(torch.ones(4), 2)


def healthy(rank, world, ctx):
    x = torch.ones(4)
    _loop(x, 2)
    dist.broadcast(x, src=0)
    gathered = torch.empty(4 * world)
    dist.all_gather_into_tensor(gathered, x)
    dist.barrier()


def stalled(rank, world, ctx):
    x = torch.ones(4)
    for step in range(STEPS):
        if rank == 1 and step == 2:
            ctx.mark(3)  # its last collective before the stall
            ctx.dump()  # what a SIGUSR1 or py-spy dump would show during the stall
            time.sleep(ctx.timeout_s + 4)
        dist.all_reduce(x)


def killed(rank, world, ctx):
    x = torch.ones(4)
    for step in range(STEPS):
        if rank == 2 and step == 2:
            ctx.mark(2)
            os.kill(os.getpid(), signal.SIGKILL)  # OOM killer, segfault: no dump
        dist.all_reduce(x)


def subgroup_hang(rank, world, ctx):
    # Pipeline-style: [0, 1] and [2, 3] reduce inside their group; rank 3
    # skips its group's last all_reduce. The default group stays healthy.
    groups = [dist.new_group([0, 1]), dist.new_group([2, 3])]
    mine = groups[rank // 2]
    x = torch.ones(4)
    dist.all_reduce(x)
    for step in range(2):
        if rank == 3 and step == 1:
            ctx.mark(2)
            break
        dist.all_reduce(x, group=mine)


def ddp_short(rank, world, ctx):
    # DDP's own gradient all_reduce (from backward) with rank 2 a step short.
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    steps = STEPS - 1 if rank == 2 else STEPS
    for step in range(steps):
        opt.zero_grad()
        if rank == 2 and step == steps - 1:
            ctx.mark()
        model(torch.ones(3, 4)).sum().backward()
        opt.step()


def w4_two_stalled(rank, world, ctx):
    x = torch.ones(4)
    for step in range(STEPS):
        if rank in (1, 3) and step == 2:
            ctx.mark(3)
            ctx.dump()
            time.sleep(ctx.timeout_s + 4)
        dist.all_reduce(x)


def w4_two_mismatch(rank, world, ctx):
    _loop(torch.ones(4), 2)
    dtype = torch.int32 if rank == 1 else torch.float32
    n = 5 if rank == 3 else 4
    if rank in (1, 3):
        ctx.mark()
    dist.all_reduce(torch.ones(n, dtype=dtype))


# Subgroups (issue 45). PyTorch names groups by creation order on every rank,
# members or not: the default group is "0", the first new_group "1", ...
# A subgroup does not inherit init_process_group's timeout: without
# timeout= its collectives wait the backend's default (30 minutes on gloo).


def sub_skip(rank, world, ctx):
    # The job: a new_group([0, 1]); rank 1 skips the subgroup's last
    # all_reduce (an `if` on local data). Rank 2, outside the subgroup, has
    # finished its default-group work: the hang is inside the subgroup.
    sub = dist.new_group([0, 1], timeout=ctx.timeout)
    x = torch.ones(4)
    _loop(x, 2)
    if rank == 2:
        return
    for step in range(STEPS):
        if rank == 1 and step == STEPS - 1:
            ctx.mark(2)  # its last call: the subgroup all_reduce below
            break
        dist.all_reduce(x, group=sub)


def sub_op_mismatch(rank, world, ctx):
    # Members of new_group([1, 2, 3]) disagree on the op: rank 3 calls a
    # barrier where ranks 1 and 2 all_reduce. Rank 0 is outside the group.
    sub = dist.new_group([1, 2, 3], timeout=ctx.timeout)
    x = torch.ones(4)
    _loop(x, 1)
    if rank == 0:
        return
    dist.all_reduce(x, group=sub)
    if rank == 3:
        ctx.mark()
        dist.barrier(group=sub)
    else:
        dist.all_reduce(x, group=sub)


def default_hang_sub_ok(rank, world, ctx):
    # Rank 2 stalls outside any collective (data loading); ranks 0 and 1
    # complete their subgroup's all_reduces, then wait for rank 2 in the
    # default group.
    sub = dist.new_group([0, 1], timeout=ctx.timeout)
    x = torch.ones(4)
    dist.all_reduce(x)
    if rank == 2:
        ctx.mark(-2)  # its last collective: the default all_reduce above
        ctx.dump()
        ctx.stall()
    else:
        _loop_in(x, STEPS, sub)
    dist.all_reduce(x)


def _loop_in(x, steps, group):
    for _ in range(steps):
        dist.all_reduce(x, group=group)


def mesh_one_hung(rank, world, ctx):
    # A 2 x 2 mesh: tensor-parallel groups [0, 1], [2, 3] ("1", "2") and
    # data-parallel groups [0, 2], [1, 3] ("3", "4"). Each step reduces in
    # its tp group, then its dp group; on the last step rank 3 skips its dp
    # all_reduce. Only dp group [1, 3] hangs.
    tp, _ = dist.new_subgroups_by_enumeration([[0, 1], [2, 3]], timeout=ctx.timeout)
    dp, _ = dist.new_subgroups_by_enumeration([[0, 2], [1, 3]], timeout=ctx.timeout)
    x = torch.ones(4)
    for step in range(STEPS):
        dist.all_reduce(x, group=tp)
        if rank == 3 and step == STEPS - 1:
            ctx.mark(-2)  # its last call: this step's tp all_reduce
            break
        dist.all_reduce(x, group=dp)


def two_hung(rank, world, ctx):
    # Two subgroups hang at once, each for its own reason: in [0, 1] rank 1
    # skips the last all_reduce; in [2, 3] rank 2 stalls before it.
    mine, _ = dist.new_subgroups(group_size=2, timeout=ctx.timeout)
    x = torch.ones(4)
    for step in range(STEPS):
        if rank == 1 and step == STEPS - 1:
            ctx.mark(6)  # its last call: the all_reduce below
            break
        if rank == 2 and step == STEPS - 1:
            ctx.mark(3)  # its last call before the stall: the same line
            ctx.dump()
            ctx.stall()
        dist.all_reduce(x, group=mine)


def sub_stall_cascade(rank, world, ctx):
    # Rank 1 stalls before its subgroup's last all_reduce: rank 0 waits for
    # it in the subgroup, and rank 2 (outside it) waits for both in the
    # default group's next all_reduce. Rank 2 entered the default group's
    # collective alone, yet it is not at fault, and rank 0 is not late to
    # the default group: it is held in the subgroup.
    sub = dist.new_group([0, 1], timeout=ctx.timeout)
    x = torch.ones(4)
    _loop(x, 1)
    if rank in (0, 1):
        for step in range(STEPS):
            if rank == 1 and step == STEPS - 1:
                ctx.mark(3)  # its last call: the subgroup all_reduce below
                ctx.dump()
                ctx.stall()
            dist.all_reduce(x, group=sub)
    dist.all_reduce(x)


# name: (world size, culprit ranks, process group of the fault ("" none),
#        the collective where the ranks part ways (its collective_seq_id,
#        counted from 1 per group; -1 none), what it is)
TRUTH = {
    "extra_step": (3, [2], "0", 4, "drop_last hang: rank 2 makes one all_reduce more"),
    "skip_one": (4, [1], "0", 6, "rank 1 skips one metric all_reduce"),
    "allreduce_vs_barrier": (3, [0], "0", 3, "rank 0 calls barrier where the others all_reduce"),
    "size_mismatch": (3, [1], "0", 3, "rank 1 all_reduces 5 elements, the others 4"),
    "dtype_mismatch": (3, [2], "0", 3, "rank 2 all_reduces int32, the others float32 (silent garbage)"),
    "uneven_ok": (3, [], "", -1, "healthy: uneven all_to_all_single splits, equal numel in other shapes"),
    "healthy": (3, [], "", -1, "healthy: all_reduce, broadcast, all_gather_into_tensor, barrier"),
    "stalled": (3, [1], "0", 3, "rank 1 stalls (sleeps) before its third all_reduce"),
    "killed": (3, [2], "0", 3, "rank 2 is killed (SIGKILL) before its third all_reduce"),
    # The subgroup of ranks [2, 3] is PyTorch's process group "2".
    "subgroup_hang": (4, [3], "2", 2, "rank 3 skips its subgroup's all_reduce; default group healthy"),
    # DDP's constructor makes 5 collectives (parameter checks, broadcasts),
    # then one gradient all_reduce per step: the third step's is #8.
    "ddp_short": (3, [2], "0", 8, "DDP: rank 2 runs one step fewer (gradient all_reduce)"),
    "w4_two_stalled": (4, [1, 3], "0", 3, "W=4: ranks 1 and 3 stall"),
    "w4_two_mismatch": (4, [1, 3], "0", 3, "W=4: rank 1 int32, rank 3 5 elements, the others float32 x4"),
    "sub_skip": (3, [1], "1", 3, "new_group([0, 1]): rank 1 skips the subgroup's last all_reduce; rank 2 outside"),
    "sub_op_mismatch": (4, [3], "1", 2, "new_group([1, 2, 3]): rank 3 calls barrier where 1 and 2 all_reduce; rank 0 outside"),
    "default_hang_sub_ok": (3, [2], "0", 2, "rank 2 stalls; subgroup [0, 1] completes, then waits in the default group"),
    "mesh_one_hung": (4, [3], "4", 3, "2 x 2 mesh (tp [0, 1], [2, 3]; dp [0, 2], [1, 3]): rank 3 skips a dp all_reduce"),
    "two_hung": (4, [1, 2], "1", 3, "subgroups [0, 1] and [2, 3] both hang: rank 1 skips, rank 2 stalls"),
    "sub_stall_cascade": (3, [1], "1", 3, "rank 1 stalls in subgroup [0, 1]; rank 2 waits alone in the default group"),
}

# Scenarios whose dumps hold more than one finding: (process group, seq,
# culprits) each. Every other scenario has the one finding of TRUTH.
FINDINGS = {
    "two_hung": [("1", 3, [1]), ("2", 3, [2])],
    # Rank 1 is missing from both groups: the subgroup's #3 and, since it
    # never got there, the default group's #2.
    "sub_stall_cascade": [("1", 3, [1]), ("0", 2, [1])],
}
