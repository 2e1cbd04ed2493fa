"""The top of the report: one summary table (per bug, the symptom at the
default configuration with its spread over seeds, the fix and how exact it
is, the cost of the best fix at a named shape) and the "Scope and limits"
paragraph, both from the records and their provenance (report.json "summary"
names which records and fields; no number is typed there)."""
import json
import os

import bench_cost
import tables
from pick import Summary, get, in_all, is_number, num, select, value

# How a reader can tell what "silent" means wherever the report says it.
SILENT = ("silent: the gather returned on that rank with no error (while its peer aborted), "
          "so nothing told the program its values were wrong")


def config_text(select_spec, r):
    """'N = 1003, batch 32' from the selector's config keys, read from the record."""
    names = {"n": "N", "batch_size": "batch", "batch_per_rank": "per-rank batch",
             "loss": "loss", "batches": "batches", "sharding": "sharding", "task": "task"}
    out = []
    for key in select_spec:
        if key.startswith("config.") and key[len("config."):] in names:
            k = key[len("config."):]
            v = get(r, key)
            out.append(f"{names.get(k, k)} = {v}" if k in ("n", "batch_size", "batch_per_rank")
                       else f"{names.get(k, k)} {v}")
    return ", ".join(out)


def symptom_cell(item, recs, world=False):
    """'LABEL (variant, config): VALUE [LOW, HIGH] SPREAD', W, engine; with
    `world`, W and the engine stand in the parentheses too (the suite's
    summary, which has no W or engine column)."""
    picked = [(p, r) for p, r in select(recs, item["select"]) if is_number(value(r, item["value"]))]
    if not picked:
        return None
    _, r = picked[0]
    k, unit = item.get("scale", 1), item.get("unit", "")
    v = value(r, item["value"])
    where = [r["variant"]] + ([f"W = {r['world_size']}"] if world else [])
    where += [c for c in [config_text(item["select"], r)] if c] + ([r["backend"]] if world else [])
    text = f"{item['label']} ({', '.join(where)}): {num(v * k, unit)}"
    if item.get("of") and not item.get("of_label"):  # a count: "X of N"
        text += f" of {num(value(r, item['of']))}"
    if item.get("low") and item.get("high"):
        lo, hi = get(r, item["low"]), get(r, item["high"])
        if is_number(lo) and is_number(hi):
            if item.get("interval") == "plus_minus":  # value ± half-width
                lo, hi = v - lo, v + lo
            text += f" [min {num(lo * k)}, max {num(hi * k)}]" if item.get("interval") != "plus_minus" \
                else f" (95% interval {num(lo * k)} to {num(hi * k, unit)})"
    if item.get("spread"):
        seeds = get(r, "config.seeds") or get(r, "measured.seeds")
        text += " " + item["spread"].replace("{seeds}", str(seeds) if seeds else "the")
    if item.get("of_label"):  # a named comparison, in the value's unit
        of = value(r, item["of"])
        text += f"; {item['of_label']} {num(None if of is None else of * k, unit)}"
    if item.get("reference"):
        text += f"; reference: {get(r, item['reference'])}"
    return text, str(r["world_size"]), r["backend"]


def fix_cell(spec, recs, where=""):
    """'NAME: exact in X/Y rows (largest ERROR)', rows inexact on purpose
    left out; `where` (variants, W) follows the name."""
    fixes = select(recs, {"kind": "fix"})
    if not fixes:
        return "no fix records"
    own = [x for x in fixes if x[1].get("expected_verdict") in (None, "exact")]
    name = spec.get("summary", {}).get("fix", spec.get("fix", "the fix"))
    if not own:
        return f"{name}{where}: only rows inexact on purpose ({len(fixes)})"
    exact = select(own, {"verdict": "exact"})
    text = f"{name}{where}: exact in {len(exact)}/{len(own)} rows"
    for m in spec.get("fix_metrics", []):
        s = Summary(own, m["path"])
        if s.nums:
            how, k, unit = m.get("agg", "max"), m.get("scale", 1), m.get("unit", "")
            if s.agg("min") == s.agg("max"):
                text += f" ({m['label']} {num(s.agg(how) * k, unit)}{in_all(s.n, len(own)) or ' in the row'})"
            else:
                word = {"min": "lowest", "median": "median"}.get(how, "largest")
                text += f" ({word} {m['label']} {num(s.agg(how) * k, unit)})"
            break
    return text


