#!/usr/bin/env python3
"""summarize.py [--out DIR] FILE...: the one-screen summary that ends
`bazel run //:suite`. Per bug: the symptom (how many repro rows reproduced
it, and its size) and each fix (how many rows exact, and to what), read from
the records with the same templates as the report (analysis/bugs.json); then
where the records are and the command that makes the report.

Each FILE is a JSON array of records (schema: README.md, "Result records").
Lines fit in 120 columns.
"""
import json
import os
import sys
import textwrap

# analysis/: the record checks and the findings' templates, shared with the report.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "analysis"))
from findings import metric_text, on_purpose, unexpected  # noqa: E402
from pick import first_metric, select  # noqa: E402
from records import InputError, check_records  # noqa: E402

WIDTH = 120


def load_spec():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "analysis", "bugs.json")
    with open(path) as f:
        return json.load(f)


def bug_lines(bug, spec, recs):
    repro = select(recs, {"kind": "repro"})
    hits = select(repro, {"verdict": "reproduced"})
    controls = select(repro, {"verdict": "control"})
    lines = []
    if repro:
        m = first_metric(hits, spec.get("symptom_metrics", []))
        size = metric_text(m, hits) if m else ""
        lines.append(f"symptom: reproduced in {len(hits)}/{len(repro)} rows ({len(controls)} controls held)"
                     + (f"; {size}" if size else ""))
    for variant in dict.fromkeys(r["variant"] for _, r in select(recs, {"kind": "fix"})):
        rows = select(recs, {"kind": "fix", "variant": variant})
        shown = on_purpose(rows)
        rows = [x for x in rows if x not in shown]
        exact = select(rows, {"verdict": "exact"})
        m = first_metric(rows, spec.get("fix_metrics", []))
        to = metric_text(m, rows) if m else ""
        lines.append(f"fix {variant}: exact in {len(exact)}/{len(rows)} rows" + (f"; {to}" if to else "")
                     + (f"; {len(shown)} row(s) inexact on purpose" if shown else ""))
    bad = unexpected(recs)
    if bad:
        lines.append(f"{len(bad)} row(s) missed their expected verdict: "
                     + ", ".join(sorted({f'{r["kind"]} {r["variant"]} ({r["verdict"]})' for _, r in bad})))
    out = [f"{bug}"]
    for line in lines:
        out += textwrap.wrap(line, WIDTH - 2, initial_indent="  ", subsequent_indent="      ")
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
