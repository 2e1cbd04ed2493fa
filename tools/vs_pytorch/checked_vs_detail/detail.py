#!/usr/bin/python3
"""PyTorch's TORCH_DISTRIBUTED_DEBUG=DETAIL on three collective mismatches.

    /usr/bin/python3 tools/vs_pytorch/checked_vs_detail/detail.py \\
        --out results/vs_pytorch/torch_debug_detail.torch1.13.json
    .venv-torch2.15/bin/python tools/vs_pytorch/checked_vs_detail/detail.py \\
        --out results/vs_pytorch/torch_debug_detail.torch2.15.json

The PyTorch side of core/comm/README.md's section "Checked mode and
TORCH_DISTRIBUTED_DEBUG=DETAIL" (the suite's side: `bazel run
//tools/vs_pytorch/checked_vs_detail`, same scenarios). PyTorch 1.13 and 2.15, gloo, CPU,
real processes, the process group created with --pg_timeout seconds
(default 10; PyTorch's default is 30 minutes):

  unequal_allgather     every rank all_gathers its share of N = 1003 samples
                        split without padding (502/501 at W = 2)
  allreduce_vs_barrier  rank 0 calls all_reduce, the others barrier
  sum_vs_max            rank 0 all_reduces with SUM, the others with MAX
                        (rank r's tensor holds r + 1); what each rank got
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
SCENARIOS = ("unequal_allgather", "allreduce_vs_barrier", "sum_vs_max", "extra_step_alive")


def rank_main(args):
    import torch
    import torch.distributed as dist

    w, r = args.world_size, args.rank
    out = evidence.RankLog(args.dir, r)
    dist.init_process_group("gloo", init_method=evidence.init_store(args.dir), rank=r,
                            world_size=w, timeout=datetime.timedelta(seconds=args.pg_timeout))
    dist.barrier()
    t0 = time.monotonic()
    try:
        if args.scenario == "unequal_allgather":
            mine = torch.arange(r, N, w, dtype=torch.float64)
            outs = [torch.zeros_like(mine) for _ in range(w)]
            out["entered"] = "all_gather of %d values" % mine.numel()
            out.dump()
            t0 = time.monotonic()
            dist.all_gather(outs, mine)
        elif args.scenario == "allreduce_vs_barrier":
            out["entered"] = "all_reduce" if r == 0 else "barrier"
            out.dump()
            t0 = time.monotonic()
            if r == 0:
                dist.all_reduce(torch.ones(4, dtype=torch.float64))
            else:
                dist.barrier()
        elif args.scenario == "sum_vs_max":
            v = torch.full((4,), 1.0 + r, dtype=torch.float64)
            out["entered"] = "all_reduce(%s)" % ("SUM" if r == 0 else "MAX")
            out.dump()
            t0 = time.monotonic()
            dist.all_reduce(v, op=dist.ReduceOp.SUM if r == 0 else dist.ReduceOp.MAX)
            out["result"] = v[0].item()
        else:
            for _ in range(3):
                dist.all_reduce(torch.ones(4, dtype=torch.float64))
            if r == 0:
                out["entered"] = "all_reduce #4"
                out.dump()
                t0 = time.monotonic()
                dist.all_reduce(torch.ones(4, dtype=torch.float64))
            else:
                out["entered"] = "sleep (alive, no more collectives)"
                out.dump()
                time.sleep(args.pg_timeout + 10)
        out["returned_after_s"] = time.monotonic() - t0
    except RuntimeError as e:
        out["error"] = evidence.first_line(e, 400)
        out["error_after_s"] = time.monotonic() - t0
    out.dump()
    os._exit(0)  # no teardown: a peer may be gone


def outcome(x):
    """One rank's outcome in a few words."""
    if "error" in x:
        return "%s after %.2f s" % (x["error"], x["error_after_s"])
    if "died" in x:
        return "died (%s): %s" % (x["exit"], x["died"])
    if "returned_after_s" in x:
        return "returned after %.2f s" % x["returned_after_s"]
    return "no error (exit %s)" % x["exit"]


def short(text, limit=110):
    text = text.replace("|", "\\|")
    return text if len(text) <= limit else text[:limit - 3] + "..."


def summary(ranks):
    """Ranks grouped by what happened to them: "r0, r1: RuntimeError within
    0.04 s: `message`"; "r1: died (signal 6: ...)"; "r0: returned"."""
    groups = {}
    for i, x in enumerate(ranks):
        if "error" in x:
            key = ("error", x["error"][:40])
        elif "died" in x:
            key = ("died", "%s: %s" % (x["exit"], x["died"]))
        elif "returned_after_s" in x:
            key = ("returned", x.get("result", ""))
        else:
            key = ("none", "")
        groups.setdefault(key, []).append((i, x))
    cells = []
    for (kind, what), members in groups.items():
        who = ", ".join("r%d" % i for i, _ in members)
        if kind == "error":
            slowest = max(x["error_after_s"] for _, x in members)
            cells.append("%s: RuntimeError within %.2f s: `%s`" % (
                who, slowest, short(members[0][1]["error"], 150)))
        elif kind == "died":
            cells.append("%s: died (%s)" % (who, short(what, 80)))
        elif kind == "returned":
            results = sorted({x["result"] for _, x in members if "result" in x})
            cells.append("%s: returned, no error%s" % (
                who, " (values %s)" % ", ".join("%g" % v for v in results) if results else ""))
        else:
            cells.append("%s: no error" % who)
    return "; ".join(cells)


