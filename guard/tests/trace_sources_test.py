"""The sources setup.py compiles (trace_sources.txt) are those Bazel builds
//tools:trace from (a genquery of its deps' source files in the main
repository), so the pip build and the Bazel build cannot drift.

    trace_sources_test.py TRACE_SOURCES_TXT QUERY_OUTPUT
"""
import sys

sys.path.insert(0, __file__.rsplit("/tests/", 1)[0])
import build_trace  # noqa: E402


def label_to_path(label):
    """//core/cli:flags.cc -> core/cli/flags.cc; //:x -> x."""
    package, name = label[2:].split(":", 1)
    return package + "/" + name if package else name


def main():
    if len(sys.argv) != 3:
        print("usage: trace_sources_test.py TRACE_SOURCES_TXT QUERY_OUTPUT", file=sys.stderr)
        return 2
    listed = set(build_trace.listed_sources(sys.argv[1]))
    with open(sys.argv[2]) as f:
        # External repositories (@nlohmann_json, @bazel_tools) come from the system.
        queried = {label_to_path(l.strip()) for l in f if l.startswith("//")}
    if not queried:
        print("FAIL: the query output names no source file of the main repository")
        return 1
    ok = True
    for path in sorted(queried - listed):
        print("FAIL: //tools:trace builds from %s; add it to trace_sources.txt" % path)
        ok = False
    for path in sorted(listed - queried):
        print("FAIL: trace_sources.txt lists %s, which //tools:trace does not use" % path)
        ok = False
    if ok:
        print("PASS: %d sources" % len(listed))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
