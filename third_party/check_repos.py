"""Every external repository that a BUILD or .bzl file of the checkout names
(@name//...) is declared both in MODULE.bazel (Bzlmod: Bazel 8 and 9) and in
the WORKSPACE (Bazel 4.2.3), so neither build meets an unknown repository.

    check_repos.py CHECKOUT

Exit 0 when all are declared; 1 naming each missing one and the files that
use it; 2 on bad usage. @bazel_tools (built into Bazel) and the main
repository's own name need no declaration.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_loads  # noqa: E402  (the same walk over BUILD and .bzl files)

BUILTIN = {"bazel_tools"}
NAMED = re.compile(r'"@([A-Za-z0-9_.-]+)(?://|")')


def module_repos(text):
    """Repositories MODULE.bazel makes visible: bazel_deps and repo-rule calls."""
    text = re.sub(r"#[^\n]*", "", re.sub(r'"""[\s\S]*?"""', "", text))
    names = set(re.findall(r'\bname\s*=\s*"([^"]+)"', text))
    names |= set(re.findall(r'\brepo_name\s*=\s*"([^"]+)"', text))
    return names


def workspace_repos(text):
    text = re.sub(r"#[^\n]*", "", text)
    return set(re.findall(r'\bname\s*=\s*"([^"]+)"', text))


def main(argv):
    if len(argv) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = argv[0]
    try:
        with open(os.path.join(root, "MODULE.bazel")) as f:
            module = f.read()
        with open(os.path.join(root, "WORKSPACE")) as f:
            workspace = f.read()
    except OSError as e:
        print("check_repos: %s" % e, file=sys.stderr)
        return 2
    m = re.search(r'\bmodule\(\s*name\s*=\s*"([^"]+)"', module)
    main_name = m.group(1) if m else None
    used = {}
    for path in check_loads.build_files(root):
        with open(path) as f:
            for name in NAMED.findall(f.read()):
                used.setdefault(name, set()).add(os.path.relpath(path, root))
    declared = {"MODULE.bazel": module_repos(module), "WORKSPACE": workspace_repos(workspace)}
    problems = []
    for name in sorted(set(used) - BUILTIN - {main_name}):
        for where, names in declared.items():
            if name not in names:
                problems.append("@%s (used in %s) is not declared in %s" %
                                (name, ", ".join(sorted(used[name])), where))
    for p in problems:
        print(p)
    print("check_repos: %d repositories named, %d problems" % (len(used), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
