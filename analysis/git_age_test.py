"""git_age: the report header's distance from the records' commits to HEAD.

A throwaway git repository: a record at commit A, then a code change and a
record change; the sentence must count 1 commit for A, 0 for HEAD, name the
changed code path and never results/ or report/.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import git_age  # noqa: E402


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def write(repo, name, text):
    os.makedirs(os.path.dirname(os.path.join(repo, name)), exist_ok=True)
    with open(os.path.join(repo, name), "w") as f:
        f.write(text)


def main():
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as repo:
        git(repo, "init", "-q")
        write(repo, "core/x/a.cc", "1")
        write(repo, "results/r.json", "[]")
        git(repo, "add", ".")
        git(repo, "commit", "-qm", "a")
        a = git(repo, "rev-parse", "HEAD")
        text = git_age.sentence({a}, os.path.join(repo, "results"))
        expect(f"{a[:12]}: 0" in text and "no code changed" in text, f"at HEAD: {text}")

        write(repo, "repro/bug/main.cc", "2")
        write(repo, "results/r.json", "[1]")
        write(repo, "report/report.md", "x")
        git(repo, "add", ".")
        git(repo, "commit", "-qm", "b")
        b = git(repo, "rev-parse", "HEAD")
        text = git_age.sentence({a + "+dirty", b}, os.path.join(repo, "results"))
        expect(f"{a[:12]}: 1" in text and f"{b[:12]}: 0" in text, f"counts: {text}")
        expect("repro/bug" in text, f"changed path missing: {text}")
        expect("results" not in text.split("changed since")[1] and "report/" not in text,
               f"outputs listed as code: {text}")
        text = git_age.sentence({"0" * 40}, os.path.join(repo, "results"))
        expect("not in this checkout" in text, f"unknown commit: {text}")

        expect(git_age.manifest_sentence(os.path.join(repo, "results")) == "", "no manifest")
        write(repo, "results/" + git_age.MANIFEST, json.dumps(
            {"commit": a, "date": "2026-11-26T10:00:00+00:00", "machine": {"cpus": 2},
             "steps": [{"step": "x", "seconds": 120.0, "exit": 0},
                       {"step": "y", "seconds": 60.0, "exit": 1},
                       {"step": "vs_pytorch", "skipped": "no venv"}]}))
        text = git_age.manifest_sentence(os.path.join(repo, "results"))
        expect(a[:12] in text and "3 minutes" in text and "failed: y" in text
               and "skipped: vs_pytorch" in text, f"manifest: {text}")
        expect("runs" not in text, f"one run reported as several: {text}")
        write(repo, "results/" + git_age.MANIFEST, json.dumps(
            {"commit": a, "date": "2026-11-26T10:00:00+00:00", "machine": {"cpus": 2},
             "steps": [{"step": "x", "seconds": 120.0, "exit": 0}],
             "runs": [{"command": "tools/regen_all.sh", "steps": ["x"]},
                      {"command": "step y by hand", "steps": ["y"]}]}))
        text = git_age.manifest_sentence(os.path.join(repo, "results"))
        expect("in 2 runs: tools/regen_all.sh; step y by hand" in text, f"runs: {text}")

    with tempfile.TemporaryDirectory() as bare:
        os.environ.pop("BUILD_WORKSPACE_DIRECTORY", None)
        expect("unknown" in git_age.sentence({"abc"}, bare), "outside a checkout")

    expect(git_age.code_paths(["README.md", "BUILD", "bench/x.py", "bench/padding/README.md",
                               "core/a/b.cc", "results/x.json", "report/report.md"])
           == ["BUILD", "bench", "core/a"],
           "code_paths")
    for f in failures:
        print("FAIL:", f)
    print(f"git_age_test: {'FAIL' if failures else 'PASS'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
