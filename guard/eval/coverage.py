#!/usr/bin/python3
"""The guard's coverage on real PyTorch: every case of guard/eval/cases.py
(the suite's evidence scripts' triggers, the real-world variants, the fixes
and correct loops) on real gloo worlds (or NCCL ones), the guard in raise mode.

    /usr/bin/python3 guard/eval/coverage.py --out guard/eval/coverage.torch1.13.json
    .venv-torch2.15/bin/python guard/eval/coverage.py --out guard/eval/coverage.torch2.15.json
    python3 guard/eval/coverage.py --table guard/eval/coverage.torch1.13.json guard/eval/coverage.torch2.15.json
    python3 guard/eval/coverage.py --backend nccl --worlds 2 --out /tmp/coverage.nccl_w2.json

A trigger counts as caught when every rank raised PitfallError with the
case's bug; correct code counts as silent when no rank reported anything
and every rank raised exactly the PyTorch error cases.PYTORCH_ERRORS
expects of it on that backend (SyncBatchNorm refusing CPU on gloo), or none.
Cases needing torchmetrics or Lightning run only where they import (the
2.15 venv). All cases of one world size share one world (one process per
rank), with a barrier between cases.

--backend nccl: each rank on GPU rank % device_count, the cases' tensors and
models moved there (scenarios.dev); where the ranks outnumber the GPUs each
rank sets its own NCCL_HOSTID before init_process_group (NCCL refuses two
ranks of one communicator on one GPU otherwise) and they talk over
NET/Socket: correctness only, never a performance number, and the record
says so (config.shared_gpu). Without a CUDA device it exits 2 with one line.

A rank past --timeout - 15 s (a hang) dumps its Python stack (faulthandler)
and exits; the record's world_runs says per rank whether it finished, the
case it was in, and whether its stack was inside the guard's exchange
(its size exchange, ddp_pitfalls/_exchange.py, or its board of rows in the
store, _board.py). The last line printed counts it all:
"coverage: ... ranks left inside the guard's exchange: N".
"""
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "guard"))
sys.path.insert(0, ROOT)

TRAINCHECK = ("TrainCheck (OSDI 2025) catches 18 of its 20 silent errors within an iteration; "
              "none of these six is among its 20 (the paper's list of errors, read 2026-11-28)")


def rank_main(args):
    import datetime
    import faulthandler
    import torch
    import torch.distributed as dist
    from ddp_pitfalls import guard
    # A hang is told apart from a slow case by where it stopped: past the
    # bound the stack of every thread goes to stderr (measure() reads
    # whether the guard's exchange is on it) and the rank exits.
    faulthandler.dump_traceback_later(args.bound, exit=True)
    torch.set_num_threads(1)
    guard.install(mode="raise")
    barrier = {}
    sys.path.insert(0, os.path.join(ROOT, "guard", "tests"))
    import scenarios
    if args.backend == "nccl":
        from tools.vs_pytorch import evidence
        gpu = evidence.cuda_rank_device(torch, args.world_size, args.rank)  # NCCL_HOSTID too
        scenarios.DEVICE = torch.device("cuda", gpu)
        barrier = {"device_ids": [gpu]}  # NCCL's barrier would otherwise guess the device
    dist.init_process_group(args.backend, init_method="file://" + os.path.join(args.dir, "store"),
                            rank=args.rank, world_size=args.world_size,
                            timeout=datetime.timedelta(seconds=60))
    import cases
    for name in args.cases.split(","):
        # Before the case: the last of these a killed rank printed names
        # the case it was in.
        print(json.dumps({"started": name, "rank": args.rank}), flush=True)
        scenarios.reset()
        out = {"case": name, "rank": args.rank, "caught": None, "site": None, "error": None}
        t0 = time.monotonic()
        try:
            cases.CASES[name][4](args.rank, args.world_size)
        except guard.PitfallError as e:
            out["caught"], out["site"] = e.bug, e.site
        except Exception as e:  # noqa: BLE001 (PyTorch's own error: recorded)
            out["error"] = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[0][:200])
        out["seconds"] = round(time.monotonic() - t0, 3)
        print(json.dumps(out), flush=True)
        dist.barrier(**barrier)
    if args.backend == "nccl":
        torch.cuda.synchronize()  # every case's GPU work done before the exit
    sys.stdout.flush()
    os._exit(0)


