"""The claims ledger as a report section: the counts per verdict class, the
measured verdicts (each with its check and where the check's bound comes
from), the claims not tested (with the reason) and those judged from code
(naming the code) in tables of their own, and the source posts cited as a
reader can find them."""
import json
import os

import computed
import ledger
import tables


def version_record(entry, results_dir):
    """A per-version entry's record (its path is under results/), or None."""
    rel = entry.get("record") or ""
    if not results_dir or not rel.startswith("results/"):
        return None
    try:
        with open(os.path.join(results_dir, rel[len("results/"):])) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def versions(claims, results_dir):
    """{claim id: [(version, verdict, text)]}: each per-version verdict and
    shown_by as its checks compute them on the records (analysis/computed.py);
    where the record is not at hand, the typed verdict, said so."""
    out = {}
    for k, c in enumerate(claims, 1):
        for v, e in (c.get("pytorch") or {}).items():
            if not isinstance(e, dict):
                continue
            rec = version_record(e, results_dir)
            if rec is None and e.get("record"):
                got = (e.get("verdict", ""), "record not at hand: the typed verdict")
            else:
                got = computed.version_verdict(c, e, rec)
            out.setdefault(c.get("id", str(k)), []).append((v,) + got)
    return out


def gpu_run_sentence(claims, aside):
    """Which claims read record files named under the results folder (a GPU
    run kept out of the tables), and how many of their records were set
    aside; "" when no claim names any."""
    ids = [f"claim:{c.get('id', k)}" for k, c in enumerate(claims, 1) if any(
        ledger.subfolder_files(a.get("select")) for a in [c] + [m for m in c.get("measures", []) if m])]
    if not ids:
        return ""
    return (f" {', '.join(ids)} read{'' if len(ids) > 1 else 's'}"
            " record files of a GPU run, named in the row (paths under the results folder), "
            "which no other table of this report uses"
            + (f"; {aside} record(s) in them whose provenance says gpu \"none (...)\" (CUDA "
               "refused the process) are set aside" if aside else "") + ".")


