"""regen_manifest: a partial or stopped run lists every step it did not run."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import regen_manifest  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "analysis"))
import git_age  # noqa: E402

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)


def by_step(doc):
    return {s["step"]: s for s in doc["steps"]}


machine = {"host": "h", "kernel": "k", "cpu": "c", "cpus": 2}
ran = [{"step": "a", "seconds": 60.0, "exit": 0}]

# --only a,b, stopped by a signal in b: c was never selected.
doc = regen_manifest.build(ran, "abc", "b", ["a", "b", "c"], {"a", "b"}, machine)
s = by_step(doc)
expect(s["a"].get("exit") == 0, f"ran step kept: {s}")
expect("interrupted" in s["b"], f"interrupted: {s}")
expect(s["c"].get("not_run") == "not selected (--only)", f"unselected: {s}")
expect([x["step"] for x in doc["steps"]] == ["a", "b", "c"], f"order: {doc['steps']}")

# A full run that failed in a: b and c were selected but never reached.
failed = [{"step": "a", "seconds": 1.0, "exit": 1}]
s = by_step(regen_manifest.build(failed, "abc", "", ["a", "b", "c"], {"a", "b", "c"}, machine))
expect(s["b"].get("not_run") == "the run stopped before it" and "not_run" in s["c"],
       f"after a failure: {s}")

# A complete run lists no not-run step.
done = [{"step": n, "seconds": 1.0, "exit": 0} for n in ("a", "b")]
doc = regen_manifest.build(done, "abc", "", ["a", "b"], {"a", "b"}, machine)
expect(not any("not_run" in x for x in doc["steps"]), f"complete: {doc['steps']}")

# The file as regen_all.sh writes it, read back by the report's header.
with tempfile.TemporaryDirectory() as d:
    steps = os.path.join(d, "steps.jsonl")
    with open(steps, "w") as f:
        f.write(json.dumps(ran[0]) + "\n")
    out = os.path.join(d, git_age.MANIFEST)
    rc = regen_manifest.main(["x", steps, "0" * 40, out, "", "a b c", "a"])
    expect(rc == 0 and os.path.isfile(out) and not os.path.exists(out + ".tmp"), "written")
    text = git_age.manifest_sentence(d)
    expect("some of them" in text and "not run, so older records remain: b, c" in text,
           f"report header: {text}")
    expect(regen_manifest.main(["x"]) == 2, "bad usage exits 2")

# --merge: a run finished by --only at the same commit.
first = regen_manifest.build([{"step": "a", "seconds": 60.0, "exit": 0}], "abc", "",
                             ["a", "b", "c"], {"a"}, machine)
second = regen_manifest.build([{"step": "b", "seconds": 120.0, "exit": 0}], "abc", "",
                              ["a", "b", "c"], {"b"}, machine)
m = regen_manifest.merge(first, second)
s = by_step(m)
expect(s["a"].get("seconds") == 60.0 and s["b"].get("seconds") == 120.0,
       f"merge keeps each run's steps: {s}")
expect(s["c"].get("not_run") and [x["step"] for x in m["steps"]] == ["a", "b", "c"],
       f"merge: c ran in neither, in the order run: {m['steps']}")
expect([r["command"] for r in m["runs"]] == ["tools/regen_all.sh --only a",
                                             "tools/regen_all.sh --only b"],
       f"merge runs: {m['runs']}")
# merged with a run of the rest, nothing is left not run
third = regen_manifest.build([{"step": "c", "seconds": 1.0, "exit": 0}], "abc", "",
                             ["a", "b", "c"], {"c"}, machine)
m3 = regen_manifest.merge(m, third)
expect(not any("not_run" in x for x in m3["steps"]) and len(m3["runs"]) == 3,
       f"three runs: {m3}")
try:
    regen_manifest.merge(first, dict(second, commit="def"))
    expect(False, "merge of two commits accepted")
except ValueError as e:
    expect("abc" in str(e) and "def" in str(e), f"refusal names both commits: {e}")
with tempfile.TemporaryDirectory() as d:
    paths = [os.path.join(d, n) for n in ("1.json", "2.json", git_age.MANIFEST)]
    for path, doc in zip(paths, (first, dict(second, commit="def"))):
        with open(path, "w") as f:
            json.dump(doc, f)
    expect(regen_manifest.main(["x", "--merge"] + paths) == 2 and not os.path.exists(paths[2]),
           "two commits: exit 2, nothing written")
    with open(paths[1], "w") as f:
        json.dump(second, f)
    expect(regen_manifest.main(["x", "--merge"] + paths) == 0, "merge writes")
    text = git_age.manifest_sentence(d)
    expect("in 2 runs" in text and "not run, so older records remain: c" in text,
           f"merged header: {text}")

for f in failures:
    print("FAIL:", f)
print(f"regen_manifest_test: {'FAIL' if failures else 'PASS'}")
sys.exit(1 if failures else 0)
