#!/usr/bin/env python3
"""gpu_section.py: the top README's GPU section, from the committed GPU runs.

Reads every GPU run kept under results/gpu/ (RUN/logs.tar.gz or RUN/ with
one folder per device call, as tools/bundle/gpu_table.py does) and prints
one Markdown block: a heading naming the GPU, one line per run (commit,
calls, how many gpu tests and pairs passed in some call and in one call,
how many of those tests ran every case and which skipped most of theirs,
from the gtest lines of their logs, and whether one call ran everything), the numbers that one process on the
GPU measured (bench/norm_kernels at W = 1: each kernel's GB/s against a
device-to-device copy timed in the same repetition, rows beyond the L2),
what NCCL and PyTorch's NCCL did with the source post's raw unequal
all_gather, bench/padding on Gloo on the GPU machine's CPUs (bench/tables.py's
table, saying whether its call ran anything beside it), and a list of what
no committed record covers yet. Numbers
come from the records only; rows of ranks sharing one GPU are functional
and are named, never quoted. --update FILE rewrites FILE's `gpu-section`
block (bench/tables.py's markers). Exit 2, one line `gpu_section: why`,
on input it cannot read.
"""
import json
import os
import re
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
sys.path.insert(0, HERE)
import tables  # noqa: E402  bench/tables.py
from tables import InputError  # noqa: E402
import gpu_table  # noqa: E402

RUNS_WANTED = 10       # issue 44: at least 10 runs per engine and W
GOAL_FRAC = 0.8        # bench/README.md, norm_kernels: of the copy's GB/s, rows beyond the L2
# lease.sh's per-run records; since --raw-proto the names carry the dtype
# and any NCCL_PROTO forced (wrong_all_gather_raw_nccl_w2.float32.proto-Simple.run1.json).
RAW_TAGS = r"(?:\.(?:float32|float64))?(?:\.proto-(\w+))?\.run\d+\.json$"
RAW_OURS = re.compile(r"wrong_all_gather_raw_nccl_w(\d+)" + RAW_TAGS)
RAW_TORCH = re.compile(r"wrong_all_gather_unequal\.torch\.nccl_w(\d+)" + RAW_TAGS)
PROTO_DEFAULT = "NCCL's choice"
NORM = re.compile(r"norm_kernels[^/]*\.nccl\.bench\.json$")
OURS_DTYPE = "float64"
PADDING_GLOO = re.compile(r"padding[^/]*\.gloo\.bench\.json$")
PEERS = {"torch_norm_gpu.json": "norm_gpu", "torch_dist_gpu.json": "dist_gpu"}  # record: its table


def call_files(run):
    """{(call, path inside the call): bytes} of the JSON records of RUN's calls."""
    return gpu_table.call_members(run, lambda p: p.startswith("records/") and p.endswith(".json"))


def load(call, path, data):
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise InputError(f"{call}/{path}: not JSON ({e})")


def complete_bench(data):
    """A benchmark JSON that parses and has rows (a killed run's file is cut mid-write)."""
    try:
        return bool(json.loads(data).get("benchmarks"))
    except (ValueError, UnicodeDecodeError, AttributeError):
        return False


def skipped_text(run, calls, status, keys):
    """' (22 with every case run, 9 with cases skipped, 2 of them most:
    `x` ran 1 of 9 cases, ...)': the passed tests apart by what ran (gpu_table.py),
    '' when no log of theirs is kept."""
    good = {k[1]: {c for c, (s, _) in status[k].items() if s in gpu_table.GOOD} for k in keys}
    best = gpu_table.passed_cases({b: c for b, c in good.items() if c}, gpu_table.test_cases(run, calls))
    if not best:
        return ""
    some = [b for b, (_, c) in best.items() if c["skipped"]]
    most = sorted((b for b in some if 2 * best[b][1]["skipped"] > best[b][1]["total"]),
                  key=lambda b: (best[b][1]["ran"] / best[b][1]["total"], b))
    text = f" ({len(best) - len(some)} with every case run, {len(some)} with cases skipped"
    if most:
        text += f", {len(most)} of them most: " + ", ".join(
            f"`{b}` ran {best[b][1]['ran']} of {best[b][1]['total']} cases" for b in most)
    return text + ")"


