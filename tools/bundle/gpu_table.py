#!/usr/bin/env python3
"""gpu_table.py: what a committed GPU run brought back, as a README table.

Reads a GPU run kept under results/gpu/RUN/ (its logs.tar.gz, or a folder,
holding one folder per device call, each with run_all.sh's summary.tsv and
environment.txt) and prints one Markdown block: the machine and the
bundle's commit, then one row per binary with its status and seconds in
each call and, for a test, how many of its cases ran and how many were
skipped and why (read from the gtest output in the call's logs/), then how
many passed in some call and in one call, the tests that passed with
every case run apart from those that skipped cases, and why they skipped.
--update FILE rewrites FILE's `gpu-run` table (bench/tables.py's markers).
Exit 2, one line `gpu_table: why`, on input it cannot read.
"""
import argparse
import csv
import io
import os
import re
import sys
import tarfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from tables import InputError, emit  # noqa: E402  bench/tables.py

GOOD = {"pass", "ok"}  # run_all.sh's summary.tsv: a test passed, a pair or benchmark as expected
KINDS = (("test", "gpu tests", "passed"), ("pair", "pair binaries on NCCL", "had every record as expected"),
         ("bench", "benchmark runs", "ok"))

# gtest's per-case result lines, and a Google Benchmark row (a benchmark
# smoke test prints rows, no gtest case).
CASE_LINE = re.compile(r"^\[ {2}(?:     OK|FAILED  |SKIPPED) \] \S+ \(\d+ ms\)$", re.M)
SKIP_REASON = re.compile(r"^\S+:\d+: Skipped\n(.*)$", re.M)
BENCH_ROW = re.compile(r"^\S+/\S*\s+[\d.]+ (?:ns|us|ms|s)\s+[\d.]+ (?:ns|us|ms|s)\s+\d+\b", re.M)
SHARED_GPU = "shared GPU: "  # core/testing's reason for a case left to the shared-GPU sizes


def case_counts(log):
    """What a test binary's log says ran: {"ran", "failed", "skipped",
    "total", "why": {reason: count}, "bench_rows"}. A case counts once, by
    its result line; a skip's reason is the line after gtest's
    "FILE:LINE: Skipped"."""
    text = log.decode("utf-8", "replace") if isinstance(log, bytes) else log
    results = [m.group(0)[3:10].strip() for m in CASE_LINE.finditer(text)]
    why = {}
    for m in SKIP_REASON.finditer(text):
        reason = m.group(1).strip() or "no reason given"
        why[reason] = why.get(reason, 0) + 1
    skipped = results.count("SKIPPED")
    if sum(why.values()) < skipped:
        why["no reason given"] = why.get("no reason given", 0) + skipped - sum(why.values())
    return {"ran": results.count("OK") + results.count("FAILED"), "failed": results.count("FAILED"),
            "skipped": skipped, "total": len(results), "why": why,
            "bench_rows": len(BENCH_ROW.findall(text))}


def short_why(reason):
    """A skip's reason in a few words: core/testing's shared-GPU skips by
    their kind, any other in its own words."""
    return "at shared-GPU sizes" if reason.startswith(SHARED_GPU) else reason


def cases_text(c):
    """'1 of 9 cases; 8 skipped at shared-GPU sizes', '16 benchmark rows, no
    gtest case', or '' when the log has neither."""
    if c["total"] == 0:
        return f"{c['bench_rows']} benchmark rows, no gtest case" if c["bench_rows"] else ""
    text = f"{c['ran']} of {c['total']} case{'s' if c['total'] != 1 else ''}"
    if c["failed"]:
        text += f", {c['failed']} failed"
    if c["skipped"]:
        by = {}
        for reason, n in c["why"].items():
            by[short_why(reason)] = by.get(short_why(reason), 0) + n
        text += "; " + ", ".join(f"{n} skipped {w}" if w == "at shared-GPU sizes" else f"{n} skipped: {w}"
                                 for w, n in sorted(by.items(), key=lambda kv: -kv[1]))
    return text


def log_name(kind, binary):
    """run_all.sh's log file for a summary row (its item_fields)."""
    if kind == "test":
        return binary.replace("/", ".") + ".log"
    if kind == "pair":
        return os.path.dirname(binary).replace("/", "_") + ".log"
    rel, _, engine = binary.partition(" on ")
    return f"{rel.replace('/', '_')}.{engine}.log"


def read_case_counts(run):
    """{(call, test binary): case_counts} from the test logs RUN's calls kept."""
    logs = call_members(run, lambda p: p.startswith("logs/") and p.endswith(".log"))
    return {(call, path[len("logs/"):]): case_counts(data) for (call, path), data in logs.items()}


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


def test_cases(run, calls):
    """{test binary: {call: case_counts}} for the tests each call's logs hold."""
    counts = read_case_counts(run)
    out = {}
    for call in calls:
        for r in rows_of(calls[call]["summary"], call):
            c = counts.get((call, log_name(r["kind"], r["binary"])))
            if r["kind"] == "test" and c is not None:
                out.setdefault(r["binary"], {})[call] = c
    return out


def passed_cases(status_good, cases):
    """Of the tests that passed in some call, the counts of the call where
    the most cases ran: {binary: (call, case_counts)}; a test whose logs
    are not kept is left out."""
    best = {}
    for binary, good_calls in status_good.items():
        options = [(cases[binary][c]["ran"], c) for c in good_calls if c in cases.get(binary, {})]
        if options:
            _, call = max(options)
            best[binary] = (call, cases[binary][call])
    return best


def skipped_lines(best):
    """The tests that passed with cases skipped, most skipped first, apart
    from those that ran every case; each with its counts and its reasons."""
    every = [b for b, (_, c) in best.items() if not c["skipped"] and (c["total"] or c["bench_rows"])]
    some = sorted((b for b, (_, c) in best.items() if c["skipped"]),
                  key=lambda b: (best[b][1]["ran"] / best[b][1]["total"], b))
    most = [b for b in some if 2 * best[b][1]["skipped"] > best[b][1]["total"]]
    out = [f"- of those: {len(every)} ran every case; {len(some)} passed with cases skipped"
           + (f" ({len(most)} of them most of their cases)" if most else "") + (", each with why:" if some else ".")]
    for b in some:
        call, c = best[b]
        why = "; ".join(f"{reason} ({n} {'case' if n == 1 else 'cases'})" for reason, n in c["why"].items())
        flag = ", **most cases skipped**" if b in most else ""
        out.append(f"  - `{b}` ({call}{flag}): {c['ran']} of {c['total']} cases ran, {c['skipped']} skipped. "
                   f"Why: {why}")
    return out


def render(run):
    calls = read_calls(run)
    names = list(calls)
    cases = test_cases(run, calls)
    status = {}  # (kind, binary) -> {call: "status S s"}
    good = {}    # (kind, binary) -> set of calls where it was good
    for call in names:
        for r in rows_of(calls[call]["summary"], call):
            key = (r["kind"], r["binary"])
            # A run repeated in one call (a refusal rerun) shows its last status.
            cell = f"{r['status']} {r['seconds']} s"
            c = cases.get(r["binary"], {}).get(call) if r["kind"] == "test" else None
            if c is not None and cases_text(c):
                cell += f" ({cases_text(c)})"
            status.setdefault(key, {})[call] = cell
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
        if kind == "test":
            out += skipped_lines(passed_cases({k[1]: good[k] for k in keys if good.get(k)}, cases))
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
