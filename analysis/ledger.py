"""The claims ledger: every claim of the source posts (claims.json) with our
verdict, the number the records measure for it, and the record file.

Verdict classes, kept apart in the report:
  confirmed, partly, refuted  measured: a selector that picks records, a
                              metric, and a check [op, bound] whose bound
                              comes from the claim's own number ("threshold"
                              says how), so that the check could fail; the
                              report flags a check the records no longer pass
  not tested                  "reason" says why (e.g. it needs NCCL on a GPU);
                              a measurement may be shown for information
  judged from code            "code" names the code read, "outcome" what it
                              showed (confirmed, partly, refuted)
  not reproduced here         measured like the three above, but short of the
                              claim's own setting (analysis/verdict_rules.py):
                              "scope" says what ran and what did not
The suite's own results, which no post states ("suite_results"), are
measured the same way and counted apart from the posts' claims.
A selector's "file" may name record files under the results folder by path
("gpu/<run>/records/call4/x.json"): a GPU run's records, kept out of the
report's tables and read only for the claims that name them (read_named);
there a record whose provenance says gpu "none (...)" is set aside (CUDA
refused that process, e.g. after a CUDA MPS fault: not evidence of the GPU).
A claim may carry a per-version field (PER_VERSION_KEYS: PyTorch version ->
verdict, or {"verdict", "note"}); the report's ledger prints the verdicts its
checks compute on the records (analysis/computed.py, ledger_section.versions),
and //analysis:verdict_rules_test refuses a typed one that differs.
Every claim and suite result has a stable "id" (<bug>/<slug>): references
anywhere are "claim:<id>" (analysis/claim_refs.py), never a position.
Sources (claims.json "sources") are cited by title, author, date and site.
"""
import json
import math
import operator
import os

from pick import Summary, get, is_file, is_number, num, select, value
from records import InputError

MEASURED = ("confirmed", "partly", "refuted")
NOT_REPRODUCED = "not reproduced here"
NOT_TESTED = "not tested"
FROM_CODE = "judged from code"
CHECKED = MEASURED + (NOT_REPRODUCED,)  # the classes whose check must hold
CLASSES = MEASURED + (NOT_REPRODUCED, NOT_TESTED, FROM_CODE)
OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
       "==": operator.eq}
PER_VERSION_KEYS = ("versions", "per_version", "by_version", "pytorch_versions",
                    "torch_versions", "pytorch")
HEADER = ["bug", "seed", "claim", "verdict", "measured", "record: variants", "judged in",
          "note", "check", "threshold, reason or code", "per version"]


def signed(claim):
    """Whether the claim's measure can be negative: a difference (diff(...)),
    or a field the claim declares "signed" (e.g. a change in accuracy)."""
    metrics = claim.get("metric") if isinstance(claim.get("metric"), list) else [claim.get("metric")]
    return bool(claim.get("signed")) or all(str(m).startswith("diff(") for m in metrics)


def check_problem(check, where, can_be_negative=False):
    """Why a check could never fail (or is malformed), or None. A measure
    that is a magnitude, count, share or ratio is never negative, so "> 0"
    or ">= 0" holds for any record that carries it."""
    if not (isinstance(check, list) and len(check) == 2 and check[0] in OPS
            and is_number(check[1])):
        return f"{where}: check must be [op, number] with op one of {', '.join(OPS)}"
    op, bound = check
    if op in (">", ">=") and bound <= 0 and not can_be_negative:
        return f"{where}: check {op} {bound} cannot fail on a non-negative measure"
    if op in ("<", "<=") and math.isinf(bound):
        return f"{where}: check {op} {bound} cannot fail"
    return None


