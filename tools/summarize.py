#!/usr/bin/env python3
"""summarize.py [--out DIR] FILE...: the one-screen summary that ends
`bazel run //:suite`. Per bug, read from the records with the report's own
templates and selectors (repro/<bug>/report.json, analysis/summary.py):

  BUG: TITLE (how many repro rows reproduced it, how many controls held)
    symptom: the headline number in its unit, with its interval or spread
             and seeds, and the configuration it was measured at (the
             report's summary table); without a row at that configuration,
             the largest size over the rows, naming its configuration
    fix: how many rows exact, and to what, at which world sizes
    inexact on purpose: per such variant, what it stands for and what its
             rows show against the value the records predict

then where the records are and the command that makes the report.
Each FILE is a JSON array of records (schema: README.md, "Result records").
Lines fit in 120 columns.
"""
import json
import os
import sys
import textwrap

# analysis/: the record checks, the findings' templates and the report's
# summary table, shared with the report.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "analysis"))
from findings import metric_text, on_purpose_texts, unexpected, world_sizes  # noqa: E402
from pick import first_metric, select  # noqa: E402
from records import InputError, check_records  # noqa: E402
from summary import fix_cell, symptom_cell  # noqa: E402
import registry  # noqa: E402

WIDTH = 120


def load_spec():
    """Each pair's report spec (repro/<bug>/report.json), via the registry."""
    return registry.findings_specs()


def counts_text(repro):
    """'4 of 7 repro rows reproduced it, 3 controls held'."""
    if not repro:
        return "no repro rows in these records"
    hits = select(repro, {"verdict": "reproduced"})
    controls = select(repro, {"verdict": "control"})
    return (f"{len(hits)} of {len(repro)} repro rows reproduced it"
            + (f", {len(controls)} control(s) held" if controls else ""))


def symptom_text(spec, repro):
    """The report's headline cells at their configurations; else the
    largest size over the rows that reproduced it; never empty."""
    cells = [symptom_cell(item, repro, world=True) for item in spec.get("summary", {}).get("symptom", [])]
    cells = [c[0] for c in cells if c]
    if cells:
        return "; ".join(cells)
    hits = select(repro, {"verdict": "reproduced"})
    sizes = [metric_text(m, hits) for m in spec.get("symptom_metrics", [])[:1] + spec.get("symptom_extra", [])
             if first_metric(hits, [m])]
    sizes = [s for s in sizes if s]
    if sizes:
        return "no row at the headline's configuration; " + "; ".join(sizes)
    return "reproduced, but these records carry no size of it" if hits else "not reproduced in these records"


def bug_lines(bug, spec, recs):
    repro = select(recs, {"kind": "repro"})
    fixes = select(recs, {"kind": "fix"})
    lines = []
    if repro:
        lines.append(f"symptom: {symptom_text(spec, repro)}")
    if fixes:
        own = [x for x in fixes if x[1].get("expected_verdict") in (None, "exact")]
        variants = ", ".join(dict.fromkeys(r["variant"] for _, r in own))
        lines.append("fix: " + fix_cell(spec, recs, f" ({variants}, {world_sizes(own)})" if own else ""))
    else:
        lines.append("fix: no fix rows in these records")
    for text in on_purpose_texts(spec, recs):
        lines.append(f"inexact on purpose: {text}")
    bad = unexpected(recs)
    if bad:
        lines.append(f"{len(bad)} row(s) missed their expected verdict: "
                     + ", ".join(sorted({f'{r["kind"]} {r["variant"]} ({r["verdict"]})' for _, r in bad})))
    title = f"{bug}: {spec['title']}" if spec.get("title") else bug
    out = textwrap.wrap(f"{title} ({counts_text(repro)})", WIDTH, subsequent_indent="      ",
                        break_on_hyphens=False)
    for line in lines:
        out += textwrap.wrap(line, WIDTH, initial_indent="  ", subsequent_indent="      ",
                             break_on_hyphens=False)
    return out


def main(argv):
    out_dir = None
    if len(argv) >= 2 and argv[0] == "--out":
        out_dir, argv = argv[1], argv[2:]
    recs = []
    for path in argv:
        try:
            with open(path) as f:
                records = json.load(f)
            check_records(path, records)
        except (OSError, ValueError) as e:
            print(f"summarize: {path}: {e}", file=sys.stderr)
            return 1
        except InputError as e:
            print(f"summarize: {e}", file=sys.stderr)
            return 1
        recs += [(path, r) for r in records]
    spec = load_spec()
    bugs = list(dict.fromkeys(r["bug"] for _, r in recs))
    print(f"== summary: {len(recs)} records of {len(bugs)} bug(s) ==")
    for bug in bugs:
        print("\n".join(bug_lines(bug, spec.get(bug, {}), select(recs, {"bug": bug}))))
    where = out_dir or (os.path.dirname(argv[0]) if argv else ".")
    # Relative to where bazel was run, as the report command takes it.
    here = os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd())
    rel = os.path.relpath(os.path.abspath(where), here)
    where = rel if not rel.startswith("..") else where
    print(f"records: {where}")
    print(f"report:  bazel run //analysis:report -- --results {where} --out {where}-report")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
