"""What every PyTorch evidence script shares (stdlib + torch).

The scripts under repro/<bug>/pytorch/, fixes/<bug>/pytorch/ and
tools/vs_pytorch/checked_vs_detail/ run PyTorch with real gloo processes to check a
claim the suite makes about PyTorch, and write what they saw as one JSON
document under results/vs_pytorch/ (the READMEs quote it), once per PyTorch
version: 1.13 (/usr/bin/python3, Debian's python3-torch) and 2.15 (the venv
.venv-torch2.15; tools/setup.sh --torch2.15). tools/vs_pytorch/run_all.sh
runs them all. Each rank is a fresh process started by `spawn_ranks` (with
the interpreter that runs the script), rendezvousing through a FileStore in
a temporary folder; a script re-invokes itself with --rank for that.

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


ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def suite_commit():
    """The suite's HEAD, "+dirty" when tracked code outside results/ differs
    from it (as core/results/provenance.h and bench/peers/peers.py), or
    "unknown" outside a git checkout. DDP_PITFALLS_COMMIT, where set, wins:
    on a GPU runner the tree is a copy without git (tools/bundle/lease.sh
    sets it to the bundle's commit, as run_all.sh does for the binaries)."""
    if os.environ.get("DDP_PITFALLS_COMMIT"):
        return os.environ["DDP_PITFALLS_COMMIT"]
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no",
                                "--", ".", ":(exclude)results"],
                               check=True, capture_output=True, text=True).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def torch_version():
    """"1.13", "2.15": the installed torch's major.minor, the key of the
    per-version records (NAME.torch1.13.json) and of the ledger's verdicts."""
    import torch
    return ".".join(torch.__version__.split("+")[0].split(".")[:2])


def provenance(script, backend="gloo"):
    """Where and with what the evidence was produced (with NCCL: the GPU,
    its driver, CUDA and torch's NCCL too)."""
    import torch
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    out = {"torch": torch.__version__, "torch_version": torch_version(),
           "commit": suite_commit(), "python": platform.python_version(),
           "interpreter": sys.executable, "backend": backend,
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "host": socket.gethostname(), "cpu": cpu, "script": script,
           "load_1min_at_start": os.getloadavg()[0]}
    if backend == "nccl":
        out["gpu"] = torch.cuda.get_device_name(0)
        out["gpus_visible"] = torch.cuda.device_count()
        out["cuda"] = torch.version.cuda
        out["nccl"] = ".".join(str(v) for v in torch.cuda.nccl.version())
        out["driver"] = driver_version()
    import importlib.metadata as metadata
    for key, dist in (("sklearn", "scikit-learn"), ("numpy", "numpy"),
                      ("torchmetrics", "torchmetrics"), ("pytorch_lightning", "pytorch-lightning")):
        try:
            out[key] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


def driver_version():
    """The NVIDIA kernel driver's own line (its version and build)."""
    try:
        with open("/proc/driver/nvidia/version") as f:
            return f.readline().strip()
    except OSError:
        return "unknown (no /proc/driver/nvidia/version)"


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


def spawn_ranks(script, world_size, args, directory, timeout, env=None, per_rank_env=None):
    """Runs `script --rank r --world_size W --dir DIR ARGS...` for every rank r
    as its own process (environment: ours, `env`, and `per_rank_env(r)`);
    returns, per rank, {"exit": code | "signal N" | "timeout", "output":
    combined stdout/stderr, "wall_s": seconds}."""
    full_env = dict(os.environ, **(env or {}))
    start = time.monotonic()
    procs = [subprocess.Popen([sys.executable, script, "--rank", str(r), "--world_size",
                               str(world_size), "--dir", directory] + list(args),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              env=dict(full_env, **(per_rank_env(r) if per_rank_env else {})))
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


def init_gloo(args):
    """A rank's gloo process group through spawn_ranks' FileStore, with the
    script's --pg_timeout."""
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method=init_store(args.dir), rank=args.rank,
                            world_size=args.world_size,
                            timeout=datetime.timedelta(seconds=args.pg_timeout))


