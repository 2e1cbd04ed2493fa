"""Side by side on the Flight Recorder corpus: //tools:trace and PyTorch's
torchfrtrace, each scored against the ground truth of every scenario.

    .venv-torch2.15/bin/python tools/vs_pytorch/fr_corpus/compare.py \
        --corpus tools/trace/testdata/fr_corpus --trace bazel-bin/tools/trace/trace \
        [--json OUT.json] [--update tools/trace/README.md]

torchfrtrace runs twice per scenario: on the dumps as PyTorch wrote them,
and on a repaired copy whose pg_config lists every process group with its
members (PyTorch 2.15's gloo dumps key pg_config by an empty name, and
torchfrtrace looks the groups up by their real names), to see what its
analysis says once past that crash. A verdict is right when its culprit
ranks (those of every problem it reports, together) are the truth's (none
for a healthy job); ours must also name each culprit's call site (file and
line) when the culprit left a dump.
"""
import argparse
import glob
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile

TORCHFRTRACE = os.path.join(os.path.dirname(sys.executable), "torchfrtrace")
BEGIN, END = "<!-- fr_compare:begin -->", "<!-- fr_compare:end -->"


def ours(trace, folder):
    p = subprocess.run([trace, "--json", folder], capture_output=True, text=True, timeout=60)
    if p.returncode == 2:
        return {"exit": 2, "culprits": None, "verdict": p.stderr.strip(), "sites": {}}
    j = json.loads(p.stdout)
    sites = {str(s["rank"]): f"{os.path.basename(s['file'])}:{s['line']}" for s in j["sites"] if "file" in s}
    return {"exit": p.returncode, "culprits": j["culprits"], "verdict": j["verdict"], "sites": sites}


def torchfrtrace(folder, world):
    args = [TORCHFRTRACE, folder, "-p", "nccl_trace_rank_"]
    if len(glob.glob(os.path.join(folder, "nccl_trace_rank_*"))) < world:
        args.append("--allow-incomplete-ranks")
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return {"exit": None, "culprits": None, "said": "timed out after 120 s"}
    out = p.stdout + p.stderr
    lines = [l for l in out.splitlines() if l.strip() and "tabulate" not in l]
    if "Traceback" in out:
        return {"exit": p.returncode, "culprits": None, "said": "crash: " + (lines[-1] if lines else "?")}
    # Every reported problem, as torchfrtrace words it: a "missing ranks"
    # block, or an "error msg:" line naming one or more culprits. It reports
    # one per process group, so two groups hung at once are two problems:
    # its verdict is the ranks of all of them together.
    problems = []
    for m in re.finditer(r"missing ranks: \{([\d, ]*)\}", out):
        ranks = sorted(int(x) for x in m.group(1).replace(" ", "").split(",") if x)
        problems.append((m.start(), ranks, f"missing ranks {ranks}"))
    for e in re.finditer(r"error msg: ([^\n]*)", out):
        ranks = sorted({int(x) for x in re.findall(r"Culprit rank (\d+)", e.group(1))})
        kinds = sorted(set(re.findall(r"Error type: (\w+)", e.group(1))))
        problems.append((e.start(), ranks, f"culprits {ranks}: {', '.join(kinds)}"))
    if not problems:
        return {"exit": p.returncode, "culprits": [], "said": "no problem reported"}
    problems.sort()
    ranks = sorted({r for _, rs, _ in problems for r in rs})
    return {"exit": p.returncode, "culprits": ranks, "said": "; ".join(said for _, _, said in problems)}


