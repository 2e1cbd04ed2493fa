"""Figures for papers: one message each, axes with units, the Okabe-Ito
colour-blind-safe palette, written as PDF and SVG (vector) and PNG."""
import math
import os
import statistics

from outdir import inside
from pair_render.small_batch_bn import figure1_series
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
        fig.savefig(inside(outdir, f"{name}.{ext}"), dpi=150, metadata=meta)
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


def spread(values):
    """(median, min, max) of a list of numbers."""
    return statistics.median(values), min(values), max(values)


def errorbar(ax, xs, points, offset=1.0, **kw):
    """Dots at the medians, bars from min to max; points: [(median, min, max)]."""
    ys = [m for m, _, _ in points]
    err = [[m - lo for m, lo, _ in points], [hi - m for m, _, hi in points]]
    return ax.errorbar([x * offset for x in xs] if offset != 1.0 else xs, ys, yerr=err,
                       marker="o", capsize=3, **kw)


def oversubscribed(bench):
    """The context's oversubscription note ('4 ranks on 2 CPUs'), or ''."""
    note = str(bench.get("context", {}).get("ddp_oversubscribed", ""))
    if not note.startswith("yes"):
        return ""
    return note[len("yes"):].lstrip(": ") or "yes"


def mark_oversubscribed(fig, ax, bench):
    """Oversubscribed runs (more ranks than CPUs) say so on the figure itself:
    their times include waiting for a CPU."""
    note = oversubscribed(bench)
    if note:
        ax.text(0.5, 0.5, "OVERSUBSCRIBED", transform=ax.transAxes, ha="center", va="center",
                fontsize=28, color=OKABE_ITO[4], alpha=0.18, rotation=20, zorder=0)
        fig.text(0.01, 0.005, f"Oversubscribed run: {note}; times include waiting for a CPU.",
                 fontsize=7, color=OKABE_ITO[4], ha="left", va="bottom")
    return note