def cuda_rank_device(torch, w, r):
    """The GPU of rank r of W on NCCL (r modulo the GPUs, made current), and
    where ranks share a GPU a distinct NCCL_HOSTID: NCCL refuses two ranks
    on one GPU unless they look like different hosts."""
    gpus = torch.cuda.device_count()
    if w > gpus:
        os.environ["NCCL_HOSTID"] = "ddp-pitfalls-rank%d" % r
    torch.cuda.set_device(r % gpus)
    return r % gpus


def run_world(script, w, pg_timeout, extra=(), bound=None):
    """One world of `script`'s ranks in a fresh folder: collect()'s list,
    every rank bounded by `bound` seconds (default 6 x pg_timeout + 60)."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix=os.path.basename(script) + "_") as d:
        procs = spawn_ranks(script, w, ["--pg_timeout", str(pg_timeout)] + list(extra), d,
                            bound if bound is not None else 6 * pg_timeout + 60)
        return collect(d, procs)


def with_footer(lines, paths):
    """A README table's lines, a blank line and the records' footer, as one text."""
    return "\n".join(list(lines) + ["", footer(paths)]) + "\n"


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
    ap.add_argument("--table", metavar="JSON", nargs="+",
                    help="print the README's Markdown table from the JSONs this script wrote "
                         "(one per PyTorch version, older first)")
    ap.add_argument("--update", metavar="README", help="with --table: write it into this file")
    ap.add_argument("--id", default="pytorch", help="with --update: the table's marker id")


def dispatch(ap, rank_main, print_table):
    """Parses the flags; a rank process (--rank) runs rank_main and exits, a
    --table call prints or writes the table and exits; otherwise returns the
    parsed flags to the script's main."""
    args = ap.parse_args()
    if args.rank is not None:
        sys.exit(rank_main(args))
    if args.table:
        sys.exit(emit_table(args, print_table(args.table)))
    return args


def load_docs(paths):
    """The JSON documents at these paths, in order."""
    docs = []
    for path in paths:
        with open(path) as f:
            docs.append(json.load(f))
    return docs


def cases_by_version(paths, key="cases"):
    """(PyTorch version, case) for every case of every record, in order: the
    rows of a script's README table."""
    for doc in load_docs(paths):
        for case in doc[key]:
            yield doc["provenance"]["torch_version"], case


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


def int_list(text, flag, minimum):
    """A comma-separated flag value as a list of ints (each >= minimum), or
    exit 2 naming the flag."""
    try:
        out = [int(x) for x in text.split(",")]
    except ValueError:
        out = []
    if not out or min(out) < minimum:
        print("%s: expected comma-separated integers >= %d, got '%s'" % (flag, minimum, text),
              file=sys.stderr)
        sys.exit(2)
    return out


def worlds(args):
    """The --worlds flag as a list of ints (each >= 2), or exit 2 naming it."""
    return int_list(args.worlds, "--worlds", 2)


def record(what, config, script, **sections):
    """The document a script writes: what it checks, its configuration, the
    provenance (run from `script`, a path from the root), then its sections."""
    return dict({"what": what, "config": config, "provenance": provenance(script)}, **sections)


def footer(paths):
    """One line per record file under a table: its PyTorch, date, host,
    suite commit and script."""
    lines = []
    for path in paths:
        with open(path) as f:
            p = json.load(f)["provenance"]
        lines.append("PyTorch %s (%s), %s, %s, suite %s, load %.1f (`%s`)." % (
            p["torch"], os.path.basename(path), p["date"], p["host"],
            p.get("commit", "unknown")[:12] + ("+dirty" if p.get("commit", "").endswith("+dirty")
                                                else ""),
            p.get("load_1min_at_start", float("nan")), p["script"]))
    return "\n".join(lines)


def first_line(text, limit=300):
    """The first line of an error message, cut to `limit` characters."""
    lines = str(text).strip().splitlines()
    return lines[0][:limit] if lines else ""
