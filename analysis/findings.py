"""Per bug: the two-sentence finding and the headline table, from the records
and the benchmark JSON, following the templates in bugs.json."""
import os
import re
import statistics

from pick import (Summary, expected, first_metric, is_number, num, seed_spread, seeds_per_record,
                  select)


def scaled(m, v):
    return None if v is None else v * m.get("scale", 1)


def metric_text(m, recs):
    """"LABEL up to X (median Y; seeds: ...)" for a metric over records."""
    s = Summary(recs, m["path"])
    if s.bools and not s.nums:
        return f"{m['label']}: {sum(s.bools)} of {len(s.bools)}"
    if not s:
        return ""
    unit = m.get("unit", "")
    head = num(scaled(m, s.agg(m.get("agg", "max"))), unit)
    words = {"absmax": "up to", "max": "up to", "min": "at least", "median": "median",
             "mean": "mean"}[m.get("agg", "max")]
    extra = []
    if s.n > 1 and m.get("agg") != "median":
        extra.append(f"median {num(scaled(m, s.agg('median')), unit)}")
    spread = seed_spread(recs, m["path"], m.get("scale", 1), unit, m.get("seeds_stem"))
    if spread:
        extra.append(spread)
    tail = f" ({'; '.join(extra)})" if extra else ""
    return f"{m['label']} {words} {head}{tail}"


