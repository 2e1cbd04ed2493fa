#!/usr/bin/python3
"""What PyTorch DDP on gloo does when one rank runs one more step.

    /usr/bin/python3 repro/drop_last_hang/pytorch/uneven_steps_timeout.py \\
        --out results/vs_pytorch/drop_last_hang_timeout.json

Evidence for repro/drop_last_hang's README ("waits forever": on which engine).
PyTorch 1.13, gloo, CPU, real processes. W ranks train a small DDP model;
rank 0 has one batch more than the others, so its last backward's gradient
allreduce has no partner. What the other ranks do then:

  others_alive    stay alive doing nothing (a job that evaluates, saves, or
                  waits on a file) for longer than the timeout
  others_exit     return from the script (the process ends)
  others_barrier  call dist.barrier(), as seed 001's code does at the end

The process group is created with --pg_timeout seconds (default 10) so the
run is short; PyTorch's default, printed into the record, is
torch.distributed.constants.default_pg_timeout (30 minutes): with it the same
RuntimeError comes 30 minutes later. Measured per rank: the exception and its
first line, and the seconds from entering the extra step (the others: from
entering the barrier) to the exception.
"""
import argparse
import datetime
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
from tools.vs_pytorch import evidence  # noqa: E402

STEPS = 3  # batches of the short ranks; rank 0 has STEPS + 1


def rank_main(args):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    w, r = args.world_size, args.rank
    out = {"rank": r}

    def dump():
        with open(os.path.join(args.dir, "rank%d.json" % r), "w") as f:
            json.dump(out, f)

    dist.init_process_group("gloo", init_method=evidence.init_store(args.dir), rank=r,
                            world_size=w, timeout=datetime.timedelta(seconds=args.pg_timeout))
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    steps = STEPS + 1 if r == 0 else STEPS
    t0 = time.monotonic()
    try:
        for s in range(steps):
            out["step"] = s
            t0 = time.monotonic()
            dump()
            opt.zero_grad()
            model(torch.randn(4, 8)).sum().backward()
            opt.step()
        out["finished_steps"] = steps
        if r != 0:
            if args.others == "others_exit":
                out["then"] = "exit"
                dump()
                os._exit(0)
            if args.others == "others_barrier":
                out["then"] = "barrier"
                t0 = time.monotonic()
                dump()
                dist.barrier()
                out["barrier_returned"] = True
            else:
                out["then"] = "alive"
                dump()
                time.sleep(args.pg_timeout + 15)
    except RuntimeError as e:
        out["error"] = evidence.first_line(e)
        out["error_after_s"] = time.monotonic() - t0
    dump()
    os._exit(0)  # no teardown: a peer may be gone


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="where to write the JSON (default: print it)")
    ap.add_argument("--pg_timeout", type=float, default=10, help="process group timeout, s")
    ap.add_argument("--worlds", default="2,4", help="world sizes, comma-separated")
    ap.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--world_size", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    ap.add_argument("--others", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rank is not None:
        return rank_main(args)
    import torch.distributed.constants as constants
    cases = []
    for w in [int(x) for x in args.worlds.split(",")]:
        for others in ("others_alive", "others_exit", "others_barrier"):
            with tempfile.TemporaryDirectory(prefix="uneven_steps_") as d:
                procs = evidence.spawn_ranks(
                    os.path.abspath(__file__), w,
                    ["--others", others, "--pg_timeout", str(args.pg_timeout)], d,
                    3 * args.pg_timeout + 60)
                ranks = []
                for r, p in enumerate(procs):
                    path = os.path.join(d, "rank%d.json" % r)
                    info = json.load(open(path)) if os.path.exists(path) else {"rank": r}
                    info["exit"] = p["exit"]
                    info["wall_s"] = p["wall_s"]
                    ranks.append(info)
            cases.append({"world_size": w, "others": others, "ranks": ranks})
            print("W=%d %s: rank 0: %s after %.2f s" % (
                w, others, ranks[0].get("error", "no error"), ranks[0].get("error_after_s", -1)),
                file=sys.stderr)
    doc = {"what": "DDP on gloo, rank 0 runs one step more than the others",
           "config": {"steps_short_ranks": STEPS, "pg_timeout_s": args.pg_timeout,
                      "default_pg_timeout_s": constants.default_pg_timeout.total_seconds()},
           "provenance": evidence.provenance(
               "repro/drop_last_hang/pytorch/uneven_steps_timeout.py"),
           "cases": cases}
    evidence.write_json(args.out, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