def problems(claim, sources=None, own=False):
    """The ways a claim breaks the verdict rules (empty when it keeps them).
    own: one of the suite's own results (no seed, no quote)."""
    out = []
    v = claim.get("verdict")
    if v not in CLASSES:
        return [f"verdict {v!r} is not one of {', '.join(CLASSES)}"]
    for key in ("bug", "claim") + (("why_not_a_claim",) if own else ("seed", "quote")):
        if not claim.get(key):
            out.append(f"no {key}")
    if not own and sources is not None and claim.get("seed") not in sources:
        out.append(f"seed {claim.get('seed')!r} has no entry in sources")
    if v == NOT_REPRODUCED and not claim.get("scope"):
        out.append("'not reproduced here' needs 'scope': what ran and what did not")
    if v in CHECKED:
        alts = [dict(claim, **a) for a in claim.get("measures", []) if a] or [claim]
        for i, alt in enumerate(alts):
            where = "measure" if len(alts) == 1 else f"measure {i + 1}"
            if not alt.get("select") or not alt.get("metric"):
                out.append(f"{where}: a {v} verdict needs a record (select and metric)")
            p = check_problem(alt.get("check"), where, signed(alt))
            if p:
                out.append(p)
            if alt.get("verdict", v) != v:
                out.append(f"{where}: an alternative may not change the verdict")
        if not claim.get("threshold"):
            out.append("a measured verdict needs 'threshold': where the check's bound comes from")
        for i, extra in enumerate(claim.get("also") or []):
            where = f"also {i + 1}"
            if not isinstance(extra, dict) or not extra.get("metric") or not extra.get("label"):
                out.append(f"{where}: needs a metric and a label")
                continue
            p = check_problem(extra.get("check"), where, signed(dict(claim, **extra)))
            if p:
                out.append(p)
            if extra.get("shows", "claim") not in ("claim", "against"):
                out.append(f"{where}: shows must be 'claim' or 'against'")
    elif v == NOT_TESTED:
        if not claim.get("reason"):
            out.append("'not tested' needs a reason")
        if claim.get("check"):
            out.append("'not tested' carries no check (a checked claim is measured)")
    else:
        if not claim.get("code"):
            out.append("'judged from code' must name the code")
        if claim.get("outcome") not in MEASURED:
            out.append(f"'judged from code' needs an outcome: one of {', '.join(MEASURED)}")
    return out


def load(path, with_own=False):
    """(claims, sources) from claims.json, and with_own the suite's own
    results as a third; a claim that breaks the rules is an InputError
    naming it."""
    try:
        with open(path) as f:
            doc = json.load(f)
        claims, sources = doc["claims"], doc.get("sources", {})
        own = doc.get("suite_results", [])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise InputError(f"{path}: cannot read the claims: {e}")
    bad = [f"claim:{c.get('id', i)} ({c.get('claim', '?')!r}): {p}"
           for i, c in enumerate(claims) for p in problems(c, sources)]
    bad += [f"claim:{c.get('id', i)} ({c.get('claim', '?')!r}): {p}"
            for i, c in enumerate(own) for p in problems(c, own=True)]
    if bad:
        raise InputError(f"{path}: " + "; ".join(bad))
    return (claims, sources, own) if with_own else (claims, sources)


def load_claims(path):
    return load(path)[0]


def subfolder_files(selector):
    """The record files a selector names by path under the results folder."""
    f = (selector or {}).get("file")
    return [n for n in (f if isinstance(f, list) else [f]) if isinstance(n, str) and "/" in n]


def named_files(claims):
    """Every record file under the results folder that a claim names, once."""
    names = [n for c in claims for alt in [c] + [a for a in c.get("measures", []) if a]
             for n in subfolder_files(alt.get("select"))]
    return list(dict.fromkeys(names))


def ran_on_gpu(record):
    """False for a GPU run's record whose provenance says gpu "none (...)"."""
    gpu = get(record, "provenance.gpu")
    return not (isinstance(gpu, str) and gpu.startswith("none"))


def read_named(claims, results_dir, load):
    """(records as (path, record), how many were set aside) from the files
    that claims name under results_dir; load(path) returns a file's records.
    A file that is not there gives none: its claims say "no record carries
    it" (a measured one is then flagged CHECK FAILED)."""
    recs, aside = [], 0
    for name in named_files(claims):
        path = os.path.join(results_dir, name)
        if os.path.exists(path):
            for r in load(path):
                if ran_on_gpu(r):
                    recs.append((path, r))
                else:
                    aside += 1
    return recs, aside


def measure(claim, recs, named=()):
    """(text, record files, check passed or None) of a claim's measurement;
    the first of its "measures" alternatives some record carries is used. An
    alternative that names files under the results folder reads only
    `named` (read_named), every other one only `recs`."""
    alternatives = [dict(claim, **alt) for alt in claim.get("measures", []) if alt] or [claim]
    for alt in alternatives:
        if "select" not in alt:
            continue
        pool = named if subfolder_files(alt["select"]) else recs
        metrics = alt["metric"] if isinstance(alt["metric"], list) else [alt["metric"]]
        if any(Summary(select(pool, alt["select"]), m) for m in metrics):
            return measure_one(alt, pool)
    if claim.get("select") or claim.get("measures"):
        return "no record carries it", "", False if claim.get("check") else None
    return claim.get("evidence", ""), "", None


def measure_also(claim, recs, named=()):
    """[(text, passed, shows)] of a claim's further checks ("also": each
    {metric, agg, label, check, shows, scale?, unit?} on the claim's own
    selection): a claim of several words that the records read by more than
    one number (an accuracy and a loss) names each."""
    out = []
    for extra in claim.get("also") or []:
        sub = {k: v for k, v in claim.items()
               if k not in ("also", "measures", "spread", "scale", "unit")}
        sub.update(extra)
        pool = named if subfolder_files(sub["select"]) else recs
        if not Summary(select(pool, sub["select"]), sub["metric"]):
            out.append(("%s: no record carries it" % sub.get("label", sub["metric"]), False,
                        sub.get("shows", "claim")))
            continue
        text, _, ok = measure_one(sub, pool)
        out.append((text, ok, sub.get("shows", "claim")))
    return out