def style(i):
    """Colour and line style of the i-th series (distinct beyond 8 series)."""
    return {"color": OKABE_ITO[i % len(OKABE_ITO)],
            "linestyle": LINESTYLES[(i // len(OKABE_ITO)) % len(LINESTYLES)]}


def bug_figure(plt, bug, spec, recs, outdir):
    """The symptom's size per variant next to the fix's: median (dot) and
    range over configurations (bar) of the headline measure, log scale.
    A spec with "figure": "by_batch" gets small_batch_figure instead."""
    if spec.get("figure") == "by_batch":
        return small_batch_figure(plt, bug, recs, outdir)
    # A pair with no reproduced row yet (a scaffold's control) still gets
    # its figure, from the metric its repro rows carry.
    metric = first_metric(select(recs, {"kind": "repro", "verdict": "reproduced"}),
                          spec["symptom_metrics"]) or first_metric(
                              select(recs, {"kind": "repro"}), spec["symptom_metrics"])
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


def small_batch_figure(plt, bug, recs, outdir):
    """small_batch_bn: validation error against the per-rank batch, one line
    per norm (the README's figure1 table, from the same function), SyncBN at
    the same global batch as the reference line; a log2 batch axis (every
    batch >= 1, so no zero on it) and a linear error axis."""
    series = figure1_series([r for _, r in recs if r.get("kind") == "repro"])
    if not series:
        return None
    batches = list(series)
    fig, ax = plt.subplots(figsize=(6.4, 4))
    sync = [b for b in batches if "SyncBN" in series[b]]
    if sync:
        ys = [100 * series[b]["SyncBN"][0] for b in sync]
        es = [100 * series[b]["SyncBN"][1] for b in sync]
        ax.errorbar(sync, ys, yerr=es, color=OKABE_ITO[6], linestyle="--", marker="s",
                    capsize=3, linewidth=1.5, zorder=3,
                    label="SyncBN, same global batch (reference, one process)")
    for i, name in enumerate(("per-rank BN", "GroupNorm", "PreciseBN")):
        xs = [b for b in batches if name in series[b]]
        if not xs:
            continue
        ax.errorbar(xs, [100 * series[b][name][0] for b in xs],
                    yerr=[100 * series[b][name][1] for b in xs], marker="o", capsize=3,
                    label=name, color=OKABE_ITO[(4, 2, 0)[i]])
    ax.set_xscale("log", base=2)
    ax.set_xticks(batches)
    ax.set_xticklabels([str(b) for b in batches])
    ax.xaxis.set_minor_locator(matplotlib_ticker().NullLocator())
    ax.invert_xaxis()  # as the GroupNorm paper's Figure 1: the batch shrinks to the right
    first = series[batches[0]]
    world = first["global"] // batches[0] if first.get("global") else None
    seeds = first.get("seeds", "?")
    return finish(plt, fig, ax, (
        f"samples per rank (log scale; W = {world} ranks)" if world else "samples per rank (log scale)",
        f"validation error (%)\nmean over {seeds} seeds, bars: 95% interval",
        f"{bug}: error against the per-rank batch, SyncBN as reference"), outdir, f"{bug}_headline")


def payload_of(size):
    unit = {"KiB": 1024, "MiB": 1048576, "GiB": 1073741824}
    return float(size[:-3]) * unit[size[-3:]] if size[-3:] in unit else 0.0


def padding_points(bench):
    """{method: {profile: (median, min, max)}} of the per-repetition ratio over
    the floor (each repetition's own ratio, as bench/tables.py's table) at the
    largest payload of the run, and that payload in bytes."""
    rows = []
    for b in bench["benchmarks"]:
        parts = b["name"].split("/")
        if len(parts) < 6 or parts[0] != "padding" or not is_number(b.get("ratio_over_floor")):
            continue
        rows.append((parts[3], parts[5], float(b["ratio_over_floor"]), payload_of(parts[4])))
    if not rows:
        return {}, 0.0
    top = max(r[3] for r in rows)
    reps = {}
    for profile, method, ratio, payload in rows:
        if payload == top:
            reps.setdefault(method, {}).setdefault(profile, []).append(ratio)
    return {m: {p: spread(v) for p, v in by.items()} for m, by in reps.items()}, top


def padding_figure(plt, name, bench, outdir):
    """bench/padding: time over the fastest equal-size gather (the floor) by
    skew profile, one line per method, at the largest payload of the run:
    the median over the repetitions, bars from the smallest to the largest."""
    points, top = padding_points(bench)
    if not points:
        return None
    profiles = list(dict.fromkeys(p for by in points.values() for p in by))
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    n = len(points)
    for i, (method, by) in enumerate(points.items()):
        xs = [k + 0.06 * (i - (n - 1) / 2) for k, p in enumerate(profiles) if p in by]
        errorbar(ax, xs, [by[p] for p in profiles if p in by], label=method, **style(i))
    ax.set_xticks(range(len(profiles)))
    ax.set_xticklabels(profiles)
    note = mark_oversubscribed(fig, ax, bench)
    return finish(plt, fig, ax, ("skew profile of the per-rank lengths",
                                 "time / floor time (ratio)\nmedian over repetitions, bars: min to max",
                                 f"{name}: cost of a variable-length gather, {top / 1048576:g} MiB per rank"
                                 + (f"\noversubscribed: {note}" if note else "")),
                  outdir, f"{name}_overhead")


def sync_bn_points(bench):
    """{N: {C: (median, min, max)}} of SyncBN time over local BN time, each
    ratio within one repetition (as bench/tables.py's table); older files with
    one row per benchmark give one ratio per shape."""
    times = {}
    for b in bench["benchmarks"]:
        parts = b["name"].split("/")
        if len(parts) < 3 or not parts[1].startswith("C:") or not parts[2].startswith("N:"):
            continue
        t = b.get("median_us", b.get("real_time"))
        rep = next((int(x[4:]) for x in parts if x.startswith("rep:")), 0)
        if is_number(t):
            times[(parts[0], int(parts[1][2:]), int(parts[2][2:]), rep)] = float(t)
    out = {}
    for (kind, c, n, rep), t in times.items():
        bn = times.get(("bn", c, n, rep))
        if kind == "sync_bn" and bn:
            out.setdefault(n, {}).setdefault(c, []).append(t / bn)
    return {n: {c: spread(v) for c, v in sorted(by.items())} for n, by in sorted(out.items())}


def sync_bn_figure(plt, name, bench, outdir):
    """bench/sync_bn: SyncBN time over local BN by channel count, per N: the
    median over repetitions of the ratio within each, bars min to max."""
    points = sync_bn_points(bench)
    if not points:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for i, (n, by) in enumerate(points.items()):
        cs = list(by)
        errorbar(ax, cs, [by[c] for c in cs], offset=1 + 0.04 * (i - (len(points) - 1) / 2),
                 label=f"N={n} samples per rank", **style(i))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    note = mark_oversubscribed(fig, ax, bench)
    return finish(plt, fig, ax, ("channels C (count, log scale)",
                                 "SyncBN time / local BN time (ratio)\n"
                                 "median over repetitions, bars: min to max",
                                 f"{name}: SyncBN costs a multiple of local BN"
                                 + (f"\noversubscribed: {note}" if note else "")),
                  outdir, f"{name}_overhead")
