#!/usr/bin/python3
"""bazel run //analysis:report -- [--results DIR] [--out DIR]

Turns result records (the JSON arrays that repro/fix binaries write with
--json) and Google Benchmark JSON files (bench/ targets with
--benchmark_out=...) into what write-ups cite:

  OUT/report.md        one table per bug and per benchmark; every row names
                       the record it came from (file, commit, date, host)
  OUT/<table>.csv      the same tables as CSV
  OUT/<figure>.png/svg figures (error by variant and world size per bug;
                       time per benchmark)

Missing or malformed input is an error naming the file (exit 2), and nothing
is half-written: the report is built in a temporary folder and renamed into
place only when complete.
"""
import argparse
import csv
import json
import os
import shutil
import sys
import tempfile

from records import InputError, check_benchmarks, check_records


def fmt(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(",", ":"))
    return str(v)


def flat(d):
    """'k=v; k=v' for a flat dict (nested values as compact JSON)."""
    if not isinstance(d, dict):
        return fmt(d)
    return "; ".join(f"{k}={fmt(v)}" for k, v in d.items())


def load(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}")
    except ValueError as e:
        raise InputError(f"{path}: not valid JSON: {e}")
    if isinstance(data, dict) and "benchmarks" in data:
        check_benchmarks(path, data)
        return "benchmark", data
    if isinstance(data, list):
        check_records(path, data)
        return "records", data
    raise InputError(f"{path}: neither a JSON array of result records nor "
                     "Google Benchmark JSON (an object with 'benchmarks')")


def provenance_ref(path, r):
    p = r.get("provenance", {})
    commit = str(p.get("commit", "?"))
    short = commit[:10] + ("+dirty" if commit.endswith("+dirty") else "")
    return f"{os.path.basename(path)} @ {short}, {p.get('date', '?')}, {p.get('host', '?')}"


def headline_error(r):
    m = r.get("measured", {})
    for key in ("error", "abs_error", "rel_error", "max_abs_error", "max_rel_error"):
        v = m.get(key) if isinstance(m, dict) else None
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return key, float(v)
    return None, None


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        out.append("| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |")
    return "\n".join(out)


def save_figure(plt, fig, outdir, name):
    """Writes NAME.png and NAME.svg and closes the figure."""
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(outdir, f"{name}.{ext}"), dpi=120)
    plt.close(fig)


def figure_bug(plt, bug, recs, outdir):
    """Headline error by variant (one line per variant) over world size."""
    series = {}
    for path, r in recs:
        key, err = headline_error(r)
        if key is None:
            continue
        series.setdefault(f"{r['kind']}:{r['variant']}", []).append(
            (int(r["world_size"]), abs(err)))
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(7, 4))
    for label, pts in sorted(series.items()):
        by_w = {}
        for w, e in pts:
            by_w.setdefault(w, []).append(e)
        ws = sorted(by_w)
        ax.plot(ws, [max(by_w[w]) for w in ws], marker="o", label=label)
    ax.set_yscale("symlog", linthresh=1e-12)
    ax.set_xlabel("world size W")
    ax.set_ylabel("max |error| over configurations")
    ax.set_title(f"{bug}: error against the one-process reference")
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)
    save_figure(plt, fig, outdir, f"{bug}_error")
    return f"{bug}_error"


