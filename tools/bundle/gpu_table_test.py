"""gpu_table.py on a fake GPU run (two calls, as folders and as
logs.tar.gz): a row per binary with its status in each call and, for a
test, how many cases ran and were skipped and why (from the gtest lines of
its log: a test that skipped most of its cases is listed apart, a
benchmark smoke test shows its rows, not "0 ok"), the counts in some call
and in one call, the gpu-run block of a README rewritten, and
exit 2 with one line for a missing run, a run without summaries and a
summary without its header. Then each committed run's README holds exactly
what gpu_table.py gives for that run, and the last H100 run reads
"1 of 9 cases" for fixes/small_batch_bn/test_nccl and "1 of 3" for
repro/wrong_all_gather/test_nccl.

    gpu_table_test.py GPU_TABLE RUN_README...   (by //analysis:py_test.sh)
"""
import io
import os
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from script_check import expect, finish, run_script  # noqa: E402

script, committed_readmes = sys.argv[1], sys.argv[2:]


def run(*args):
    return run_script(script, *args)


HEADER = "kind\tbinary\tstatus\tseconds\tdetail\n"
tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
calls = {
    "call1": HEADER + "test\tcore/a_test\tpass\t2\t1 ok\ntest\trepro/b/test_nccl\tfail\t0\texit 1\n"
                      "pair\trepro/b/b\tusage\t0\t--x\nbench\tbench/s on nccl\tok\t10\t--reps 3\n",
    "call2": HEADER + "test\trepro/b/test_nccl\tpass\t9\t3 ok\npair\trepro/b/b\tok\t5\t--x\n",
}
env = "date: 2026-11-27T08:00:33Z\ngpu: NVIDIA H100 80GB HBM3, 580.159.04, 81559 MiB\n" \
      "libnccl: /x/lib (pip)\nrecords' commit: 0123456789abcdef\n"

def gtest(*cases):
    """A gtest log: (name, "OK" | "SKIPPED", reason) per case."""
    out = ["Running main() from gtest_main.cc"]
    for name, result, reason in cases:
        out.append(f"[ RUN      ] {name}")
        if result == "SKIPPED":
            out += [f"x_test.cc:12: Skipped", reason, ""]
        out.append(f"[{'       OK' if result == 'OK' else '  SKIPPED'} ] {name} (3 ms)")
    return "\n".join(out) + "\n"


SHARED = "shared GPU: W = 4 only (not 2 and 3)"
logs = {
    "call1": {"core.a_test.log": gtest(("A.One", "OK", ""), ("A.Two", "OK", "")),
              "repro.b.test_nccl.log": "[ RUN      ] B.X\nboom\n"},
    "call2": {"repro.b.test_nccl.log": gtest(("B.X", "OK", ""), ("B.Y", "SKIPPED", SHARED),
                                             ("B.Z", "SKIPPED", SHARED), ("B.W", "SKIPPED", "the rows run on gloo")),
              "bench.s_nccl_test.log": "-----\nBenchmark  Time  CPU  Iterations\n-----\n"
                                       "bn/C:16/rep:0/manual_time  1648 us  1171 us  3 W=2\n"
                                       "sync_bn/C:16/rep:0/manual_time  2955 us  1314 us  3 W=2\nPASS\n"},
}
calls["call2"] += "test\tbench/s_nccl_test\tpass\t2\t0 ok\n"
folder = os.path.join(tmp, "run")
for call, text in calls.items():
    os.makedirs(os.path.join(folder, call, "logs"))
    for name, log in logs[call].items():
        with open(os.path.join(folder, call, "logs", name), "w") as f:
            f.write(log)
    with open(os.path.join(folder, call, "summary.tsv"), "w") as f:
        f.write(text)
    with open(os.path.join(folder, call, "environment.txt"), "w") as f:
        f.write(env)
rc, out, err = run(folder)
expect(rc == 0, f"folder run exit {rc}: {err}")
expect(out.startswith("2 device calls (call1, call2); GPU NVIDIA H100 80GB HBM3, 580.159.04, 81559 MiB; "
                      "bundle commit `0123456789ab`; libnccl /x/lib (pip)."), f"heading: {out[:200]}")
expect("| test | `repro/b/test_nccl` | fail 0 s | pass 9 s (1 of 4 cases; 2 skipped at shared-GPU sizes, "
       "1 skipped: the rows run on gloo) |" in out, f"a row with both calls, its cases counted: {out}")
