"""Checks the input of the analysis scripts: result records and Google
Benchmark JSON, field by field, before any table or figure is made.

A record with a field of the wrong type (``"world_size": "four"``,
``"measured": "oops"``, ``"config": null``) is an InputError naming the file,
the record and the field, which the scripts turn into exit 2 with that one
line, instead of a traceback from deep inside a table.
"""

import json
import re

RECORD_KEYS = ("bug", "kind", "variant", "backend", "world_size", "config",
               "measured", "reference", "verdict", "provenance")
KINDS = ("repro", "fix")
VERDICTS = ("reproduced", "not_reproduced", "exact", "inexact", "control",
            "control_failed", "error")
# Field -> (test, what it must be).
_STR = (lambda v: isinstance(v, str), "a string")
_DICT = (lambda v: isinstance(v, dict), "an object")
# A bug's name names files of the report (bug.csv, bug.tex, figures): a
# plain identifier only, so that no record can steer where a file goes.
BUG_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
FIELD_TYPES = {
    "bug": (lambda v: isinstance(v, str) and BUG_NAME.match(v) is not None,
            "a plain name ([a-z][a-z0-9_]*, at most 64 characters)"),
    "variant": _STR, "backend": _STR,
    "kind": (lambda v: v in KINDS, "one of " + ", ".join(KINDS)),
    "verdict": (lambda v: v in VERDICTS, "one of " + ", ".join(VERDICTS)),
    # Optional: a row that runs a known-inexact setting on purpose.
    "expected_verdict": (lambda v: v in VERDICTS, "one of " + ", ".join(VERDICTS)),
    "world_size": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1,
                   "an integer >= 1"),
    "config": _DICT, "measured": _DICT, "reference": _DICT, "provenance": _DICT,
    "error": _STR,
}


class InputError(Exception):
    pass


def _describe(v):
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def check_records(path, data):
    """Raises InputError unless `data` is a list of well-typed records."""
    if not isinstance(data, list):
        raise InputError(f"{path}: not a JSON array of result records")
    for i, r in enumerate(data):
        if not isinstance(r, dict):
            raise InputError(f"{path}: record {i} is not an object")
        missing = [k for k in RECORD_KEYS if k not in r]
        if missing:
            raise InputError(f"{path}: record {i} lacks {', '.join(missing)}")
        for key, (ok, what) in FIELD_TYPES.items():
            if key in r and not ok(r[key]):
                raise InputError(f"{path}: record {i} ({r.get('bug', '?')}/"
                                 f"{r.get('variant', '?')}): '{key}' is {_describe(r[key])}, "
                                 f"must be {what}")


HEADLINE_PATH = re.compile(r"\b(?:measured|reference)\.[A-Za-z0-9_.]+")


def headline_paths(spec):
    """The measured.* and reference.* fields a bug's report spec reads (its
    metrics, expressions and summary), from every string in it."""
    out, stack = set(), [spec]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            out.update(HEADLINE_PATH.findall(v))
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return sorted(out)


def _number_like(v):
    if isinstance(v, bool) or v is None:
        return True
    if isinstance(v, (int, float, str)):
        return True
    return isinstance(v, list) and all(_number_like(x) and not isinstance(x, list) for x in v)


def check_headline_types(recs, specs):
    """Raises InputError when a field the report's headline reads holds an
    object (or a nested list): a number, a string, a flag or a flat array
    is what a finding can show; anything else would be dropped silently."""
    for path, i, r in recs:
        spec = specs.get(r["bug"])
        if not spec:
            continue
        for field in headline_paths(spec):
            v = r
            for part in field.split("."):
                v = v.get(part) if isinstance(v, dict) else None
            if v is not None and not _number_like(v):
                raise InputError(f"{path}: record {i} ({r['bug']}/{r['variant']}): '{field}' is "
                                 f"{_describe(v)}, must be a number (the report's headline reads it)")


def check_benchmarks(path, data):
    """Raises InputError unless `data` is Google Benchmark JSON whose
    entries have a string name and numeric times."""
    benches = data.get("benchmarks")
    if not isinstance(benches, list):
        raise InputError(f"{path}: 'benchmarks' must be an array")
    for i, b in enumerate(benches):
        if not isinstance(b, dict) or not isinstance(b.get("name"), str):
            raise InputError(f"{path}: benchmark {i} is not an object with a string 'name'")
        for key in ("real_time", "cpu_time"):
            v = b.get(key, 0)
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                raise InputError(f"{path}: benchmark {i} ({b['name']}): '{key}' is "
                                 f"{_describe(v)}, must be a number")


def load_pairs(paths):
    """(path, record) of every record in the given result files (a file
    holding a list of records; any other JSON, e.g. a benchmark, adds none):
    the form ledger and verdict_rules read, for the tests that hand them the
    committed records."""
    out = []
    for p in paths:
        with open(p) as f:
            data = json.load(f)
        if isinstance(data, list):
            out += [(p, r) for r in data]
    return out
