#!/usr/bin/env python3
"""Prints one table of every result record in the given JSON files.

Each file is a JSON array of records (schema: README.md, "Result records").
Columns: bug, kind, variant, backend, W, reference, measured (the first
number of each), the headline error (measured.error) when there is one, and
the verdict.
"""
import json
import os
import sys

# analysis/records.py: the field-by-field check shared with the report.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "analysis"))
from records import InputError, check_records  # noqa: E402


def headline(values):
    """The first numeric entry of a measured/reference dict, as 'key=value'."""
    if not isinstance(values, dict):
        return ""
    for key, v in values.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return f"{key}={v:.6g}"
    return ""


def main(paths):
    rows = []
    for path in paths:
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
        for r in records:
            err = r.get("measured", {}).get("error") if isinstance(r.get("measured"), dict) else None
            rows.append([r.get("bug", "?"), r.get("kind", "?"), r.get("variant", "?"),
                         r.get("backend", "?"), str(r.get("world_size", "?")),
                         headline(r.get("reference")), headline(r.get("measured")),
                         f"{err:.3g}" if isinstance(err, (int, float)) else "",
                         r.get("verdict", "?")])
    header = ["bug", "kind", "variant", "backend", "W", "reference", "measured", "error",
              "verdict"]
    widths = [max(len(x) for x in col) for col in zip(header, *rows)]
    for row in [header, ["-" * w for w in widths]] + rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
