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
        if "select" not in c and "evidence" not in c:
            raise InputError(f"{path}: claim {i}: needs a record selector or an evidence text")
    return claims


def measure(claim, recs):
    """(text, record files, check): the measured number as prose, where it
    came from, and whether it passes the claim's check (None: no check or no
    record)."""
    if "select" not in claim:
        return claim["evidence"], "", None
    picked = select(recs, claim["select"])
    metrics = claim["metric"] if isinstance(claim["metric"], list) else [claim["metric"]]
    for metric in metrics:
        s = Summary(picked, metric)
        if s:
            break
    if not s:
        return "no record carries it", "", False
    if claim.get("agg") == "count_true" or (s.bools and not s.nums):
        v = float(sum(s.bools))
        text = f"{claim['label']}: {sum(s.bools)} of {len(s.bools)}"
    else:
        v = s.agg(claim.get("agg", "max"))
        text = f"{claim['label']}: {num(v * claim.get('scale', 1), claim.get('unit', ''))}"
        if "spread" in claim:
            sp = Summary(picked, claim["spread"])
            if sp.nums:
                text += f" (±{num(sp.agg('median') * claim.get('scale', 1), claim.get('unit', ''))} se)"
        if s.n > 1:
            text += f" over {s.n} rows"
    ok = None
    if "check" in claim:
        op, bound = claim["check"]
        ok = OPS[op](v, bound)
    variants = ", ".join(dict.fromkeys(r["variant"] for _, r in picked))
    return text, f"{', '.join(s.files)}: {variants}", ok


def rows(claims, recs):
    """Ledger rows, and the claims whose check failed (their verdict no
    longer follows from the records)."""
    out, failed = [], []
    for c in claims:
        text, files, ok = measure(c, recs)
        verdict = c["verdict"]
        if ok is False:
            verdict += " (CHECK FAILED)"
            failed.append(c)
        out.append([c["bug"], c["seed"], c["claim"], verdict, text, files or "-",
                    c.get("readme", "-"), c.get("note", "")])
    return out, failed
