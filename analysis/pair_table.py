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

  python3 analysis/pair_table.py --all [--check] [--root DIR]

--all makes every pair README table listed in the pairs' tables.json (the
one way they are made): a flag-style table as above, or a named renderer of
analysis/pair_render/ for tables no column list can say. --check writes
nothing and exits 1, printing the difference, when a README's tables are not
what the committed records give (//analysis:tables_current_test).
"""
import argparse
import difflib
import importlib
import json
import os
import re
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pick import get  # noqa: E402 (the field-path lookup the report uses too)
import registry  # noqa: E402

SPEC = None  # default: every pair's tables.json, via the registry (pairs.bzl)
RENDER_MODULES = ["autograd_lost_gather", "drop_last_hang", "missing_set_epoch", "small_batch_bn"]

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


class UsageError(Exception):
    """Bad input: exit 2 with the message."""


def load_records(root, paths):
    records = []
    for path in paths:
        try:
            with open(os.path.join(root, path)) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            raise UsageError(f"{path}: {e}")
        if not isinstance(data, list):
            raise UsageError(f"{path}: not a JSON array of records")
        records += data
    return records


def select(records, conditions):
    for cond in conditions:
        if "=" not in cond:
            raise UsageError(f"--where needs path=value, got {cond!r}")
        path, value = cond.split("=", 1)
        records = [r for r in records if str(get(r, path)) == value]
    return records


def replace_section(doc, name, ident, text):
    begin, end = f"<!-- table:{ident}:begin -->", f"<!-- table:{ident}:end -->"
    if begin not in doc or end not in doc:
        raise UsageError(f"{name}: markers {begin} / {end} not found")
    head, rest = doc.split(begin, 1)
    _, tail = rest.split(end, 1)
    return head + begin + "\n" + text + "\n" + end + tail


def write_atomically(target, doc):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target) or ".", prefix=".table-")
    with os.fdopen(fd, "w") as f:
        f.write(doc)
    os.chmod(tmp, os.stat(target).st_mode & 0o777)  # mkstemp's 0600 would hide the README
    os.replace(tmp, target)


def renderers():
    out = {}
    for name in RENDER_MODULES:
        out.update(importlib.import_module("pair_render." + name).RENDERERS)
    return out


def render(entry, records, named):
    if "render" in entry:
        if entry["render"] not in named:
            raise UsageError(f"{entry['readme']} {entry['id']}: no renderer {entry['render']!r} "
                             f"(known: {', '.join(sorted(named))})")
        return named[entry["render"]](select(records, entry.get("where", [])))
    return table(select(records, entry.get("where", [])), entry["columns"], entry.get("group_by", ""))


def update_all(root, spec_path, check):
    """Every table of the spec: rewritten, or (check) compared. Returns the exit status."""
    try:
        if spec_path is None:
            spec = registry.table_specs(os.path.join(root, "pairs.bzl"))
        else:
            with open(spec_path) as f:
                spec = json.load(f)["tables"]
    except (OSError, ValueError, KeyError, TypeError, SyntaxError, registry.RegistryError) as e:
        raise UsageError(f"{spec_path or 'the pair registry'}: {e}")
    named = renderers()
    docs = {}
    for entry in spec:
        name = entry["readme"]
        if name not in docs:
            try:
                with open(os.path.join(root, name)) as f:
                    docs[name] = [f.read(), None]
            except OSError as e:
                raise UsageError(f"{name}: {e.strerror}")
            docs[name][1] = docs[name][0]
        text = render(entry, load_records(root, entry["records"]), named)
        docs[name][1] = replace_section(docs[name][1], name, entry["id"], text)
    stale = [name for name, (old, new) in docs.items() if old != new]
    if check:
        for name in stale:
            old, new = docs[name]
            sys.stdout.writelines(difflib.unified_diff(
                old.splitlines(True), new.splitlines(True), name, name + " (from the records)"))
            print(f"pair_table: {name}: its tables differ from what the records give "
                  "(python3 analysis/pair_table.py --all)", file=sys.stderr)
        return 1 if stale else 0
    for name in stale:
        write_atomically(os.path.join(root, name), docs[name][1])
    print(f"pair_table: {len(spec)} tables in {len(docs)} READMEs, {len(stale)} README(s) rewritten",
          file=sys.stderr)
    return 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", action="append")
    ap.add_argument("--columns")
    ap.add_argument("--group-by", default="")
    ap.add_argument("--where", action="append", default=[],
                    help="path=value filters (all must hold)")
    ap.add_argument("--update")
    ap.add_argument("--id", default="main")
    ap.add_argument("--all", action="store_true",
                    help="every table of the pairs' tables.json")
    ap.add_argument("--check", action="store_true",
                    help="with --all: write nothing; exit 1 when a table is not current")
    ap.add_argument("--root", help="with --all: the repository root (default: the working directory)")
    ap.add_argument("--spec", default=SPEC,
                    help="with --all: a file {\"tables\": [...]} (default: every pair's tables.json)")
    args = ap.parse_args(argv)
    here = os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd())
    try:
        if args.all:
            if args.records or args.columns or args.update:
                raise UsageError("--all takes its tables from --spec, not --records/--columns/--update")
            return update_all(os.path.join(here, args.root or "."), args.spec, args.check)
        if args.check or args.root:
            raise UsageError("--check and --root go with --all")
        if not args.records or not args.columns:
            raise UsageError("--records and --columns are required (or --all)")
        records = select(load_records(here, args.records), args.where)
        text = table(records, args.columns, args.group_by)
        if not args.update:
            print(text)
            return 0
        target = os.path.join(here, args.update)
        try:
            with open(target) as f:
                doc = f.read()
        except OSError as e:
            raise UsageError(f"{args.update}: {e.strerror}")
        write_atomically(target, replace_section(doc, args.update, args.id, text))
        return 0
    except UsageError as e:
        print(f"pair_table: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
