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

for f in failures:
    print("FAIL:", f)
print(f"regen_manifest_test: {'FAIL' if failures else 'PASS'}")
sys.exit(1 if failures else 0)
