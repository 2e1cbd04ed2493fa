"""The figures draw what the tables say: medians over repetitions with
[min, max] bars (not the last repetition), oversubscribed runs marked, and
small_batch_bn's figure with a SyncBN reference line on a log batch axis that
has no zero. Run by //analysis:figures_test (needs matplotlib)."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import figures  # noqa: E402
import registry  # noqa: E402
from checks import check, status  # noqa: E402


class Recording:
    """matplotlib.pyplot, remembering the figure and axes each figure drew."""

    def __init__(self, plt):
        self.plt, self.drawn = plt, []

    def subplots(self, *a, **kw):
        fig, ax = self.plt.subplots(*a, **kw)
        self.drawn.append((fig, ax))
        return fig, ax

    def __getattr__(self, name):
        return getattr(self.plt, name)


def bars(ax):
    """{label: (ys, lows, highs)} of every errorbar series on the axes."""
    out = {}
    for c in ax.containers:
        line, _, (bar,) = c.lines[0], c.lines[1], c.lines[2]
        segs = bar.get_segments()
        out[c.get_label()] = ([float(y) for y in line.get_ydata()],
                              [float(min(s[0][1], s[1][1])) for s in segs],
                              [float(max(s[0][1], s[1][1])) for s in segs])
    return out


def padding_bench(oversubscribed):
    """Three repetitions whose last one is neither the median nor the mean."""
    rows = []
    for rep, (ratio_a, ratio_b) in enumerate([(2.0, 1.5), (3.0, 1.25), (1.0, 1.1)]):
        for method, ratio in (("pad_gather_trim", ratio_a), ("allgatherv", ratio_b)):
            for profile in ("equal", "straggler"):
                rows.append({"name": f"padding/gloo/W4/{profile}/16MiB/{method}/rep:{rep}/manual_time",
                             "ratio_over_floor": ratio + (0.5 if profile == "straggler" else 0)})
        rows.append({"name": f"padding/gloo/W4/equal/1MiB/pad_gather_trim/rep:{rep}/manual_time",
                     "ratio_over_floor": 9.0})  # a smaller payload: not drawn
    return {"context": {"ddp_oversubscribed": "yes: 4 ranks on 2 CPUs" if oversubscribed else "no"},
            "benchmarks": rows}


def sync_bn_bench():
    rows = []
    for rep, (bn, sync) in enumerate([(10.0, 20.0), (10.0, 50.0), (20.0, 60.0)]):
        rows.append({"name": f"bn/C:16/N:2/HW:8x8/rep:{rep}/manual_time", "median_us": bn})
        rows.append({"name": f"sync_bn/C:16/N:2/HW:8x8/rep:{rep}/manual_time", "median_us": sync})
    return {"context": {"ddp_oversubscribed": "no"}, "benchmarks": rows}


def small_batch_records():
    """The sweep's shape: per-rank BN, GroupNorm, PreciseBN at 2 and 4 per rank
    on 4 ranks, each with the SyncBN run at the same global batch as reference."""
    out = []
    for b in (2, 4):
        for i, variant in enumerate(("per_rank_bn", "group_norm", "precise_bn")):
            out.append({"bug": "small_batch_bn", "kind": "repro", "variant": variant,
                        "verdict": "reproduced" if variant == "per_rank_bn" else "control",
                        "config": {"task": "digits", "batch_per_rank": b, "accumulate": 1,
                                   "global_batch": 4 * b},
                        "measured": {"val_error": 0.25 + 0.01 * i, "val_error_ci95": 0.02, "seeds": 5,
                                     "val_error_gap": 0.06, "val_error_gap_ci95": 0.03},
                        "reference": {"what": f"SyncBN, the same global batch ({4 * b})",
                                      "val_error": 0.19, "val_error_ci95": 0.02}})
    return out


def texts(fig):
    return " ".join(t.get_text() for t in fig.texts)


def main():
    plt = Recording(figures.setup())
    out = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))

    # Padding: the medians 2.0 and 1.25 (last repetition: 1.0 and 1.1), bars min..max.
    points, top = figures.padding_points(padding_bench(True))
    check(top == 16 * 1048576, f"padding: the largest payload, got {top}")
    check(points["pad_gather_trim"]["equal"] == (2.0, 1.0, 3.0),
          f"padding: median [min, max] of the repetitions, got {points['pad_gather_trim']['equal']}")
    check(figures.padding_figure(plt, "p", padding_bench(True), out) == "p_overhead", "padding figure")
    fig, ax = plt.drawn[-1]
    drawn = bars(ax)
    check(drawn.get("pad_gather_trim", ([],))[0] == [2.0, 2.5],
          f"padding figure: dots at the medians [2.0, 2.5], got {drawn.get('pad_gather_trim')}")
    check(drawn.get("allgatherv", ([],))[0] == [1.25, 1.75],
          f"padding figure: dots at the medians [1.25, 1.75], got {drawn.get('allgatherv')}")
    check(drawn.get("pad_gather_trim", ([], [], []))[1:] == ([1.0, 1.5], [3.0, 3.5]),
          f"padding figure: bars from min to max, got {drawn.get('pad_gather_trim')}")
    check("Oversubscribed run: 4 ranks on 2 CPUs" in texts(fig), "padding figure: oversubscription marked")
    figures.padding_figure(plt, "q", padding_bench(False), out)
    check("Oversubscribed" not in texts(plt.drawn[-1][0]), "padding figure: a run that is not oversubscribed")

    # SyncBN: ratios within each repetition 2, 5, 3: median 3, bars 2..5.
    check(figures.sync_bn_points(sync_bn_bench()) == {2: {16: (3.0, 2.0, 5.0)}},
          f"sync_bn: per-repetition ratios, got {figures.sync_bn_points(sync_bn_bench())}")
    figures.sync_bn_figure(plt, "s", sync_bn_bench(), out)
    check(bars(plt.drawn[-1][1]).get("N=2 samples per rank") == ([3.0], [2.0], [5.0]),
          f"sync_bn figure: median with [min, max], got {bars(plt.drawn[-1][1])}")

    # small_batch_bn: the SyncBN reference line, a log batch axis with no zero.
    here = os.path.dirname(os.path.abspath(__file__))
    recs = [("small_batch_bn_repro_sweep.json", r) for r in small_batch_records()]
    spec = registry.findings_specs()["small_batch_bn"]
    check(figures.bug_figure(plt, "small_batch_bn", spec, recs, out) == "small_batch_bn_headline",
          "small_batch_bn figure")
    fig, ax = plt.drawn[-1]
    labels = [c.get_label() for c in ax.containers]
    check(any(x.startswith("SyncBN") for x in labels), f"small_batch_bn: a SyncBN reference line, got {labels}")
    check(ax.get_xscale() == "log", "small_batch_bn: log batch axis")
    ticks = [float(x) for x in ax.get_xticks()]
    check(ticks and min(ticks) > 0, f"small_batch_bn: no zero on the log axis, ticks {ticks}")

    return status()


if __name__ == "__main__":
    sys.exit(main())
