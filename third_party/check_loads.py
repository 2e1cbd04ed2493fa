"""Fails on a BUILD or .bzl file that uses a cc_*, sh_* or py_* rule (or
CcInfo / cc_common) without loading it from its ruleset: Bazel 9 has no
native C++ rules, and its autoloads are off in the main repository.

    check_loads.py ROOT            every BUILD, BUILD.bazel and .bzl file under ROOT
    check_loads.py --files F...    these files, whatever their names

Exit 0 when every name is loaded from @rules_cc, @rules_shell or
@rules_python; 1 listing each file and name that is not; 2 on bad usage.
"""
import os
import re
import sys

RULESETS = {"cc_": "@rules_cc//", "Cc": "@rules_cc//", "sh_": "@rules_shell//", "py_": "@rules_python//"}
# Only the shims themselves call the native rules (they forward to them).
EXEMPT = {os.path.join("third_party", "offline_shims.bzl")}
SKIP_DIRS = {".git", "testdata"}
USE = re.compile(r"(?<![\w.])(native\.)?((?:cc|sh|py)_[a-z_]+|CcInfo|cc_common)\b\s*(\()?")
GLOBALS = ("CcInfo", "cc_common")  # used without a call
LOAD = re.compile(r'load\(\s*"([^"]+)"((?:\s*,\s*(?:\w+\s*=\s*)?"\w+")+)\s*,?\s*\)')


def _ruleset(name):
    for prefix, repo in RULESETS.items():
        if name.startswith(prefix):
            return repo
    return None


def _code(text):
    """The text without comments and docstrings (they may name rules)."""
    text = re.sub(r'"""[\s\S]*?"""', '""', text)  # also the BUILD files repository rules write
    return re.sub(r"#[^\n]*", "", text)


def problems(path, text):
    code = _code(text)
    loaded = {}
    for repo, names in LOAD.findall(code):
        for alias, name in re.findall(r'(?:(\w+)\s*=\s*)?"(\w+)"', names):
            loaded[alias or name] = repo
    defined = set(re.findall(r"\bdef\s+(\w+)", code))
    found = []
    code = re.sub(r'"[^"\n]*"', '""', code)  # a label or name in a string is no use
    for m in USE.finditer(code):
        native, name, after = m.group(1), m.group(2), m.group(3)
        if native:
            found.append("%s: native.%s: load %s from %s instead" % (path, name, name, _ruleset(name)))
        elif (after or name in GLOBALS) and name not in defined:
            repo = loaded.get(name)
            if repo is None or not repo.startswith(_ruleset(name)):
                found.append("%s: %s used without load(\"%s...\", \"%s\")" %
                             (path, name, _ruleset(name), name))
    return sorted(set(found))


def build_files(root):
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith("bazel-"))
        for f in sorted(files):
            if f in ("BUILD", "BUILD.bazel") or f.endswith(".bzl"):
                yield os.path.join(d, f)


def main(argv):
    if len(argv) == 1 and not argv[0].startswith("-"):
        root = argv[0]
        paths = [p for p in build_files(root) if os.path.relpath(p, root) not in EXEMPT]
    elif len(argv) >= 2 and argv[0] == "--files":
        paths = argv[1:]
    else:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    if not paths:
        print("check_loads: no BUILD or .bzl file found", file=sys.stderr)
        return 2
    found = []
    for p in paths:
        with open(p) as f:
            found += problems(p, f.read())
    for line in found:
        print(line)
    print("check_loads: %d files, %d problems" % (len(paths), len(found)))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
