"""The pair registry (pairs.bzl) is the one list of pairs (//:registry_test):
  - it loads, names each pair once, and every pair has its two folders'
    READMEs and spec files (report.json, tables.json) in the runfiles;
  - CITATION.cff's count of bugs is the registry's ("six ... bugs");
  - no code file outside the registry and the pairs' own folders names five
    or more of the pairs (read in the checkout the runfiles link back to,
    through git ls-files; said and skipped where that is not a checkout).
    guard/ is exempt: the PyTorch guard ships on its own (pip install guard/)
    and reports each pitfall by its pair's name, one check per pair.
Usage: registry_test.py PAIRS_BZL CITATION"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "analysis"))
import registry  # noqa: E402
from checks import check, status  # noqa: E402

CODE_EXT = (".py", ".sh", ".bzl", ".cc", ".h", ".cu", ".cuh")
CODE_NAMES = ("BUILD", "WORKSPACE", "run", "new_pair")
EXEMPT = ("pairs.bzl", "repro/", "fixes/", "guard/")


def is_code(path):
    return path.endswith(CODE_EXT) or os.path.basename(path) in CODE_NAMES


def main(pairs_bzl, citation):
    pairs = registry.load(pairs_bzl)
    names = registry.names(pairs)
    check(len(names) >= 6 and len(set(names)) == len(names), f"registry names: {names}")
    root = os.path.dirname(os.path.abspath(pairs_bzl))
    for n in names:
        for rel in (f"repro/{n}/README.md", f"fixes/{n}/README.md", f"repro/{n}/report.json",
                    f"repro/{n}/tables.json", f"fixes/{n}/tables.json"):
            check(os.path.exists(os.path.join(root, rel)), f"{rel}: missing (the registry names {n})")
    text = open(citation, encoding="utf-8").read()
    word = registry.count_word(pairs)
    check(f"reproduces {word} distributed-training bugs" in " ".join(text.split()),
          f"CITATION.cff does not say 'reproduces {word} distributed-training bugs'")

    source = os.path.dirname(os.path.realpath(pairs_bzl))
    try:
        files = subprocess.run(["git", "-C", source, "ls-files"], capture_output=True, text=True,
                               check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        files = []
    if not files:
        print(f"registry_test: {source} is not a git checkout: the five-names rule is not checked")
    many = []
    for rel in files:
        if not is_code(rel) or rel.startswith(EXEMPT):
            continue
        try:
            body = open(os.path.join(source, rel), encoding="utf-8", errors="replace").read()
        except OSError:
            continue
        # A claim id (`pair/slug-with-hyphens`, analysis/claims.json) names
        # one claim, not the list of pairs this rule is about.
        body = re.sub(r"\b(?:%s)/[a-z0-9]+(?:-[a-z0-9]+)+\b" % "|".join(map(re.escape, names)),
                      "", body)
        named = [n for n in names if n in body]
        if len(named) >= 5:
            many.append(f"{rel} ({len(named)})")
    check(not many, "code files outside the registry and the pairs' folders name five or more "
          f"pairs (derive them from pairs.bzl): {', '.join(many)}")
    print(f"registry_test: {len(names)} pairs; {len(files)} tracked files scanned")
    return status()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
