"""The shared bits of the analysis/*_test.py scripts: collect failures, print
each, end with PASS or FAILED and the exit status."""
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def status():
    print("FAILED" if FAILURES else "PASS")
    return 1 if FAILURES else 0
