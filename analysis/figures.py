"""Figures for papers: one message each, axes with units, the Okabe-Ito
colour-blind-safe palette, written as PDF and SVG (vector) and PNG."""
import math
import os
import statistics

from pick import Summary, first_metric, is_number, select

# Okabe & Ito (2008), "Color Universal Design"; yellow last (faint as a line
# on white).
OKABE_ITO = ["#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7",
             "#000000", "#F0E442"]
LINESTYLES = ["-", "--", ":", "-."]
FORMATS = ("pdf", "svg", "png")


def setup():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from cycler import cycler
    plt.rcParams.update({
        "axes.prop_cycle": cycler(color=OKABE_ITO),
        "font.size": 9, "axes.titlesize": 10, "legend.fontsize": 8,
        "svg.hashsalt": "ddp-pitfalls",  # stable SVG ids across runs
        "pdf.fonttype": 42,  # TrueType: editable text in the PDF
    })
    return plt


def matplotlib_ticker():
    import matplotlib.ticker
    return matplotlib.ticker


def save(plt, fig, outdir, name):
    """Writes NAME.pdf, NAME.svg and NAME.png; returns NAME."""
    fig.tight_layout()
    for ext in FORMATS:
        meta = {"Date": None} if ext == "svg" else ({"CreationDate": None} if ext == "pdf" else None)
        fig.savefig(os.path.join(outdir, f"{name}.{ext}"), dpi=150, metadata=meta)
    plt.close(fig)
    return name


def finish(plt, fig, ax, labels, outdir, name):
    """Axis labels and title (labels: x, y, title), legend, grid; saves."""
    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])
    ax.set_title(labels[2])
    ax.legend()
    ax.grid(True, alpha=0.3)
    return save(plt, fig, outdir, name)


