"""Picking records and numbers out of them, for the findings and the claims
ledger: selectors, metric expressions, summaries and number formatting.

The specs (each pair's report.json, claims.json) name fields, never numbers: a field a
record does not carry is simply absent from the summary, so records that gain
or lose fields keep building a report.

  selector   {"bug": "x", "kind": "repro", "variant": ["a", "b"],
              "verdict": "reproduced", "config.n": 1025, "file": "x_repro.json"}
             every key must hold; a list means "one of"; "file" is the
             record file's name, or with a "/" its path under the results
             folder ("gpu/<run>/records/call4/x.json": a run kept out of
             the tables, which only the claims ledger reads; ledger.py)
  expression "measured.error"            a field path
             "spread(reference.steps)"   max - min of an array
             "max(measured.per_rank)"    largest element of an array
             "ratio(measured.a,measured.b)"  a / b
             "diff(measured.a,reference.a)"  a - b
             "nonneg(measured.x)"        x, but none when negative (a -1
                                         that means "not applicable")
"""
import math
import os
import re
import statistics


def get(record, path):
    v = record
    for part in path.split("."):
        if not isinstance(v, dict) or part not in v:
            return None
        v = v[part]
    return v


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def expected(record):
    """The verdict a row must have: its own expected_verdict when it runs a
    known-inexact setting on purpose, else by kind (controls: control)."""
    if record.get("expected_verdict"):
        return record["expected_verdict"]
    if record["verdict"] in ("control", "control_failed"):
        return "control"
    return "reproduced" if record["kind"] == "repro" else "exact"


def is_file(path, name):
    """Whether the record file at `path` is `name`: its base name, or with a
    "/" its path relative to the results folder."""
    if "/" not in name:
        return os.path.basename(path) == name
    return path == name or path.endswith("/" + name)


def matches(path, record, selector):
    for key, want in selector.items():
        allowed = want if isinstance(want, list) else [want]
        if key == "file":
            if not any(isinstance(n, str) and is_file(path, n) for n in allowed):
                return False
        elif get(record, key) not in allowed:
            return False
    return True


def select(recs, selector):
    """The (path, record) pairs that match the selector."""
    return [(p, r) for p, r in recs if matches(p, r, selector)]


_CALL = re.compile(r"^(spread|max|min|ratio|diff|abs|nonneg)\((.+)\)$")


def value(record, expr):
    """A number (or bool) from the record, or None when it has no such field."""
    m = _CALL.match(expr)
    if not m:
        v = get(record, expr)
        return v if is_number(v) or isinstance(v, bool) else None
    fn, arg = m.groups()
    if fn in ("ratio", "diff"):
        a, b = (value(record, x.strip()) for x in arg.split(",", 1))
        if not is_number(a) or not is_number(b):
            return None
        if fn == "diff":
            return a - b
        return a / b if b != 0 else None
    if fn in ("abs", "nonneg"):  # nonneg: a negative value means "not applicable"
        v = value(record, arg)
        if not is_number(v):
            return None
        return abs(v) if fn == "abs" else (v if v >= 0 else None)
    arr = get(record, arg)
    if not isinstance(arr, list) or not arr or not all(is_number(x) for x in arr):
        return None
    return {"spread": max(arr) - min(arr), "max": max(arr), "min": min(arr)}[fn]


def first_metric(recs, metrics):
    """The first metric spec (dict with "path") that some record carries."""
    for m in metrics:
        if any(value(r, m["path"]) is not None for _, r in recs):
            return m
    return None


class Summary:
    """A metric over a set of records: count, median, min, max (bools: how
    many are true)."""

    def __init__(self, recs, expr):
        vals = [value(r, expr) for _, r in recs]
        vals = [v for v in vals if v is not None]
        self.bools = [v for v in vals if isinstance(v, bool)]
        self.nums = [float(v) for v in vals if is_number(v)]
        self.n = len(self.nums)
        self.files = sorted({os.path.basename(p) for p, r in recs if value(r, expr) is not None})

    def __bool__(self):
        return bool(self.nums or self.bools)

    def agg(self, how):
        if not self.nums:
            return None
        return {"max": max, "min": min, "median": statistics.median,
                "mean": statistics.fmean, "absmax": lambda xs: max(abs(x) for x in xs)}[how](self.nums)


_SPREAD_SUFFIXES = ("_ci95", "_se", "_sd")


def seed_spread(recs, expr, scale=1.0, unit="", stem_path=None):
    """The spread over seeds that records carry next to a metric, as text:
    "±X 95% CI", "±X se", "sd X", or "seeds: A to B" from <stem>_min and
    <stem>_max; "" when the records carry none. The stem is the metric's name
    without a _mean/_median/_max/_min suffix, or `stem_path` when the spec
    names it (measured.error next to measured.auc_error_min/_max)."""
    if stem_path:
        expr = stem_path
    m = _CALL.match(expr)
    if m and m.group(1) in ("abs", "nonneg"):
        expr = m.group(2)
    if "(" in expr:
        return ""
    section, _, name = expr.rpartition(".")
    stem = re.sub(r"_(mean|median|max|min)$", "", name)
    prefix = f"{section}." if section else ""
    for stem_ in dict.fromkeys((name, stem)):
        for suffix, how in (("_ci95", "±{} 95% CI"), ("_se", "±{} se"), ("_sd", "sd {}")):
            s = Summary(recs, prefix + stem_ + suffix)
            if s.nums:
                return how.format(num(s.agg("median") * scale, unit))
    lo, hi = Summary(recs, f"{prefix}{stem}_min"), Summary(recs, f"{prefix}{stem}_max")
    if lo.nums and hi.nums:
        return f"seeds: {num(lo.agg('min') * scale, unit)} to {num(hi.agg('max') * scale, unit)}"
    return ""


def in_all(n, total):
    """' in all 3 rows', or ' in the 2 row(s) that measure it' when only n of
    total rows carry the field: where one value holds for every row, so no
    bound ("at least 100%") is stated."""
    if n == total:
        return "" if n == 1 else f" in all {n} rows"
    return f" in the {n} row(s) that measure it"


def seeds_per_record(recs):
    """"3" or "2-5": seeds behind each record (config.seeds; 1 with config.seed)."""
    counts = []
    for _, r in recs:
        s = get(r, "config.seeds")
        if is_number(s):
            counts.append(int(s))
        elif is_number(get(r, "config.seed")):
            counts.append(1)
    if not counts:
        return ""
    lo, hi = min(counts), max(counts)
    return str(lo) if lo == hi else f"{lo}-{hi}"


def num(v, unit=""):
    """A number for prose and tables: 3 significant digits, exponent form for
    tiny or huge values, "0" for zero, with the unit."""
    if v is None:
        return "n/a"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if v == 0:
        text = "0"
    elif abs(v) < 1e-3 or abs(v) >= 1e5:
        text = f"{v:.2g}".replace("e-0", "e-").replace("e+0", "e").replace("e+", "e")
    else:
        text = f"{v:.3g}"
    if not unit:
        return text
    if unit in ("%", "x", "×"):
        return text + unit
    return f"{text} {unit}"
