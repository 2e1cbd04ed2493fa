#!/usr/bin/python3
"""Prints the Markdown table of a bench/recorder result (the "summary" its
binary adds to the Google Benchmark JSON), or with --update README puts it
between that file's `<!-- recorder:begin -->` and `<!-- recorder:end -->`
(bench/regen.sh recorder does).

    bench/recorder/table.py results/bench_recorder.json [--update bench/README.md]

stdlib only. Exit 2 on bad usage, a file without a summary, or missing markers.
"""
import json
import os
import sys
import tempfile


def main(argv):
    if len(argv) not in (1, 3) or (len(argv) == 3 and argv[1] != "--update"):
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        data = json.load(f)
    s = data.get("summary")
    if s is None:
        print("%s: no summary (not written by bench/recorder?)" % argv[0], file=sys.stderr)
        return 2
    text = render(s)
    if len(argv) == 1:
        print(text, end="")
        return 0
    return update(argv[2], text)


def update(path, text):
    """Replaces the block between the markers, the file rewritten atomically."""
    begin, end = "<!-- recorder:begin -->\n", "<!-- recorder:end -->"
    with open(path) as f:
        doc = f.read()
    a, b = doc.find(begin), doc.find(end)
    if a < 0 or b < a:
        print("%s: markers %s / %s not found" % (path, begin.strip(), end), file=sys.stderr)
        return 2
    doc = doc[:a + len(begin)] + text + doc[b:]
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)))
    with os.fdopen(fd, "w") as f:
        f.write(doc)
    os.chmod(tmp, os.stat(path).st_mode & 0o777)
    os.replace(tmp, path)
    return 0


def render(s):
    """The table and its provenance line, as Markdown."""
    p = s["provenance"]
    rows = [
        ("flight recorder, per collective (Enter + Exit, two clock reads)", "%.1f ns" % s["recorder_ns"],
         "%.1f ns" % s["recorder_cpu_ns"],
         "limit %g ns (CPU time): %s" % (s["limit_ns"], "ok" if s["within_limit"] else "EXCEEDED")),
        ("  the same, allgatherv with 64 counts", "%.1f ns" % s["recorder_allgatherv_w64_ns"],
         "%.1f ns" % s["recorder_allgatherv_w64_cpu_ns"], ""),
        ("  the same without the clock reads", "%.1f ns" % s["recorder_no_clock_ns"],
         "%.1f ns" % s["recorder_no_clock_cpu_ns"], ""),
        ("  two steady_clock reads alone", "%.1f ns" % s["two_clock_reads_ns"],
         "%.1f ns" % s["two_clock_reads_cpu_ns"], ""),
    ]
    if "w1_bare_gloo_ns" in s:
        rows += [
            ("bare gloo::allreduce, 1 double, one-rank world", "%.1f ns" % s["w1_bare_gloo_ns"],
             "%.1f ns" % s["w1_bare_gloo_cpu_ns"], ""),
            ("Comm::Allreduce, same, recorder on", "%.1f ns" % s["w1_comm_recorder_on_ns"],
             "%.1f ns" % s["w1_comm_recorder_on_cpu_ns"],
             "x%.2f bare (%+.1f ns CPU)" % (s["w1_ratio_cpu"], s["w1_overhead_cpu_ns"])),
            ("Comm::Allreduce, same, recorder off", "%.1f ns" % s["w1_comm_recorder_off_ns"],
             "%.1f ns" % s["w1_comm_recorder_off_cpu_ns"],
             "recorder's share %+.1f ns CPU" % s["w1_recorder_share_cpu_ns"]),
        ]
    if "w2_bare_gloo_us" in s:
        rows += [
            ("bare gloo::allreduce, 1 double, 2 ranks (loopback; rank 0)", "%.2f us" % s["w2_bare_gloo_us"],
             "%.2f us" % s["w2_bare_gloo_cpu_us"], ""),
            ("Comm::Allreduce, 2 ranks, recorder on", "%.2f us" % s["w2_comm_recorder_on_us"],
             "%.2f us" % s["w2_comm_recorder_on_cpu_us"], "x%.3f bare (CPU)" % s["w2_ratio_on_cpu"]),
            ("Comm::Allreduce, 2 ranks, recorder off", "%.2f us" % s["w2_comm_recorder_off_us"],
             "%.2f us" % s["w2_comm_recorder_off_cpu_us"], "x%.3f bare (CPU)" % s["w2_ratio_off_cpu"]),
        ]
    out = ["| measured (median, %d interleaved repetitions) | wall time | CPU time | |" % s["repetitions"],
           "|---|---|---|---|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    commit = p["commit"][:12] + ("+dirty" if p["commit"].endswith("+dirty") else "")
    out += ["", "Commit %s, %s, host %s (%s, %s CPUs, load average %.1f during the run), Gloo %s%s." % (
        commit, p["date"], p["host"], p["cpu"], s.get("cpus", "?"),
        s.get("load_average_1m", float("nan")), p["gloo"],
        ", TCP congestion control %s" % p["tcp_congestion"] if p.get("tcp_congestion") else "")]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
