#!/usr/bin/env python3
"""gpu_table.py: what a committed GPU run brought back, as a README table.

Reads a GPU run kept under results/gpu/RUN/ (its logs.tar.gz, or a folder,
holding one folder per device call, each with run_all.sh's summary.tsv and
environment.txt) and prints one Markdown block: the machine and the
bundle's commit, then one row per binary with its status and seconds in
each call, then how many passed in some call and how many in one call.
--update FILE rewrites FILE's `gpu-run` table (bench/tables.py's markers).
Exit 2, one line `gpu_table: why`, on input it cannot read.
"""
import argparse
import csv
import io
import os
import sys
import tarfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from tables import InputError, emit  # noqa: E402  bench/tables.py

GOOD = {"pass", "ok"}  # run_all.sh's summary.tsv: a test passed, a pair or benchmark as expected
KINDS = (("test", "gpu tests", "passed"), ("pair", "pair binaries on NCCL", "had every record as expected"),
         ("bench", "benchmark runs", "ok"))


def call_members(run, want):
    """{(call, path inside the call): bytes} of the files of RUN's call
    folders (in its logs.tar.gz, else RUN itself) for which want(path)."""
    out = {}
    archive = os.path.join(run, "logs.tar.gz")
    if os.path.isfile(archive):
        try:
            with tarfile.open(archive) as tar:
                for m in tar.getmembers():
                    call, _, path = m.name.partition("/")
                    if m.isfile() and path and want(path):
                        out[(call, path)] = tar.extractfile(m).read()
        except (tarfile.TarError, OSError) as e:
            raise InputError(f"{archive}: {e}")
    elif os.path.isdir(run):
        for call in sorted(os.listdir(run)):
            for top, _, names in os.walk(os.path.join(run, call)):
                for name in names:
                    full = os.path.join(top, name)
                    path = os.path.relpath(full, os.path.join(run, call))
                    if want(path):
                        with open(full, "rb") as f:
                            out[(call, path)] = f.read()
    else:
        raise InputError(f"{run}: no such folder")
    return out


def read_calls(run):
    """{call name: {"summary": text, "environment": text}} from RUN's
    logs.tar.gz or from RUN itself when it holds the call folders."""
    files = {k: v.decode() for k, v in call_members(run, lambda p: p in ("summary.tsv", "environment.txt")).items()}
    calls = {}
    for (call, name), text in files.items():
        calls.setdefault(call, {})["summary" if name == "summary.tsv" else "environment"] = text
    calls = {c: v for c, v in calls.items() if "summary" in v}
    if not calls:
        raise InputError(f"{run}: no call folder with a summary.tsv (in logs.tar.gz or in the folder)")
    return dict(sorted(calls.items()))


def rows_of(summary, call):
    """summary.tsv's lines as dicts; every line must have its five fields."""
    reader = csv.DictReader(io.StringIO(summary), delimiter="\t")
    need = {"kind", "binary", "status", "seconds"}
    if not need <= set(reader.fieldnames or ()):
        raise InputError(f"{call}/summary.tsv: header must name {', '.join(sorted(need))}")
    return list(reader)


def env_fields(env):
    """A call's environment.txt as {key: value}, the first of each key."""
    fields = {}
    for line in env.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key not in fields:
            fields[key] = value.strip()
    return fields


def environment_line(env):
    """The machine and the bundle, from a call's environment.txt."""
    fields = env_fields(env)
    gpu = fields.get("gpu", "?")
    commit = fields.get("records' commit", "?")
    return f"GPU {gpu}; bundle commit `{commit[:12]}`; libnccl {fields.get('libnccl', '?')}"


def render(run):
    calls = read_calls(run)
    names = list(calls)
    status = {}  # (kind, binary) -> {call: "status S s"}
    good = {}    # (kind, binary) -> set of calls where it was good
    for call in names:
        for r in rows_of(calls[call]["summary"], call):
            key = (r["kind"], r["binary"])
            # A run repeated in one call (a refusal rerun) shows its last status.
            status.setdefault(key, {})[call] = f"{r['status']} {r['seconds']} s"
            if r["status"] in GOOD:
                good.setdefault(key, set()).add(call)
    first_env = next((c["environment"] for c in calls.values() if "environment" in c), "")
    out = [f"{len(names)} device calls ({', '.join(names)}); {environment_line(first_env)}.", ""]
    out.append("| kind | binary | " + " | ".join(names) + " |")
    out.append("|---|---|" + "---|" * len(names))
    for (kind, binary) in sorted(status, key=lambda k: ([x[0] for x in KINDS].index(k[0])
                                                       if k[0] in [x[0] for x in KINDS] else 9, k[1])):
        cells = [status[(kind, binary)].get(c, "-") for c in names]
        out.append(f"| {kind} | `{binary}` | " + " | ".join(cells) + " |")
    out.append("")
    for kind, what, verb in KINDS:
        keys = [k for k in status if k[0] == kind]
        if not keys:
            continue
        some = sum(1 for k in keys if good.get(k))
        best = max(sum(1 for k in keys if c in good.get(k, ())) for c in names)
        out.append(f"- {what}: {some} of {len(keys)} {verb} in some call; at most {best} in one call.")
    return "\n".join(out)


def cli(prog, doc, what, marker, render, argv):
    """PROG INPUT [--update FILE]: print render(INPUT), or write it into
    FILE's `marker` block; exit 2 with one line `PROG: why` on bad input.
    Shared with gpu_section.py."""
    ap = argparse.ArgumentParser(prog=prog, usage="%(prog)s INPUT [--update FILE]", description=doc)
    ap.add_argument("input", metavar="INPUT", help=what)
    ap.add_argument("--update", metavar="FILE", help=f"rewrite FILE's {marker} block")
    args = ap.parse_args(argv)
    return emit(prog, marker, args.update, lambda: render(args.input))


def main(argv):
    return cli("gpu_table", __doc__.split("\n\n")[1], "a GPU run's folder, e.g. results/gpu/h100-2026-11-27",
               "gpu-run", render, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
