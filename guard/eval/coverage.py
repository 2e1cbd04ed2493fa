#!/usr/bin/python3
"""The guard's coverage on real PyTorch: every case of guard/eval/cases.py
(the suite's evidence scripts' triggers, the real-world variants, the fixes
and correct loops) on real gloo worlds, the guard in raise mode.

    /usr/bin/python3 guard/eval/coverage.py --out guard/eval/coverage.torch1.13.json
    .venv-torch2.15/bin/python guard/eval/coverage.py --out guard/eval/coverage.torch2.15.json
    python3 guard/eval/coverage.py --table guard/eval/coverage.torch1.13.json guard/eval/coverage.torch2.15.json

A trigger counts as caught when every rank raised PitfallError with the
case's bug; correct code counts as silent when no rank reported anything
(an error PyTorch itself raises, such as SyncBatchNorm refusing CPU, is
recorded beside it). Cases needing torchmetrics or Lightning run only where
they import (the 2.15 venv). All cases of one world size share one world
(one process per rank), with a barrier between cases.
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
    import torch
    import torch.distributed as dist
    from ddp_pitfalls import guard
    torch.set_num_threads(1)
    guard.install(mode="raise")
    dist.init_process_group("gloo", init_method="file://" + os.path.join(args.dir, "store"),
                            rank=args.rank, world_size=args.world_size,
                            timeout=datetime.timedelta(seconds=60))
    import cases
    import scenarios
    for name in args.cases.split(","):
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
        dist.barrier()
    sys.stdout.flush()
    os._exit(0)


def libraries():
    try:
        import torchmetrics  # noqa: F401
        import lightning_fabric  # noqa: F401
        return True
    except ImportError:
        return False


def run_world(names, world, timeout):
    sys.path.insert(0, os.path.join(ROOT, "guard", "tests"))
    import world as world_mod
    with tempfile.TemporaryDirectory(prefix="guard_coverage_") as d:
        cmd = [sys.executable, os.path.abspath(__file__), "--world_size", str(world),
               "--dir", d, "--cases", ",".join(names)]
        codes, outs, errs = world_mod.spawn(cmd, world, timeout, {"PYTHONWARNINGS": "ignore"})
        per_rank = []
        for code, out, err in zip(codes, outs, errs):
            rows = {doc["case"]: doc for doc in world_mod.json_lines(out)}
            warned = [l for l in err.splitlines() if l.startswith("ddp-pitfalls:")]
            per_rank.append({"exit": code, "rows": rows, "warn_lines": warned,
                             "stderr_tail": err[-400:] if code else ""})
        return per_rank


def verdict(bug, ranks):
    """caught / missed / partly caught (a trigger), silent / false alarm
    (correct code), or not finished: some rank printed no row for the case
    (it died or hung before), which is never counted as silent."""
    if any("case" not in r for r in ranks):
        return "not finished"
    caught = [r.get("caught") for r in ranks]
    if bug is None:
        return "silent" if all(c is None for c in caught) else "false alarm"
    if all(c == bug for c in caught):
        return "caught"
    return "missed" if all(c is None for c in caught) else "partly caught"


def measure(args):
    from tools.vs_pytorch import evidence
    import cases
    have_libs = libraries()
    worlds = sorted({w for c in cases.CASES.values() for w in c[2]})
    out_cases = []
    for w in worlds:
        names = [n for n, c in cases.CASES.items() if w in c[2] and (have_libs or not c[3])]
        t0 = time.monotonic()
        per_rank = run_world(names, w, args.timeout)
        print("W = %d: %d cases in %.1f s" % (w, len(names), time.monotonic() - t0),
              file=sys.stderr)
        for n in names:
            bug, source = cases.CASES[n][0], cases.CASES[n][1]
            ranks = [pr["rows"].get(n, {"rank": r, "exit": pr["exit"],
                                        "stderr_tail": pr["stderr_tail"]})
                     for r, pr in enumerate(per_rank)]
            out_cases.append({"case": n, "bug": bug, "world_size": w, "source": source,
                              "verdict": verdict(bug, ranks), "ranks": ranks})
    skipped = [n for n, c in cases.CASES.items() if c[3] and not have_libs]
    doc = evidence.record(
        "the guard (ddp_pitfalls.guard, raise mode) on the suite's triggers and fixes, real "
        "gloo worlds", {"mode": "raise", "backend": "gloo", "worlds": worlds},
        "guard/eval/coverage.py", cases=out_cases,
        not_run={n: "needs torchmetrics and Lightning (the 2.15 venv)" for n in skipped},
        traincheck=TRAINCHECK)
    evidence.write_json(args.out, doc)
    bad = [c["case"] for c in out_cases if c["verdict"] not in ("caught", "silent")]
    print("%d cases, %d not as expected%s" % (len(out_cases), len(bad),
                                              (": " + ", ".join(bad)) if bad else ""),
          file=sys.stderr)
    return 1 if bad else 0


BUG_ORDER = ("wrong_all_gather", "missing_set_epoch", "drop_last_hang", "small_batch_bn",
             "autograd_lost_gather", "mean_of_means")


def table(paths):
    docs = [json.load(open(p)) for p in paths]
    versions = [d["provenance"]["torch_version"] for d in docs]
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
        out.append("PyTorch %s (%s), %s, suite %s, %s." % (
            pr["torch"], os.path.basename(p), pr["date"], pr["commit"][:12] +
            ("+dirty" if pr["commit"].endswith("+dirty") else ""), pr["host"]))
    return "\n".join(out) + "\n"


def main():
    import argparse
    sys.path.insert(0, HERE)
    import readme_table
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="where to write the JSON record (default: print it)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per world (default 300)")
    readme_table.add_flags(ap, "coverage")
    ap.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--world_size", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    ap.add_argument("--cases", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.table:
        return readme_table.emit(args, table(args.table))
    sys.path.insert(0, HERE)
    if args.rank is not None:
        return rank_main(args)
    return measure(args)


if __name__ == "__main__":
    sys.exit(main())
