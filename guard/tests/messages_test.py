"""The guard's wrong_all_gather message quotes PyTorch's silent-run count at
W = 2 ("garbage in A to B of N runs"): A and B must be the smallest and
largest silent_runs of the committed PyTorch records (1.13 and 2.15, both
dtypes) and N their runs, so a regeneration that moves the count fails here
instead of leaving the message stale (it did once: 7 to 13 after the records
had moved to 11 to 16). The check is also shown failing on a wrong range.

    python3 guard/tests/messages_test.py MESSAGES_PY RECORD...
"""
import importlib.util
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import world  # noqa: E402  (stdlib only)

RANGE = re.compile(r"garbage in (\d+) to (\d+) of (\d+) runs")


def silent_range(records):
    """(fewest, most, runs) silent runs at W = 2 over every record and dtype."""
    silent, runs = [], set()
    for path in records:
        with open(path) as f:
            for case in json.load(f)["cases"]:
                if case["world_size"] == 2:
                    silent.append(case["silent_runs"])
                    runs.add(case["runs"])
    if not silent or len(runs) != 1:
        raise ValueError(f"no W = 2 cases, or unequal run counts {sorted(runs)}, in {records}")
    return min(silent), max(silent), runs.pop()


def problems(text, expected):
    m = RANGE.search(text)
    if m is None:
        return ["the wrong_all_gather message states no 'garbage in A to B of N runs'"]
    stated = tuple(int(g) for g in m.groups())
    if stated != expected:
        return ["the message says %d to %d of %d runs; the records give %d to %d of %d"
                % (stated + expected)]
    return []


def main():
    if len(sys.argv) < 3:
        print("usage: messages_test.py MESSAGES_PY RECORD...", file=sys.stderr)
        return 2
    spec = importlib.util.spec_from_file_location("_messages", sys.argv[1])
    messages = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(messages)
    expected = silent_range(sys.argv[2:])
    what = messages.TERMS["wrong_all_gather"][0]
    failures = problems(what, expected)
    wrong = RANGE.sub("garbage in %d to %d of %d runs"
                      % (expected[0] - 1, expected[1], expected[2]), what)
    if not problems(wrong, expected):
        failures.append("a wrong range in the message was not caught")
    print("records: %d to %d of %d silent runs at W = 2" % expected)
    return world.finish(failures)


if __name__ == "__main__":
    sys.exit(main())
