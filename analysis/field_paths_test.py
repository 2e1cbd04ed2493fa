"""Every field path of the pairs' report.json and tables.json and of
claims.json is carried by some committed record of its bug
(//analysis:field_paths_test), and a typo fails: a copy of the specs with
one path misspelt in each kind of file is caught, naming the file and the
path.
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
    files = ["pairs.bzl", "analysis/claims.json", "repro/wrong_all_gather/report.json",
             "repro/wrong_all_gather/tables.json"] + [
        f"{k}/{b}/{n}" for b in field_paths.registry.names(field_paths.registry.load(
            os.path.join(root, "pairs.bzl"))) for k in ("repro", "fixes")
        for n in ("report.json", "tables.json") if os.path.exists(os.path.join(root, k, b, n))]
    for name, typo in (("repro/wrong_all_gather/report.json", ("measured.error", "measured.eror")),
                       ("repro/wrong_all_gather/tables.json", ("config.n", "config.nn")),
                       ("analysis/claims.json", ("measured.silent_runs", "measured.silent_run"))):
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        os.symlink(os.path.join(os.path.abspath(root), "results"), os.path.join(tmp, "results"))
        for other in dict.fromkeys(files):
            text = open(os.path.join(root, other), encoding="utf-8").read()
            if other == name:
                check(typo[0] in text, f"{name}: no {typo[0]} to misspell")
                text = text.replace(typo[0], typo[1], 1)
            os.makedirs(os.path.join(tmp, os.path.dirname(other)), exist_ok=True)
            with open(os.path.join(tmp, other), "w", encoding="utf-8") as f:
                f.write(text)
        hits = [p for p in field_paths.problems(tmp) if p.startswith(name.replace("analysis/", ""))
                and typo[1] in p]
        check(hits, f"a typo in {name} ({typo[1]}) is not caught")
    return status()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
