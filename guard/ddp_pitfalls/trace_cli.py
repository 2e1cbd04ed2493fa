"""ddp-trace DIR [ARGS...]: the suite's Flight Recorder analyzer
(//tools:trace, C++) over a folder of per-rank dumps, for a PyTorch user.

The binary is looked for, in order: $DDP_PITFALLS_TRACE; ddp_pitfalls/bin/trace
inside the installed package (pip install guard/ compiles it there with g++,
guard/build_trace.py); bazel-bin/tools/trace/trace
of a ddp-pitfalls checkout above the current folder or above this file. None
found: exit 2 with the command that builds it. Its arguments and exit status
are the binary's own (0 healthy, 1 a problem found, 2 bad usage).
"""
import os
import sys

ENV = "DDP_PITFALLS_TRACE"
BUILD = "bazel build //tools:trace"
PIP = "pip install --no-build-isolation guard/"


def _checkouts():
    seen = []
    for start in (os.getcwd(), os.path.dirname(os.path.abspath(__file__))):
        d = start
        while True:
            if d not in seen:
                seen.append(d)
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
    return [d for d in seen if os.path.isfile(os.path.join(d, "WORKSPACE"))]


def find():
    """(path or None, the places looked at)."""
    looked = []
    env = os.environ.get(ENV)
    if env:
        looked.append("$%s=%s" % (ENV, env))
        if os.access(env, os.X_OK):
            return env, looked
    packaged = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "trace")
    looked.append(packaged)
    if os.access(packaged, os.X_OK):
        return packaged, looked
    for root in _checkouts():
        path = os.path.join(root, "bazel-bin", "tools", "trace", "trace")
        looked.append(path)
        if os.access(path, os.X_OK):
            return path, looked
    return None, looked


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        if not argv:
            return 2
    path, looked = find()
    if path is None:
        print("ddp-trace: the trace binary was not found (looked at: %s). Reinstall the "
              "guard from a ddp-pitfalls checkout with g++ and nlohmann-json3-dev present "
              "(`%s`), or build it there with `%s`, then run ddp-trace from that checkout or "
              "set %s=<checkout>/bazel-bin/tools/trace/trace"
              % ("; ".join(looked), PIP, BUILD, ENV), file=sys.stderr)
        return 2
    if argv and argv[0] in ("-h", "--help"):
        print("\nbinary: %s" % path)
        return 0
    os.execv(path, [path] + list(argv))
    return 2  # not reached


if __name__ == "__main__":
    sys.exit(main())
