"""Verdicts and per-version texts computed from the records, never typed
(issue 71). claims.json declares, per claim and per PyTorch version, what
to read and how to judge it; this module reads it and says the verdict.

A per-version entry's "checks" is a list of
  {"rows": "cases"             the record's list (or section) of rows; "" the record
   "where": {"api": "plain"}   the rows it reads (pick.matches on each row)
   "metric": "residual_max"    pick.value's expressions, and "nonempty(path)"
   "agg": "max"                max, min, median, mean, absmax, count_true, all, any
   "op": ">", "bound": 1       the comparison the value must pass
   "over": {"where", "metric", "agg"}  optional: the value is divided by this
                               other selection's (a comparison across rows)
   "shows": "claim"            passing shows the claim ("claim") or shows it false
                               ("against"); failing shows the other; "info": shown,
                               not judged
   "says": "text {value} ..."  the shown_by sentence: its numbers are only the
                               fills ({value}, {n}: rows read, {where}: the rows'
                               configuration, {each:path}: each read row's value)
   "about": "time" | "spread"  the noise rule: "repeats" (runs, >= 2), "load"
                               (the machine's load, recorded) and "interval"
                               [lo path, hi path] excluding "null" must all be in
                               the record, else the check is unresolved}
and the entry's verdict is: every check for the claim -> confirmed, every
one against -> refuted, a mix -> partly, any unresolved -> "not resolved
here" (the interval shown); no checks -> not tested ("reason" says why).
A claim's "untested_words" (verbatim phrases of its claim text that no
check tests; verdict_rules.word_problems) cap a confirmed or refuted
verdict at partly, top level and per version alike.

The top-level verdict of a measured claim is its check (ledger.measure)
read through "shows" the same way, with each of its "also" checks
(ledger.measure_also: further numbers of the same selection, each with its
own "shows"): all agreeing give that verdict, a disagreement "partly"; "scope" (the claim's setting did not
run) makes it "not reproduced here", a counter-example outside its
selection (verdict_rules.counter_examples) or untested words "partly".
A judged-from-code claim's outcome is its "shows" read the same way
(the code read makes the claim's point: confirmed; shows it false:
refuted), capped at partly by untested words: no typed "partly" that its
own declarations cannot give.
"""
import re

from ledger import NOT_REPRODUCED, OPS, measure, measure_also
from pick import get, is_number, matches, num, value

NOT_RESOLVED = "not resolved here"
AGGS = ("max", "min", "median", "mean", "absmax", "count_true", "all", "any")
FILL = re.compile(r"\{([a-z_]+)(?::([^{}]+))?\}")


def rows_of(record, path):
    v = record if not path else get(record, path)
    if isinstance(v, list):
        return [x for x in v if isinstance(x, dict)]
    return [v] if isinstance(v, dict) else []


def row_value(row, expr):
    if "[]." in expr:  # each element's field of a list of rows: "chunks[].err"
        head, tail = expr.split("[].", 1)
        vals = [row_value(x, tail) for x in (get(row, head) or []) if isinstance(x, dict)]
        return [v for v in vals if v is not None] or None
    m = re.match(r"^nonempty\((.+)\)$", expr)
    if m:
        v = get(row, m.group(1))
        return bool(v) if v is not None else None
    m = re.match(r"^len\((.+)\)$", expr)
    if m:
        v = get(row, m.group(1))
        return len(v) if isinstance(v, (list, dict, str)) else None
    return value(row, expr)


def flat(vals):
    out = []
    for v in vals:
        out += v if isinstance(v, list) else ([] if v is None else [v])
    return out


def aggregate(vals, how):
    nums = [float(v) for v in vals if is_number(v)]
    bools = [v for v in vals if isinstance(v, bool)]
    if how == "count_true":
        return float(sum(bools)) if bools else None
    if how in ("all", "any"):
        return (all if how == "all" else any)(bools) if bools else None
    if not nums:
        return None
    import statistics
    return {"max": max, "min": min, "median": statistics.median, "mean": statistics.fmean,
            "absmax": lambda xs: max(abs(x) for x in xs)}[how](nums)


def fmt(v, spec):
    if isinstance(v, bool):
        return "yes" if v else "no"
    if not is_number(v):
        return "n/a" if v is None else str(v)
    v = v * spec.get("scale", 1)
    if float(v).is_integer() and abs(v) < 1e9:  # a count or size: every digit
        return f"{int(v)}{spec.get('unit', '')}"
    return num(v, spec.get("unit", ""))