def libraries():
    try:
        import torchmetrics  # noqa: F401
        import lightning_fabric  # noqa: F401
        return True
    except ImportError:
        return False


def run_world(names, world, timeout, backend="gloo"):
    sys.path.insert(0, os.path.join(ROOT, "guard", "tests"))
    import world as world_mod
    with tempfile.TemporaryDirectory(prefix="guard_coverage_") as d:
        cmd = [sys.executable, os.path.abspath(__file__), "--world_size", str(world),
               "--dir", d, "--cases", ",".join(names), "--backend", backend,
               "--bound", str(max(5.0, timeout - 15))]
        codes, outs, errs = world_mod.spawn(cmd, world, timeout, {"PYTHONWARNINGS": "ignore"})
        per_rank = []
        for code, out, err in zip(codes, outs, errs):
            docs = world_mod.json_lines(out)
            rows = {doc["case"]: doc for doc in docs if "case" in doc}
            started = [doc["started"] for doc in docs if "started" in doc]
            warned = [l for l in err.splitlines() if l.startswith("ddp-pitfalls:")]
            per_rank.append({"exit": code, "rows": rows, "warn_lines": warned,
                             "stderr_tail": err[-400:] if code else "",
                             "left": left_inside(code, started, rows, err)})
        return per_rank


def left_inside(code, started, rows, err):
    """Where a rank stopped, or None when it ran every case and exited 0:
    the case it had started and not finished, and whether its last stack
    (faulthandler's, at the bound) was in the guard's exchange or elsewhere
    in the guard."""
    if code == 0 and started and started[-1] in rows:
        return None
    case = started[-1] if started and started[-1] not in rows else None
    # faulthandler's dump (not a Python traceback): its own header, then
    # one 'File "...", line N in f' per frame, most recent first.
    lines = err.splitlines()
    at = [i for i, l in enumerate(lines) if l.startswith(("Thread 0x", "Current thread 0x"))]
    stack = [l.strip() for l in lines[at[0]:] if l.strip().startswith('File "')] if at else []
    return {"exit": code, "case": case, "stack_dumped": bool(stack),
            "in_guard_exchange": any("ddp_pitfalls/_exchange.py" in l or
                                     "ddp_pitfalls/_board.py" in l for l in stack),
            "in_guard": any("ddp_pitfalls/" in l for l in stack), "stack": stack[:12]}


def verdict(bug, ranks, expected_error=None):
    """caught / missed / partly caught (a trigger), silent / false alarm
    (correct code), or not finished: some rank printed no row for the case
    (it died or hung before), which is never counted as silent. Correct code
    that reported nothing but where some rank's PyTorch error is not the one
    expected (cases.PYTORCH_ERRORS, or none) is "pytorch error", not silent."""
    if any("case" not in r for r in ranks):
        return "not finished"
    caught = [r.get("caught") for r in ranks]
    if bug is None:
        if any(c is not None for c in caught):
            return "false alarm"
        if expected_error is None:
            ok = all(r.get("error") is None for r in ranks)
        else:
            ok = all((r.get("error") or "").startswith(expected_error) for r in ranks)
        return "silent" if ok else "pytorch error"
    if all(c == bug for c in caught):
        return "caught"
    return "missed" if all(c is None for c in caught) else "partly caught"


SHARED_GPU = "ranks sharing one GPU (NET/Socket), correctness only"


