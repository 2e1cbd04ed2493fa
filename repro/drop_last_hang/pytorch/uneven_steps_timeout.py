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

With --backend nccl (a GPU machine: tools/bundle/lease.sh --hang-nccl)
the model and batches are on the GPU (ranks beyond the GPUs share one,
each with its own NCCL_HOSTID) and each case runs once per
--blocking_wait value: 1 sets TORCH_NCCL_BLOCKING_WAIT=1 and its older
name NCCL_BLOCKING_WAIT=1 for the ranks (seed 001's advice), 0 leaves
both unset (PyTorch's default error handling); every rank's lines with
"NCCL WARN" are kept (NCCL prints them with NCCL_DEBUG=WARN or INFO;
seed 001's claim that NCCL warns of the timed-out reduce).

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
    nccl = args.backend == "nccl"
    device = "cpu"
    if nccl:
        out["gpu"] = evidence.cuda_rank_device(torch, w, r)
        device = "cuda"
    dist.init_process_group(args.backend, init_method=evidence.init_store(args.dir), rank=r,
                            world_size=w, timeout=datetime.timedelta(seconds=args.pg_timeout))
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(8, 1).to(device),
                **({"device_ids": [torch.cuda.current_device()]} if nccl else {}))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    steps = STEPS + 1 if r == 0 else STEPS
    t0 = time.monotonic()
    try:
        for s in range(steps):
            out["step"] = s
            t0 = time.monotonic()
            out.dump()
            opt.zero_grad()
            model(torch.randn(4, 8, device=device)).sum().backward()
            opt.step()
            if nccl:  # NCCL only enqueues: the step is done once the stream is
                torch.cuda.synchronize()
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
                dist.barrier(**({"device_ids": [torch.cuda.current_device()]} if nccl else {}))
                if nccl:
                    torch.cuda.synchronize()
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


def one_case(w, others, wait, args):
    """One world: rank 0 with one step more, the others doing `others`;
    on NCCL with TORCH_NCCL_BLOCKING_WAIT=1 where wait is "1"."""
    env = {"TORCH_NCCL_BLOCKING_WAIT": "1", "NCCL_BLOCKING_WAIT": "1"} if wait == "1" else {}
    with tempfile.TemporaryDirectory(prefix="uneven_steps_") as d:
        procs = evidence.spawn_ranks(
            os.path.abspath(__file__), w,
            ["--others", others, "--pg_timeout", str(args.pg_timeout), "--backend", args.backend],
            d, 3 * args.pg_timeout + 60, env=env)
        ranks = evidence.collect(d, procs)
    for info, p in zip(ranks, procs):
        warns = [l.strip() for l in p["output"].splitlines() if "NCCL WARN" in l]
        if warns or args.backend == "nccl":
            info["nccl_warn_lines"] = len(warns)
            info["nccl_warn_first"] = warns[0][:300] if warns else ""
    case = {"world_size": w, "others": others, "ranks": ranks}
    if args.backend == "nccl":
        case["blocking_wait"] = wait == "1"
    print("W=%d %s%s: rank 0: %s after %.2f s" % (
        w, others, " blocking wait" if wait == "1" else "", ranks[0].get("error", "no error"),
        ranks[0].get("error_after_s", -1)), file=sys.stderr)
    return case


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
            mode = c["others"].replace("others_", "")
            if "blocking_wait" in c:  # an NCCL record: which error handling
                mode += (", TORCH_NCCL_BLOCKING_WAIT=1" if c["blocking_wait"]
                         else ", PyTorch's default error handling")
            out.append("| %s | %d | %s | %s | %s |" % (
                doc["provenance"]["torch_version"], c["world_size"], mode,
                cell(c["ranks"][0]), "; ".join(others)))
    for doc in docs:
        cfg = doc["config"]
        text = cfg.get("init_process_group_timeout_doc", "")
        nccl = [x.strip() for x in text.split(". ") if "nccl" in x.lower()][:1]
        defaults = cfg.get("default_timeouts_s", {"default_pg_timeout":
                                                  cfg["default_pg_timeout_s"]})
        on_nccl = doc["provenance"].get("backend") == "nccl"
        out.append("\nPyTorch %s: process-group timeout %g s here; its defaults: %s.%s" % (
            doc["provenance"]["torch_version"], cfg["pg_timeout_s"],
            ", ".join("`%s` %g s" % kv for kv in defaults.items()),
            (" On NCCL%s, `init_process_group`'s own documentation: \"%s.\"" % (
                "" if on_nccl else " (not run here)", nccl[0].replace("``", "`")))
            if nccl else ""))
        if on_nccl:
            warns = [x for c in doc["cases"] for x in c["ranks"] if x.get("nccl_warn_lines")]
            out.append("\nNCCL %s on %s, environment %s: ranks that printed `NCCL WARN` lines: "
                       "%d%s." % (doc["provenance"].get("nccl", "?"),
                                  doc["provenance"].get("gpu", "?"), cfg.get("nccl_env", {}),
                                  len(warns), (", the first: `%s`" % warns[0]["nccl_warn_first"])
                                  if warns else ""))
    out.append("\n" + evidence.footer(paths))
    return "\n".join(out) + "\n"


def main():
    ap = evidence.parser(__doc__.split("\n\n")[0], pg_timeout=10, worlds="2,4")
    ap.add_argument("--backend", choices=["gloo", "nccl"], default="gloo",
                    help="gloo (CPU tensors) or nccl (GPU tensors; needs a GPU)")
    ap.add_argument("--blocking_wait", default="0",
                    help="nccl only: 0, 1 or 0,1 - each case without and/or with "
                         "TORCH_NCCL_BLOCKING_WAIT=1 (default 0)")
    evidence.add_table_flags(ap)
    ap.add_argument("--others", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rank is not None:
        return rank_main(args)
    if args.table:
        return evidence.emit_table(args, print_table(args.table))
    waits = args.blocking_wait.split(",")
    if not set(waits) <= {"0", "1"} or len(set(waits)) != len(waits):
        ap.error("--blocking_wait must be 0, 1 or 0,1, got '%s'" % args.blocking_wait)
    if args.backend == "gloo" and waits != ["0"]:
        ap.error("--blocking_wait 1 is NCCL's (TORCH_NCCL_BLOCKING_WAIT); with --backend gloo "
                 "leave it 0")
    if args.backend == "nccl":
        import torch
        if not torch.cuda.is_available():
            ap.error("--backend nccl needs a GPU; torch %s sees none (use --backend gloo)"
                     % torch.__version__)
    import torch.distributed.constants as constants
    cases = []
    for w in evidence.worlds(args):
        for wait in waits:
            for others in ("others_alive", "others_exit", "others_barrier"):
                cases.append(one_case(w, others, wait, args))
                if args.out:
                    write_doc(args, constants, cases)  # a run cut later keeps these
    if not args.out:
        write_doc(args, constants, cases)  # printed once
    return 0


def write_doc(args, constants, cases):
    doc = {"what": "DDP on %s, rank 0 runs one step more than the others" % args.backend,
           "config": {"steps_short_ranks": STEPS, "pg_timeout_s": args.pg_timeout,
                      "nccl_env": {k: os.environ[k] for k in sorted(os.environ)
                                   if k.startswith(("NCCL_", "TORCH_NCCL_"))},
                      "default_pg_timeout_s": constants.default_pg_timeout.total_seconds(),
                      "default_timeouts_s": default_timeouts(),
                      "init_process_group_timeout_doc": timeout_doc()},
           "provenance": evidence.provenance(
               "repro/drop_last_hang/pytorch/uneven_steps_timeout.py", backend=args.backend),
           "cases": cases}
    evidence.write_json(args.out, doc)


if __name__ == "__main__":
    sys.exit(main())
