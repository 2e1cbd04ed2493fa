"""Installs the guard the way a user does, offline, into a fresh venv that
sees the system's torch, and uses it:

    python3 -m venv --system-site-packages VENV
    VENV/bin/pip install --no-build-isolation --no-index guard/

then imports ddp_pitfalls.guard with the venv's python (torch from the
system), and runs the installed `ddp-trace`: with no binary it exits 2
naming `bazel build //tools:trace`; with $DDP_PITFALLS_TRACE set it runs that
binary with the arguments and passes its exit status on.

    python3 guard/tests/pip_install_test.py GUARD_DIR

Skips (exit 0, reason printed) when torch is not importable or the venv
module is missing (Debian's python3-venv).
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import world  # noqa: E402


def run(cmd, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    return p.returncode, p.stdout


def main():
    if len(sys.argv) != 2:
        print("usage: pip_install_test.py GUARD_DIR", file=sys.stderr)
        return 2
    world.torch_or_skip()
    tmp = tempfile.mkdtemp(prefix="guard_pip_", dir=os.environ.get("TEST_TMPDIR"))
    try:
        return check(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check(tmp):
    src = os.path.join(tmp, "guard")
    # A copy: pip builds in place and Bazel's runfiles are read-only links.
    shutil.copytree(os.path.realpath(sys.argv[1]), src,
                    ignore=shutil.ignore_patterns("tests", "eval", "BUILD", "__pycache__"))
    venv = os.path.join(tmp, "venv")
    rc, out = run([sys.executable, "-m", "venv", "--system-site-packages", venv])
    if rc != 0:
        print("SKIPPED: python3 -m venv failed (Debian's python3-venv missing?): %s" % out[-500:])
        return 0
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
               HOME=tmp, PYTHONNOUSERSITE="1")
    env.pop("PYTHONPATH", None)
    rc, out = run([os.path.join(venv, "bin", "pip"), "install", "--no-build-isolation",
                   "--no-index", src], env=env, cwd=tmp)
    print(out[-1500:])
    if rc != 0:
        print("FAIL: pip install exited %d" % rc)
        return 1
    python = os.path.join(venv, "bin", "python")
    rc, out = run([python, "-c", "import ddp_pitfalls.guard as g, torch; "
                   "g.install(mode='warn'); g.install(mode='off'); "
                   "print(g.__file__); print(sorted(g.CHECKS))"], env=env, cwd=tmp)
    print(out)
    failures = []
    if rc != 0 or os.path.join(venv, "lib") not in out or "wrong_all_gather" not in out:
        failures.append("import from the venv (exit %d)" % rc)
    trace = os.path.join(venv, "bin", "ddp-trace")
    bare = dict(env, DDP_PITFALLS_TRACE="")
    rc, out = run([trace, tmp], env=bare, cwd=tmp)
    print("ddp-trace without a binary: exit %d: %s" % (rc, out.strip()))
    if rc != 2 or "bazel build //tools:trace" not in out:
        failures.append("ddp-trace without a binary: exit 2 naming the build command")
    stub = os.path.join(tmp, "trace_stub")
    with open(stub, "w") as f:
        f.write("#!/bin/sh\necho \"stub $*\"\nexit 1\n")
    os.chmod(stub, 0o755)
    rc, out = run([trace, "DIR", "--json"], env=dict(env, DDP_PITFALLS_TRACE=stub), cwd=tmp)
    print("ddp-trace with $DDP_PITFALLS_TRACE: exit %d: %s" % (rc, out.strip()))
    if rc != 1 or out.strip() != "stub DIR --json":
        failures.append("ddp-trace runs the binary with the arguments and its exit status")
    return world.finish(failures)


if __name__ == "__main__":
    sys.exit(main())
