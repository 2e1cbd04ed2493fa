#!/usr/bin/python3
"""bazel run //analysis:report -- [--results DIR] [--out DIR] [--latex]

Turns result records (the JSON arrays that repro/fix binaries write with
--json) and Google Benchmark JSON files (bench/ targets) into a report that
leads with the findings:

  OUT/report.md            per bug: a two-sentence finding with its numbers,
                           one headline table, the figure; the claims ledger;
                           provenance; an appendix with every record
  OUT/<bug>.csv            every field of every record, one column per field
  OUT/claims.csv           the claims ledger
  OUT/bench_<name>.csv     every benchmark row with its counters
  OUT/<figure>.pdf/svg/png figures (Okabe-Ito palette, axes with units)
  OUT/latex/*.tex          with --latex: booktabs headline tables and ledger

The words and the fields each finding reads come from repro/<bug>/report.json, the
claims from analysis/claims.json; every number comes from the records.
Missing, malformed or unreadable input is an error naming the file (exit 2,
one line), and nothing is half-written: the report is built in a hidden
temporary folder and put in place only when complete. The report deletes
nothing it did not write (analysis/outdir.py): --out may not be or contain
--results, and an existing --out is replaced (atomically) only when it is a
previous report holding nothing else. Ctrl-C (exit 130) and SIGTERM (exit
143) leave --out as it was.
"""
import argparse
import json
import os
import signal
import stat
import sys

import figures
import findings
import git_age
import ledger
import ledger_section
import outdir
import registry
import outdir as outdir_mod  # build()'s parameter is also called outdir
import summary
import tables
from pick import Summary, first_metric, num, select
from records import InputError, check_benchmarks, check_headline_types, check_records

HERE = os.path.dirname(os.path.abspath(__file__))
# Registered order (pairs.bzl): the report follows it; unknown bugs follow.
BUG_ORDER = registry.names()  # the pair registry's order (pairs.bzl)


# Limits on an input file: the largest record file is ~1.5 MB; nesting
# deeper than this is no record (and would exhaust Python's recursion).
MAX_INPUT_BYTES = 256 << 20
MAX_DEPTH = 64