def repaired(folder, world, out):
    """A copy whose pg_config names every group by its real name, with its members."""
    dumps = {int(f.rsplit("_", 1)[1]): pickle.load(open(f, "rb"))
             for f in glob.glob(os.path.join(folder, "nccl_trace_rank_*"))}
    members = {}
    for r, d in dumps.items():
        for e in d["entries"]:
            members.setdefault(tuple(e["process_group"]), set()).add(r)
    cfg = {name: {"name": name, "desc": desc,
                  "ranks": str(list(range(world)) if name == "0" else sorted(ranks))}
           for (name, desc), ranks in members.items()}
    os.makedirs(out)
    for r, d in dumps.items():
        d["pg_config"] = cfg
        with open(os.path.join(out, f"nccl_trace_rank_{r}"), "wb") as f:
            pickle.dump(d, f, protocol=2)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--trace", required=True, help="the //tools:trace binary")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--update", help="rewrite the table between the markers of this README")
    args = ap.parse_args()
    rows = []
    tmp = tempfile.mkdtemp(prefix="fr-compare-")
    for folder in sorted(d for d in glob.glob(os.path.join(args.corpus, "*")) if os.path.isdir(d)):
        with open(os.path.join(folder, "truth.json")) as f:
            truth = json.load(f)
        world = truth["world_size"]
        o = ours(args.trace, folder)
        o_sites_ok = all(o["sites"].get(r) == f"{s['file']}:{s['line']}" for r, s in truth["sites"].items()
                         if f"nccl_trace_rank_{r}" in truth["dumps"])
        o_right = o["culprits"] == truth["culprits"] and (o["exit"] == 0) == truth["healthy"] and o_sites_ok
        t = torchfrtrace(folder, world)
        t2 = torchfrtrace(repaired(folder, world, os.path.join(tmp, truth["scenario"])), world)
        rows.append({
            "scenario": truth["scenario"], "what": truth["what"], "world_size": world,
            "truth": truth["culprits"], "truth_sites": truth["sites"],
            "ours": o, "ours_right": o_right,
            "torchfrtrace": t, "torchfrtrace_right": t["culprits"] == truth["culprits"],
            "torchfrtrace_repaired": t2, "torchfrtrace_repaired_right": t2["culprits"] == truth["culprits"],
        })
    n = len(rows)
    count = lambda k: sum(r[k] for r in rows)
    fmt = lambda c: "healthy" if c == [] else ("-" if c is None else ", ".join(map(str, c)))
    lines = ["| scenario | W | truth: culprits | //tools:trace | torchfrtrace | torchfrtrace, pg_config repaired |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        mark = lambda ok: "right" if ok else "**wrong**"
        t, t2 = r["torchfrtrace"], r["torchfrtrace_repaired"]
        lines.append(
            f"| `{r['scenario']}`: {r['what']} | {r['world_size']} | {fmt(r['truth'])} "
            f"| {fmt(r['ours']['culprits'])} ({mark(r['ours_right'])}) "
            f"| {t['said'] if t['culprits'] is None else fmt(t['culprits'])} ({mark(r['torchfrtrace_right'])}) "
            f"| {t2['said'] if t2['culprits'] is None else t2['said']} ({mark(r['torchfrtrace_repaired_right'])}) |")
    lines.append(f"| **right** | | | **{count('ours_right')} of {n}** | **{count('torchfrtrace_right')} of {n}** "
                 f"| **{count('torchfrtrace_repaired_right')} of {n}** |")
    table = "\n".join(lines)
    print(table)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "right": {"ours": count("ours_right"), "torchfrtrace": count("torchfrtrace_right"),
                                               "torchfrtrace_repaired": count("torchfrtrace_repaired_right"),
                                               "of": n}}, f, indent=1, sort_keys=True)
            f.write("\n")
    if args.update:
        text = open(args.update).read()
        if BEGIN not in text or END not in text:
            print(f"--update: {args.update} lacks the markers {BEGIN} {END}", file=sys.stderr)
            return 2
        head, rest = text.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        with open(args.update + ".tmp", "w") as f:
            f.write(head + BEGIN + "\n" + table + "\n" + END + tail)
        os.replace(args.update + ".tmp", args.update)
    return 0 if count("ours_right") == n else 1


if __name__ == "__main__":
    sys.exit(main())
