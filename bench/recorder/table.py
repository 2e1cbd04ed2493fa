#!/usr/bin/python3
"""Prints the Markdown table of a bench/recorder result (the "summary" its
binary adds to the Google Benchmark JSON).

    bench/recorder/table.py results/bench_recorder.json

stdlib only; bench/README.md pastes the output between its table markers.
"""
import json
import sys


def main(argv):
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        data = json.load(f)
    s = data.get("summary")
    if s is None:
        print("%s: no summary (not written by bench/recorder?)" % argv[0], file=sys.stderr)
        return 2
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
    print("| measured (median, %d interleaved repetitions) | wall time | CPU time | |" % s["repetitions"])
    print("|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print()
    commit = p["commit"][:12] + ("+dirty" if p["commit"].endswith("+dirty") else "")
    print("Commit %s, %s, host %s (%s, %s CPUs, load average %.1f during the run), Gloo %s." % (
        commit, p["date"], p["host"], p["cpu"], s.get("cpus", "?"),
        s.get("load_average_1m", float("nan")), p["gloo"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