def run_line(name, run):
    """One run: its calls, commit, and the gpu_table counts; whether one call ran it all."""
    calls = gpu_table.read_calls(run)
    env = gpu_table.env_fields(next((c["environment"] for c in calls.values() if "environment" in c), ""))
    status = {}
    for call in calls:
        for r in gpu_table.rows_of(calls[call]["summary"], call):
            status.setdefault((r["kind"], r["binary"]), {})[call] = (r["status"], int(r["seconds"] or 0))
    parts = []
    for kind, what in (("test", "gpu tests passed"), ("pair", "pairs on NCCL as expected")):
        keys = [k for k in status if k[0] == kind]
        if not keys:
            continue
        some = sum(1 for k in keys if any(s in gpu_table.GOOD for s, _ in status[k].values()))
        best = max(sum(1 for k in keys if status[k].get(c, ("-",))[0] in gpu_table.GOOD) for c in calls)
        parts.append(f"{what}: {some} of {len(keys)} in some call{skipped_text(run, calls, status, keys) if kind == 'test' else ''}, "
                     f"at most {best} in one call")
    # A call counts as the whole run only if run_all reached its summary
    # (a call cut from outside never lists what it did not start).
    finished = {c for (c, _), text in gpu_table.call_members(run, lambda p: p == "console.txt").items()
                if b"\n== summary\n" in b"\n" + text}
    whole = [c for c in calls if c in finished and
             all(status[k].get(c, ("-",))[0] in gpu_table.GOOD for k in status if k[0] in ("test", "pair"))]
    if whole:
        c = whole[0]
        longest = max((s for k in status if k[0] == "test" for call, (st, s) in status[k].items() if call == c),
                      default=0)
        one = f"**everything in one call** ({c}; longest gpu test {longest} s)"
    else:
        one = "not yet everything in one call"
    commit = env.get("records' commit", "?")[:7]
    gpu = env.get("gpu", "?").split(",")[0]
    return gpu, (f"- [{name}](results/gpu/{name}/README.md): {gpu}, driver "
                 f"{(env.get('gpu', '?').split(', ') + ['?'])[1]}, bundle `{commit}`, "
                 f"{len(calls)} device call{'s' if len(calls) != 1 else ''}; " + "; ".join(parts) + f"; {one}.")


def norm_table(found, gpu=None):
    """bench/norm_kernels rows beyond the L2: median GB/s and fraction of the copy, [min, max], of one
    run's record; `gpu` named first where the section holds runs of several GPUs."""
    (run, call, path), doc = found
    ctx = doc.get("context", {})
    groups = {}
    for b in doc.get("benchmarks", []):
        if b.get("run_type") != "iteration" or b.get("fits_l2", 1) != 0 or "frac_of_copy" not in b:
            continue
        key = re.sub(r"/rep:\d+.*$", "", b["name"])
        groups.setdefault(key, []).append((b["frac_of_copy"], b["gbps"]))
    if not groups:
        raise InputError(f"{run}/{call}/{path}: no norm_kernels row beyond the L2 with frac_of_copy")
    out = [(f"On the {gpu}: one" if gpu else "One") + f" process on the GPU (W = 1, no collective; "
           f"`{path.split('/')[-1]}` of {run}, {call}; "
           f"commit `{ctx.get('ddp_commit', '?')[:7]}`, CUDA MPS client: {ctx.get('ddp_mps_client', '?')}, "
           f"shared GPU: {ctx.get('ddp_shared_gpu', '?')}; {ctx.get('ddp_reps', '?')} interleaved "
           f"repetitions in one run, medians over them): each kernel's GB/s and that over a device-to-device "
           f"copy of the same bytes timed in the same repetition, rows whose data exceeds the L2 "
           f"(goal ≥ {GOAL_FRAC}, bench/README.md).", ""]
    # One line per kernel row, a column per dtype: per shape the median over
    # the repetitions, then the range of those medians over the shapes.
    per = {}
    for key, v in groups.items():
        _, dtype, row, *shape = key.split("/")
        per.setdefault(row, {}).setdefault(dtype, []).append(
            (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v), " ".join(shape)))
    dtypes = sorted({d for r in per.values() for d in r})
    out.append("| row | " + " | ".join(f"{d}: of the copy's GB/s (GB/s)" for d in dtypes) + " |")
    out.append("|---|" + "---|" * len(dtypes))
    met = 0
    for row in sorted(per):
        cells = []
        for d in dtypes:
            v = per[row].get(d)
            if not v:
                cells.append("-")
                continue
            met += sum(1 for f, _, _ in v if f >= GOAL_FRAC)
            lo, hi = min(v), max(v)
            cells.append(f"{lo[0]:.2f} ({lo[1]:.0f})" if len(v) == 1 else
                         f"{lo[0]:.2f} ({lo[1]:.0f}) .. {hi[0]:.2f} ({hi[1]:.0f}), {len(v)} shapes")
        out.append(f"| {row} | " + " | ".join(cells) + " |")
    shapes = sorted({" ".join(k.split("/")[3:]) for k in groups})
    out.append("")
    out.append("Shapes beyond the L2: " + "; ".join(shapes) + ". Each cell: the lowest and highest of the "
               "per-shape medians.")
    out.append("")
    out.append(f"{met} of {len(groups)} rows reach {GOAL_FRAC} of the copy (medians): "
               + ("the goal is met." if met == len(groups) else "**the goal is not met**; these kernels "
                  "are not yet as fast as the memory allows."))
    return out


