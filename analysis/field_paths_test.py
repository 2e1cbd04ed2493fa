"""Every field path of bugs.json, pair_tables.json and claims.json is
carried by some committed record of its bug (//analysis:field_paths_test),
and a typo fails: a copy of the tree's specs with one path misspelt in each
file is caught, naming the file and the path.
Usage: field_paths_test.py ROOT (the runfiles tree holding analysis/ and results/)"""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import field_paths  # noqa: E402
from checks import check, status  # noqa: E402


def main(root):
    found = field_paths.problems(root)
    check(not found, "paths no record carries:\n  " + "\n  ".join(found))
    check(len(field_paths.wanted(root)) > 100, "too few paths found: the specs were not read")
    tmp = os.path.join(os.environ.get("TEST_TMPDIR", "/tmp"), "typo")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "analysis"))
    os.symlink(os.path.join(os.path.abspath(root), "results"), os.path.join(tmp, "results"))
    for name, typo in (("bugs.json", ("measured.error", "measured.eror")),
                       ("pair_tables.json", ("config.n", "config.nn")),
                       ("claims.json", ("measured.silent_runs", "measured.silent_run"))):
        for other in ("bugs.json", "pair_tables.json", "claims.json"):
            src = os.path.join(root, "analysis", other)
            text = open(src, encoding="utf-8").read()
            if other == name:
                check(typo[0] in text, f"{name}: no {typo[0]} to misspell")
                text = text.replace(typo[0], typo[1], 1)
            with open(os.path.join(tmp, "analysis", other), "w", encoding="utf-8") as f:
                f.write(text)
        hits = [p for p in field_paths.problems(tmp) if p.startswith(name) and typo[1] in p]
        check(hits, f"a typo in {name} ({typo[1]}) is not caught")
    return status()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
