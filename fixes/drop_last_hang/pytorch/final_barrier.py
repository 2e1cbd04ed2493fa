#!/usr/bin/python3
"""Seed 001's closing dist.barrier(): does a rank that leaves early hurt the others?

    /usr/bin/python3 fixes/drop_last_hang/pytorch/final_barrier.py \\
        --out results/vs_pytorch/drop_last_hang_final_barrier.torch1.13.json
    .venv-torch2.15/bin/python fixes/drop_last_hang/pytorch/final_barrier.py \\
        --out results/vs_pytorch/drop_last_hang_final_barrier.torch2.15.json

Evidence for the ledger's claim:drop_last_hang/final-barrier-keeps-ranks ("a dist.barrier() at the end keeps a
rank from leaving early and hurting the others"; PyTorch 1.13 and 2.15,
gloo, CPU, real processes). The seed's fixed script ends its training loop
with `dist.barrier()` and then `dist.destroy_process_group()`. Here every
rank trains a small DDP model for the same number of steps (the fixed
script: equal step counts), then every rank but one ("the early rank")
spends --tail_s seconds on rank-local work after its last step (an
evaluation, a checkpoint, a slow print), then, with the barrier, calls
`dist.barrier()`, then `dist.destroy_process_group()` and exits. The early
rank goes straight on: without the barrier it has left the world, process
gone, while the others are still in their tail.

Cases: the store a plain script rendezvouses through, a FileStore (nobody
hosts it) or a TCPStore hosted by rank 0 (`init_method="tcp://..."`, as
`env://` without torchrun); the early rank, rank 0 (the store's host) or
the last rank; with and without the closing barrier; --runs runs each.
Measured per run: each rank's exit code and wall time, whether the early
rank was done (about to exit) while every other rank was still in its
rank-local work (wall clock: the scenario happened), and whether a rank other than the early one
failed (exit other than 0, killed at the bound, or an exception), with the
first line of what it raised. A rank "hurt"
is one that fails; the barrier helps only where a case without it hurts.
"""
import argparse
import datetime
import faulthandler
import os
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
from tools.vs_pytorch import evidence  # noqa: E402

STEPS, ROWS, DIM = 3, 8, 8
STORES = ("file", "tcp_rank0")


def rank_main(args):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    w, r = args.world_size, args.rank
    log = evidence.RankLog(args.dir, r)
    faulthandler.dump_traceback_later(60, exit=True)  # a hang shows where, then ends
    init = (evidence.init_store(args.dir) if args.store == "file"
            else "tcp://127.0.0.1:%d" % args.port)
    start = time.monotonic()
    try:
        dist.init_process_group("gloo", init_method=init, rank=r, world_size=w,
                                timeout=datetime.timedelta(seconds=args.pg_timeout))
        torch.manual_seed(0)
        model = DDP(torch.nn.Linear(DIM, 1).double())
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        g = torch.Generator().manual_seed(r)
        for _ in range(STEPS):  # the same number of steps on every rank
            x = torch.randn(ROWS, DIM, generator=g, dtype=torch.float64)
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
        log["trained"] = True
        log.dump()
        if r != args.early:
            time.sleep(args.tail_s)  # rank-local work after the last step
        log["t_tail_end"] = time.time()  # wall clock: comparable across the ranks
        if args.barrier:
            dist.barrier()
            log["barrier"] = "passed"
        dist.destroy_process_group()
        log["destroyed"] = True
    except Exception as e:  # noqa: BLE001  what the rank raised is the measurement
        log["raised"] = "%s: %s" % (type(e).__name__, evidence.first_line(e))
        log["wall_s"] = time.monotonic() - start
        log.dump()
        return 1
    log["wall_s"] = time.monotonic() - start
    log["t_done"] = time.time()
    log.dump()
    return 0


