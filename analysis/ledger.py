"""The claims ledger: every claim of the source posts (claims.json) with our
verdict, the number the records measure for it, and the record file."""
import json
import operator

from pick import Summary, num, select
from records import InputError

VERDICTS = ("reproduced", "refuted", "partly")
OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
       "==": operator.eq}
HEADER = ["bug", "seed", "claim", "verdict", "measured", "record: variants", "judged in",
          "note"]


def load_claims(path):
    try:
        with open(path) as f:
            claims = json.load(f)["claims"]
    except (OSError, ValueError, KeyError) as e:
        raise InputError(f"{path}: cannot read the claims: {e}")
    for i, c in enumerate(claims):
        if c.get("verdict") not in VERDICTS:
            raise InputError(f"{path}: claim {i}: verdict must be one of {', '.join(VERDICTS)}")
        if "select" not in c and "evidence" not in c and "measures" not in c:
            raise InputError(f"{path}: claim {i}: needs a record selector or an evidence text")
    return claims


def measure(claim, recs):
    """(text, record files, check, verdict, note): the measured number as
    prose, where it came from, whether it passes the check (None: no check),
    and the verdict and note that go with it. A claim may list "measures":
    alternatives for records of different generations, each with its own
    selector, metric, check and (optionally) verdict and note; the first one
    some record carries is used."""
    alternatives = [dict(claim, **alt) for alt in claim.get("measures", [])] or [claim]
    for alt in alternatives:
        if "select" not in alt:
            continue
        metrics = alt["metric"] if isinstance(alt["metric"], list) else [alt["metric"]]
        if any(Summary(select(recs, alt["select"]), m) for m in metrics):
            return measure_one(alt, recs) + (alt["verdict"], alt.get("note", ""))
    if "evidence" in claim:
        return claim["evidence"], "", None, claim["verdict"], claim.get("note", "")
    return "no record carries it", "", False, claim["verdict"], claim.get("note", "")


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
    return text, f"{', '.join(s.files)}: {variants}", ok


def rows(claims, recs):
    """Ledger rows, and the claims whose check failed (their verdict no
    longer follows from the records)."""
    out, failed = [], []
    for c in claims:
        text, files, ok, verdict, note = measure(c, recs)
        if ok is False:
            verdict += " (CHECK FAILED)"
            failed.append(c)
        out.append([c["bug"], c["seed"], c["claim"], verdict, text, files or "-",
                    c.get("readme", "-"), note])
    return out, failed
