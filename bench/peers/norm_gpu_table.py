#!/usr/bin/python3
"""bench/peers/norm_gpu_table.py OURS.json TORCH.json [--update README.md]

The W = 1 device rows side by side: bench/norm_kernels' JSON (OURS) and
bench/peers/torch_norm_gpu.py's (TORCH), both from the same GPU. Per row
(dtype, row, shape): our time per call, the GB/s of the bytes our kernels
must move and that over the device-to-device copy of the same bytes timed
in the same repetition (goal >= 0.8), PyTorch's time, ours / PyTorch, and
the two processes' copies against each other (about 1 when the two runs met
the same machine state). Then, per shape, SyncBatchNorm's cost over
BatchNorm on each side (issue 43: ours no larger than PyTorch's).

Numbers are medians over each file's repetitions with [min, max]; the
fraction of copy is taken within each of our repetitions. The two files are
separate runs, so ours / PyTorch is the ratio of the two medians, with the
widest range the repetitions allow [min ours / max PyTorch, max ours / min
PyTorch]. Rows whose data fits in the GPU's L2 are marked: their GB/s can
exceed the memory's, and they do not count for the 0.8 goal.

Prints the Markdown; with --update FILE puts it between FILE's
`<!-- table:norm_gpu:begin -->` and `<!-- table:norm_gpu:end -->`
(bench/tables.py's update). Exit 2 when a file is missing or malformed, the
two come from different GPUs, or share no row.
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tables import InputError, load, short_commit, spread, update  # noqa: E402  bench/tables.py

GOAL = 0.8


def rows_of(data, path, prefix):
    """{(dtype, row, shape): [entry per repetition]} in the file's order,
    failed entries left out (and counted)."""
    rows, failed = {}, 0
    for b in data["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration":
            continue
        parts = b["name"].split("/")
        if len(parts) < 7 or parts[0] != prefix or not parts[6].startswith("rep:"):
            raise InputError(f"{path}: unexpected benchmark name {b['name']!r}")
        if b.get("error_occurred"):
            failed += 1
            continue
        for key in ("median_us", "copy_us", "bytes"):
            if key not in b:
                raise InputError(f"{path}: {b['name']} has no {key}")
        rows.setdefault((parts[1], parts[2], "/".join(parts[3:6])), []).append(b)
    return rows, failed


def shape_label(shape):
    """N:32/C:64/HW:56x56 -> 32x64x56x56"""
    n, c, hw = (p.split(":")[1] for p in shape.split("/"))
    return f"{n}x{c}x{hw}"


def ratio_spread(a, b):
    """median(a) / median(b) [min a / max b, max a / min b]."""
    return (f"{statistics.median(a) / statistics.median(b):.2f} "
            f"[{min(a) / max(b):.2f}, {max(a) / min(b):.2f}]")


def gbps(b):
    return b["bytes"] / b["median_us"] / 1e3


def copy_gbps(b):
    return 2 * max(1, int(b["bytes"]) // 2) / b["copy_us"] / 1e3


def render(ours, ours_path, torch, torch_path):
    octx, tctx = ours.get("context", {}), torch.get("context", {})
    for ctx, path in ((octx, ours_path), (tctx, torch_path)):
        if not ctx.get("ddp_device"):
            raise InputError(f"{path}: its context names no GPU (ddp_device)")
    if octx["ddp_device"] != tctx["ddp_device"]:
        raise InputError(f"{ours_path} ran on {octx.get('ddp_device', '?')!r} but {torch_path} on "
                         f"{tctx.get('ddp_device', '?')!r}: not the same GPU")
    mine, mine_failed = rows_of(ours, ours_path, "norm_kernels")
    theirs, theirs_failed = rows_of(torch, torch_path, "torch_norm_gpu")
    shared = [k for k in mine if k in theirs]
    if not shared:
        raise InputError(f"{ours_path} and {torch_path} share no row")
    l2 = int(octx.get("ddp_device_l2_bytes", "0") or 0)
    lines = [
        f"GPU {octx['ddp_device'].split(': ', 1)[-1]} (L2 {l2 / 2**20:.0f} MiB); ours: "
        f"`{os.path.basename(ours_path)}`, commit `{short_commit(octx.get('ddp_commit', '?'))}`, "
        f"{octx.get('date', '?')}, CUDA {octx.get('ddp_cuda', '?')}; PyTorch "
        f"{tctx.get('ddp_torch', '?')} (CUDA {tctx.get('ddp_torch_cuda', '?')}, cuDNN "
        f"{tctx.get('ddp_torch_cudnn', '?')}, NCCL {tctx.get('ddp_torch_nccl', '?')}): "
        f"`{os.path.basename(torch_path)}`, {tctx.get('date', '?')}; W = 1, one process each; "
        f"{octx.get('ddp_reps', '?')} and {tctx.get('ddp_reps', '?')} interleaved repetitions",
        "",
        "| dtype | row | shape | MB moved | ours (us) | ours GB/s | ours / copy | PyTorch (us) "
        "| ours / PyTorch | copy: ours / PyTorch's |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    big = met = 0
    worst = None
    for key in shared:
        dtype, row, shape = key
        a, b = mine[key], theirs[key]
        fits = a[0].get("fits_l2", 0) == 1
        frac = [gbps(e) / copy_gbps(e) for e in a]
        if not fits:
            big += 1
            met += statistics.median(frac) >= GOAL
            if worst is None or statistics.median(frac) < worst[0]:
                worst = (statistics.median(frac), f"{dtype} {row} {shape_label(shape)}")
        lines.append(
            f"| {dtype} | {row} | {shape_label(shape)}{' (L2)' if fits else ''} | "
            f"{a[0]['bytes'] / 1e6:.3f} | {spread([e['median_us'] for e in a], '{:.2f}')} | "
            f"{statistics.median(gbps(e) for e in a):.0f} | {spread(frac, '{:.2f}')} | "
            f"{spread([e['median_us'] for e in b], '{:.2f}')} | "
            f"{ratio_spread([e['median_us'] for e in a], [e['median_us'] for e in b])} | "
            f"{ratio_spread([e['copy_us'] for e in a], [e['copy_us'] for e in b])} |")
    lines.append("")
    if big:
        lines.append(f"Rows whose data exceeds the L2: {big}; our GB/s at least {GOAL} of the copy's "
                     f"in {met}; the lowest {worst[0]:.2f} ({worst[1]}).")
    else:
        lines.append(f"No row's data exceeds the L2: none of them tests the {GOAL} goal.")
    faster = [k for k in shared if statistics.median(e["median_us"] for e in mine[k]) <=
              statistics.median(e["median_us"] for e in theirs[k])]
    lines.append(f"Ours / PyTorch ≤ 1.0 in {len(faster)} of {len(shared)} rows.")
    missing = len(set(mine) ^ set(theirs))
    if missing or mine_failed or theirs_failed:
        lines.append(f"Not compared: {missing} row(s) in only one file; failed entries: "
                     f"{mine_failed} ours, {theirs_failed} PyTorch's.")
    overhead = sync_overhead(mine, theirs)
    if overhead:
        lines += ["", "| dtype | shape | ours: sync_bn_fwd_bwd / bn_fwd_bwd | PyTorch: SyncBatchNorm's "
                  "function / BatchNorm2d |", "|---|---|---:|---:|"] + overhead
        lines.append(f"\nPyTorch's nn.SyncBatchNorm at W = 1: "
                     f"{tctx.get('ddp_torch_sync_bn_module_w1', 'not recorded')}.")
    return "\n".join(lines)


def sync_overhead(mine, theirs):
    """Per (dtype, shape) with both rows on both sides: SyncBatchNorm's step
    over BatchNorm's, per repetition within each file, median [min, max]."""
    out = []
    for (dtype, row, shape) in mine:
        if row != "bn_fwd_bwd":
            continue
        cells = []
        for side in (mine, theirs):
            bn, sync = side.get((dtype, "bn_fwd_bwd", shape)), side.get((dtype, "sync_bn_fwd_bwd", shape))
            if not bn or not sync:
                break
            by_rep = {e["rep"]: e["median_us"] for e in bn}
            cells.append(spread([e["median_us"] / by_rep[e["rep"]] for e in sync if e["rep"] in by_rep],
                                "{:.2f}"))
        if len(cells) == 2:
            out.append(f"| {dtype} | {shape_label(shape)} | {cells[0]} | {cells[1]} |")
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    ap.add_argument("ours", help="bench/norm_kernels' JSON")
    ap.add_argument("torch", help="bench/peers/torch_norm_gpu.py's JSON from the same GPU")
    ap.add_argument("--update", metavar="FILE", help="rewrite FILE's norm_gpu table")
    args = ap.parse_args(argv)
    try:
        text = render(load(args.ours), args.ours, load(args.torch), args.torch)
        if args.update:
            update(args.update, "norm_gpu", text)
        else:
            print(text)
    except (InputError, KeyError, ValueError, ZeroDivisionError) as e:
        print(f"norm_gpu_table: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