def free_port():
    """A port the kernel had free a moment ago (rank 0's TCPStore binds it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_run(script, w, store, early, barrier, tail_s, pg_timeout):
    with tempfile.TemporaryDirectory() as d:
        procs = evidence.spawn_ranks(
            script, w, ["--store", store, "--port", str(free_port()), "--early", str(early),
                        "--barrier", str(int(barrier)), "--tail_s", str(tail_s),
                        "--pg_timeout", str(pg_timeout)], d, timeout=pg_timeout + tail_s + 30)
        ranks = evidence.collect(d, procs)
    for info, p in zip(ranks, procs):
        info["wall_s"] = round(info.get("wall_s", p["wall_s"]), 3)
    others = [x for x in ranks if x["rank"] != early]
    hurt = [x for x in others if x["exit"] != 0 or "raised" in x]
    # Whether the scenario happened: the early rank was done (about to exit)
    # while every other rank was still in its rank-local work.
    done, tails = ranks[early].get("t_done"), [x.get("t_tail_end") for x in others]
    left_first = (done is not None and all(t is not None for t in tails)
                  and done < min(tails))
    return {"ranks": ranks,
            "early_left_first": left_first,
            "early_exit": ranks[early]["exit"],
            "others_failed": len(hurt),
            "others_first_error": (hurt[0].get("raised") or hurt[0].get("died", "")) if hurt else "",
            "others_max_wall_s": max(x["wall_s"] for x in others)}


def one_case(script, w, store, early, barrier, runs, tail_s, pg_timeout):
    per_run = [one_run(script, w, store, early, barrier, tail_s, pg_timeout) for _ in range(runs)]
    errors = sorted({x["others_first_error"] for x in per_run if x["others_first_error"]})
    return {"world_size": w, "store": store, "early_rank": early, "barrier": barrier,
            "runs": runs, "runs_hurt": sum(1 for x in per_run if x["others_failed"] > 0),
            "runs_early_left_first": sum(1 for x in per_run if x["early_left_first"]),
            "runs_early_failed": sum(1 for x in per_run if x["early_exit"] != 0),
            "others_errors": errors,
            "others_max_wall_s": max(x["others_max_wall_s"] for x in per_run),
            "per_run": per_run}


def print_table(paths):
    out = ["| PyTorch | W | store | early rank | closing barrier | runs | runs in which the "
           "early rank was done while the others still worked | runs in which "
           "another rank failed | what it raised | runs in which the early rank failed |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for doc in evidence.load_docs(paths):
        for c in doc["cases"]:
            out.append("| %s | %d | %s | %d | %s | %d | %d | %d | %s | %d |" % (
                doc["provenance"]["torch_version"], c["world_size"],
                "FileStore" if c["store"] == "file" else "TCPStore on rank 0", c["early_rank"],
                "yes" if c["barrier"] else "no", c["runs"], c["runs_early_left_first"],
                c["runs_hurt"],
                "; ".join(e.replace("|", "/")[:120] for e in c["others_errors"]) or "-",
                c["runs_early_failed"]))
    out.append("\n" + evidence.footer(paths))
    return "\n".join(out) + "\n"


def main():
    ap = evidence.parser(__doc__.split("\n\n")[0], pg_timeout=20.0, worlds="2,4")
    ap.add_argument("--runs", type=int, default=5, help="runs per case (default 5)")
    ap.add_argument("--tail_s", type=float, default=2.0,
                    help="seconds of rank-local work the other ranks do after their last step "
                         "(default 2)")
    # The rank processes' own flags.
    ap.add_argument("--store", choices=STORES, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--early", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--barrier", type=int, help=argparse.SUPPRESS)
    evidence.add_table_flags(ap)
    args = evidence.dispatch(ap, rank_main, print_table)
    if args.runs < 1 or args.tail_s < 0:
        print("--runs must be at least 1 and --tail_s at least 0, got %d and %g"
              % (args.runs, args.tail_s), file=sys.stderr)
        return 2
    script = os.path.abspath(__file__)
    cases = []
    for w in evidence.worlds(args):
        for store in STORES:
            for early in (0, w - 1):
                for barrier in (False, True):
                    c = one_case(script, w, store, early, barrier, args.runs, args.tail_s,
                                 args.pg_timeout)
                    print("W=%d %s early rank %d barrier %s: early rank gone first in %d, "
                          "%d of %d runs hurt another rank %s; "
                          "early rank failed in %d; slowest other rank %.1f s" % (
                              w, store, early, barrier, c["runs_early_left_first"],
                              c["runs_hurt"], c["runs"],
                              c["others_errors"] or "", c["runs_early_failed"],
                              c["others_max_wall_s"]), file=sys.stderr)
                    cases.append(c)
    evidence.write_json(args.out, evidence.record(
        "equal step counts, one rank leaving right after its last step while the others do "
        "--tail_s of local work, with and without a closing dist.barrier()",
        {"steps": STEPS, "rows": ROWS, "model": "DDP(Linear(8,1)), float64, SGD",
         "tail_s": args.tail_s, "pg_timeout_s": args.pg_timeout},
        "fixes/drop_last_hang/pytorch/final_barrier.py", cases=cases))
    return 0


if __name__ == "__main__":
    sys.exit(main())