def ours_raw(doc, call, path):
    """(W, runs, silent, failed, rank-0 AUCs when silent) from our raw_unequal rows of unequal length."""
    rows = doc if isinstance(doc, list) else doc.get("records", [])
    for r in rows:
        if r.get("variant") != "raw_unequal" or r.get("backend") != "nccl":
            continue
        w, n = r.get("world_size"), r.get("config", {}).get("n")
        if not w or n is None or n % w == 0:
            continue  # equal shares: the control
        m = r.get("measured", {})
        aucs = [float(a) for a in re.findall(r"r0: returned, [1-9]\d*/\d+ values not peer data, AUC ([-\d.e+]+)",
                                             m.get("first_gather", ""))]
        # Records before --raw_dtype (e1ac90f and older) do not name it: their
        # gathers sent doubles (RawUnequal in repro/wrong_all_gather/variants.cc).
        dtype = r.get("config", {}).get("raw_dtype", OURS_DTYPE)
        ref = r.get("reference", {}).get("auc")
        yield (w, dtype, int(m.get("runs", 0)), int(m.get("silent_runs", 0)), int(m.get("failed_runs", 0)),
               aucs, ref, OURS_INPUTS)


OURS_INPUTS = "ours"  # repro/wrong_all_gather's own samples (raw_inputs.json holds them)


def torch_raw(doc):
    ref = doc.get("config", {}).get("reference_auc")
    # Since 7b8517f the script gathers our samples (config.inputs); before,
    # its own torch.Generator's (one-process AUC 0.8625 at n = 1003).
    inputs = OURS_INPUTS if doc.get("config", {}).get("inputs") else "PyTorch's own"
    for c in doc.get("cases", []):
        a = c.get("rank0_auc", {})
        aucs = [x for x in (a.get("min"), a.get("max")) if x is not None]
        failed = sum(1 for run in c.get("per_run", []) if any(r.get("exit", 0) != 0 for r in run))
        yield c["world_size"], c.get("dtype", "?"), int(c["runs"]), int(c["silent_runs"]), failed, aucs, ref, inputs


def raw_table(files, gpu_of=None):
    """Per engine, W, dtype and device call (never pooled across calls:
    their conditions differ, e.g. CUDA MPS on or off, and so never across
    GPUs; `gpu_of` maps a run to its GPU, named beside it where the section
    holds several GPUs): runs, silent wrong
    values, runs with an error or deadline, rank 0's AUC when silent, and
    the one-process AUC of that engine's data and whose samples it gathered
    (PyTorch's records before 7b8517f drew their own scores)."""
    agg = {}
    for (run, call, path), data in files.items():
        name = path.split("/")[-1]
        ours, torch = RAW_OURS.search(name), RAW_TORCH.search(name)
        if name == "repro_wrong_all_gather.json" or ours:
            items, engine = ours_raw(load(call, path, data), call, path), "ours (bundle)"
        elif torch:
            items, engine = torch_raw(load(call, path, data)), "PyTorch"
        else:
            continue
        proto = ((ours or torch).group(2) if (ours or torch) else None) or PROTO_DEFAULT
        for w, dtype, runs, silent, failed, aucs, ref, inputs in items:
            a = agg.setdefault((w, engine != "PyTorch", engine, dtype, proto, run, call),
                               {"runs": 0, "silent": 0, "failed": 0, "aucs": [], "refs": set(), "inputs": set()})
            a["inputs"].add(inputs)
            a["runs"] += runs
            a["silent"] += silent
            a["failed"] += failed
            a["aucs"] += aucs
            if isinstance(ref, (int, float)):
                a["refs"].add(ref)
    out = ["The source post's raw all_gather of unequal lengths (seed 000's `gather_step_wrong`, n = 1003) "
           "on NCCL, one row per engine, W, dtype of the gathered values, NCCL_PROTO and device call (runs of "
           "one call summed; calls never pooled):", ""]
    out.append("| engine | W | dtype | NCCL_PROTO | run, call | runs | silent wrong values | ended in an error or "
               "deadline | rank 0's AUC when silent | one process's AUC | samples gathered |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|")
    best = {}
    for key in sorted(agg, key=lambda k: (k[0], not k[1], k[5], k[6], k[3], k[4])):
        w, _, engine, dtype, proto, run, call = key
        a = agg[key]
        auc = f"{min(a['aucs']):.4f}..{max(a['aucs']):.4f}" if a["aucs"] else "-"
        ref = "..".join(f"{x:.4f}" for x in sorted(a["refs"])) or "-"
        where = f"{run} ({gpu_of[run]}), {call}" if gpu_of else f"{run}, {call}"
        out.append(f"| {engine} | {w} | {dtype} | {proto} | {where} | {a['runs']} | {a['silent']} | "
                   f"{a['failed']} | {auc} | {ref} | {', '.join(sorted(a['inputs']))} |")
        # The most runs in one call per engine, W, dtype, protocol and samples.
        for k in ((engine, w, dtype), (engine, w, dtype, proto, frozenset(a["inputs"]))):
            best[k] = max(best.get(k, 0), a["runs"])
    return out, best


