"""Installs the guard the way a user does, offline, into a fresh venv that
sees the system's torch, and uses it:

    python3 -m venv --system-site-packages VENV
    VENV/bin/pip install --no-build-isolation --no-index guard/

from a copy of guard/ and the trace sources it lists (no checkout around
it). pip compiles ddp_pitfalls/bin/trace with g++; `ddp-trace` then reads
committed PyTorch dumps from a folder outside any checkout. Also: without a
compiler pip fails naming g++; with DDP_PITFALLS_NO_TRACE=1 the guard
installs and ddp-trace exits 2 saying how to get the binary; with
$DDP_PITFALLS_TRACE set it runs that binary and passes its exit status on.

    python3 guard/tests/pip_install_test.py GUARD_DIR

Skips (exit 0, reason printed) when torch is not importable or the venv
module is missing (Debian's python3-venv).
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import world  # noqa: E402

# Real PyTorch 2.15 Flight Recorder dumps, committed (tools/trace/README.md).
DUMPS = os.path.join("tools", "trace", "testdata", "fr_corpus")


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


def copy_source(tmp):
    """guard/ and the trace sources it lists, in a folder that is no checkout
    (no WORKSPACE): what pip sees is only what trace_sources.txt names."""
    # Bazel's runfiles hold links to files (not folders) of the checkout.
    setup = os.path.realpath(os.path.join(sys.argv[1], "setup.py"))
    checkout = os.path.dirname(os.path.dirname(setup))
    src = os.path.join(tmp, "src")
    shutil.copytree(os.path.join(checkout, "guard"), os.path.join(src, "guard"),
                    ignore=shutil.ignore_patterns("tests", "eval", "BUILD", "__pycache__"))
    with open(os.path.join(src, "guard", "trace_sources.txt")) as f:
        for line in f:
            rel = line.strip()
            if rel and not rel.startswith("#"):
                os.makedirs(os.path.dirname(os.path.join(src, rel)), exist_ok=True)
                shutil.copy(os.path.join(checkout, rel), os.path.join(src, rel))
    dumps = os.path.join(tmp, "dumps")
    for case in ("healthy", "dtype_mismatch"):
        shutil.copytree(os.path.join(checkout, DUMPS, case), os.path.join(dumps, case))
    return os.path.join(src, "guard"), dumps


def check(tmp):
    guard, dumps = copy_source(tmp)
    venv = os.path.join(tmp, "venv")
    rc, out = run([sys.executable, "-m", "venv", "--system-site-packages", venv])
    if rc != 0:
        print("SKIPPED: python3 -m venv failed (Debian's python3-venv missing?): %s" % out[-500:])
        return 0
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
               HOME=tmp, PYTHONNOUSERSITE="1")
    env.pop("PYTHONPATH", None)
    pip = [os.path.join(venv, "bin", "pip"), "install", "--no-build-isolation", "--no-index"]
    failures = []
    # No compiler: pip fails, naming the Debian package and the way out.
    rc, out = run(pip + [guard], env=dict(env, CXX="no-such-g++"), cwd=tmp)
    print("without a compiler: exit %d: %s" % (rc, "\n".join(
        l for l in out.splitlines() if "ddp-trace:" in l) or out[-1500:]))
    if rc == 0 or "apt-get install g++" not in out or "DDP_PITFALLS_NO_TRACE=1" not in out:
        failures.append("pip without a compiler: fails naming g++ and DDP_PITFALLS_NO_TRACE=1")
    # Without ddp-trace, asked for: the guard installs, ddp-trace says how to get it.
    rc, out = run(pip + [guard], env=dict(env, DDP_PITFALLS_NO_TRACE="1"), cwd=tmp)
    if rc != 0:
        print(out[-1500:])
        failures.append("pip install with DDP_PITFALLS_NO_TRACE=1 (exit %d)" % rc)
    trace = os.path.join(venv, "bin", "ddp-trace")
    rc, out = run([trace, dumps], env=dict(env, DDP_PITFALLS_TRACE=""), cwd=tmp)
    print("ddp-trace without a binary: exit %d: %s" % (rc, out.strip()))
    if rc != 2 or "pip install --no-build-isolation guard/" not in out:
        failures.append("ddp-trace without a binary: exit 2 naming how to build it")
    # The user's install: g++ compiles the trace binary into the package.
    start = time.monotonic()
    rc, out = run(pip + ["--force-reinstall", guard], env=env, cwd=tmp)
    print("pip install (trace compiled): exit %d in %.0f s\n%s"
          % (rc, time.monotonic() - start, out[-1500:]))
    if rc != 0:
        failures.append("pip install exited %d" % rc)
        return world.finish(failures)
    python = os.path.join(venv, "bin", "python")
    rc, out = run([python, "-c", "import ddp_pitfalls.guard as g, torch; "
                   "g.install(mode='warn'); g.install(mode='off'); "
                   "print(g.__file__); print(sorted(g.CHECKS))"], env=env, cwd=tmp)
    print(out)
    if rc != 0 or os.path.join(venv, "lib") not in out or "wrong_all_gather" not in out:
        failures.append("import from the venv (exit %d)" % rc)
    # From a folder with no checkout above it, on committed PyTorch dumps.
    away = os.path.join(tmp, "elsewhere")
    os.makedirs(away)
    bare = dict(env, DDP_PITFALLS_TRACE="")
    rc, out = run([trace, "--help"], env=bare, cwd=away)
    if os.path.join(venv, "lib") not in out or "bin/trace" not in out:
        failures.append("ddp-trace --help: the binary inside the installed package")
    rc, out = run([trace, os.path.join(dumps, "healthy")], env=bare, cwd=away)
    print("ddp-trace healthy: exit %d: %s" % (rc, out[:300]))
    if rc != 0 or "every collective matched" not in out:
        failures.append("ddp-trace on the healthy dumps: exit 0, every collective matched")
    rc, out = run([trace, os.path.join(dumps, "dtype_mismatch")], env=bare, cwd=away)
    print("ddp-trace dtype_mismatch: exit %d: %s" % (rc, out[:300]))
    if rc != 1:
        failures.append("ddp-trace on the dtype_mismatch dumps: exit 1 (a problem found)")
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