def cost_cell(spec, recs, benches):
    c = spec.get("cost")
    if not c:
        return spec["summary"].get("cost_text", "-")
    if "bench" not in c:
        s = Summary(select(recs, {"kind": "fix"}), c["record"])
        if not s.nums:
            return "-"
        lo, hi = s.agg("min"), s.agg("max")
        return (num(lo) if lo == hi else f"{num(lo)} to {num(hi)}") + f" {c['label']}"
    got = bench_cost.cost(c, benches)
    if not got:
        return "-"
    ctx = got["context"]
    text = (f"{got['method']} {num(got['median'], 'x')} [min {num(got['min'], 'x')}, max "
            f"{num(got['max'], 'x')}] {c['label']} at {got['shape']}, W = "
            f"{ctx.get('ddp_world_size', '?')} ({got['reps']} repetitions, {got['file']})")
    if "seed" in got:
        name, med, lo, hi = got["seed"]
        text += f"; the post's {name} {num(med, 'x')}"
    if got.get("shapes"):
        (lo, s_lo), (hi, s_hi) = got["shapes"][0], got["shapes"][-1]
        text += f"; other shapes {num(lo, 'x')} ({s_lo}) to {num(hi, 'x')} ({s_hi})"
    return text


def table(bugs, bugs_spec, recs, benches):
    """The summary table's Markdown lines."""
    rows = []
    silent = False
    for bug in bugs:
        spec = bugs_spec.get(bug, {})
        if "summary" not in spec:
            continue
        mine = select(recs, {"bug": bug})
        cells = [symptom_cell(item, mine) for item in spec["summary"]["symptom"]]
        cells = [c for c in cells if c]
        silent |= any("silent" in c[0] for c in cells)
        rows.append([f"[{bug}](#{bug})",
                     "; ".join(c[0] for c in cells) or "-",
                     "/".join(dict.fromkeys(c[1] for c in cells)) or "-",
                     "/".join(dict.fromkeys(c[2] for c in cells)) or "-",
                     fix_cell(spec, mine), cost_cell(spec, mine, benches)])
    out = [tables.markdown(["bug", "symptom at the default configuration [spread over seeds]",
                            "W", "engine", "fix: how exact", "cost of the best fix at a named shape "
                            "(median [min, max] over repetitions)"], rows), ""]
    if silent:
        out += [tables.para(f"Here and below, {SILENT}."), ""]
    return out


def cpu_counts(benches):
    """{host: CPUs} from the benchmark files' contexts."""
    out = {}
    for _, b in benches:
        c = b.get("context", {})
        n = c.get("ddp_cpus", c.get("num_cpus"))
        if c.get("host_name") and str(n).isdigit():
            out[c["host_name"]] = int(n)
    return out


def torch_versions(results_dir):
    """PyTorch versions of the evidence records under results/vs_pytorch."""
    found = set()
    folder = os.path.join(results_dir, "vs_pytorch")
    if not os.path.isdir(folder):
        return found
    for f in sorted(os.listdir(folder)):
        if not f.endswith(".json"):
            continue
        try:
            with open(os.path.join(folder, f)) as fh:
                d = json.load(fh)
        except (OSError, ValueError):
            continue
        for x in (d if isinstance(d, list) else [d]):
            p = x.get("provenance", {}) if isinstance(x, dict) else {}
            v = p.get("torch") or p.get("torch_version")
            if v:
                found.add(str(v))
    return found


