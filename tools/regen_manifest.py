#!/usr/bin/env python3
"""tools/regen_manifest.py STEPS_JSONL COMMIT OUT INTERRUPTED ALL SELECTED
   tools/regen_manifest.py --merge EARLIER LATER OUT

Writes tools/regen_all.sh's manifest (results/regen_manifest.json) from the
steps it has run so far (one JSON object per line in STEPS_JSONL).

Every step regen_all knows (ALL, space-separated, in order) appears in it: a
step that did not run is listed as `not_run`, with why: not selected (a
partial `--only` run), or the run stopped first (a failure or a signal;
INTERRUPTED names the step a signal stopped). Otherwise a partial or stopped
run's manifest would read as a complete regeneration at its commit while the
records of the steps it skipped still come from an older one; the report
(analysis/git_age.py) names the not-run steps.

--merge joins two manifests of one commit: a regeneration too long for one
session is finished by `regen_all.sh --only` in a clean checkout of the same
commit. Each step keeps the entry of the run that made it (the later run's
where both did), a step neither ran stays `not_run`, and `runs` lists every
invocation (its command, date, machine and steps), so the report's header
says the records came from several runs. Manifests of two commits are
refused (exit 2): their records would not be one commit's.
"""
import datetime
import json
import os
import platform
import sys


def build(steps, commit, interrupted, all_names, selected, machine):
    doc = {"commit": commit,
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
           "machine": machine, "steps": list(steps)}
    if interrupted:
        doc["steps"].append({"step": interrupted, "interrupted": "stopped by a signal"})
    seen = {s.get("step") for s in doc["steps"]}
    for name in all_names:
        if name in seen:
            continue
        why = ("the run stopped before it" if name in selected
               else "not selected (--only)")
        doc["steps"].append({"step": name, "not_run": why})
    return doc


def this_machine():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    except OSError:
        pass
    return {"host": platform.node(), "kernel": platform.release(), "cpu": cpu,
            "cpus": os.cpu_count()}


def write(doc, out):
    """The manifest, whole or not at all (a temporary file renamed)."""
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, out)
    return 0


def _ran(step):
    return any(k in step for k in ("seconds", "skipped", "interrupted"))


def _runs(doc):
    """The invocations behind one manifest: its own `runs`, or the one run
    it is, named by the steps it ran."""
    if doc.get("runs"):
        return list(doc["runs"])
    ran = [s["step"] for s in doc["steps"] if _ran(s)]
    partial = any("not_run" in s for s in doc["steps"])
    command = "tools/regen_all.sh" + (" --only " + ",".join(ran) if partial else "")
    return [{"command": command, "date": doc["date"], "machine": doc.get("machine"),
             "steps": ran}]


def merge(earlier, later):
    """One manifest from two of the same commit (ValueError otherwise)."""
    if earlier["commit"] != later["commit"]:
        raise ValueError(f"commits differ: {earlier['commit']} and {later['commit']}")
    # In the order they ran: the earlier run's steps the later did not redo,
    # the later run's, then those neither ran.
    redone = {s["step"] for s in later["steps"] if _ran(s)}
    steps = [dict(s, date=s.get("date", earlier["date"])) for s in earlier["steps"]
             if _ran(s) and s["step"] not in redone]
    steps += [s for s in later["steps"] if _ran(s)]
    made = {s["step"] for s in steps}
    for s in later["steps"] + earlier["steps"]:
        if s["step"] not in made:
            made.add(s["step"])
            steps.append(s)
    return {"commit": later["commit"], "date": later["date"], "machine": later.get("machine"),
            "runs": _runs(earlier) + _runs(later), "steps": steps}


def main_merge(argv):
    if len(argv) != 5:
        print("usage: regen_manifest.py --merge EARLIER LATER OUT", file=sys.stderr)
        return 2
    try:
        docs = []
        for path in argv[2:4]:
            with open(path) as f:
                docs.append(json.load(f))
        doc = merge(*docs)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"regen_manifest --merge: {e}", file=sys.stderr)
        return 2
    return write(doc, argv[4])


def main(argv):
    if len(argv) > 1 and argv[1] == "--merge":
        return main_merge(argv)
    if len(argv) != 7:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    steps_path, commit, out, interrupted, all_names, selected = argv[1:]
    with open(steps_path) as f:
        steps = [json.loads(l) for l in f if l.strip()]
    doc = build(steps, commit, interrupted, all_names.split(), set(selected.split()),
                this_machine())
    return write(doc, out)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