def like_for_like_todo(best):
    """Issue 63's like-for-like runs no record holds yet: both engines on
    the same samples (ours) in one dtype at W = 4; at W = 2 each in the
    other's own dtype; at W = 2 under NCCL_PROTO=LL and =Simple."""
    def most(engine, w, dtype, proto=PROTO_DEFAULT):
        return best.get((engine, w, dtype, proto, frozenset({OURS_INPUTS})), 0)
    todo = []
    same = max(((min(most("ours (bundle)", 4, d), most("PyTorch", 4, d)), d) for d in ("float32", "float64")))
    if same[0] < RUNS_WANTED:
        todo.append(f"the raw unequal all_gather on NCCL at W = 4, both engines on the same samples in one dtype: "
                    f"at most {same[0]} of {RUNS_WANTED} runs each in one call "
                    f"(`lease.sh --raw-nccl S --raw-worlds 4 --raw-dtype float32`)")
    ours, torch = most("ours (bundle)", 2, "float32"), most("PyTorch", 2, "float64")
    if min(ours, torch) < RUNS_WANTED:
        todo.append(f"the raw unequal all_gather on NCCL at W = 2, each engine in the other's dtype on the same "
                    f"samples (ours float32: at most {ours}, PyTorch float64: at most {torch} of {RUNS_WANTED} "
                    f"runs in one call; `--raw-dtype swap`)")
    for proto in ("LL", "Simple"):
        got = {e: max((most(e, 2, d, proto) for d in ("float32", "float64"))) for e in ("ours (bundle)", "PyTorch")}
        if min(got.values()) == 0:
            todo.append(f"the raw unequal all_gather on NCCL at W = 2 under NCCL_PROTO={proto}, both engines on the "
                        f"same samples (`--raw-proto {proto}`): no run of "
                        + " and ".join(e for e, n in got.items() if n == 0))
    return todo


def jobs_text(run_dir, call):
    """How many binaries the call's run_all.sh ran at once, from its console
    ("== N runs, J at a time"): whether a benchmark of it ran alone."""
    console = gpu_table.call_members(run_dir, lambda p: p == "console.txt").get((call, "console.txt"), b"")
    m = re.search(r"^== \d+ runs?, (\d+) at a time", console.decode("utf-8", "replace"), re.M)
    if not m:
        return "how many binaries ran beside it is not in the call's console"
    return ("the call ran one binary at a time" if m.group(1) == "1" else
            f"the call ran {m.group(1)} binaries at a time: not alone")


def padding_block(run_dir, key, data):
    """bench/padding on Gloo (CPU ranks) on the GPU machine: bench/tables.py's
    table of each fix's time over the equal-size floor, from the newest
    complete run."""
    run, call, path = key
    doc = load(call, path, data)
    where = f"`{path.split('/')[-1]}` of {run}, {call}"
    return [f"bench/padding on Gloo, ranks on the GPU machine's CPUs ({where}; {jobs_text(run_dir, call)}): "
            f"each method's time over the equal-size floor, median [min, max] over the "
            f"interleaved repetitions (columns as in bench/padding/README.md).", "",
            tables.context_line(doc.get("context", {}), "Run"), "", tables.padding_table(doc, where)]