def style(i):
    """Colour and line style of the i-th series (distinct beyond 8 series)."""
    return {"color": OKABE_ITO[i % len(OKABE_ITO)],
            "linestyle": LINESTYLES[(i // len(OKABE_ITO)) % len(LINESTYLES)]}


def bug_figure(plt, bug, spec, recs, outdir):
    """The symptom's size per variant next to the fix's: median (dot) and
    range over configurations (bar) of the headline measure, log scale."""
    metric = first_metric(select(recs, {"kind": "repro", "verdict": "reproduced"}),
                          spec["symptom_metrics"])
    if not metric:
        return None
    rows = []
    for kind, verdicts in (("repro", ["reproduced"]), ("repro", ["control"]),
                           ("fix", ["exact"])):
        g = [x for x in select(recs, {"kind": kind, "verdict": verdicts})
             if x[1].get("expected_verdict") in (None, "exact", "reproduced", "control")]
        for variant in dict.fromkeys(r["variant"] for _, r in g):
            s = Summary(select(g, {"variant": variant}), metric["path"])
            if s.nums:
                k = metric.get("scale", 1)
                label = f"{kind}: {variant}" + (" (control)" if verdicts == ["control"] else "")
                rows.append((label, kind, [abs(x) * k for x in s.nums]))
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(7.2, 0.4 * len(rows) + 1.6))
    colours = {"repro": OKABE_ITO[4], "control": OKABE_ITO[6], "fix": OKABE_ITO[3]}
    for i, (label, kind, vals) in enumerate(rows):
        vals = sorted(vals)
        c = colours["control" if label.endswith("(control)") else kind]
        ax.plot([vals[0], vals[-1]], [i, i], color=c, linewidth=2.5, alpha=0.6)
        ax.plot([vals[len(vals) // 2]], [i], "o", color=c)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r[0] for r in rows])
    ax.invert_yaxis()
    positive = [v for _, _, vals in rows for v in vals if v > 0] or [1.0]
    ax.set_xscale("symlog", linthresh=min(positive))
    ax.set_xlim(0, max(positive) * 3)
    # At most ~8 labelled decades (0 included), however wide the range.
    lo, hi = math.floor(math.log10(min(positive))), math.ceil(math.log10(max(positive)))
    step = max(1, math.ceil((hi - lo + 1) / 8))
    ax.set_xticks([0.0] + [10.0 ** k for k in range(hi, lo - 1, -step)][::-1])
    ax.xaxis.set_minor_locator(matplotlib_ticker().NullLocator())
    unit = metric.get("unit", "") or "dimensionless"
    ax.set_xlabel(f"{metric['label']} ({unit})\ndot: median, bar: range over configurations")
    with_fix = any(kind == "fix" for _, kind, _ in rows)
    ax.set_title(f"{bug}: {metric['label']}" + (", bug vs fix" if with_fix else " by variant"))
    ax.grid(True, axis="x", alpha=0.3)
    return save(plt, fig, outdir, f"{bug}_headline")


def accuracy_spread_figure(plt, bug, recs, outdir):
    """Epoch-to-epoch validation-accuracy sd (pp) by per-rank batch, one line
    per variant (median over world sizes and seeds' records): whether the
    fixes steady the accuracy. For records that carry both fields."""
    series = {}
    for _, r in recs:
        b = r.get("config", {}).get("batch_per_rank")
        sd = r.get("measured", {}).get("val_acc_sd_pp")
        if is_number(b) and is_number(sd) and sd >= 0 and r["verdict"] != "control":
            series.setdefault(f"{r['kind']}: {r['variant']}", {}).setdefault(int(b), []).append(float(sd))
    series = {k: v for k, v in series.items() if len(v) > 1}
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 4))
    for i, (label, pts) in enumerate(sorted(series.items(), key=lambda kv: kv[0].startswith("fix"))):
        bs = sorted(pts)
        ax.plot(bs, [sorted(pts[b])[len(pts[b]) // 2] for b in bs], marker="o", label=label, **style(i))
    ax.set_xscale("log", base=2)
    return finish(plt, fig, ax, ("samples per rank (count, log scale)",
                                 "validation accuracy sd over epochs (pp)\nmedian over world sizes",
                                 f"{bug}: accuracy noise by per-rank batch, bug vs fixes"),
                  outdir, f"{bug}_accuracy_spread")


def padding_figure(plt, name, bench, outdir):
    """bench/padding: time over the equal-size all_gather by skew profile,
    one line per method, at the largest payload of the run."""
    unit = {"KiB": 1024, "MiB": 1048576, "GiB": 1073741824}
    rows = []
    for b in bench["benchmarks"]:
        parts = b["name"].split("/")
        if len(parts) < 6 or parts[0] != "padding" or not is_number(b.get("ratio_over_floor")):
            continue
        size = parts[4]
        nominal = float(size[:-3]) * unit[size[-3:]] if size[-3:] in unit else 0.0
        rows.append((parts[3], parts[5], float(b["ratio_over_floor"]), nominal))
    if not rows:
        return None
    top = max(r[3] for r in rows)
    profiles = list(dict.fromkeys(r[0] for r in rows))
    fig, ax = plt.subplots(figsize=(6.4, 4))
    for i, method in enumerate(dict.fromkeys(r[1] for r in rows)):
        ys = {r[0]: r[2] for r in rows if r[1] == method and r[3] == top}
        ax.plot(profiles, [ys.get(p, float("nan")) for p in profiles], marker="o",
                label=method, **style(i))
    return finish(plt, fig, ax, ("skew profile of the per-rank lengths",
                                 "time / equal-size all_gather time (ratio)",
                                 f"{name}: cost of a variable-length gather, {top / 1048576:g} MiB per rank"),
                  outdir, f"{name}_overhead")


def sync_bn_figure(plt, name, bench, outdir):
    """bench/sync_bn: SyncBN time over local BN by channel count, per N (the
    median over repetitions of each one's median iteration; older files have
    one mean per benchmark)."""
    runs = {}
    for b in bench["benchmarks"]:
        parts = b["name"].split("/")
        if len(parts) < 3 or not parts[1].startswith("C:") or not parts[2].startswith("N:"):
            continue
        t = b.get("median_us", b.get("real_time"))
        if is_number(t):
            runs.setdefault((parts[0], int(parts[1][2:]), int(parts[2][2:])), []).append(float(t))
    times = {k: statistics.median(v) for k, v in runs.items()}
    ns = sorted({k[2] for k in times if k[0] == "sync_bn"})
    if not ns:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 4))
    for i, n in enumerate(ns):
        cs = sorted(c for (kind, c, nn) in times if kind == "sync_bn" and nn == n
                    and times.get(("bn", c, n)))
        ax.plot(cs, [times[("sync_bn", c, n)] / times[("bn", c, n)] for c in cs],
                marker="o", label=f"N={n} samples per rank", **style(i))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    return finish(plt, fig, ax, ("channels C (count, log scale)", "SyncBN time / local BN time (ratio)",
                                 f"{name}: SyncBN costs a multiple of local BN"),
                  outdir, f"{name}_overhead")