def measure(args):
    gpus = 0
    if args.backend == "nccl":  # first: nothing else imported, no rank started
        sys.path.insert(0, os.path.join(ROOT, "guard", "tests"))
        import world as world_mod
        gpus, why = world_mod.nccl_or_reason()
        if why:
            print("coverage.py: --backend nccl: %s" % why, file=sys.stderr)
            return 2
    from tools.vs_pytorch import evidence
    import cases
    have_libs = libraries()
    not_on = cases.NOT_ON.get(args.backend, {})
    worlds = sorted({w for c in cases.CASES.values() for w in c[2]})
    if args.worlds:
        worlds = [w for w in worlds if w in args.worlds]
    out_cases, world_runs = [], []
    for w in worlds:
        names = [n for n, c in cases.CASES.items()
                 if w in c[2] and (have_libs or not c[3]) and n not in not_on]
        t0 = time.monotonic()
        per_rank = run_world(names, w, args.timeout, args.backend)
        seconds = time.monotonic() - t0
        print("W = %d: %d cases in %.1f s" % (w, len(names), seconds), file=sys.stderr)
        run = {"world_size": w, "cases": len(names), "seconds": round(seconds, 1),
               "ranks": [{"rank": r, "exit": pr["exit"], "left": pr["left"]}
                         for r, pr in enumerate(per_rank)]}
        if args.backend == "nccl":
            run.update(gpus=gpus, shared_gpu=w > gpus)
        world_runs.append(run)
        for r, pr in enumerate(per_rank):
            if pr["left"]:
                print("W = %d: rank %d left with exit %s in case %s; its stack %s" % (
                    w, r, pr["exit"], pr["left"]["case"],
                    "not dumped" if not pr["left"]["stack_dumped"] else
                    "inside the guard's exchange" if pr["left"]["in_guard_exchange"] else
                    "inside the guard" if pr["left"]["in_guard"] else "outside the guard"),
                    file=sys.stderr)
        for n in names:
            bug, source = cases.CASES[n][0], cases.CASES[n][1]
            ranks = [pr["rows"].get(n, {"rank": r, "exit": pr["exit"],
                                        "stderr_tail": pr["stderr_tail"]})
                     for r, pr in enumerate(per_rank)]
            expected = cases.PYTORCH_ERRORS.get(n, {}).get(args.backend)
            row = {"case": n, "bug": bug, "world_size": w, "source": source,
                   "verdict": verdict(bug, ranks, expected), "ranks": ranks}
            if expected:
                row["pytorch_error_expected"] = expected
            out_cases.append(row)
    skipped = [n for n, c in cases.CASES.items() if c[3] and not have_libs]
    config = {"mode": "raise", "backend": args.backend, "worlds": worlds}
    if args.backend == "nccl":
        shared = any(w > gpus for w in worlds)
        config.update(gpus=gpus, shared_gpu=shared, device="cuda:rank %% %d" % gpus,
                      **({"shared_gpu_note": SHARED_GPU + " (each rank its own NCCL_HOSTID, "
                          "ddp-pitfalls-rank<r>)"} if shared else {}))
    not_run = {n: "needs torchmetrics and Lightning (the 2.15 venv)" for n in skipped}
    not_run.update({n: why for n, why in not_on.items() if n not in not_run})
    doc = evidence.record(
        "the guard (ddp_pitfalls.guard, raise mode) on the suite's triggers and fixes, real "
        "%s worlds" % args.backend, config,
        "guard/eval/coverage.py", cases=out_cases, not_run=not_run, traincheck=TRAINCHECK,
        world_runs=world_runs)
    if args.backend == "nccl":  # the GPU, driver, CUDA and torch's NCCL
        doc["provenance"] = evidence.provenance("guard/eval/coverage.py", "nccl")
    evidence.write_json(args.out, doc)
    bad = [c["case"] for c in out_cases if c["verdict"] not in ("caught", "silent")]
    print("%d cases, %d not as expected%s" % (len(out_cases), len(bad),
                                              (": " + ", ".join(bad)) if bad else ""),
          file=sys.stderr)
    print(count_line(doc), file=sys.stderr)
    return 1 if bad or any(r["left"] for run in world_runs for r in run["ranks"]) else 0


def count_line(doc):
    """One line of counts (lease.sh's --guard-nccl prints it)."""
    cs = doc["cases"]
    trig = [c for c in cs if c["bug"] is not None]
    fixes = [c for c in cs if c["bug"] is None]
    left = [r for run in doc.get("world_runs", []) for r in run["ranks"] if r["left"]]
    cfg = doc["config"]
    where = cfg["backend"] + (", " + SHARED_GPU if cfg.get("shared_gpu") else "")
    return ("coverage (%s, W = %s): triggers caught on every rank %d of %d; correct code silent "
            "%d of %d; not as expected %d; ranks left before the end %d, inside the guard's "
            "exchange %d" % (
                where, ",".join(str(w) for w in cfg["worlds"]),
                sum(c["verdict"] == "caught" for c in trig), len(trig),
                sum(c["verdict"] == "silent" for c in fixes), len(fixes),
                sum(c["verdict"] not in ("caught", "silent") for c in cs), len(left),
                sum(bool(r["left"]["in_guard_exchange"]) for r in left)))


