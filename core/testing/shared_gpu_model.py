#!/usr/bin/env python3
"""The shared-GPU cost model of core/testing/README.md, fitted to the H100 run.

Every point (shared_gpu_points.json) is something the first GPU run, of
2026-11-26, timed (its logs, call1/ and call2/, were kept beside the project,
not committed here) with the worlds and collectives it made, counted on the
Gloo build by
core/testing/count_collectives.sh (the NCCL twin makes the same calls):

  seconds = START_S x worlds + PER_COLL_S x W x collectives + waits

Fitted by least squares on (seconds - waits); prints the two parameters, the
residuals, and each point's model/observed ratio. Plain Python 3, no numpy.

  python3 core/testing/shared_gpu_model.py
"""
import json
import math
import os

# (what, seconds observed, where, {W: worlds}, {W: collectives}, deliberate waits in s)
POINTS = [
    (p["what"], p["seconds"], p["source"], {int(k): v for k, v in p["worlds"].items()},
     {int(k): v for k, v in p["collectives"].items()}, p["waits_s"])
    for p in json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                         "shared_gpu_points.json")))["points"]
]


def design(worlds, colls):
    return [sum(worlds.values()), sum(w * n for w, n in colls.items())]


def lstsq(rows, ys):
    """Least squares through the normal equations (two parameters)."""
    a = [[sum(r[i] * r[j] for r in rows) for j in range(2)] for i in range(2)]
    b = [sum(r[i] * y for r, y in zip(rows, ys)) for i in range(2)]
    det = a[0][0] * a[1][1] - a[0][1] * a[1][0]
    return [(b[0] * a[1][1] - b[1] * a[0][1]) / det, (a[0][0] * b[1] - a[1][0] * b[0]) / det]


def main():
    rows = [design(p[3], p[4]) for p in POINTS]
    ys = [p[1] - p[5] for p in POINTS]
    start_s, per_coll_s = lstsq(rows, ys)
    preds = [start_s * r[0] + per_coll_s * r[1] for r in rows]
    rms = math.sqrt(sum((y - m) ** 2 for y, m in zip(ys, preds)) / len(ys))
    print(f"START_S = {start_s:.2f} s per world; PER_COLL_S = {per_coll_s * 1000:.1f} ms x W "
          f"per collective ({len(POINTS)} points, rms residual {rms:.1f} s)")
    ratios = []
    for p, m in zip(POINTS, preds):
        model = m + p[5]
        ratios.append(model / p[1])
        print(f"  {p[0]:32s} observed {p[1]:6.1f} s  model {model:6.1f} s  ({model / p[1]:.2f})")
    print(f"model / observed: {min(ratios):.2f} .. {max(ratios):.2f}, "
          f"median {sorted(ratios)[len(ratios) // 2]:.2f}")


if __name__ == "__main__":
    main()
