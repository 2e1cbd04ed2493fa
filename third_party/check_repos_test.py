"""check_repos passes the checkout, and fails a copy of its MODULE.bazel and
WORKSPACE with a BUILD file naming a repository only one of them declares.

    check_repos_test.py CHECK_REPOS_PY

The checkout is the folder above the real third_party/check_repos.py (the
runfile links back to it).
"""
import os
import shutil
import subprocess
import sys
import tempfile


def run(script, root):
    p = subprocess.run([sys.executable, script, root], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    print("%s: exit %d\n%s" % (root, p.returncode, p.stdout))
    return p.returncode, p.stdout


def main():
    if len(sys.argv) != 2:
        print("usage: check_repos_test.py CHECK_REPOS_PY", file=sys.stderr)
        return 2
    script = sys.argv[1]
    checkout = os.path.dirname(os.path.dirname(os.path.realpath(script)))
    failures = []
    rc, out = run(script, checkout)
    if rc != 0 or " 0 problems" not in out:
        failures.append("the checkout names a repository one of its files does not declare")
    case = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    shutil.copy(os.path.join(checkout, "MODULE.bazel"), case)
    with open(os.path.join(checkout, "WORKSPACE")) as f, \
            open(os.path.join(case, "WORKSPACE"), "w") as out_ws:
        out_ws.write(f.read() + '\nlocal_repository(name = "only_in_workspace", path = "x")\n')
    os.makedirs(os.path.join(case, "pkg"))
    with open(os.path.join(case, "pkg", "BUILD"), "w") as f:
        f.write('cc_library(name = "a", deps = ["@gtest//:gtest", "@only_in_workspace//:b",'
                ' "@nowhere"])\n')
    rc, out = run(script, case)
    expected = ["@nowhere (used in pkg/BUILD) is not declared in MODULE.bazel",
                "@nowhere (used in pkg/BUILD) is not declared in WORKSPACE",
                "@only_in_workspace (used in pkg/BUILD) is not declared in MODULE.bazel"]
    if rc != 1 or [l for l in out.splitlines() if l.startswith("@")] != expected:
        failures.append("a repository missing from MODULE.bazel or WORKSPACE: exit 1 naming "
                        "exactly %s" % expected)
    for f in failures:
        print("FAIL: " + f)
    print("PASS" if not failures else "%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