def print_table(paths, ours_path):
    """Per scenario and W: PyTorch DETAIL and OFF per version, and our checked mode."""
    out = []
    docs = evidence.load_docs(paths)
    ours = {}
    if ours_path:
        with open(ours_path) as f:
            for rec in json.load(f):
                ours[(rec["variant"], rec["world_size"])] = rec
    versions = [d["provenance"]["torch_version"] for d in docs]
    cases = {(d["provenance"]["torch_version"], c["debug"], c["scenario"], c["world_size"]): c
             for d in docs for c in d["cases"]}
    out.append("| scenario | W | " + " | ".join(
        "PyTorch %s, %s" % (v, "TORCH_DISTRIBUTED_DEBUG=DETAIL" if debug == "DETAIL" else "OFF")
        for v in versions for debug in ("DETAIL", "OFF")) + " | suite, checked mode |")
    out.append("|---|---|" + "---|" * (2 * len(versions)) + "---|")
    for scenario in SCENARIOS:
        for w in sorted({k[3] for k in cases if k[2] == scenario}):
            cells = []
            for v in versions:
                for debug in ("DETAIL", "OFF"):
                    c = cases.get((v, debug, scenario, w))
                    cells.append(summary(c["ranks"]) if c else "")
            rec = ours.get((scenario, w))
            if rec is None:
                cells.append("")
            else:
                m = rec["measured"]
                kinds = sorted({o.split(": ", 1)[1].split(" after")[0]
                                for o in m["outcome"].split("; ")})
                text = "%d of %d ranks: %s within %.3f s" % (
                    m["ranks_with_error"], w, "/".join(k for k in kinds if k != "none"),
                    m["detect_s_max"])
                if "message_rank0" in m:
                    text += ": `%s`" % short(m["message_rank0"], 150)
                if "report_rank0" in m:
                    text += "; desync report: `%s`" % m["report_rank0"].strip()
                if m["ranks_with_error"] < w:
                    text += "; the others: no error"
                cells.append(text)
            out.append("| %s | %d | %s |" % (scenario, w, " | ".join(cells)))
    out.append("\nProcess-group timeout: %s." % ", ".join(
        "%g s (PyTorch %s)" % (d["config"]["pg_timeout_s"], d["provenance"]["torch_version"])
        for d in docs))
    out.append(evidence.footer(paths))
    if ours:
        rec = next(iter(ours.values()))
        out.append("Suite: deadline %g s, commit %s, %s." % (
            rec["config"]["deadline_s"], rec["provenance"]["commit"][:12],
            rec["provenance"]["date"]))
    return "\n".join(out) + "\n"


def main():
    ap = evidence.parser(__doc__.split("\n\n")[0], pg_timeout=10, worlds="2,4")
    evidence.add_table_flags(ap)
    ap.add_argument("--ours", metavar="JSON", help="with --table: results/vs_pytorch/checked_mode.json")
    ap.add_argument("--scenario", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rank is not None:
        return rank_main(args)
    if args.table:
        return evidence.emit_table(args, print_table(args.table, args.ours))
    cases = []
    for debug in ("DETAIL", "OFF"):
        for scenario in SCENARIOS:
            for w in evidence.worlds(args):
                with tempfile.TemporaryDirectory(prefix="debug_detail_") as d:
                    procs = evidence.spawn_ranks(
                        os.path.abspath(__file__), w,
                        ["--scenario", scenario, "--pg_timeout", str(args.pg_timeout)], d,
                        3 * args.pg_timeout + 60, env={"TORCH_DISTRIBUTED_DEBUG": debug})
                    ranks = evidence.collect(d, procs)
                cases.append({"debug": debug, "scenario": scenario, "world_size": w,
                              "ranks": ranks})
                print("%s %s W=%d: %s" % (debug, scenario, w, "; ".join(
                    "r%d %s" % (i, outcome(x)) for i, x in enumerate(ranks))), file=sys.stderr)
    doc = {"what": "TORCH_DISTRIBUTED_DEBUG=DETAIL vs OFF on three collective mismatches",
           "config": {"n": N, "pg_timeout_s": args.pg_timeout},
           "provenance": evidence.provenance("tools/vs_pytorch/checked_vs_detail/detail.py"),
           "cases": cases}
    evidence.write_json(args.out, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
