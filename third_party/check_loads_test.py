"""check_loads passes the checkout and fails each bad case in testdata/.

    check_loads_test.py CHECK_LOADS_PY TESTDATA_DIR

The checkout is the folder above the real third_party/check_loads.py (the
runfile links back to it), so a BUILD or .bzl file added anywhere is seen.
"""
import os
import subprocess
import sys

# testdata file -> the lines check_loads must print for it (empty: passes).
CASES = {
    "missing_load.BUILD": [
        'cc_test used without load("@rules_cc//...", "cc_test")',
        'sh_test used without load("@rules_shell//...", "sh_test")',
    ],
    "native_call.bzl": ["native.cc_test: load cc_test from @rules_cc// instead"],
    "provider.bzl": ['CcInfo used without load("@rules_cc//...", "CcInfo")'],
    "loaded.bzl": [],
}


def run(script, args):
    p = subprocess.run([sys.executable, script] + args, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    return p.returncode, p.stdout


def main():
    if len(sys.argv) != 3:
        print("usage: check_loads_test.py CHECK_LOADS_PY TESTDATA_DIR", file=sys.stderr)
        return 2
    script, testdata = sys.argv[1], sys.argv[2]
    failures = []
    checkout = os.path.dirname(os.path.dirname(os.path.realpath(script)))
    rc, out = run(script, [checkout])
    print("checkout %s: exit %d\n%s" % (checkout, rc, out))
    if rc != 0 or " 0 problems" not in out:
        failures.append("the checkout has a rule used without its load")
    for name, expected in CASES.items():
        rc, out = run(script, ["--files", os.path.join(testdata, name)])
        print("%s: exit %d\n%s" % (name, rc, out))
        problems = [l.split(": ", 1)[1] for l in out.splitlines() if l.startswith(testdata)]
        if rc != (1 if expected else 0) or sorted(problems) != sorted(expected):
            failures.append("%s: expected exit %d and %s" % (name, 1 if expected else 0, expected))
    rc, out = run(script, [])
    if rc != 2:
        failures.append("no arguments: exit 2 (got %d)" % rc)
    for f in failures:
        print("FAIL: " + f)
    print("PASS" if not failures else "%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
