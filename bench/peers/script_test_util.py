"""What the torch-free tests of bench/peers' PyTorch drivers share
(norm_gpu_test.py, dist_gpu_test.py): one list of failures, expect(), a
driver script run with Debian's python3 and no PYTHONPATH (so that its
"no torch" path is what runs), a check that a driver's parse_args refuses
argv with a message, a check that a table maker refuses input (as data, and
on its command line), and the closing summary.
"""
import io
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


def run_script(script, args, env_extra=None):
    """(exit code, stderr) of `python3 bench/peers/SCRIPT ARGS`."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.update(env_extra or {})
    p = subprocess.run(["/usr/bin/python3", os.path.join(here, script)] + args,
                       capture_output=True, text=True, env=env)
    return p.returncode, p.stderr


def usage(module, argv, want):
    """module.parse_args(argv) raises module.UsageError naming `want`."""
    try:
        module.parse_args(argv)
    except module.UsageError as e:
        expect(want in str(e), f"{argv}: message {e!s} lacks {want!r}")
        return
    failures.append(f"{argv}: accepted")


def refused(table, data, want, what):
    """table.render(data) raises table.InputError naming `want`."""
    try:
        table.render(data, "run.json")
        failures.append(f"{what}: accepted")
    except table.InputError as e:
        expect(want in str(e), f"{what}: {e}")


def cli_refuses(main, argv, want):
    """main(argv) exits 2 with one line on stderr naming `want`."""
    saved = sys.stderr
    sys.stderr = io.StringIO()
    try:
        rc = main(argv)
        message = sys.stderr.getvalue()
    finally:
        sys.stderr = saved
    expect(rc == 2 and want in message and message.count("\n") == 1, f"{argv}: {rc} {message!r}")


def finish(name):
    """Prints the failures; the test's exit code."""
    for f in failures:
        print("FAIL:", f)
    print(f"{name}: {len(failures)} failure(s)")
    return 1 if failures else 0