BUG_ORDER = ("wrong_all_gather", "missing_set_epoch", "drop_last_hang", "small_batch_bn",
             "autograd_lost_gather", "mean_of_means")


def table(paths):
    docs = [json.load(open(p)) for p in paths]
    versions = [label(d) for d in docs]
    head = ["pitfall"] + ["PyTorch %s: triggers caught on every rank" % v for v in versions] + [
        "correct code silent (%s)" % ", ".join(versions), "TrainCheck (published)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def cell(doc, bug, want):
        rows = [c for c in doc["cases"] if c["bug"] == bug]
        if not rows:
            return "-"
        ok = [c for c in rows if c["verdict"] == want]
        names = sorted({"%s (W=%d)" % (c["case"], c["world_size"]) for c in rows
                        if c["verdict"] != want})
        return "%d of %d%s" % (len(ok), len(rows), "; not: " + ", ".join(names) if names else "")

    for bug in BUG_ORDER:
        lines.append("| `%s` | %s | - | not among its 20 |" % (
            bug, " | ".join(cell(d, bug, "caught") for d in docs)))
    lines.append("| correct code (fixes, correct loops) | %s | %s | - |" % (
        " | ".join("-" for _ in docs), " / ".join(cell(d, None, "silent") for d in docs)))
    cases_seen = []
    for d in docs:
        for c in d["cases"]:
            key = (c["case"], c["bug"], c["source"])
            if key not in cases_seen:
                cases_seen.append(key)
    out = lines + ["", "Cases (guard/eval/cases.py; W = 2, some also W = 3 and 4; a case counts once per W):", ""]
    for name, bug, source in cases_seen:
        out.append("- `%s` (%s): %s" % (name, bug or "correct code", source))
    out += ["", TRAINCHECK + "."]
    for p, d in zip(paths, docs):
        pr = d["provenance"]
        out.append("PyTorch %s (%s), %s, suite %s, %s%s." % (
            pr["torch"], os.path.basename(p), pr["date"], pr["commit"][:12] +
            ("+dirty" if pr["commit"].endswith("+dirty") else ""), pr["host"],
            ", %s, NCCL %s, %d GPU(s) visible" % (pr.get("gpu"), pr.get("nccl"),
                                                  pr.get("gpus_visible", 0))
            if d["config"].get("backend") == "nccl" else ""))
    return "\n".join(out) + "\n"


def label(doc):
    """A record's column: its PyTorch, and on NCCL the backend and, where
    the ranks shared a GPU, that it is correctness only (gloo's as before)."""
    v = doc["provenance"]["torch_version"]
    if doc["config"].get("backend", "gloo") != "nccl":
        return v
    return "%s on NCCL%s" % (v, " (%s)" % SHARED_GPU if doc["config"].get("shared_gpu") else "")


def main():
    import argparse
    sys.path.insert(0, HERE)
    import readme_table
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="where to write the JSON record (default: print it)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per world (default 300)")
    ap.add_argument("--backend", default="gloo",
                    help="gloo (default: CPU tensors) or nccl (each rank on a GPU; without one, "
                         "exit 2)")
    ap.add_argument("--worlds", help="the world sizes to run, comma-separated, of 2,3,4 "
                                     "(default: every one a case names)")
    readme_table.add_flags(ap, "coverage")
    ap.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--world_size", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    ap.add_argument("--cases", help=argparse.SUPPRESS)
    ap.add_argument("--bound", type=float, default=285, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.backend not in ("gloo", "nccl"):
        print("coverage.py: --backend must be gloo or nccl, got %r" % args.backend,
              file=sys.stderr)
        return 2
    if args.worlds is not None:
        given = args.worlds
        args.worlds = sorted({int(w) for w in given.split(",") if w in ("2", "3", "4")})
        if len(args.worlds) != len(set(given.split(","))):
            print("coverage.py: --worlds must list world sizes of 2, 3 and 4, comma-separated, "
                  "got %r" % given, file=sys.stderr)
            return 2
    if args.table:
        return readme_table.emit(args, table(args.table))
    sys.path.insert(0, HERE)
    if args.rank is not None:
        return rank_main(args)
    return measure(args)


if __name__ == "__main__":
    sys.exit(main())
