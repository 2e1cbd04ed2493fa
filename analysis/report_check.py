#!/usr/bin/python3
"""report_check.py OUT CLAIMS: asserts the structure of a built report (what
//analysis:report_test checks): a finding per bug, the claims ledger with
every claim (and every README that judges claims), short Markdown lines, no
JSON array in a table cell, every figure in PDF, SVG and PNG, the LaTeX
tables. Prints each problem; exit 1 when there is one."""
import json
import os
import re
import sys

# The pairs and the READMEs that judge their posts' claims ("what the seed got
# right / wrong"), from the pair registry (pairs.bzl): a new pair is checked
# with no edit here.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import registry  # noqa: E402

PAIRS = registry.load()
BUGS = registry.names(PAIRS)
JUDGING_READMES = registry.judging_readmes(PAIRS)
WITH_SEED = [p["name"] for p in PAIRS if p["seed"]]


def size_cap(pairs, entries):
    """report.md's size budget, grown with what it holds, so that a new pair
    or claim fits without raising a number by hand: 8 KiB for the fixed parts
    (header, summary head, contents, benchmarks, provenance), 3.5 KiB per
    pair (its section and summary row; about 2.8 KiB today) and 300 bytes
    per ledger entry (a compact row; about 250 today)."""
    return 8 * 1024 + pairs * 3584 + entries * 300


def main(out, claims_path):
    problems = []
    md = open(os.path.join(out, "report.md")).read()
    lines = md.splitlines()
    summary = md.split("## Summary", 1)[-1].split("\n## ", 1)[0].splitlines()
    for i, line in enumerate(lines, 1):
        # The summary table holds a bug's symptom, fix and cost in one row.
        limit = 500 if line.startswith("| [") and line in summary else 300
        if len(line) > limit:
            problems.append(f"report.md:{i}: {len(line)} characters")
        if line.startswith("|"):
            for c in re.split(r"(?<!\\)\|", line)[1:-1]:
                if re.search(r"\[\s*[-\d\"{\[]", c):
                    problems.append(f"report.md:{i}: JSON array in a cell: {c.strip()[:60]}")
    if not re.search(r"\| bug \| symptom at the default configuration", md):
        problems.append("no summary table at the top")
    scope = re.search(r"\*\*Scope and limits\.\*\* (.*?)\n\n", md, re.S)
    if not scope or not all(w in scope.group(1) for w in ("Engines", "GPU", "PyTorch", "Oversubscribed")):
        problems.append("no 'Scope and limits' paragraph naming engines, GPUs, PyTorch and oversubscription")
    doc = json.load(open(claims_path))
    cap = size_cap(len(BUGS), len(doc["claims"]) + len(doc.get("suite_results", [])))
    if len(md.encode()) > cap:
        problems.append(f"report.md is {len(md.encode())} bytes, more than its cap of {cap} "
                        f"(for {len(BUGS)} pairs and their ledger entries)")
    if not os.path.exists(os.path.join(out, "appendix.md")) or "## Appendix" in md:
        problems.append("the per-record appendix is not in its own file appendix.md")
    for bug in BUGS:
        m = re.search(rf"## \d+\. .*\(`{bug}`.*?\n\n\*\*Finding\.\*\* (.*?)\n\n", md, re.S)
        if not m:
            problems.append(f"no finding for {bug}")
            continue
        sentences = [s for s in re.split(r"(?<=\.)\s+(?=[A-Z])", m.group(1).replace("\n", " ")) if s]
        if len(sentences) < 2 or not re.search(r"\d", m.group(1)):
            problems.append(f"{bug}: the finding lacks two sentences with numbers: {m.group(1)[:80]}")
        head = md[m.end():].split("\n\n", 1)[0].splitlines()
        if not head or not head[0].startswith("| kind") or len(head[0].split(" | ")) > 8:
            problems.append(f"{bug}: no headline table of at most 8 columns")
        if not re.search(rf"!\[{bug}[^\]]*\]\({bug}_\w+\.png\)", md):
            problems.append(f"{bug}: no figure")
        tex = os.path.join(out, "latex", f"{bug}.tex")
        if not os.path.exists(tex) or not all(k in open(tex).read() for k in ("\\toprule", "\\midrule", "\\bottomrule")):
            problems.append(f"{bug}: no booktabs table {tex}")
    claims = json.load(open(claims_path))["claims"]
    ledger = md.split("## Claims ledger", 1)[-1].split("\n## ", 1)[0]
    rows = [l for l in ledger.splitlines() if re.match(r"^\| [a-z_]+/[a-z0-9-]+ \| \d{3} \|", l)]
    if len(rows) != len(claims):
        problems.append(f"ledger: {len(rows)} rows for {len(claims)} claims")
    # Measured verdicts carry theirs in a column; "not tested" and "judged
    # from code" are kept apart, each in its own table.
    parts = {"measured": ledger.split("### Measured verdicts", 1)[-1].split("\n### ", 1)[0],
             "not reproduced here": ledger.split("### Not reproduced here", 1)[-1].split("\n### ", 1)[0]
             if "### Not reproduced here" in ledger else "",
             "not tested": ledger.split("### Not tested", 1)[-1].split("\n### ", 1)[0]
             if "### Not tested" in ledger else "",
             "judged from code": ledger.split("### Judged from code", 1)[-1].split("\n### ", 1)[0]
             if "### Judged from code" in ledger else ""}
    for c in claims:
        v = c["verdict"]
        where = parts["measured"] if v in ("confirmed", "partly", "refuted") else parts.get(v, "")
        if not any(c["claim"] in r for r in where.splitlines()) or (
                v in ("confirmed", "partly", "refuted")
                and not any(c["claim"] in r and re.search(rf"\| {v}( \(CHECK FAILED\))? \|", r)
                            for r in where.splitlines())):
            problems.append(f"ledger: claim missing, without its verdict or in the wrong table: "
                            f"{c['claim']}")
    judged = {c.get("readme") for c in claims}
    for readme in JUDGING_READMES:
        if readme not in judged:
            problems.append(f"ledger: no claim judged in {readme}")
    if not all(b in {c["bug"] for c in claims} for b in WITH_SEED):
        problems.append("ledger: a pair whose registry entry names a seed has no claims")
    if "CHECK FAILED" in ledger.split("Every check holds")[-1]:
        problems.append("ledger: a claim's check failed on the test records")
    figures = re.findall(r"!\[[^\]]*\]\(([\w.-]+)\.png\)", md)
    if len(figures) < len(BUGS):
        problems.append(f"only {len(figures)} figures")
    for name in figures:
        for ext in ("pdf", "svg", "png"):
            p = os.path.join(out, f"{name}.{ext}")
            if not os.path.exists(p) or os.path.getsize(p) == 0:
                problems.append(f"figure {name}: no {ext}")
    if not os.path.exists(os.path.join(out, "latex", "claims.tex")):
        problems.append("no latex/claims.tex")
    for bug in BUGS:
        if not os.path.exists(os.path.join(out, f"{bug}.csv")):
            problems.append(f"no {bug}.csv")
    for p in problems:
        print("report_check:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
