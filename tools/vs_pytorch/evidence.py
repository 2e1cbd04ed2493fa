"""What every PyTorch evidence script shares (stdlib + torch).

The scripts under repro/<bug>/pytorch/, fixes/<bug>/pytorch/ and
core/comm/checked_vs_detail/ run PyTorch 1.13 (/usr/bin/python3, Debian's
python3-torch) with real gloo processes to check a claim the suite makes
about PyTorch, and write what they saw as one JSON document under
results/vs_pytorch/ (the READMEs quote it). Each rank is a fresh process
started by `spawn_ranks`, rendezvousing through a FileStore in a temporary
folder; a script re-invokes itself with --rank for that.

    import os, sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "<up to the root>"))
    from tools.vs_pytorch import evidence
"""
import datetime
import json
import os
import platform
import socket
import subprocess
import sys
import time


def provenance(script):
    """Where and with what the evidence was produced."""
    import torch
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    out = {"torch": torch.__version__, "python": platform.python_version(), "backend": "gloo",
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "host": socket.gethostname(), "cpu": cpu, "script": script}
    try:
        import sklearn
        out["sklearn"] = sklearn.__version__
    except ImportError:
        pass
    return out


def write_json(path, doc):
    """The whole document or nothing: a temporary file, then a rename."""
    text = json.dumps(doc, indent=1) + "\n"
    if not path:
        sys.stdout.write(text)
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def init_store(directory):
    """The init_method of a rank started by spawn_ranks."""
    return "file://" + os.path.join(directory, "store")


def spawn_ranks(script, world_size, args, directory, timeout, env=None):
    """Runs `script --rank r --world_size W --dir DIR ARGS...` for every rank r
    as its own process; returns, per rank, {"exit": code | "signal N" |
    "timeout", "output": combined stdout/stderr, "wall_s": seconds}."""
    full_env = dict(os.environ, **(env or {}))
    start = time.monotonic()
    procs = [subprocess.Popen([sys.executable, script, "--rank", str(r), "--world_size",
                               str(world_size), "--dir", directory] + list(args),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=full_env)
             for r in range(world_size)]
    out = []
    for p in procs:
        try:
            text, _ = p.communicate(timeout=max(1.0, start + timeout - time.monotonic()))
            code = p.returncode
            code = "signal %d" % -code if code < 0 else code
        except subprocess.TimeoutExpired:
            p.kill()
            text, _ = p.communicate()
            code = "timeout"
        out.append({"exit": code, "output": text.decode(errors="replace"),
                    "wall_s": time.monotonic() - start})
    return out


def parser(description, pg_timeout=None, worlds=None):
    """An ArgumentParser with --out, the hidden flags spawn_ranks passes, and
    --pg_timeout (seconds) / --worlds ("2,4") when given their defaults."""
    import argparse
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--out", help="where to write the JSON (default: print it)")
    if pg_timeout is not None:
        ap.add_argument("--pg_timeout", type=float, default=pg_timeout,
                        help="process group timeout, s (default %g)" % pg_timeout)
    if worlds is not None:
        ap.add_argument("--worlds", default=worlds,
                        help="world sizes, comma-separated (default %s)" % worlds)
    ap.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--world_size", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    return ap


class RankLog(dict):
    """What a rank saw, rewritten to DIR/rankN.json at every dump(), so that
    what it wrote before dying is still there for collect()."""

    def __init__(self, directory, rank):
        super().__init__(rank=rank)
        self._path = os.path.join(directory, "rank%d.json" % rank)

    def dump(self):
        with open(self._path, "w") as f:
            json.dump(self, f)


def collect(directory, procs):
    """Every rank's last RankLog dump (or just its rank), with "exit" from
    spawn_ranks; a rank that did not exit 0 also gets "died": the first line
    of its output naming an abort, else the end of its output."""
    ranks = []
    for r, p in enumerate(procs):
        path = os.path.join(directory, "rank%d.json" % r)
        info = json.load(open(path)) if os.path.exists(path) else {"rank": r}
        info["exit"] = p["exit"]
        if p["exit"] != 0:
            abort = [l for l in p["output"].splitlines()
                     if "terminate" in l or "EnforceNotMet" in l]
            info["died"] = abort[0][:300] if abort else first_line(p["output"][-300:])
        ranks.append(info)
    return ranks


def add_table_flags(ap):
    """--table JSON [--update README --id ID]: the README's table from a
    JSON the script wrote, printed or put between the README's
    `<!-- table:ID:begin -->` and `<!-- table:ID:end -->` markers."""
    ap.add_argument("--table", metavar="JSON",
                    help="print the README's Markdown table from a JSON this script wrote")
    ap.add_argument("--update", metavar="README", help="with --table: write it into this file")
    ap.add_argument("--id", default="pytorch", help="with --update: the table's marker id")


def emit_table(args, text):
    if not args.update:
        sys.stdout.write(text)
        return 0
    with open(args.update) as f:
        doc = f.read()
    begin, end = "<!-- table:%s:begin -->\n" % args.id, "<!-- table:%s:end -->" % args.id
    if begin not in doc or end not in doc:
        print("%s: no %s ... %s markers" % (args.update, begin.strip(), end), file=sys.stderr)
        return 2
    i, j = doc.index(begin) + len(begin), doc.index(end)
    tmp = "%s.tmp.%d" % (args.update, os.getpid())
    with open(tmp, "w") as f:
        f.write(doc[:i] + text + doc[j:])
    os.replace(tmp, args.update)
    return 0


def first_line(text, limit=300):
    """The first line of an error message, cut to `limit` characters."""
    lines = str(text).strip().splitlines()
    return lines[0][:limit] if lines else ""