expect("| test | `core/a_test` | pass 2 s (2 of 2 cases) | - |" in out, "a row absent from a call")
expect("| test | `bench/s_nccl_test` | - | pass 2 s (2 benchmark rows, no gtest case) |" in out,
       "a benchmark smoke test shows its rows, not 0 ok")
expect("- gpu tests: 3 of 3 passed in some call; at most 2 in one call." in out, f"tests count: {out}")
expect("- of those: 2 ran every case; 1 passed with cases skipped (1 of them most of their cases), each with why:"
       in out, f"tests that skipped cases apart: {out}")
expect("  - `repro/b/test_nccl` (call2, **most cases skipped**): 1 of 4 cases ran, 3 skipped. Why: " + SHARED
       + " (2 cases); the rows run on gloo (1 case)" in out, f"the skipped test's reasons: {out}")
expect(out.index("| test |") < out.index("| pair |") < out.index("| bench |"), "rows by kind: tests, pairs, benchmarks")
expect("- pair binaries on NCCL: 1 of 1 had every record as expected in some call; at most 1 in one call." in out,
       "pairs count")
expect("- benchmark runs: 1 of 1 ok in some call; at most 1 in one call." in out, "bench count")

# The same run as logs.tar.gz (the committed form), and --update.
packed = os.path.join(tmp, "packed")
os.makedirs(packed)
with tarfile.open(os.path.join(packed, "logs.tar.gz"), "w:gz") as tar:
    tar.add(folder, arcname=".", recursive=False)
    for call in calls:
        tar.add(os.path.join(folder, call), arcname=call)  # with its logs/
rc, out2, err = run(packed)
expect(rc == 0 and out2 == out, f"the archive gives what the folder gives: {rc} {err}")
readme = os.path.join(tmp, "README.md")
with open(readme, "w") as f:
    f.write("intro\n<!-- table:gpu-run:begin -->\nold\n<!-- table:gpu-run:end -->\nafter\n")
rc, _, err = run(packed, "--update", readme)
text = open(readme).read()
expect(rc == 0 and "old" not in text and "| test | `core/a_test` |" in text and text.endswith("after\n"),
       f"--update: {rc} {err} {text}")

# Bad input: exit 2, one line naming the problem.
for args, want in [((os.path.join(tmp, "nope"),), "no such folder"),
                   ((tmp,), "no call folder with a summary.tsv")]:
    rc, _, err = run(*args)
    expect(rc == 2 and err.startswith("gpu_table: ") and want in err and err.count("\n") == 1, f"{args}: {rc} {err}")
bad = os.path.join(tmp, "bad", "call1")
os.makedirs(bad)
with open(os.path.join(bad, "summary.tsv"), "w") as f:
    f.write("binary\tstatus\n")
rc, _, err = run(os.path.dirname(bad))
expect(rc == 2 and "header must name" in err, f"headerless summary: {rc} {err}")

# Every committed run's README is current.
for committed_readme in committed_readmes:
    run_dir = os.path.dirname(committed_readme)
    rc, want, err = run(run_dir)
    doc = open(committed_readme).read()
    begin, end = "<!-- table:gpu-run:begin -->\n", "\n<!-- table:gpu-run:end -->"
    expect(rc == 0 and begin in doc and doc.split(begin, 1)[1].split(end, 1)[0] == want.rstrip("\n"),
           f"{committed_readme}: its gpu-run table is not what gpu_table.py gives "
           f"(python3 tools/bundle/gpu_table.py {run_dir} --update {committed_readme})")
expect(len(committed_readmes) > 0, "no committed run README given")
# The last H100 run: two tests that ran few of their cases say so (issue 58).
last = [r for r in committed_readmes if r.endswith("h100-2026-11-27b/README.md")]
expect(len(last) == 1, "results/gpu/h100-2026-11-27b/README.md not given")
for r in last:
    doc = open(r).read()
    for row in ["| test | `fixes/small_batch_bn/test_nccl` | pass 10 s (1 of 9 cases; 8 skipped at shared-GPU sizes) |",
                "| test | `repro/wrong_all_gather/test_nccl` | pass 32 s (1 of 3 cases; 2 skipped at shared-GPU sizes) |",
                "| test | `bench/sync_bn_nccl_test` | pass 2 s (16 benchmark rows, no gtest case) |"]:
        expect(row in doc, f"{r}: no row {row}")

finish()
