"""The field paths the report's specs name (each pair's report.json and
tables.json, and claims.json) against the records: a path that no record of its bug carries
is a typo or a field a pair stopped writing, and falls through silently in
the report (report.json tries a metric list in order), so
//analysis:field_paths_test fails on it instead.

    python3 analysis/field_paths.py [--root DIR]   # exit 1 listing each
"""
import argparse
import json
import os
import re
import sys

import registry
from pick import get

PATH = re.compile(r"\b(?:measured|reference|config)\.[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def paths_in(value):
    """Every measured./reference./config. path in a spec value (strings,
    selector keys, expressions), once."""
    out, stack = [], [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            out += PATH.findall(v)
        elif isinstance(v, dict):
            stack += list(v.keys()) + list(v.values())
        elif isinstance(v, list):
            stack += v
    return list(dict.fromkeys(out))


def wanted(root):
    """[(where, bug, path)] of every path the three specs name."""
    out = []
    reg = os.path.join(root, "pairs.bzl")
    bugs = registry.findings_specs(reg)
    for bug, spec in bugs.items():
        if bug.startswith("_"):
            continue
        stems = set(paths_in([m.get("seeds_stem") for m in spec.get("symptom_metrics", [])
                              + spec.get("fix_metrics", []) if isinstance(m, dict)]))
        out += [(f"repro/{bug}/report.json", bug, p + ("_*" if p in stems else ""))
                for p in paths_in(spec)]
    for t in registry.table_specs(reg):
        if "records" not in t:
            continue
        bug = t["readme"].split("/")[1]
        out += [(f"{os.path.dirname(t['readme'])}/tables.json#{t['id']}", bug, p)
                for p in paths_in({k: v for k, v in t.items() if k != "readme"})]
    with open(os.path.join(root, "analysis", "claims.json")) as f:
        doc = json.load(f)
    for i, c in enumerate(doc["claims"] + doc.get("suite_results", [])):
        spec = {k: c.get(k) for k in ("select", "metric", "spread", "measures")}
        bug = (c.get("select") or {}).get("bug", c["bug"])
        out += [(f"claims.json {c['claim'][:50]!r}", bug, p) for p in paths_in(spec)]
    return out


def records_by_bug(root):
    recs = {}
    for top, _, files in os.walk(os.path.join(root, "results")):
        for name in files:
            if not name.endswith(".json"):
                continue
            try:
                with open(os.path.join(top, name)) as f:
                    data = json.load(f)
            except (OSError, ValueError):
                continue
            if isinstance(data, list):
                for r in data:
                    if isinstance(r, dict) and isinstance(r.get("bug"), str):
                        recs.setdefault(r["bug"], []).append(r)
    return recs


def carried(records, path):
    """Whether some record carries the path (null counts: the field exists);
    a path ending in _* is a stem (report.json's seeds_stem): any field
    starting with it."""
    parent, _, leaf = path.rpartition(".")
    if leaf.endswith("_*"):
        return any(isinstance(get(r, parent), dict) and any(
            k.startswith(leaf[:-1]) for k in get(r, parent)) for r in records)
    return any(isinstance(get(r, parent), dict) and leaf in get(r, parent) for r in records)


def problems(root):
    recs = records_by_bug(root)
    return [f"{where}: {path} is carried by no {bug} record"
            for where, bug, path in wanted(root) if not carried(recs.get(bug, []), path)]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    help="the repository (default: this file's)")
    args = ap.parse_args(argv)
    found = problems(args.root)
    for p in found:
        print("field_paths:", p)
    print(f"field_paths: {len(wanted(args.root))} paths checked, {len(found)} not carried")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