def section(claims, sources, recs, full=True, named=(), aside=0, own=(), results_dir=None):
    """(Markdown lines, ledger rows, measured claims whose check failed).
    full=False: the compact form for report.md (no bound column, shorter
    cells); the full form goes to ledger.md and claims.csv. named, aside:
    ledger.read_named's records of files claims name under the results
    folder, and how many of those it set aside. own: the suite's own
    results (no post states them), in a table of their own, numbered S1..."""
    rows, failed = ledger.rows(claims, recs, named)
    per_version = versions(claims, results_dir)
    for c, r in zip(claims, rows):  # the per-version column: the computed verdicts
        if c.get("id") in per_version:
            r[10] = "; ".join(f"{v}: {verdict}" for v, verdict, _ in per_version[c["id"]])
    own_rows, own_failed = ledger.rows(list(own), recs, named)
    failed = failed + own_failed
    n = ledger.counts(claims)
    measured = sum(n[k] for k in ledger.CHECKED) + sum(
        1 for c in own if c["verdict"] in ledger.CHECKED)
    numbered = [(c.get("id", k), r) for k, (c, r) in enumerate(zip(claims, rows), 1)]
    md = ["## Claims ledger", "",
          tables.para(
              f"{len(claims)} claims of the {len(sources)} source posts (cited below by seed "
              f"number), each quoting its post. Measured on the records of this report: "
              f"{n['confirmed']} confirmed, {n['partly']} partly, {n['refuted']} refuted (only "
              "where the claim's own setting ran), each with a check whose bound comes from the "
              f"claim's own number, so that the check could fail; {n[ledger.NOT_REPRODUCED]} not "
              "reproduced here (measured short of the claim's own setting, with the scope). Kept "
              f"apart: {n[ledger.NOT_TESTED]} not tested (with the reason) and {n[ledger.FROM_CODE]} "
              "judged from code (naming the code), which no check covers"
              + (f"; and {len(own)} results of the suite's own that no post states, counted "
                 "apart (S1...)" if own else "") + ". "
              + (f"{len(failed)} of the {measured} checks FAILED: those verdicts no longer follow "
                 "from the records." if failed else
                 f"Every one of the {measured} checks holds on these records.")
              + (" A PyTorch version column gives the verdict per version."
                 if any(r[10] for r in rows) else "")
              + gpu_run_sentence(claims, aside)), ""]
    has_versions = any(r[10] for r in rows)

    def table(title, head, pick, cells):
        picked = [(k, r) for k, r in numbered if pick(r)]
        if not picked:
            return []
        return [f"### {title}", "", tables.markdown(head, [cells(k, r) for k, r in picked]), ""]

    vcol = ["per PyTorch version"] if has_versions else []
    w = 1 if full else 0.2  # cell widths: the compact form keeps a fifth (the id column takes the rest)
    measured_head = ["id (bug/slug)", "seed", "claim", "verdict", "measured", "check"] + (
        ["bound from", "record: variants"] if full else [])
    md += table("Measured verdicts", measured_head + vcol,
                lambda r: r[3].split(" ")[0] in ledger.MEASURED,
                lambda k, r: [str(k), r[1], r[2], r[3], tables.cell(r[4], int(160 * w)), r[8]]
                + ([tables.cell(r[9], 200), tables.cell(r[5], 100)] if full else [])
                + ([r[10]] if has_versions else []))
    md += table("Not reproduced here", ["id (bug/slug)", "seed", "claim", "measured", "check", "scope"]
                + vcol,
                lambda r: r[3].startswith(ledger.NOT_REPRODUCED),
                lambda k, r: [str(k), r[1], r[2], tables.cell(r[4], int(160 * w)), r[8],
                              tables.cell(r[9], int(260 * w))]
                + ([r[10]] if has_versions else []))
    md += table("Not tested", ["id (bug/slug)", "seed", "claim", "why not"]
                + (["measured (information)"] if full else []) + vcol,
                lambda r: r[3] == ledger.NOT_TESTED,
                lambda k, r: [str(k), r[1], r[2], tables.cell(r[9], int(220 * w))]
                + ([tables.cell(r[4], 120) if r[5] != "-" else "-"] if full else [])
                + ([r[10]] if has_versions else []))
    md += table("Judged from code", ["id (bug/slug)", "seed", "claim", "outcome", "code read"]
                + (["what it shows"] if full else []) + vcol,
                lambda r: r[3].startswith(ledger.FROM_CODE),
                lambda k, r: [str(k), r[1], r[2], r[3][len(ledger.FROM_CODE) + 2:],
                              tables.cell(r[9], int(200 * w))]
                + ([tables.cell(r[4], 200)] if full else [])
                + ([r[10]] if has_versions else []))
    if own_rows:
        md += ["### The suite's own results (no post states them)", "",
               tables.markdown(["id (bug/slug)", "result", "verdict", "measured", "check"]
                               + (["why not a post's claim"] if full else []),
                               [[c.get("id", f"S{k}"), r[2], r[3], tables.cell(r[4], int(160 * w)), r[8]]
                                + ([tables.cell(c.get("why_not_a_claim", ""), 200)] if full else [])
                                for k, (r, c) in enumerate(zip(own_rows, own), 1)]), ""]
    if full and per_version:
        md += ["### Per PyTorch version", "",
               tables.para("Each verdict and its text are computed from the version's record by the "
                           "claim's checks (analysis/computed.py): the numbers are filled in from "
                           "the record's rows. 'not resolved here': a time or spread claim without "
                           "repeated runs, the machine's load and an interval excluding no "
                           "difference, the interval (or its absence) shown."), ""]
        md += [f"- claim:{cid}: " + "; ".join(f"**{v}: {verdict}**" + (f" ({text})" if text else "")
                                               for v, verdict, text in entries)
               for cid, entries in per_version.items()] + [""]
    notes = [f"{k}: {r[7]}" for k, r in numbered if r[7]] if full else []
    if not full:
        md += [tables.para("Every claim with the bound each check uses and where it comes from, the "
                           "record behind each number and the notes: [ledger.md](ledger.md) and "
                           "claims.csv."), ""]
    if notes:
        md += ["Notes on the claims (by id):", ""] + [tables.para(x) for x in notes] + [""]
    md += ["### Sources", ""] + [
        f"- seed {seed}: {ledger.cite(seed, sources)}" for seed in sorted(sources)] + [""]
    return md, rows + own_rows, failed
