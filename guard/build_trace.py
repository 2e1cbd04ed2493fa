"""Compiles the suite's Flight Recorder analyzer (//tools:trace) with the
system's C++ compiler, for a guard installed by pip with no Bazel.

The sources are those listed in trace_sources.txt, relative to the
ddp-pitfalls checkout that holds this guard/ folder; the flags are those the
Bazel build uses (.bazelrc and tools/trace/BUILD). A missing compiler,
header or source stops the install with what to do, naming the Debian
package; DDP_PITFALLS_NO_TRACE=1 installs the guard without ddp-trace.
"""
import concurrent.futures
import os
import re
import shutil
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = os.path.join(HERE, "trace_sources.txt")
SKIP_ENV = "DDP_PITFALLS_NO_TRACE"
FLAGS = ["-std=c++20", "-O2", "-Wall", "-Wextra", "-Werror=return-type"]
# The headers outside the C++ standard library that the sources include.
HEADER_PACKAGES = {"nlohmann/json.hpp": "nlohmann-json3-dev"}
WAYS_OUT = ("install it (sudo apt-get install %s), or set %s=1 to install the guard "
            "without ddp-trace")


class BuildError(Exception):
    """Why the trace binary cannot be built, with what to do about it."""


def listed_sources(path=SOURCES):
    with open(path) as f:
        return [l.strip() for l in f if l.strip() and not l.startswith("#")]


def compiler():
    cxx = os.environ.get("CXX", "g++")
    path = shutil.which(cxx)
    if not path:
        raise BuildError("ddp-trace: the C++ compiler %r was not found: " % cxx +
                         WAYS_OUT % ("g++", SKIP_ENV))
    return path


def _explain(output):
    m = re.search(r"fatal error: ([^:\s]+): No such file", output)
    if m and m.group(1) in HEADER_PACKAGES:
        return ("ddp-trace: the header <%s> was not found: " % m.group(1) +
                WAYS_OUT % (HEADER_PACKAGES[m.group(1)], SKIP_ENV))
    return ("ddp-trace: compiling the trace binary failed (a C++20 compiler is needed: "
            "Debian 12's g++ 12 works); set %s=1 to install the guard without it.\n%s"
            % (SKIP_ENV, output[-3000:]))


def _run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise BuildError(_explain(p.stdout))


def build(out, root=os.path.dirname(HERE), jobs=None):
    """Compiles the listed sources under `root` and links them into `out`."""
    sources = listed_sources()
    missing = [s for s in sources if not os.path.isfile(os.path.join(root, s))]
    if missing:
        raise BuildError("ddp-trace: %d of its C++ sources are not under %s (first: %s): "
                         "install the guard from a ddp-pitfalls checkout (pip install guard/), "
                         "or set %s=1 to install it without ddp-trace"
                         % (len(missing), root, missing[0], SKIP_ENV))
    cxx = compiler()
    units = [s for s in sources if s.endswith(".cc")]
    with tempfile.TemporaryDirectory(prefix="ddp_trace_") as tmp:
        objs = [os.path.join(tmp, "%d.o" % i) for i in range(len(units))]
        cmds = [[cxx] + FLAGS + ["-I", root, "-c", os.path.join(root, u), "-o", o]
                for u, o in zip(units, objs)]
        with concurrent.futures.ThreadPoolExecutor(jobs or os.cpu_count() or 1) as pool:
            for f in [pool.submit(_run, c) for c in cmds]:
                f.result()
        os.makedirs(os.path.dirname(out), exist_ok=True)
        _run([cxx] + objs + ["-pthread", "-o", out])
    os.chmod(out, 0o755)