def depth(data):
    """How deeply arrays and objects nest in `data`, without recursion."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (list, dict)):
            deepest = max(deepest, d)
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


def load(path):
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{path}: not a regular file")
        if st.st_size > MAX_INPUT_BYTES:
            raise InputError(f"{path}: {st.st_size} bytes, more than the "
                             f"{MAX_INPUT_BYTES >> 20} MiB an input may have")
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}")
    except RecursionError:
        raise InputError(f"{path}: nested too deeply to be a record file")
    except ValueError as e:
        raise InputError(f"{path}: not valid JSON: {e}")
    if depth(data) > MAX_DEPTH:
        raise InputError(f"{path}: nested more than {MAX_DEPTH} levels deep; not a record file")
    if isinstance(data, dict) and "benchmarks" in data:
        check_benchmarks(path, data)
        return "benchmark", data
    if isinstance(data, list):
        check_records(path, data)
        return "records", data
    raise InputError(f"{path}: neither a JSON array of result records nor "
                     "Google Benchmark JSON (an object with 'benchmarks')")


def named_records(path):
    """The records of a file a claim names under the results folder (the
    ledger's alone: no table reads it)."""
    kind, data = load(path)
    if kind != "records":
        raise InputError(f"{path}: a claim names it as a record file, but it holds benchmarks")
    return data


def load_spec(name):
    with open(os.path.join(HERE, name)) as f:
        return json.load(f)


def short_commit(commit):
    """The first 12 hex digits, keeping "+dirty": uncommitted changes ran."""
    return commit[:12] + ("+dirty" if commit.endswith("+dirty") else "")


def provenance_rows(files):
    rows = []
    for path, data in files:
        if isinstance(data, list):
            provs = {json.dumps(r.get("provenance", {}), sort_keys=True) for r in data}
            p = data[0].get("provenance", {}) if data else {}
            backends = "/".join(sorted({r["backend"] for r in data}))
            rows.append([os.path.basename(path), str(len(data)),
                         short_commit(str(p.get("commit", "?"))),
                         str(p.get("date", "?")), str(p.get("host", "?")), backends,
                         "" if len(provs) <= 1 else f"{len(provs)} provenances"])
        else:
            c = data.get("context", {})
            rows.append([os.path.basename(path), f"{len(data['benchmarks'])} benchmarks",
                         short_commit(str(c.get("ddp_commit", c.get("commit", "-")))),
                         str(c.get("date", "?")),
                         str(c.get("host_name", "?")), str(c.get("ddp_backend", "-")), ""])
    return rows


def record_headline(spec, r):
    """(label, value) of the measure the bug's headline uses for this row."""
    metrics = spec.get("fix_metrics", []) if r["kind"] == "fix" else (
        spec.get("symptom_metrics", []) + spec.get("symptom_extra", []))
    m = first_metric([("", r)], metrics)
    if not m:
        return "", ""
    v = Summary([("", r)], m["path"])
    if v.bools and not v.nums:
        return m["label"], "yes" if v.bools[0] else "no"
    return m["label"] + (f" ({m['unit']})" if m.get("unit") else ""), num(v.nums[0] * m.get("scale", 1))


def appendix_rows(spec, recs):
    rows = []
    for path, r in recs:
        label, val = record_headline(spec, r)
        config = "; ".join(f"{k}={tables.cell(v, 40)}" for k, v in r["config"].items())
        note = r.get("error", "") if r["verdict"] == "error" else ""
        rows.append([r["kind"], r["variant"], r["backend"], str(r["world_size"]),
                     tables.cell(config, 120), f"{label}: {val}" if label else "",
                     r["verdict"] + (f": {tables.cell(note, 80)}" if note else ""),
                     os.path.basename(path)])
    return rows


def record_csv(path, recs):
    cols = {}
    for _, r in recs:
        for section in ("config", "measured", "reference"):
            for k in tables.flatten(r[section], f"{section}."):
                cols[k] = True
    header = ["kind", "variant", "backend", "world_size", "verdict"] + list(cols) + [
        "error", "file", "commit", "date", "host"]
    rows = []
    for p, r in recs:
        flat = {}
        for section in ("config", "measured", "reference"):
            flat.update(tables.flatten(r[section], f"{section}."))
        prov = r.get("provenance", {})
        rows.append([r["kind"], r["variant"], r["backend"], r["world_size"], r["verdict"]]
                    + [tables.csv_cell(flat.get(c)) for c in cols]
                    + [r.get("error", ""), os.path.basename(p), prov.get("commit", ""),
                       prov.get("date", ""), prov.get("host", "")])
    tables.write_csv(path, header, rows)


def bench_csv(path, bench):
    std = {"name", "run_name", "run_type", "repetitions", "repetition_index", "threads",
           "iterations", "real_time", "cpu_time", "time_unit", "family_index",
           "per_family_instance_index"}
    counters = list(dict.fromkeys(k for b in bench["benchmarks"] for k in b if k not in std))
    header = ["name", "run_type", "iterations", "real_time", "cpu_time", "time_unit"] + counters
    rows = [[tables.csv_cell(b.get(k)) for k in header] for b in bench["benchmarks"]]
    tables.write_csv(path, header, rows)


def build(results_dir, outdir, latex):
    if not os.path.isdir(results_dir):
        raise InputError(f"{results_dir}: no such results folder")
    paths = sorted(os.path.join(results_dir, f) for f in os.listdir(results_dir)
                   if f.endswith(".json") and f != git_age.MANIFEST)
    if not paths:
        raise InputError(f"{results_dir}: no .json files (run `bazel run //:suite` first)")
    files = [(p, load(p)[1]) for p in paths]
    recs = [(p, r) for p, d in files if isinstance(d, list) for r in d]
    benches = [(p, d) for p, d in files if isinstance(d, dict)]
    bugs_spec = registry.findings_specs()
    check_headline_types([(p, i, r) for p, d in files if isinstance(d, list)
                          for i, r in enumerate(d)], bugs_spec)
    claims, sources, own = ledger.load(os.path.join(HERE, "claims.json"), with_own=True)
    present = {r["bug"] for _, r in recs}
    bugs = [b for b in BUG_ORDER if b in present] + sorted(present - set(BUG_ORDER))
    plt = figures.setup()
    if latex:
        os.makedirs(os.path.join(outdir, "latex"))

    full = ({str(r.get("provenance", {}).get("commit", "?")) for _, r in recs} |
            {str(b.get("context", {}).get("ddp_commit", "?")) for _, b in benches})
    commits = sorted({short_commit(str(r.get("provenance", {}).get("commit", "?")))
                      for _, r in recs})
    md = ["# ddp-pitfalls: findings", "",
          tables.para(f"Generated by `bazel run //analysis:report -- --results {os.path.basename(results_dir)}"
               f" --out <dir>` from {len(paths)} file(s): {len(recs)} result records and "
               f"{len(benches)} benchmark file(s), recorded at commit(s) {', '.join(commits)}; "
               f"{git_age.sentence(full, results_dir)}. {git_age.manifest_sentence(results_dir)}"
               "Each finding's numbers are read from the records named under it; the full "
               "per-record tables are CSV files next to this report and in "
               "[appendix.md](appendix.md). How to cite a result: README.md, \"How to cite\"."), ""]
    md += ["## Summary", ""] + summary.table(bugs, bugs_spec, recs, benches)
    md += [summary.scope(recs, benches, results_dir), ""]
    md += ["## Contents", ""] + [f"{i}. [{bugs_spec.get(b, {}).get('title', b)}](#{b})"
                                  for i, b in enumerate(bugs, 1)]
    md += [f"{len(bugs) + 1}. [Claims ledger](#claims-ledger)",
           f"{len(bugs) + 2}. [Benchmarks](#benchmarks)",
           f"{len(bugs) + 3}. [Provenance](#provenance)",
           f"{len(bugs) + 4}. [Appendix: every record](appendix.md) (its own file)", ""]
    texts = []
    for i, bug in enumerate(bugs, 1):
        spec = bugs_spec.get(bug, {"title": bug, "symptom": bug, "fix": "The fix",
                                   "symptom_metrics": [], "fix_metrics": []})
        mine = select(recs, {"bug": bug})
        text, _, _ = findings.finding(spec, mine, benches)
        rows = findings.headline_rows(spec, mine)
        seed = f", seed {spec['seed']}" if spec.get("seed") else ""
        md += [f'<a id="{bug}"></a>', f"## {i}. {spec['title']} (`{bug}`{seed})", "",
               tables.para(f"**Finding.** {text}"), "",
               tables.markdown(findings.HEADLINE_HEADER, rows), ""]
        fig = figures.bug_figure(plt, bug, spec, mine, outdir)
        extra = figures.accuracy_spread_figure(plt, bug, mine, outdir)
        for name in filter(None, (fig, extra)):
            md += [f"![{bug}: {name}]({name}.png)", "",
                   f"Figure `{name}`: [PDF]({name}.pdf), [SVG]({name}.svg), [PNG]({name}.png).", ""]
        files_here = sorted({os.path.basename(p) for p, _ in mine})
        md += [tables.para(f"Records: {', '.join(f'`{f}`' for f in files_here)}. Every record: "
                    f"[{bug}.csv]({bug}.csv), appendix [A.{i}](appendix.md#a-{bug})."), ""]
        record_csv(outdir_mod.inside(outdir, f"{bug}.csv"), mine)
        texts.append((bug, text))
        if latex:
            with open(outdir_mod.inside(outdir, os.path.join("latex", f"{bug}.tex")), "w") as f:
                f.write(tables.latex(findings.HEADLINE_HEADER, rows,
                                     f"{spec['title']}: headline numbers", f"tab:{bug}",
                                     [None, "2.6cm", "2.6cm", "3cm", None, None, None, None]))

    named, aside = ledger.read_named(claims + own, results_dir, named_records)
    ledger_md, ledger_rows, failed = ledger_section.section(claims, sources, recs, full=False,
                                                            named=named, aside=aside, own=own,
                                                            results_dir=results_dir)
    md += ledger_md
    with open(os.path.join(outdir, "ledger.md"), "w") as f:
        full_md = ledger_section.section(claims, sources, recs, named=named, aside=aside,
                                         own=own, results_dir=results_dir)[0]
        f.write("\n".join(["# ddp-pitfalls: the claims ledger in full", "",
                           "The findings: [report.md](report.md)."] + full_md[1:]) + "\n")
    tables.write_csv(os.path.join(outdir, "claims.csv"), ledger.HEADER, ledger_rows)
    if latex:
        with open(os.path.join(outdir, "latex", "claims.tex"), "w") as f:
            f.write(tables.latex(["bug", "claim", "verdict", "measured"],
                                 [[r[0], r[2], r[3], tables.cell(r[4], 120)] for r in ledger_rows],
                                 "Claims of the source posts and our verdicts", "tab:claims",
                                 [None, "5cm", None, "6cm"]))

    md += ["## Benchmarks", ""]
    for path, bench in benches:
        name = os.path.splitext(os.path.basename(path))[0]
        ctx = bench.get("context", {})
        bench_csv(outdir_mod.inside(outdir, f"{name}.csv"), bench)
        md += [f"### {name}", "",
               tables.para(f"{len(bench['benchmarks'])} rows from `{os.path.basename(path)}` (host "
                    f"{ctx.get('host_name', '?')}, {ctx.get('num_cpus', '?')} CPUs, "
                    f"{ctx.get('date', '?')}); every row: [{name}.csv]({name}.csv)."), ""]
        for fig in (figures.padding_figure, figures.sync_bn_figure):
            done = fig(plt, name, bench, outdir)
            if done:
                md += [f"![{name}]({done}.png)", "",
                       f"Figure `{done}`: [PDF]({done}.pdf), [SVG]({done}.svg), [PNG]({done}.png).", ""]

    md += ["## Provenance", "",
           tables.markdown(["file", "rows", "commit", "date", "host", "backend", "note"],
                           provenance_rows(files)), ""]
    appendix = ["# ddp-pitfalls: every record", "",
                tables.para("One row per record: its configuration, the headline measure and the verdict. "
                     "All fields (training curves included) are in the CSV files and the JSON "
                     "records. The findings: [report.md](report.md)."), ""]
    for i, bug in enumerate(bugs, 1):
        spec = bugs_spec.get(bug, {})
        appendix += [f'<a id="a-{bug}"></a>', f"## A.{i} {bug}", "",
                     tables.markdown(["kind", "variant", "backend", "W", "config", "headline measure",
                                      "verdict", "record"],
                                     appendix_rows(spec, select(recs, {"bug": bug}))), ""]
    with open(os.path.join(outdir, "appendix.md"), "w") as f:
        f.write("\n".join(appendix) + "\n")
    with open(os.path.join(outdir, "report.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    return texts, failed


class Terminated(BaseException):
    """SIGTERM or SIGHUP: unwinds like Ctrl-C so the staging folder goes."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


# Signals received, in order. A handler's exception is swallowed when the
# signal lands while Python runs a weakref or __del__ callback (matplotlib's
# transform nodes have such callbacks; seen: SIGTERM mid-report, exit 0 and
# "Exception ignored in: <function TransformNode...>"), so the handlers also
# record the signal, the swallowed exception is kept quiet
# (_quiet_unraisable), and main() raises it again after the work
# (raise_pending).
_PENDING = []


def _terminate(signum, _frame):
    _PENDING.append(signum)
    raise Terminated(signum)


def _interrupt(signum, _frame):
    _PENDING.append(signum)
    raise KeyboardInterrupt


def _quiet_unraisable(unraisable):
    if isinstance(unraisable.exc_value, (Terminated, KeyboardInterrupt)) and _PENDING:
        return  # raise_pending() raises it where it can unwind
    sys.__unraisablehook__(unraisable)


def install_signal_handlers():
    """SIGINT, SIGTERM and SIGHUP unwind main() even when they land inside a
    callback that swallows exceptions."""
    signal.signal(signal.SIGINT, _interrupt)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _terminate)
    sys.unraisablehook = _quiet_unraisable


def raise_pending():
    """Raises the first signal received, if any (one a callback swallowed)."""
    if _PENDING:
        if _PENDING[0] == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(_PENDING[0])


def write_error(exc):
    """The OSError with an errno somewhere in an exception's chain (its
    context or cause), or None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno:
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default="results/latest",
                    help="folder of result records and benchmark JSON (default results/latest)")
    ap.add_argument("--out", default="results/latest-report",
                    help="output folder (default results/latest-report): a new folder or a "
                         "previous report; never the --results folder, one that contains it, "
                         "or one inside it")
    ap.add_argument("--latex", action="store_true",
                    help="also write booktabs LaTeX tables to OUT/latex/")
    args = ap.parse_args(argv)
    here = os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd())
    results = os.path.normpath(os.path.join(here, args.results))
    out = os.path.normpath(os.path.join(here, args.out))
    parent = os.path.dirname(out) or "."
    try:
        outdir.check_target(results, out)
    except outdir.OutError as e:
        print(f"report: {e}", file=sys.stderr)
        return 2
    if not os.path.isdir(results):
        # Before anything is created: a missing input leaves no folder behind.
        print(f"report: {results}: no such results folder", file=sys.stderr)
        return 2
    install_signal_handlers()
    tmp = None
    made = []
    try:
        made = outdir.make_parents(parent)
        tmp = outdir.stage(parent)
        _, failed = build(results, tmp, args.latex)
        raise_pending()
        # No signal between marking the report complete and the exchange.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
        outdir.commit(tmp, out)
        tmp = None
    except InputError as e:
        print(f"report: {e}", file=sys.stderr)
        return 2
    except outdir.OutError as e:
        print(f"report: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"report: cannot write {e.filename or parent}: {e.strerror}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - only to find a write error underneath
        # A library may fail on top of a full disk (matplotlib's PDF writer
        # raises AttributeError while cleaning up after ENOSPC): the write
        # error in the chain is the cause to report; anything else is a bug.
        cause = write_error(e)
        if cause is None:
            raise
        print(f"report: cannot write {cause.filename or parent}: {cause.strerror}",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("report: interrupted; --out left as it was", file=sys.stderr)
        return 130
    except Terminated as e:
        print(f"report: terminated by signal {e.signum}; --out left as it was", file=sys.stderr)
        return 128 + e.signum
    finally:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
        if tmp:
            outdir.discard(tmp)
            outdir.remove_created(made)
    for c in failed:
        print(f"report: claim no longer supported by the records: {c['bug']}: {c['claim']}",
              file=sys.stderr)
    print(f"report: wrote {out}/report.md")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        print("report: interrupted; --out left as it was", file=sys.stderr)
        sys.exit(130)