def render(gpu_dir):
    if not os.path.isdir(gpu_dir):
        raise InputError(f"{gpu_dir}: no such folder")
    runs = sorted((d for d in os.listdir(gpu_dir) if os.path.isdir(os.path.join(gpu_dir, d))), reverse=True)
    lines, gpus, files, skipped, gpu_of = [], [], {}, [], {}
    for name in runs:
        path = os.path.join(gpu_dir, name)
        try:
            gpu, line = run_line(name, path)
        except InputError:
            skipped.append(name)  # a run from before run_all's per-call summary.tsv
            continue
        gpus.append(gpu)
        gpu_of[name] = gpu
        lines.append(line)
        for (call, p), data in call_files(path).items():
            files[(name, call, p)] = data
    if not lines:
        raise InputError(f"{gpu_dir}: no GPU run with per-call summary.tsv files")
    # One GPU: the heading names it. Several (an H200 lease after the H100's):
    # the heading names each, newest first, and every table names its own;
    # no number of one GPU is pooled with another's.
    kinds = list(dict.fromkeys(gpus))
    several = len(kinds) > 1
    if several:
        out = ["### Measured on " + " and ".join(f"an {g}" if g.startswith("NVIDIA") else g for g in kinds), ""]
    else:
        gpu = gpus[0]
        out = [f"### Measured on an {gpu}" if gpu.startswith("NVIDIA") else f"### Measured on {gpu}", ""]
    out.append("Written by `python3 tools/bundle/gpu_section.py results/gpu --update README.md` from the "
               "records committed under `results/gpu/` (`//tools/bundle:gpu_section_test` checks that this "
               "block is what it gives). Runs, newest first:")
    out.append("")
    out += lines
    if skipped:
        out.append("- earlier, without per-call summaries: " + ", ".join(
            f"[{s}](results/gpu/{s}/README.md)" for s in skipped) + " (see its README).")
    out.append("")
    norms = sorted((k, load(k[1], k[2], v)) for k, v in files.items() if NORM.search(k[2]))
    todo = []
    if norms:
        # Per GPU, its newest run's record (a table of one run: one GPU).
        for g in kinds:
            mine = [n for n in norms if gpu_of[n[0][0]] == g]
            if mine:
                out += norm_table(mine[-1], g if several else None)
                out.append("")
        out.pop()
    else:
        todo.append("bench/norm_kernels at W = 1 (one process: the only GPU number a one-GPU lease gives alone)")
    out.append("")
    raw, agg = raw_table(files, gpu_of if several else None)
    if agg:
        out += raw
        out.append("")
    # Ten runs per engine and W in each engine's own dtype (PyTorch's: the
    # post's float32); a run in the other dtype is a row of its own.
    for engine, dtype in (("ours (bundle)", OURS_DTYPE), ("PyTorch", "float32")):
        for w in (2, 4):
            got = agg.get((engine, w, dtype), 0)
            if got < RUNS_WANTED:
                todo.append(f"the raw unequal all_gather on NCCL, {engine}, W = {w}: at most {got} of "
                            f"{RUNS_WANTED} runs in one call")
    todo += like_for_like_todo(agg)
    for peer, table in PEERS.items():
        where = sorted(f"{k[0]}, {k[1]}" for k in files if k[2].split("/")[-1] == peer)
        if where:
            out.append(f"PyTorch's rows beside ours: `{peer}` ({'; '.join(where)}), in bench/README.md's "
                       f"`{table}` table (`python3 bench/peers/{table}_table.py RUN.json --update bench/README.md`).")
            out.append("")
        else:
            todo.append(f"PyTorch's rows beside ours on the GPU (`{peer}`)")
    pads = sorted((k, v) for k, v in files.items() if PADDING_GLOO.search(k[2]) and complete_bench(v))
    if pads:
        out += padding_block(os.path.join(gpu_dir, pads[-1][0][0]), *pads[-1])
        out.append("")
    else:
        todo.append("bench/padding on Gloo at W = 4 on the GPU machine's cores, run alone, complete")
    out.append("Benchmark rows of ranks sharing one GPU (bench/sync_bn, bench/padding on NCCL) are functional "
               "checks, not performance numbers, and are not quoted here.")
    if todo:
        out.append("")
        out.append("**Not yet in any committed GPU record:**")
        out.append("")
        out += [f"- {t}" for t in todo]
    return "\n".join(out)


def main(argv):
    return gpu_table.cli("gpu_section", __doc__.split("\n\n")[1],
                         "the folder of committed GPU runs, e.g. results/gpu", "gpu-section", render, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
