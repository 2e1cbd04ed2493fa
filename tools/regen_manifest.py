#!/usr/bin/env python3
"""tools/regen_manifest.py STEPS_JSONL COMMIT OUT INTERRUPTED ALL SELECTED

Writes tools/regen_all.sh's manifest (results/regen_manifest.json) from the
steps it has run so far (one JSON object per line in STEPS_JSONL).

Every step regen_all knows (ALL, space-separated, in order) appears in it: a
step that did not run is listed as `not_run`, with why: not selected (a
partial `--only` run), or the run stopped first (a failure or a signal;
INTERRUPTED names the step a signal stopped). Otherwise a partial or stopped
run's manifest would read as a complete regeneration at its commit while the
records of the steps it skipped still come from an older one; the report
(analysis/git_age.py) names the not-run steps.
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


def main(argv):
    if len(argv) != 7:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    steps_path, commit, out, interrupted, all_names, selected = argv[1:]
    with open(steps_path) as f:
        steps = [json.loads(l) for l in f if l.strip()]
    doc = build(steps, commit, interrupted, all_names.split(), set(selected.split()),
                this_machine())
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
