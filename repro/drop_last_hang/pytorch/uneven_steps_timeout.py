#!/usr/bin/python3
"""What PyTorch DDP on gloo does when one rank runs one more step.

    /usr/bin/python3 repro/drop_last_hang/pytorch/uneven_steps_timeout.py \\
        --out results/vs_pytorch/drop_last_hang_timeout.torch1.13.json
    .venv-torch2.15/bin/python repro/drop_last_hang/pytorch/uneven_steps_timeout.py \\
        --out results/vs_pytorch/drop_last_hang_timeout.torch2.15.json

Evidence for repro/drop_last_hang's README ("waits forever": on which engine).
PyTorch 1.13 and 2.15, gloo, CPU, real processes. W ranks train a small DDP model;
rank 0 has one batch more than the others, so its last backward's gradient
allreduce has no partner. What the other ranks do then:

  others_alive    stay alive doing nothing (a job that evaluates, saves, or
                  waits on a file) for longer than the timeout
  others_exit     return from the script (the process ends)
  others_barrier  call dist.barrier(), as seed 001's code does at the end

The process group is created with --pg_timeout seconds (default 10) so the
run is short; PyTorch's defaults, read from the installed torch into the
record, are torch.distributed.constants.default_pg_timeout (30 minutes in
1.13: with it the same RuntimeError comes 30 minutes later) and, where it
exists, default_pg_nccl_timeout. Measured per rank: the exception and its
first line, and the seconds from entering the extra step (the others: from
entering the barrier) to the exception.
"""
import argparse
import datetime
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
    out = evidence.RankLog(args.dir, r)
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
            out.dump()
            opt.zero_grad()
            model(torch.randn(4, 8)).sum().backward()
            opt.step()
        out["finished_steps"] = steps
        if r != 0:
            if args.others == "others_exit":
                out["then"] = "exit"
                out.dump()
                os._exit(0)
            if args.others == "others_barrier":
                out["then"] = "barrier"
                t0 = time.monotonic()
                out.dump()
                dist.barrier()
                out["barrier_returned"] = True
            else:
                out["then"] = "alive"
                out.dump()
                time.sleep(args.pg_timeout + 15)
    except RuntimeError as e:
        out["error"] = evidence.first_line(e)
        out["error_after_s"] = time.monotonic() - t0
    out.dump()
    os._exit(0)  # no teardown: a peer may be gone


def timeout_doc():
    """What the installed torch's init_process_group says about its timeout
    (its docstring's "timeout" paragraph; "" when it has none)."""
    import inspect
    import torch.distributed as dist
    doc = inspect.getdoc(dist.init_process_group) or ""
    start = doc.find("timeout (timedelta")
    if start < 0:
        return ""
    end = doc.find("group_name", start)
    return " ".join(doc[start:end if end > 0 else start + 1500].split())


def default_timeouts():
    """Every default_*timeout in torch.distributed.constants, in seconds."""
    import datetime as dt
    import torch.distributed.constants as constants
    return {k: v.total_seconds() for k, v in sorted(vars(constants).items())
            if k.startswith("default") and isinstance(v, dt.timedelta)}


def print_table(paths):
    out = []
    out.append("| PyTorch | W | the other ranks, after their last step | rank 0 (one step more) | "
               "the others |")
    out.append("|---|---|---|---|---|")
    docs = evidence.load_docs(paths)
    for doc in docs:
        for c in doc["cases"]:
            def cell(x):
                if "error" in x:
                    return "RuntimeError after %.2f s: `%s`" % (x["error_after_s"], x["error"])
                if x.get("exit", 0) != 0:
                    return "died (%s): %s" % (x["exit"], x.get("died", "")[:100])
                return "no error (%s)" % x.get("then", "finished")
            others = sorted({cell(x) for x in c["ranks"][1:]})
            out.append("| %s | %d | %s | %s | %s |" % (
                doc["provenance"]["torch_version"], c["world_size"],
                c["others"].replace("others_", ""), cell(c["ranks"][0]), "; ".join(others)))
    for doc in docs:
        cfg = doc["config"]
        text = cfg.get("init_process_group_timeout_doc", "")
        nccl = [x.strip() for x in text.split(". ") if "nccl" in x.lower()][:1]
        defaults = cfg.get("default_timeouts_s", {"default_pg_timeout":
                                                  cfg["default_pg_timeout_s"]})
        out.append("\nPyTorch %s: process-group timeout %g s here; its defaults: %s.%s" % (
            doc["provenance"]["torch_version"], cfg["pg_timeout_s"],
            ", ".join("`%s` %g s" % kv for kv in defaults.items()),
            (" On NCCL (not run here), `init_process_group`'s own documentation: \"%s.\"" %
             nccl[0].replace("``", "`")) if nccl else ""))
    out.append("\n" + evidence.footer(paths))
    return "\n".join(out) + "\n"


def main():
    ap = evidence.parser(__doc__.split("\n\n")[0], pg_timeout=10, worlds="2,4")
    evidence.add_table_flags(ap)
    ap.add_argument("--others", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rank is not None:
        return rank_main(args)
    if args.table:
        return evidence.emit_table(args, print_table(args.table))
    import torch.distributed.constants as constants
    cases = []
    for w in evidence.worlds(args):
        for others in ("others_alive", "others_exit", "others_barrier"):
            with tempfile.TemporaryDirectory(prefix="uneven_steps_") as d:
                procs = evidence.spawn_ranks(
                    os.path.abspath(__file__), w,
                    ["--others", others, "--pg_timeout", str(args.pg_timeout)], d,
                    3 * args.pg_timeout + 60)
                ranks = evidence.collect(d, procs)
            cases.append({"world_size": w, "others": others, "ranks": ranks})
            print("W=%d %s: rank 0: %s after %.2f s" % (
                w, others, ranks[0].get("error", "no error"), ranks[0].get("error_after_s", -1)),
                file=sys.stderr)
    doc = {"what": "DDP on gloo, rank 0 runs one step more than the others",
           "config": {"steps_short_ranks": STEPS, "pg_timeout_s": args.pg_timeout,
                      "default_pg_timeout_s": constants.default_pg_timeout.total_seconds(),
                      "default_timeouts_s": default_timeouts(),
                      "init_process_group_timeout_doc": timeout_doc()},
           "provenance": evidence.provenance(
               "repro/drop_last_hang/pytorch/uneven_steps_timeout.py"),
           "cases": cases}
    evidence.write_json(args.out, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