def figure_accuracy_spread(plt, bug, recs, outdir):
    """Validation-accuracy spread (epoch to epoch, pp) by per-rank batch, one
    line per variant and world size: for records that carry both."""
    series = {}
    for _, r in recs:
        b = r.get("config", {}).get("batch_per_rank")
        sd = r.get("measured", {}).get("val_acc_sd_pp")
        if isinstance(b, (int, float)) and isinstance(sd, (int, float)) and sd >= 0:
            series.setdefault(f"{r['variant']} W={r['world_size']}", {})[int(b)] = float(sd)
    series = {k: v for k, v in series.items() if len(v) > 1}
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.set_prop_cycle(color=plt.cm.tab20.colors)  # more lines than 10 colours
    for label, pts in sorted(series.items()):
        bs = sorted(pts)
        ax.plot(bs, [pts[b] for b in bs], marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("samples per rank")
    ax.set_ylabel("validation accuracy sd over epochs (pp)")
    ax.set_title(f"{bug}: accuracy spread by per-rank batch")
    ax.legend(fontsize=6, ncol=2)
    ax.grid(True, alpha=0.3)
    save_figure(plt, fig, outdir, f"{bug}_accuracy_spread")
    return f"{bug}_accuracy_spread"


def figure_bench(plt, name, bench, outdir):
    rows = [b for b in bench["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(8, max(3, 0.25 * len(rows))))
    labels = [b["name"] for b in rows]
    times = [float(b.get("real_time", 0)) for b in rows]
    ax.barh(range(len(rows)), times)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=6)
    ax.set_xscale("log")
    ax.set_xlabel(f"real time per iteration ({rows[0].get('time_unit', 'ns')})")
    ax.set_title(name)
    save_figure(plt, fig, outdir, f"{name}_time")
    return f"{name}_time"


def figure_padding(plt, name, bench, outdir):
    """bench/padding: time over the floor by skew profile, one line per method
    (largest payload of the run)."""
    rows = []
    for b in bench["benchmarks"]:
        parts = b["name"].split("/")
        if len(parts) < 6 or parts[0] != "padding" or "ratio_over_floor" not in b:
            continue
        unit = {"KiB": 1024, "MiB": 1048576, "GiB": 1073741824}
        label = parts[4]
        nominal = float(label[:-3]) * unit[label[-3:]] if label[-3:] in unit else 0.0
        rows.append((parts[3], label, parts[5], float(b["ratio_over_floor"]), nominal))
    if not rows:
        return None
    top = max(r[4] for r in rows)  # the largest nominal payload per rank
    profiles = list(dict.fromkeys(r[0] for r in rows))
    fig, ax = plt.subplots(figsize=(7, 4))
    for method in dict.fromkeys(r[2] for r in rows):
        ys = {r[0]: r[3] for r in rows if r[2] == method and r[4] == top}
        ax.plot(profiles, [ys.get(p, float("nan")) for p in profiles], marker="o", label=method)
    ax.set_xlabel("skew profile")
    ax.set_ylabel("time / equal-size all_gather (floor)")
    ax.set_title(f"{name}: padding overhead by skew, {top / 1048576:g} MiB per rank")
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)
    save_figure(plt, fig, outdir, f"{name}_overhead")
    return f"{name}_overhead"


def figure_sync_bn(plt, name, bench, outdir):
    """bench/sync_bn: SyncBN time over local BN by channel count, per N."""
    times = {}
    for b in bench["benchmarks"]:
        parts = b["name"].split("/")
        if len(parts) < 3 or not parts[1].startswith("C:") or not parts[2].startswith("N:"):
            continue
        times[(parts[0], int(parts[1][2:]), int(parts[2][2:]))] = float(b["real_time"])
    ns = sorted({k[2] for k in times if k[0] == "sync_bn"})
    if not ns:
        return None
    fig, ax = plt.subplots(figsize=(7, 4))
    for n in ns:
        cs = sorted(c for (kind, c, nn) in times if kind == "sync_bn" and nn == n
                    and ("bn", c, n) in times)
        ax.plot(cs, [times[("sync_bn", c, n)] / times[("bn", c, n)] for c in cs],
                marker="o", label=f"N={n} per rank")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("channels C")
    ax.set_ylabel("SyncBN time / local BN time")
    ax.set_title(f"{name}: SyncBN overhead by channels")
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)
    save_figure(plt, fig, outdir, f"{name}_overhead")
    return f"{name}_overhead"