def scope(recs, benches, results_dir, commits_behind=None):
    """The "Scope and limits" paragraph, every fact read from the records."""
    engines = sorted({r["backend"] for _, r in recs} |
                     {b.get("context", {}).get("ddp_backend") for _, b in benches} - {None})
    gpus = {str(r.get("provenance", {}).get("gpu", "")) for _, r in recs}
    on_gpu = sorted(g for g in gpus if g and not g.startswith("none"))
    cpus_named = sorted({str(r.get("provenance", {}).get("cpu", "?")) for _, r in recs})
    hosts = sorted({str(r.get("provenance", {}).get("host", "?")) for _, r in recs})
    ncpu = cpu_counts(benches)
    over_recs = [r for _, r in recs if ncpu.get(r.get("provenance", {}).get("host")) and
                 r["world_size"] > ncpu[r["provenance"]["host"]]]
    over_bench = [os.path.basename(p) for p, b in benches
                  if str(b.get("context", {}).get("ddp_oversubscribed", "")).startswith("yes")]
    loads = [b["context"]["load_avg"][0] for _, b in benches
             if is_number((b.get("context", {}).get("load_avg") or [None])[0])]
    tasks = sorted({str(r["config"]["task"]) for _, r in recs if "task" in r.get("config", {})})
    versions = sorted(torch_versions(results_dir))
    commits = {str(r.get("provenance", {}).get("commit", "?")) for _, r in recs} | {
        str(b.get("context", {}).get("ddp_commit", "?")) for _, b in benches}
    dirty = sum(1 for c in commits if c.endswith("+dirty"))
    never = [e for e in ("gloo", "nccl") if e not in engines]
    parts = [f"Engines that produced these records: {', '.join(engines) or 'none'}"
             + (f"; not in these records: {', '.join(never)}" if never else "") + "."]
    gpu_dir = os.path.join(results_dir, "gpu")
    gpu_runs = sorted(d for d in os.listdir(gpu_dir)
                      if os.path.isdir(os.path.join(gpu_dir, d))) if os.path.isdir(gpu_dir) else []
    parts.append("GPUs: " + (", ".join(on_gpu) if on_gpu else
                             "none — no record in this report's tables ran on a GPU") + "."
                 + (f" The GPU runs kept apart under results/gpu/ ({', '.join(gpu_runs)}) enter only "
                    "the ledger's claims that name their record files, and the README's GPU section "
                    "(tools/bundle/gpu_section.py)." if gpu_runs else ""))
    parts.append(f"Hosts: {', '.join(hosts)} ({', '.join(cpus_named)}"
                 + (", " + ", ".join(f"{n} CPUs on {h}" for h, n in sorted(ncpu.items()))
                    if ncpu else "") + "); ranks talk over loopback TCP on one host.")
    if ncpu:
        parts.append(f"Oversubscribed (more ranks than CPUs, taking each host to have the CPUs its "
                     f"benchmark files report): {len(over_recs)} of {len(recs)} records "
                     "(correctness results, which do not depend on timing)"
                     + (f" and the benchmark file(s) {', '.join(over_bench)}, whose times "
                        "include waiting for a CPU" if over_bench else
                        "; no benchmark file") + ".")
    if loads:
        parts.append(f"Load average at the start of the benchmark runs: {num(min(loads))} to "
                     f"{num(max(loads))} (1-minute).")
    parts.append("PyTorch versions the claims about PyTorch were checked against: "
                 + (", ".join(versions) if versions else "none recorded") + " (results/vs_pytorch).")
    parts.append("Data: " + (", ".join(tasks) + " (small_batch_bn's tasks); " if tasks else "")
                 + "the other pairs use synthetic data generated from their seeds.")
    parts.append(f"The records come from {len(commits)} commit(s), {dirty} of them marked +dirty"
                 + (f"; {commits_behind}" if commits_behind else "") + ".")
    return tables.para("**Scope and limits.** " + " ".join(parts))