def noise_problem(record, spec):
    """Why a time or spread check cannot be resolved on this record, or None."""
    if spec.get("about") not in ("time", "spread"):
        return None
    runs = get(record, spec.get("repeats", "")) if spec.get("repeats") else None
    load = get(record, spec.get("load", "")) if spec.get("load") else None
    lo_hi = spec.get("interval") or []
    if not (is_number(runs) and runs >= 2):
        return "one run: no interval over repeated runs"
    if not is_number(load):
        return "the machine's load is not recorded"
    if len(lo_hi) != 2 or not all(is_number(get(record, p)) for p in lo_hi):
        return "the record carries no interval"
    lo, hi = (get(record, p) for p in lo_hi)
    null = spec.get("null", 0)
    if lo <= null <= hi:
        return f"the interval [{fmt(lo, spec)}, {fmt(hi, spec)}] holds no difference"
    return None


def run_check(record, spec):
    """{value, n, outcome ('for', 'against', 'unresolved', 'none'), text}."""
    rows = [r for r in rows_of(record, spec.get("rows", "")) if matches("", r, spec.get("where", {}))]
    vals = flat(row_value(r, spec["metric"]) for r in rows)
    v = aggregate(vals, spec.get("agg", "max"))
    if spec.get("over") and is_number(v):
        o = spec["over"]
        den = aggregate(flat(row_value(r, o["metric"]) for r in rows_of(
            record, spec.get("rows", "")) if matches("", r, o.get("where", {}))),
            o.get("agg", "max"))
        v = v / den if is_number(den) and den != 0 else None
    out = {"value": v, "n": len(vals)}
    if v is None:
        out["outcome"] = "none"
    elif spec.get("shows") == "info":
        out["outcome"] = "info"
    else:
        holds = OPS[spec["op"]](float(v), spec["bound"])
        out["outcome"] = "for" if holds == (spec.get("shows", "claim") == "claim") else "against"
    why = noise_problem(record, spec)
    if why and out["outcome"] != "none":
        out["outcome"] = "unresolved"
    out["text"] = render(spec.get("says", ""), spec, v, rows) + (f" ({why})" if why else "")
    return out


def render(template, spec, v, rows):
    where = ", ".join(f"{k} {'/'.join(map(str, w)) if isinstance(w, list) else w}"
                      for k, w in spec.get("where", {}).items())

    def fill(m):
        name, arg = m.groups()
        if name == "value":
            return fmt(v, spec)
        if name == "n":
            return str(len([r for r in rows if row_value(r, spec["metric"]) is not None]))
        if name == "where":
            return where
        if name == "each":
            return ", ".join(dict.fromkeys(fmt(x, spec) if is_number(x) else str(x)
                                           for x in flat(row_value(r, arg) if "[]." in arg else get(r, arg)
                                                         for r in rows)))
        raise ValueError(f"unknown fill {{{name}}} in {template!r}")
    return FILL.sub(fill, template)


def literal_numbers(template):
    """Digits a template states outside its fills (none may be typed)."""
    return re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?![\w])", FILL.sub(" ", template))


def cap(verdict, claim):
    if verdict in ("confirmed", "refuted") and claim.get("untested_words"):
        return "partly"
    return verdict


def code_outcome(claim):
    """The outcome a judged-from-code claim's declarations give."""
    verdict = "confirmed" if claim.get("shows", "claim") == "claim" else "refuted"
    return cap(verdict, claim)


def combine(outcomes):
    decisive = [o for o in outcomes if o in ("for", "against", "unresolved")]
    if not decisive:
        return "not tested"
    if "unresolved" in decisive:
        return NOT_RESOLVED
    if all(o == "for" for o in decisive):
        return "confirmed"
    if all(o == "against" for o in decisive):
        return "refuted"
    return "partly"


def version_verdict(claim, entry, record):
    """(verdict, shown_by text) of one per-version entry on its record (a
    dict, or None when it is not at hand)."""
    checks = entry.get("checks") or []
    if not checks or record is None:
        return "not tested", entry.get("reason", "")
    results = [run_check(record, c) for c in checks]
    verdict = cap(combine([r["outcome"] for r in results]), claim)
    return verdict, "; ".join(r["text"] for r in results if r["text"])


def top_verdict(claim, recs, named=(), counter=()):
    """The verdict a measured claim's check gives on the records (None for
    a claim that declares no check: not tested, judged from code)."""
    if not claim.get("check") or not claim.get("select"):
        return None
    _, _, ok = measure(claim, recs, named)
    if claim.get("scope"):
        return NOT_REPRODUCED
    if ok is None:
        return "not tested"
    shows = claim.get("shows", "claim")
    verdict = "confirmed" if ok == (shows == "claim") else "refuted"
    for _, ok_also, shows_also in measure_also(claim, recs, named):
        if ("confirmed" if ok_also == (shows_also == "claim") else "refuted") != verdict:
            verdict = "partly"  # one number for the claim, another against it
    if counter and verdict != "partly":
        verdict = "partly"
    return cap(verdict, claim)
