#!/usr/bin/python3
"""PyTorch's TORCH_DISTRIBUTED_DEBUG=DETAIL on three collective mismatches.

    /usr/bin/python3 core/comm/checked_vs_detail/detail.py \\
        --out results/vs_pytorch/torch_debug_detail.json

The PyTorch side of core/comm/README.md's section "Checked mode and
TORCH_DISTRIBUTED_DEBUG=DETAIL" (the suite's side: `bazel run
//core/comm/checked_vs_detail`, same scenarios). PyTorch 1.13, gloo, CPU,
real processes, the process group created with --pg_timeout seconds
(default 10; PyTorch's default is 30 minutes):

  unequal_allgather     every rank all_gathers its share of N = 1003 samples
                        split without padding (502/501 at W = 2)
  allreduce_vs_barrier  rank 0 calls all_reduce, the others barrier
  extra_step_alive      every rank runs 3 all_reduces, rank 0 a 4th; the
                        others stay alive (sleep) past the timeout

Each case runs with TORCH_DISTRIBUTED_DEBUG=DETAIL and without it (OFF).
Measured per rank: the exception's first line and the seconds from entering
the mismatched call to the exception, or how the process ended.
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

N = 1003
SCENARIOS = ("unequal_allgather", "allreduce_vs_barrier", "extra_step_alive")


def rank_main(args):
    import torch
    import torch.distributed as dist

    w, r = args.world_size, args.rank
    out = {"rank": r}

    def dump():
        with open(os.path.join(args.dir, "rank%d.json" % r), "w") as f:
            json.dump(out, f)

    dist.init_process_group("gloo", init_method=evidence.init_store(args.dir), rank=r,
                            world_size=w, timeout=datetime.timedelta(seconds=args.pg_timeout))
    dist.barrier()
    t0 = time.monotonic()
    try:
        if args.scenario == "unequal_allgather":
            mine = torch.arange(r, N, w, dtype=torch.float64)
            outs = [torch.zeros_like(mine) for _ in range(w)]
            out["entered"] = "all_gather of %d values" % mine.numel()
            dump()
            t0 = time.monotonic()
            dist.all_gather(outs, mine)
        elif args.scenario == "allreduce_vs_barrier":
            out["entered"] = "all_reduce" if r == 0 else "barrier"
            dump()
            t0 = time.monotonic()
            if r == 0:
                dist.all_reduce(torch.ones(4, dtype=torch.float64))
            else:
                dist.barrier()
        else:
            for _ in range(3):
                dist.all_reduce(torch.ones(4, dtype=torch.float64))
            if r == 0:
                out["entered"] = "all_reduce #4"
                dump()
                t0 = time.monotonic()
                dist.all_reduce(torch.ones(4, dtype=torch.float64))
            else:
                out["entered"] = "sleep (alive, no more collectives)"
                dump()
                time.sleep(args.pg_timeout + 10)
        out["returned_after_s"] = time.monotonic() - t0
    except RuntimeError as e:
        out["error"] = evidence.first_line(e, 400)
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
    ap.add_argument("--scenario", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rank is not None:
        return rank_main(args)
    cases = []
    for debug in ("DETAIL", "OFF"):
        for scenario in SCENARIOS:
            for w in [int(x) for x in args.worlds.split(",")]:
                with tempfile.TemporaryDirectory(prefix="debug_detail_") as d:
                    procs = evidence.spawn_ranks(
                        os.path.abspath(__file__), w,
                        ["--scenario", scenario, "--pg_timeout", str(args.pg_timeout)], d,
                        3 * args.pg_timeout + 60, env={"TORCH_DISTRIBUTED_DEBUG": debug})
                    ranks = []
                    for r, p in enumerate(procs):
                        path = os.path.join(d, "rank%d.json" % r)
                        info = json.load(open(path)) if os.path.exists(path) else {"rank": r}
                        info["exit"] = p["exit"]
                        if p["exit"] != 0:
                            abort = [l for l in p["output"].splitlines()
                                     if "terminate" in l or "Enforce" in l]
                            info["died"] = abort[0][:300] if abort else evidence.first_line(
                                p["output"][-300:])
                        ranks.append(info)
                cases.append({"debug": debug, "scenario": scenario, "world_size": w,
                              "ranks": ranks})
                print("%s %s W=%d: %s" % (debug, scenario, w, "; ".join(
                    "r%d %s" % (i, ("%s after %.2f s" % (x["error"][:90], x["error_after_s"]))
                               if "error" in x else x.get("died", "exit %s" % x["exit"]))
                    for i, x in enumerate(ranks))), file=sys.stderr)
    doc = {"what": "TORCH_DISTRIBUTED_DEBUG=DETAIL vs OFF on three collective mismatches",
           "config": {"n": N, "pg_timeout_s": args.pg_timeout},
           "provenance": evidence.provenance("core/comm/checked_vs_detail/detail.py"),
           "cases": cases}
    evidence.write_json(args.out, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