def bench_cost(spec, benches):
    """(median, min, max, file) of a benchmark ratio, or None. "counter" reads
    a per-benchmark counter; "over": [num, den] divides the time of each
    benchmark matching num by the one whose name has den in its place (the
    iteration counts in the names are ignored, so a repetition is divided by
    the same repetition): its median iteration (`median_us`) where the file
    has one, else Google Benchmark's mean (`real_time`)."""
    for path, bench in benches:
        if os.path.splitext(os.path.basename(path))[0] != spec["bench"]:
            continue
        rows = [b for b in bench["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
        strip = lambda name: re.sub(r"/iterations:\d+", "", name)  # noqa: E731
        by_name = {strip(b["name"]): b for b in rows}
        vals = []
        for b in rows:
            if not re.search(spec["match"], b["name"]):
                continue
            if "counter" in spec and is_number(b.get(spec["counter"])):
                vals.append(float(b[spec["counter"]]))
            elif "over" in spec:
                den = by_name.get(re.sub(spec["over"][0], spec["over"][1], strip(b["name"])))
                key = "median_us" if "median_us" in b else "real_time"
                if den and is_number(den.get(key)) and den[key] > 0 and is_number(b.get(key)):
                    vals.append(float(b[key]) / float(den[key]))
        if vals:
            return statistics.median(vals), min(vals), max(vals), os.path.basename(path)
    return None


def cost_text(spec, fix_recs, benches):
    if not spec:
        return ""
    unit = spec.get("unit", "")
    if "bench" in spec:
        c = bench_cost(spec, benches)
        if not c:
            return ""
        med, lo, hi, f = c
        return (f"; it costs {num(med, unit)} {spec['label']} (median over {f}; "
                f"range {num(lo, unit)} to {num(hi, unit)})")
    s = Summary(fix_recs, spec["record"])
    if not s.nums:
        return ""
    lo, hi = s.agg("min"), s.agg("max")
    span = num(lo) if lo == hi else f"{num(lo)} to {num(hi)}"
    return f"; it costs {span} {spec['label']}"


def verdict_counts(recs):
    counts = {}
    for _, r in recs:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    return ", ".join(f"{n} {v}" for v, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def unexpected(recs):
    """Rows whose verdict is not the one they must have (pick.expected)."""
    return [(p, r) for p, r in recs if r["verdict"] != expected(r)]


def on_purpose(recs):
    """Fix rows that run a known-inexact setting on purpose."""
    return [(p, r) for p, r in recs if r.get("expected_verdict") not in (None, "exact")]


def finding(spec, recs, benches):
    """Two sentences: the symptom with its size, the fix with its exactness
    and cost. Returns (text, symptom metric, fix metric)."""
    repro = select(recs, {"kind": "repro"})
    hits = select(repro, {"verdict": "reproduced"})
    controls = select(repro, {"verdict": "control"})
    all_fixes = select(recs, {"kind": "fix"})
    shown = on_purpose(all_fixes)
    fixes = [x for x in all_fixes if x not in shown]
    sm = first_metric(hits, spec["symptom_metrics"])
    parts = [metric_text(sm, hits)] if sm else []
    for m in spec.get("symptom_extra", []):
        t = metric_text(m, hits)
        if t:
            parts.append(t)
    if repro:
        s1 = (f"{spec['symptom']}: {len(hits)} of {len(repro)} repro rows reproduced it"
              f" ({len(controls)} controls held)")
        s1 += (": " + "; ".join(parts) + ".") if parts else "."
    else:
        s1 = f"{spec['symptom']}: no repro records."
    fm = first_metric(fixes, spec["fix_metrics"])
    if fixes:
        exact = select(fixes, {"verdict": "exact"})
        variants = ", ".join(dict.fromkeys(r["variant"] for _, r in fixes))
        s2 = (f"{spec['fix']} ({variants}) matched the one-process computation in "
              f"{len(exact)} of {len(fixes)} fix rows")
        if fm:
            s2 += ", " + metric_text(fm, fixes)
        s2 += cost_text(spec.get("cost"), fixes, benches) + "."
        if shown:
            s2 += (f" {len(shown)} more row(s) run known-inexact settings on purpose ("
                   + ", ".join(dict.fromkeys(r["variant"] for _, r in shown)) + ").")
    else:
        s2 = "No fix records."
    bad = unexpected(recs)
    if bad:
        s2 += f" {len(bad)} row(s) missed their expected verdict (appendix)."
    return f"{s1} {s2}", sm, fm


def headline_rows(spec, recs):
    """One row per (kind, variant, control or not): verdicts, the measure,
    its median and range over the rows, the spread over seeds, seeds/row."""
    groups = {}
    for p, r in recs:
        tag = "control" if r["verdict"] == "control" else (
            "inexact on purpose" if r.get("expected_verdict") not in (None, "exact", "reproduced") else "")
        groups.setdefault((r["kind"], r["variant"], tag), []).append((p, r))
    rows = []
    order = lambda k: (k[0] != "repro", k[2])  # noqa: E731  repro, its controls, fixes
    for (kind, variant, tag), g in sorted(groups.items(), key=lambda kv: order(kv[0])):
        metrics = spec["fix_metrics"] if kind == "fix" else spec["symptom_metrics"]
        metrics = metrics + spec.get("symptom_extra", []) if kind == "repro" else metrics
        m = first_metric(g, metrics)
        name = variant + (f" ({tag})" if tag else "")
        if not m:
            rows.append([kind, name, verdict_counts(g), "", "", "", "", seeds_per_record(g)])
            continue
        s = Summary(g, m["path"])
        unit = m.get("unit", "")
        label = m["label"] + (f" ({unit})" if unit else "")
        if s.bools and not s.nums:
            rows.append([kind, name, verdict_counts(g), label, f"{sum(s.bools)} of {len(s.bools)}",
                         "", "", seeds_per_record(g)])
            continue
        lo, hi = scaled(m, s.agg("min")), scaled(m, s.agg("max"))
        rows.append([kind, name, verdict_counts(g), label, num(scaled(m, s.agg("median"))),
                     num(lo) if lo == hi else f"{num(lo)} to {num(hi)}",
                     seed_spread(g, m["path"], m.get("scale", 1), "", m.get("seeds_stem")) or "-",
                     seeds_per_record(g)])
    return rows


HEADLINE_HEADER = ["kind", "variant", "rows (verdicts)", "measure (unit)", "median",
                   "range over configs", "spread over seeds", "seeds per row"]
