#!/usr/bin/python3
"""Markdown tables for the READMEs, generated from result records.

  python3 analysis/pair_table.py --records results/x_repro.json \
      --group-by variant,world_size \
      --columns 'variant,world_size,count,min(measured.error),max(measured.error),verdicts' \
      [--where variant=raw_unequal] [--update repro/x/README.md --id repro]

A column is a field path (variant, world_size, config.n, measured.error, ...)
or, with --group-by, an aggregate over the group: min(), median(), max(),
mean() of a path, `count`, or `verdicts` ("12 reproduced, 4 control").
--update replaces the text between `<!-- table:ID:begin -->` and
`<!-- table:ID:end -->` in the file (atomically) instead of printing; a
missing marker is an error (exit 2).
"""
import argparse
import json
import os
import re
import statistics
import sys
import tempfile

from pick import get  # the field-path lookup the report uses too

AGG = re.compile(r"^(min|median|max|mean)\((.+)\)$")


def fmt(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if v == 0:
            return "0"
        if abs(v) < 1e-3 or abs(v) >= 1e6:
            return f"{v:.3g}"
        return f"{v:.4f}".rstrip("0").rstrip(".")
    s = str(v)
    return s.replace("|", "\\|").replace("\n", " ")


def aggregate(fn, values):
    nums = [float(x) for x in values if isinstance(x, (int, float)) and not isinstance(x, bool)]
    if not nums:
        return None
    return {"min": min, "max": max, "median": statistics.median,
            "mean": statistics.fmean}[fn](nums)


def verdicts(group):
    counts = {}
    for r in group:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    return ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))


def header_name(col):
    return col.replace("measured.", "").replace("reference.", "ref ").replace("config.", "")


def table(records, columns, group_by):
    cols = [c.strip() for c in columns.split(",") if c.strip()]
    rows = []
    if group_by:
        keys = [k.strip() for k in group_by.split(",")]
        groups = {}
        for r in records:
            groups.setdefault(tuple(json.dumps(get(r, k)) for k in keys), []).append(r)
        for _, group in groups.items():
            row = []
            for c in cols:
                m = AGG.match(c)
                if m:
                    row.append(fmt(aggregate(m.group(1), [get(r, m.group(2)) for r in group])))
                elif c == "count":
                    row.append(str(len(group)))
                elif c == "verdicts":
                    row.append(verdicts(group))
                else:
                    row.append(fmt(get(group[0], c)))
            rows.append(row)
    else:
        for r in records:
            rows.append([fmt(get(r, c)) for c in cols])
    out = ["| " + " | ".join(header_name(c) for c in cols) + " |",
           "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(out)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", action="append", required=True)
    ap.add_argument("--columns", required=True)
    ap.add_argument("--group-by", default="")
    ap.add_argument("--where", action="append", default=[],
                    help="path=value filters (all must hold)")
    ap.add_argument("--update")
    ap.add_argument("--id", default="main")
    args = ap.parse_args(argv)
    here = os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd())
    records = []
    for path in args.records:
        full = os.path.join(here, path)
        try:
            with open(full) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            print(f"pair_table: {path}: {e}", file=sys.stderr)
            return 2
        if not isinstance(data, list):
            print(f"pair_table: {path}: not a JSON array of records", file=sys.stderr)
            return 2
        records += data
    for cond in args.where:
        if "=" not in cond:
            print(f"pair_table: --where needs path=value, got {cond!r}", file=sys.stderr)
            return 2
        path, value = cond.split("=", 1)
        records = [r for r in records if str(get(r, path)) == value]
    text = table(records, args.columns, args.group_by)
    if not args.update:
        print(text)
        return 0
    target = os.path.join(here, args.update)
    begin, end = f"<!-- table:{args.id}:begin -->", f"<!-- table:{args.id}:end -->"
    try:
        with open(target) as f:
            doc = f.read()
    except OSError as e:
        print(f"pair_table: {args.update}: {e.strerror}", file=sys.stderr)
        return 2
    if begin not in doc or end not in doc:
        print(f"pair_table: {args.update}: markers {begin} / {end} not found", file=sys.stderr)
        return 2
    head, rest = doc.split(begin, 1)
    _, tail = rest.split(end, 1)
    doc = head + begin + "\n" + text + "\n" + end + tail
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target) or ".", prefix=".table-")
    with os.fdopen(fd, "w") as f:
        f.write(doc)
    os.chmod(tmp, os.stat(target).st_mode & 0o777)  # mkstemp's 0600 would hide the README
    os.replace(tmp, target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
