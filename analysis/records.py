"""Checks the input of the analysis scripts: result records and Google
Benchmark JSON, field by field, before any table or figure is made.

A record with a field of the wrong type (``"world_size": "four"``,
``"measured": "oops"``, ``"config": null``) is an InputError naming the file,
the record and the field, which the scripts turn into exit 2 with that one
line, instead of a traceback from deep inside a table.
"""

RECORD_KEYS = ("bug", "kind", "variant", "backend", "world_size", "config",
               "measured", "reference", "verdict", "provenance")
KINDS = ("repro", "fix")
VERDICTS = ("reproduced", "not_reproduced", "exact", "inexact", "control",
            "control_failed", "error")
# Field -> (test, what it must be).
_STR = (lambda v: isinstance(v, str), "a string")
_DICT = (lambda v: isinstance(v, dict), "an object")
FIELD_TYPES = {
    "bug": _STR, "variant": _STR, "backend": _STR,
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
