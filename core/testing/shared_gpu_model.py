#!/usr/bin/env python3
"""The shared-GPU cost model of core/testing/README.md, fitted to the H100 run.

Every point is something the run of 2026-11-26 timed (evidence:
../shared/evidence/h100-2026-11-26/, logs.tar.gz: call1/ and call2/) with the
worlds and collectives it made, counted on the Gloo build by
core/testing/count_collectives.sh (the NCCL twin makes the same calls):

  seconds = START_S x worlds + PER_COLL_S x W x collectives + waits

Fitted by least squares on (seconds - waits); prints the two parameters, the
residuals, and each point's model/observed ratio. Plain Python 3, no numpy.

  python3 core/testing/shared_gpu_model.py
"""
import math

# (what, seconds observed, where, {W: worlds}, {W: collectives}, deliberate waits in s)
POINTS = [
    # gtest cases: "[ OK ] ... (N ms)" in the test logs.
    ("nccl_ops W=1", 7.64, "call1/A core.comm.nccl_ops_test", {1: 1}, {1: 84}, 0),
    ("nccl_ops W=2", 7.81, "call1/A core.comm.nccl_ops_test", {2: 1}, {2: 88}, 0),
    ("nccl_ops W=3", 9.65, "call1/A core.comm.nccl_ops_test", {3: 1}, {3: 92}, 0),
    ("nccl_ops W=4", 10.81, "call1/A core.comm.nccl_ops_test", {4: 1}, {4: 96}, 0),
    ("nccl_ops checked", 6.62, "call1/A core.comm.nccl_ops_test", {2: 1}, {}, 0),
    # rank 1 sleeps 5 s before the world ends
    ("nccl_ops skipped", 9.43, "call1/A core.comm.nccl_ops_test", {2: 1}, {2: 2}, 5),
    # each waits out its 15 s deadline
    ("trace uneven", 21.97, "call1/A core.comm.trace_test_nccl", {3: 1}, {3: 3}, 15),
    ("trace op type", 22.06, "call1/A core.comm.trace_test_nccl", {3: 1}, {3: 2}, 15),
    ("trace size", 25.85, "call1/A core.comm.trace_test_nccl", {3: 1}, {3: 3}, 15),
    ("trace dtype", 25.72, "call1/A core.comm.trace_test_nccl", {3: 1}, {3: 3}, 15),
    ("trace stopped", 25.07, "call1/A core.comm.trace_test_nccl", {3: 1}, {3: 2}, 15),
    ("trace killed", 4.70, "call1/A core.comm.trace_test_nccl", {3: 1}, {3: 2}, 0),
    ("fix autograd gradients", 81.97, "call1/A fixes.autograd_lost_gather.test_nccl",
     {1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 8: 1}, {1: 36, 2: 104, 3: 104, 4: 104, 5: 104, 8: 104}, 0),
    ("fix autograd training", 50.72, "call1/A fixes.autograd_lost_gather.test_nccl",
     {4: 2}, {4: 735}, 0),
    ("fix autograd gradients", 102.16, "call2/T1 fixes.autograd_lost_gather.test_nccl",
     {1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 8: 1}, {1: 36, 2: 104, 3: 104, 4: 104, 5: 104, 8: 104}, 0),
    ("fix drop_last_hang defaults", 67.27, "call2/T1 fixes.drop_last_hang.test_nccl",
     {4: 1}, {4: 685}, 0),
    ("fix missing_set_epoch orders", 17.06, "call2/T2 fixes.missing_set_epoch.test_nccl",
     {2: 1, 4: 1}, {2: 72, 4: 40}, 0),
    ("precise_bn tracker", 20.60, "call2/T2 fixes.small_batch_bn.precise_bn_tracker_test_nccl",
     {2: 1, 3: 1}, {2: 2, 3: 2}, 0),
    ("sync_bn large means", 10.65, "call2/T2 ...sync_batch_norm_test_nccl", {3: 1}, {3: 10}, 0),
    ("sync_bn 22192", 7.18, "call2/T2 ...sync_batch_norm_test_nccl", {2: 1}, {2: 10}, 0),
    ("sync_bn 74944", 15.91, "call2/T2 ...sync_batch_norm_test_nccl", {2: 1, 3: 1}, {2: 9, 3: 9}, 0),
    ("sync_bn exact W=1", 10.39, "call2/T2 ...sync_batch_norm_test_nccl", {1: 1}, {1: 18}, 0),
    ("sync_bn exact W=2", 5.96, "call2/T2 ...sync_batch_norm_test_nccl", {2: 1}, {2: 36}, 0),
    ("sync_bn exact W=3", 9.31, "call2/T2 ...sync_batch_norm_test_nccl", {3: 1}, {3: 36}, 0),
    ("repro autograd gradients", 34.86, "call2/T3 repro.autograd_lost_gather.test_nccl",
     {2: 1, 4: 1, 8: 1}, {2: 50, 4: 50, 8: 50}, 0),
    ("repro missing_set_epoch", 35.10, "call2/T4 repro.missing_set_epoch.test_nccl",
     {2: 1, 4: 1}, {2: 409, 4: 217}, 0),
    # single worlds: world_elapsed_s of the records of repro/drop_last_hang
    # (call1/B1/records/repro_drop_last_hang.json); waits: the 2 s deadline
    # as detected (detect_s)
    ("dlh sampler_padding", 4.90, "call1/B1 repro_drop_last_hang.json", {4: 1}, {4: 8}, 0),
    ("dlh uneven N=1003", 3.55, "call1/B1 repro_drop_last_hang.json", {4: 1}, {4: 8}, 0),
    ("dlh uneven N=1025", 7.10, "call1/B1 repro_drop_last_hang.json", {4: 1}, {4: 8}, 2.38),
    ("dlh filtered B=32", 8.01, "call1/B1 repro_drop_last_hang.json", {4: 1}, {4: 8}, 0),
    ("dlh filtered B=2", 18.59, "call1/B1 repro_drop_last_hang.json", {4: 1}, {4: 120}, 2.38),
    ("dlh early exit", 3.29, "call1/B1 repro_drop_last_hang.json", {4: 1}, {4: 8}, 0.40),
    # pair binaries at their defaults, --backend nccl: from the previous
    # binary's record time to this one's (the records' provenance.date)
    ("pair fixes/mean_of_means", 12, "call1/B2 20:09:21 -> 20:09:33", {4: 1}, {4: 60}, 0),
    ("pair fixes/missing_set_epoch", 21, "call1/B2 20:09:33 -> 20:09:54", {2: 1, 4: 1},
     {2: 105, 4: 65}, 0),
    ("pair fixes/small_batch_bn", 109, "call1/B2 20:09:54 -> 20:11:43", {2: 3, 4: 3},
     {2: 1400, 4: 900}, 0),
    ("pair fixes/wrong_all_gather", 13, "call1/B2 20:11:43 -> 20:11:56", {4: 1}, {4: 200}, 0),
    ("pair repro/mean_of_means", 63, "call1/B1 20:10:37 -> 20:11:40", {4: 1}, {4: 1395}, 0),
    ("pair repro/missing_set_epoch", 32, "call1/B1 20:11:40 -> 20:12:12", {2: 1, 4: 1},
     {2: 851, 4: 451}, 0),
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