def measure_one(claim, recs):
    picked = select(recs, claim["select"])
    metrics = claim["metric"] if isinstance(claim["metric"], list) else [claim["metric"]]
    for metric in metrics:
        s = Summary(picked, metric)
        if s:
            break
    if claim.get("agg") == "count_true" or (s.bools and not s.nums):
        v = float(sum(s.bools))
        text = f"{claim['label']}: {sum(s.bools)} of {len(s.bools)}"
    else:
        v = s.agg(claim.get("agg", "max"))
        text = f"{claim['label']}: {num(v * claim.get('scale', 1), claim.get('unit', ''))}"
        if "spread" in claim:
            kind = "95% CI" if claim["spread"].endswith("_ci95") else "se"
            sp = Summary(picked, claim["spread"])
            if sp.nums:
                text += f" (±{num(sp.agg('median') * claim.get('scale', 1), claim.get('unit', ''))} {kind})"
        if s.n > 1:
            text += f" over {s.n} rows"
    ok = None
    if claim.get("check"):
        op, bound = claim["check"]
        ok = OPS[op](v, bound)
    variants = ", ".join(dict.fromkeys(r["variant"] for _, r in picked))
    named = subfolder_files(claim["select"])
    files = [n for n in named if any(is_file(p, n) and value(r, metric) is not None
                                     for p, r in picked)] if named else s.files
    return text, f"{', '.join(files)}: {variants}", ok


def per_version(claim, detail=False):
    """'1.13: refuted; 2.15: confirmed' from a per-version field, or ''; with
    detail, each version's note, measurement or evidence in parentheses."""
    for key in PER_VERSION_KEYS:
        field = claim.get(key)
        if isinstance(field, dict) and field:
            parts = []
            for version, v in field.items():
                if isinstance(v, dict):
                    extra = v.get("note") or v.get("measured") or v.get("evidence")
                    parts.append(f"{version}: {v.get('verdict', '')}"
                                 + (f" ({extra})" if detail and extra else ""))
                else:
                    parts.append(f"{version}: {v}")
            return "; ".join(parts)
    return ""


def note(claim):
    """The claim's note, with the words its checks leave untested (which cap
    its verdict at partly) and the implementation a check ran, when it is
    the suite's own version of code the post gives."""
    parts = [claim.get("note", "")]
    if parts[0] and not parts[0].endswith((".", ")")):
        parts[0] += "."
    if claim.get("untested_words"):
        why = claim.get("untested_why")
        parts.append("Words no check tests: " + "; ".join(f"'{w}'" for w in claim["untested_words"])
                     + (f" ({why})" if why else "") + ".")
    if claim.get("implementation"):
        parts.append("Checked on: " + claim["implementation"] + ".")
    return " ".join(p for p in parts if p)


def check_text(claim):
    c = claim.get("check")
    return f"{c[0]} {c[1]:g}" if isinstance(c, list) and len(c) == 2 and is_number(c[1]) else ""


def rows(claims, recs, named=()):
    """Ledger rows (HEADER), and the measured claims whose check failed
    (their verdict no longer follows from the records)."""
    out, failed = [], []
    for c in claims:
        text, files, ok = measure(c, recs, named)
        also = measure_also(c, recs, named) if c.get("select") else []
        if also:
            text = "; ".join([text] + [t for t, _, _ in also])
        verdict = c["verdict"]
        if verdict in CHECKED and ok is False:
            verdict += " (CHECK FAILED)"
            failed.append(c)
        if verdict == FROM_CODE:
            verdict = f"{FROM_CODE}: {c['outcome']}"
            text = text or c.get("evidence", "")
        why = {NOT_TESTED: c.get("reason", ""), FROM_CODE: c.get("code", ""),
               NOT_REPRODUCED: c.get("scope", "")}.get(c["verdict"], c.get("threshold", ""))
        out.append([c["bug"], c.get("seed", "-"), c["claim"], verdict, text or "-", files or "-",
                    c.get("readme", "-"), note(c), check_text(c), why, per_version(c)])
    return out, failed


def counts(claims):
    """{class: number of claims}, every class listed."""
    out = {k: 0 for k in CLASSES}
    for c in claims:
        out[c["verdict"]] += 1
    return out


def cite(seed, sources):
    s = sources.get(seed)
    if not s:
        return f"seed {seed}"
    parts = [f"“{s['title']}”", s.get("author") or "author not named",
             s.get("date") or "undated", s.get("site", "")]
    return ", ".join(p for p in parts if p)