def build(results_dir, outdir):
    if not os.path.isdir(results_dir):
        raise InputError(f"{results_dir}: no such results folder")
    files = sorted(os.path.join(results_dir, f) for f in os.listdir(results_dir)
                   if f.endswith(".json"))
    if not files:
        raise InputError(f"{results_dir}: no .json files (run `bazel run //:suite` first)")
    by_bug, benches = {}, []
    for path in files:
        kind, data = load(path)
        if kind == "records":
            for r in data:
                by_bug.setdefault(r["bug"], []).append((path, r))
        else:
            benches.append((path, data))

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    md = ["# ddp-pitfalls report", "",
          f"Generated by `bazel run //analysis:report` from {len(files)} file(s) in "
          f"`{results_dir}`. Every row names the record file, commit, date and host "
          "it came from.", ""]
    header = ["kind", "variant", "backend", "W", "config", "reference", "measured",
              "error", "verdict", "record"]
    for bug in sorted(by_bug):
        rows = []
        for path, r in by_bug[bug]:
            _, err = headline_error(r)
            rows.append([r["kind"], r["variant"], r["backend"], r["world_size"],
                         flat(r["config"]), flat(r["reference"]), flat(r["measured"]),
                         "" if err is None else fmt(err), r["verdict"],
                         provenance_ref(path, r)])
        write_csv(os.path.join(outdir, f"{bug}.csv"), header, rows)
        md += [f"## {bug}", "", md_table(header, rows), ""]
        for figure in (figure_bug, figure_accuracy_spread):
            fig = figure(plt, bug, by_bug[bug], outdir)
            if fig:
                md += [f"![{bug}]({fig}.png)", ""]
    for path, bench in benches:
        name = os.path.splitext(os.path.basename(path))[0]
        ctx = bench.get("context", {})
        bh = ["benchmark", "real_time", "cpu_time", "unit", "iterations", "counters"]
        std = {"name", "run_name", "run_type", "repetitions", "repetition_index",
               "threads", "iterations", "real_time", "cpu_time", "time_unit",
               "family_index", "per_family_instance_index", "aggregate_name",
               "aggregate_unit", "label"}
        rows = [[b["name"], fmt(b.get("real_time", "")), fmt(b.get("cpu_time", "")),
                 b.get("time_unit", ""), b.get("iterations", ""),
                 flat({k: v for k, v in b.items() if k not in std})]
                for b in bench["benchmarks"]]
        write_csv(os.path.join(outdir, f"bench_{name}.csv"), bh, rows)
        md += [f"## benchmark: {name}", "",
               f"Host {ctx.get('host_name', '?')}, {ctx.get('num_cpus', '?')} CPUs, "
               f"date {ctx.get('date', '?')}; file `{os.path.basename(path)}`.", "",
               md_table(bh, rows), ""]
        for figure in (figure_bench, figure_padding, figure_sync_bn):
            fig = figure(plt, name, bench, outdir)
            if fig:
                md += [f"![{name}]({fig}.png)", ""]
    with open(os.path.join(outdir, "report.md"), "w") as f:
        f.write("\n".join(md) + "\n")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default="results/latest",
                    help="folder of result records and benchmark JSON (default results/latest)")
    ap.add_argument("--out", default="report", help="output folder (default report)")
    args = ap.parse_args(argv)
    here = os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd())
    results = os.path.join(here, args.results)
    out = os.path.normpath(os.path.join(here, args.out))
    parent = os.path.dirname(out) or "."
    try:
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".report-", dir=parent)
    except OSError as e:
        print(f"report: cannot write under {parent}: {e.strerror}", file=sys.stderr)
        return 2
    try:
        build(results, tmp)
    except InputError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        print(f"report: {e}", file=sys.stderr)
        return 2
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = None
    if os.path.exists(out):
        old = out + ".old"
        shutil.rmtree(old, ignore_errors=True)
        os.rename(out, old)
    os.rename(tmp, out)
    if old:
        shutil.rmtree(old, ignore_errors=True)
    print(f"report: wrote {out}/report.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
