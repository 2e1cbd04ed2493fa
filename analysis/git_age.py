"""How old the records are against the code: the report's header says how many
commits lie between each record commit and HEAD, and which code paths
changed since (issue 30: a reader citing a number must know whether the code
that made it is still the code in front of them).

Read from the git checkout that holds --results (else $BUILD_WORKSPACE_DIRECTORY,
which `bazel run` sets). Outside a checkout, or for a commit the checkout
lacks, the sentence says so instead of guessing.
"""
import json
import os
import subprocess

# Records and reports are outputs, not code: their changes do not age a record.
NOT_CODE = ("results", "report")
MAX_PATHS = 12
# tools/regen_all.sh's run log in results/: read here, never as a record.
MANIFEST = "regen_manifest.json"


def _git(repo, *args):
    done = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def _repo(results_dir):
    for start in (os.path.abspath(results_dir), os.environ.get("BUILD_WORKSPACE_DIRECTORY")):
        if start and os.path.isdir(start):
            top = _git(start, "rev-parse", "--show-toplevel")
            if top:
                return top
    return None


def code_paths(names):
    """Changed files -> their folders two deep ("repro/small_batch_bn"), or the
    file itself at the top ("BUILD"), outputs and prose (*.md) left out: a
    rewritten README reading changes no number a record holds."""
    paths = set()
    for name in names:
        parts = name.split("/")
        if parts[0] in NOT_CODE or name.endswith(".md"):
            continue
        paths.add("/".join(parts[:2]) if len(parts) > 2 else
                  (parts[0] if len(parts) == 2 else name))
    return sorted(paths)


def sentence(commits, results_dir):
    """One sentence: each record commit's distance to HEAD and the code paths
    changed since the oldest one."""
    repo = _repo(results_dir)
    if repo is None:
        return "commits between the records and HEAD: unknown (no git checkout holds the results)"
    head = _git(repo, "rev-parse", "HEAD")
    bare = sorted({c.removesuffix("+dirty") for c in commits})
    counts, unknown = {}, []
    for c in bare:
        n = _git(repo, "rev-list", "--count", f"{c}..HEAD") if c not in ("", "?", "unknown") else None
        if n is None:
            unknown.append(c[:12] or "?")
        else:
            counts[c] = int(n)
    parts = [f"{c[:12]}: {n}" for c, n in sorted(counts.items(), key=lambda kv: -kv[1])]
    text = (f"HEAD when this report was made: {head[:12]}; commits between each record commit "
            f"and HEAD: {', '.join(parts) or 'none known'}")
    if unknown:
        text += f" ({len(unknown)} commit(s) not in this checkout: {', '.join(unknown)})"
    if counts:
        oldest = max(counts, key=counts.get)
        names = (_git(repo, "diff", "--name-only", oldest, "HEAD") or "").split()
        changed = code_paths(names)
        prose = [n for n in names if n.endswith(".md") and n.split("/")[0] not in NOT_CODE]
        shown = ", ".join(changed[:MAX_PATHS]) + (
            f" and {len(changed) - MAX_PATHS} more" if len(changed) > MAX_PATHS else "")
        text += (f"; code paths changed since {oldest[:12]}: {shown}" if changed else
                 f"; no code changed since {oldest[:12]} (only records and reports)")
        if prose:
            text += f"; {len(prose)} prose file(s) (*.md) changed too"
    return text


def manifest_sentence(results_dir):
    """What tools/regen_all.sh's manifest says of the run ("" without one)."""
    path = os.path.join(results_dir, MANIFEST)
    if not os.path.isfile(path):
        return ""
    try:
        with open(path) as f:
            doc = json.load(f)
        steps = doc["steps"]
        ran = [s for s in steps if "seconds" in s]
        failed = [s["step"] for s in ran if s.get("exit") != 0]
        skipped = [s["step"] for s in steps if "skipped" in s]
        interrupted = [s["step"] for s in steps if "interrupted" in s]
        not_run = [s["step"] for s in steps if "not_run" in s]
        some = "some of them" if interrupted or not_run or failed else "them"
        text = (f"`tools/regen_all.sh` regenerated {some} at {str(doc['commit'])[:12]} on "
                f"{str(doc['date'])[:10]} ({len(ran)} steps, {sum(s['seconds'] for s in ran) / 60:.0f} "
                f"minutes on {doc['machine']['cpus']} CPUs")
        text += f"; failed: {', '.join(failed)}" if failed else ""
        text += f"; skipped: {', '.join(skipped)}" if skipped else ""
        text += f"; interrupted: {', '.join(interrupted)}" if interrupted else ""
        text += (f"; not run, so older records remain: {', '.join(not_run)}" if not_run else "")
        # A run that was finished by hand or resumed with --only is several
        # invocations at one commit; the reader must see that, not one run.
        runs = doc.get("runs") or []
        if len(runs) > 1:
            text += f"; in {len(runs)} runs: " + "; ".join(str(r["command"]) for r in runs)
        return text + f"; every step in {MANIFEST}). "
    except (OSError, ValueError, KeyError, TypeError) as e:
        return f"{MANIFEST} is unreadable ({type(e).__name__}: {e}). "
