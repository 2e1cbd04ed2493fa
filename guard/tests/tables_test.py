"""guard/README.md's coverage, overhead and no-harm tables are what coverage.py and
overhead.py --table make of the committed records (no torch needed); a
hand-edited cell is caught (checked on a copy); both scripts answer --help
and refuse an unknown flag with exit 2, and a --backend other than gloo or
nccl, and nccl without a CUDA device, with exit 2 and one line; overhead.py's goal line
says over or met as the record's numbers move (checked on copies).

    python3 guard/tests/tables_test.py GUARD_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import world  # noqa: E402  (stdlib only)

TABLES = {  # marker id -> (script, records)
    "coverage": ("eval/coverage.py", ["eval/coverage.torch1.13.json",
                                      "eval/coverage.torch2.15.json"]),
    "overhead": ("eval/overhead.py", ["eval/overhead.torch1.13.json",
                                      "eval/overhead.torch2.15.json"]),
    "no_harm": ("eval/no_harm.py", ["eval/no_harm.torch1.13.json",
                                    "eval/no_harm.torch2.15.json"]),
}


def regenerated(guard, readme):
    """The README with every table rewritten from the records."""
    tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    copy = os.path.join(tmp, "README.md")
    shutil.copyfile(readme, copy)
    for tid, (script, records) in TABLES.items():
        subprocess.run([sys.executable, os.path.join(guard, script), "--table"] +
                       [os.path.join(guard, r) for r in records] +
                       ["--update", copy, "--id", tid], check=True)
    with open(copy) as f:
        return f.read()


def main():
    guard = sys.argv[1] if len(sys.argv) == 2 else None
    if guard is None:
        print("usage: tables_test.py GUARD_DIR", file=sys.stderr)
        return 2
    failures = []
    readme = os.path.join(guard, "README.md")
    with open(readme) as f:
        committed = f.read()
    if regenerated(guard, readme) != committed:
        failures.append("guard/README.md's tables differ from --table of the committed records "
                        "(regenerate: the commands in guard/README.md)")
    edited = committed.replace("| `missing_set_epoch` | 2 of 2", "| `missing_set_epoch` | 1 of 2")
    tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    with open(os.path.join(tmp, "README.md"), "w") as f:
        f.write(edited)
    if edited == committed or regenerated(guard, os.path.join(tmp, "README.md")) == edited:
        failures.append("a hand-edited cell was not caught")
    for script, _ in TABLES.values():
        path = os.path.join(guard, script)
        ok = subprocess.run([sys.executable, path, "--help"], capture_output=True).returncode
        bad = subprocess.run([sys.executable, path, "--no-such-flag"], capture_output=True)
        if ok != 0 or bad.returncode != 2 or b"--no-such-flag" not in bad.stderr:
            failures.append("%s: --help exit %d, unknown flag exit %d" % (script, ok,
                                                                          bad.returncode))
    failures += backend_flag(guard)
    failures += goal_words(guard)
    return world.finish(failures)


def goal_words(guard):
    """overhead.py's goal line follows the record's numbers: the committed
    1.13 record with its guard code moved to 3% of the step reads 'over',
    and with the wall-clock interval moved under 1.02 reads 'met'."""
    import copy
    import json
    sys.path.insert(0, os.path.join(guard, "eval"))
    import overhead
    with open(os.path.join(guard, "eval", "overhead.torch1.13.json")) as f:
        doc = json.load(f)
    failures = []
    over = copy.deepcopy(doc)
    over["guard_code_per_four_metric_step"]["of_off_step"] = 0.03
    line = overhead.goal_line(over)
    if "3.00% of its unguarded median" not in line or "in the same run, over the 2% goal" not in line:
        failures.append("a guard code of 3%% of the step was not read as over the goal: %r" % line)
    met = copy.deepcopy(doc)
    met["summary"]["training_step_four_metrics"]["ratio_median_ci95"] = [0.99, 1.01]
    if "by wall clock met" not in overhead.goal_line(met):
        failures.append("an interval under 1.02 was not read as met: %r" % overhead.goal_line(met))
    return failures


def backend_flag(guard):
    """coverage.py's and overhead.py's --backend: a value other than gloo or
    nccl exits 2 naming the flag and both values; nccl without a CUDA device
    (no GPU here) exits 2 with one line saying so before any rank starts."""
    failures = []
    for script in ("eval/coverage.py", "eval/overhead.py"):
        path = os.path.join(guard, script)
        bad = subprocess.run([sys.executable, path, "--backend", "mpi"], capture_output=True,
                             text=True)
        if bad.returncode != 2 or not all(w in bad.stderr for w in ("--backend", "gloo", "nccl")):
            failures.append("%s --backend mpi: exit %d, %r" % (script, bad.returncode, bad.stderr))
        if world.nccl_or_reason()[1] is None:
            continue  # a GPU here: the refusal is not what would happen
        nogpu = subprocess.run([sys.executable, path, "--backend", "nccl", "--out",
                                os.path.join(os.environ.get("TEST_TMPDIR", "/tmp"), "x.json")],
                               capture_output=True, text=True, timeout=120)
        lines = nogpu.stderr.strip().splitlines()
        if nogpu.returncode != 2 or len(lines) != 1 or "--backend nccl: no " not in lines[0]:
            failures.append("%s --backend nccl without a GPU: exit %d, %r" % (
                script, nogpu.returncode, nogpu.stderr))
    bad = subprocess.run([sys.executable, os.path.join(guard, "eval/coverage.py"), "--worlds",
                          "2,5"], capture_output=True, text=True)
    if bad.returncode != 2 or "--worlds" not in bad.stderr:
        failures.append("coverage.py --worlds 2,5: exit %d, %r" % (bad.returncode, bad.stderr))
    return failures


if __name__ == "__main__":
    sys.exit(main())
