#!/usr/bin/python3
"""Draws figure1.png: validation error against the per-rank batch, one line per norm.

Usage: /usr/bin/python3 repro/small_batch_bn/plot_figure.py results/small_batch_bn_repro_sweep.json \
           [--out repro/small_batch_bn/figure1.png]

The shape of the GroupNorm paper's Figure 1 (Wu & He, ECCV 2018) on this pair's
task: per-rank BatchNorm, SyncBatchNorm (the per_rank_bn records' reference),
GroupNorm and PreciseBN, error bars the 95% intervals over seeds. Needs
matplotlib (Debian: python3-matplotlib); the numbers come from the renderer of
the README's figure1 table (analysis/pair_render/small_batch_bn.py), so the
figure and the README table cannot disagree.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "analysis"))
from pair_render.small_batch_bn import figure1_series  # noqa: E402


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("records")
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "figure1.png"))
    a = p.parse_args(argv)
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "small_batch_bn"
    import matplotlib.pyplot as plt

    with open(a.records) as f:
        series = figure1_series(json.load(f))
    if not series:
        print("plot_figure: no digits rows in the records", file=sys.stderr)
        return 1
    batches = list(series)
    world = series[batches[0]]["global"] // batches[0]
    seeds = series[batches[0]]["seeds"]
    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    styles = {"per-rank BN": ("tab:red", "o"), "SyncBN": ("tab:blue", "s"),
              "GroupNorm": ("tab:green", "^"), "PreciseBN": ("tab:orange", "v")}
    for name, (color, marker) in styles.items():
        xs = [b for b in batches if name in series[b]]
        ys = [100 * series[b][name][0] for b in xs]
        es = [100 * series[b][name][1] for b in xs]
        ax.errorbar(xs, ys, yerr=es, label=name, color=color, marker=marker, capsize=3, linewidth=1.5)
    ax.set_xscale("log", base=2)
    ax.set_xticks(batches)
    ax.set_xticklabels([str(b) for b in batches])
    ax.invert_xaxis()  # as the GroupNorm paper: the batch shrinks to the right
    ax.set_xlabel(f"images per rank (W = {world} ranks, Gloo)")
    ax.set_ylabel("validation error (%)")
    ax.set_title(f"Noisy UCI digits, TinyCnn: error vs per-rank batch ({seeds} seeds, 95% intervals)", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(a.out, metadata={"Software": None})
    print(f"wrote {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
