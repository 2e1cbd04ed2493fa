#!/usr/bin/python3
"""bench/peers/norm_gpu_table.py RUN.json [--update README.md]

The W = 1 device rows side by side, from ONE run of
bench/peers/torch_norm_gpu.py --ours_binary: our binary and PyTorch on the
same GPU, repetition k of each side next to the other's repetition k, the
order flipping every repetition. Per row (dtype, row, shape) and per
repetition k: our time, the GB/s of the bytes our kernels must move and
that over the device-to-device copy of the same bytes that our process
timed in repetition k (goal >= 0.8), PyTorch's time and its copy's time
over it (the same bytes, PyTorch's own copy in repetition k), ours_k /
PyTorch_k, and the two processes' copies against each other (about 1 when
both met the same machine state). Every cell is the median over the
repetitions with [min, max]: ratios are taken within a repetition, never
between medians. Then, per shape, SyncBatchNorm's step over BatchNorm's on
each side, per repetition (issue 43: ours no larger than PyTorch's). Rows
whose data fits in the GPU's L2 are marked: their GB/s can exceed the
memory's, and they do not count for the 0.8 goal.

Prints the Markdown; with --update FILE puts it between FILE's
`<!-- table:norm_gpu:begin -->` and `<!-- table:norm_gpu:end -->`
(bench/tables.py's update). Exit 2, one line, for input that does not pair
repetitions of one run: not exactly one file; a file without
torch_norm_gpu.py's pairing (`ddp_pairing`, `repetitions`: bench/norm_kernels'
own JSON, or two runs' entries put together); an entry of a repetition the
run does not list, of no side, or twice; a listed repetition without
entries of both sides; the two sides on different GPUs; no row with both
sides in one repetition. Also exit 2 for a missing or malformed file.
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tables import InputError, emit, load, short_commit, spread  # noqa: E402  bench/tables.py

GOAL = 0.8
PREFIX = {"ours": "norm_kernels", "torch": "torch_norm_gpu"}


def paired_repetitions(data, path, what="our binary", how="torch_norm_gpu.py --ours_binary"):
    """The run's repetition numbers (0..R-1), or InputError when the file
    is not one run that pairs the two sides per repetition (`what` ours
    is, `how` such a run is made)."""
    ctx = data.get("context") or {}
    reps = data.get("repetitions")
    if not ctx.get("ddp_pairing") or not isinstance(reps, list) or not reps:
        raise InputError(f"{path}: not one run pairing {what} and PyTorch per repetition (no "
                         f"ddp_pairing or repetitions; make it with {how}): "
                         f"no ratio is taken between separate runs")
    listed = [r.get("rep") if isinstance(r, dict) else None for r in reps]
    if listed != list(range(len(listed))):
        raise InputError(f"{path}: its repetitions are {listed}, not 0..{len(listed) - 1} once each")
    for r in reps:
        if sorted(r.get("order", [])) != ["ours", "torch"]:
            raise InputError(f"{path}: repetition {r['rep']} ran {r.get('order')}, not ours and torch once each")
    return listed


def repetitions(data, path):
    """paired_repetitions, both sides on one GPU."""
    listed = paired_repetitions(data, path)
    ctx = data["context"]
    ours_ctx = data.get("ours_context") or {}
    if not ctx.get("ddp_device") or not ours_ctx.get("ddp_device"):
        raise InputError(f"{path}: its context or ours_context names no GPU (ddp_device)")
    if ours_ctx["ddp_device"] != ctx["ddp_device"]:
        raise InputError(f"{path}: our binary ran on {ours_ctx['ddp_device']!r} but PyTorch on "
                         f"{ctx['ddp_device']!r}: not the same GPU")
    return listed


def paired_rows(data, path):
    """({(dtype, row, shape): [(ours entry, PyTorch entry) per repetition
    that has both]} in the file's order, {side: failed entries}, entries
    with no partner in their repetition)."""
    listed = set(repetitions(data, path))
    sides = {"ours": {}, "torch": {}}
    failed = {"ours": 0, "torch": 0}
    present = set()
    for b in data["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration":
            continue
        name, side, rep = b.get("name", ""), b.get("side"), b.get("rep")
        parts = name.split("/")
        if side not in PREFIX or len(parts) < 7 or parts[0] != PREFIX[side]:
            raise InputError(f"{path}: {name!r} (side {side!r}) is neither ours (norm_kernels/...) nor "
                             f"PyTorch's (torch_norm_gpu/...)")
        if not isinstance(rep, (int, float)) or rep != int(rep) or int(rep) not in listed or \
                parts[6] != f"rep:{int(rep)}":
            raise InputError(f"{path}: {name!r} has rep {rep!r}: not one of the run's repetitions "
                             f"{sorted(listed)} as its name says")
        rep = int(rep)
        present.add((rep, side))
        if b.get("error_occurred"):
            failed[side] += 1
            continue
        for key in ("median_us", "copy_us", "bytes"):
            if key not in b:
                raise InputError(f"{path}: {name} has no {key}")
        by_rep = sides[side].setdefault((parts[1], parts[2], "/".join(parts[3:6])), {})
        if rep in by_rep:
            raise InputError(f"{path}: {name!r} appears twice in repetition {rep}")
        by_rep[rep] = b
    for rep in sorted(listed):
        for side in ("ours", "torch"):
            if (rep, side) not in present:
                raise InputError(f"{path}: repetition {rep} has no {side} entries: nothing to pair with")
    paired, unpaired = {}, 0
    for key in dict.fromkeys(list(sides["ours"]) + list(sides["torch"])):
        mine, theirs = sides["ours"].get(key, {}), sides["torch"].get(key, {})
        both = [r for r in sorted(mine) if r in theirs]
        unpaired += len(mine) + len(theirs) - 2 * len(both)
        if both:
            paired[key] = [(mine[r], theirs[r]) for r in both]
    if not paired:
        raise InputError(f"{path}: no row has both sides in one repetition")
    return paired, failed, unpaired


def shape_label(shape):
    """N:32/C:64/HW:56x56 -> 32x64x56x56"""
    n, c, hw = (p.split(":")[1] for p in shape.split("/"))
    return f"{n}x{c}x{hw}"


def gbps(b):
    return b["bytes"] / b["median_us"] / 1e3


def frac_of_copy(b):
    """The row's GB/s over its own process's copy of the same bytes in the
    same repetition."""
    return gbps(b) / (2 * max(1, int(b["bytes"]) // 2) / b["copy_us"] / 1e3)


def render(data, path):
    pairs, failed, unpaired = paired_rows(data, path)
    ctx, octx = data["context"], data["ours_context"]
    reps = data["repetitions"]
    l2 = int(octx.get("ddp_device_l2_bytes", "0") or 0)
    lines = [
        f"GPU {ctx['ddp_device'].split(': ', 1)[-1]} (L2 {l2 / 2**20:.0f} MiB); one run, "
        f"`{os.path.basename(path)}`, {ctx.get('date', '?')}: {len(reps)} repetitions (of "
        f"{ctx.get('ddp_reps', '?')} asked), each our binary's and PyTorch's in turn, the order flipping "
        f"every repetition; ours: commit `{short_commit(octx.get('ddp_commit', '?'))}`, CUDA "
        f"{octx.get('ddp_cuda', '?')}; PyTorch {ctx.get('ddp_torch', '?')} (CUDA "
        f"{ctx.get('ddp_torch_cuda', '?')}, cuDNN {ctx.get('ddp_torch_cudnn', '?')}, NCCL "
        f"{ctx.get('ddp_torch_nccl', '?')}); W = 1, one process per side. Cells: median [min, max] over "
        f"the repetitions of the value within each",
        "",
        "| dtype | row | shape | MB moved | ours (us) | ours GB/s | ours / copy | PyTorch (us) "
        "| PyTorch / copy | ours / PyTorch | copy: ours / PyTorch's |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    big = met = faster = 0
    worst = None
    for (dtype, row, shape), reps_of in pairs.items():
        mine = [o for o, _ in reps_of]
        fits = mine[0].get("fits_l2", 0) == 1
        frac = [frac_of_copy(o) for o in mine]
        ratio = [o["median_us"] / t["median_us"] for o, t in reps_of]
        faster += statistics.median(ratio) <= 1.0
        if not fits:
            big += 1
            met += statistics.median(frac) >= GOAL
            if worst is None or statistics.median(frac) < worst[0]:
                worst = (statistics.median(frac), f"{dtype} {row} {shape_label(shape)}")
        lines.append(
            f"| {dtype} | {row} | {shape_label(shape)}{' (L2)' if fits else ''} | "
            f"{mine[0]['bytes'] / 1e6:.3f} | {spread([o['median_us'] for o in mine], '{:.2f}')} | "
            f"{statistics.median(gbps(o) for o in mine):.0f} | {spread(frac, '{:.2f}')} | "
            f"{spread([t['median_us'] for _, t in reps_of], '{:.2f}')} | "
            f"{spread([frac_of_copy(t) for _, t in reps_of], '{:.2f}')} | {spread(ratio, '{:.2f}')} | "
            f"{spread([o['copy_us'] / t['copy_us'] for o, t in reps_of], '{:.2f}')} |")
    lines.append("")
    if big:
        lines.append(f"Rows whose data exceeds the L2: {big}; our GB/s at least {GOAL} of the copy's "
                     f"in {met}; the lowest {worst[0]:.2f} ({worst[1]}).")
    else:
        lines.append(f"No row's data exceeds the L2: none of them tests the {GOAL} goal.")
    lines.append(f"Ours / PyTorch ≤ 1.0 (median over the repetitions) in {faster} of {len(pairs)} rows.")
    if unpaired or failed["ours"] or failed["torch"]:
        lines.append(f"Not compared: {unpaired} entr{'y' if unpaired == 1 else 'ies'} without the other "
                     f"side in its repetition; failed entries: {failed['ours']} ours, {failed['torch']} "
                     f"PyTorch's.")
    if ctx.get("ddp_stopped"):
        lines.append(f"The run stopped early: {ctx['ddp_stopped']}.")
    overhead = sync_overhead(pairs)
    if overhead:
        lines += ["", "| dtype | shape | ours: sync_bn_fwd_bwd / bn_fwd_bwd | PyTorch: SyncBatchNorm's "
                  "function / BatchNorm2d | ours' / PyTorch's |", "|---|---|---:|---:|---:|"] + overhead
        lines.append(f"\nPyTorch's nn.SyncBatchNorm at W = 1: "
                     f"{ctx.get('ddp_torch_sync_bn_module_w1', 'not recorded')}.")
    return "\n".join(lines)


def sync_overhead(pairs):
    """Per (dtype, shape) with bn_fwd_bwd and sync_bn_fwd_bwd paired: per
    repetition with all four entries, SyncBatchNorm's step over
    BatchNorm's on each side and ours over PyTorch's; median [min, max]."""
    out = []
    for (dtype, row, shape) in pairs:
        if row != "bn_fwd_bwd" or (dtype, "sync_bn_fwd_bwd", shape) not in pairs:
            continue
        bn = {o["rep"]: (o, t) for o, t in pairs[(dtype, row, shape)]}
        per_rep = [(o["median_us"] / bn[o["rep"]][0]["median_us"], t["median_us"] / bn[o["rep"]][1]["median_us"])
                   for o, t in pairs[(dtype, "sync_bn_fwd_bwd", shape)] if o["rep"] in bn]
        if per_rep:
            out.append(f"| {dtype} | {shape_label(shape)} | {spread([a for a, _ in per_rep], '{:.2f}')} | "
                       f"{spread([b for _, b in per_rep], '{:.2f}')} | "
                       f"{spread([a / b for a, b in per_rep], '{:.2f}')} |")
    return out


def table_main(argv, doc, tool, script, marker, render):
    """The command line of a table maker of one paired run: RUN.json
    [--update FILE]; prints render(data, path) or puts it in FILE's
    `marker` block; exit 2 and one line `tool: why` on bad input."""
    ap = argparse.ArgumentParser(usage="%(prog)s RUN.json [--update FILE]", description=doc.split("\n\n")[1])
    ap.add_argument("run", nargs="+", metavar="RUN.json", help=f"{script}'s JSON (one file: both sides)")
    ap.add_argument("--update", metavar="FILE", help=f"rewrite FILE's {marker} table")
    args = ap.parse_args(argv)

    def text():
        if len(args.run) != 1:
            raise InputError(f"{len(args.run)} files given: give one, {script}'s (ratios come from repetitions "
                             f"of one run, never from separate files)")
        return render(load(args.run[0]), args.run[0])

    return emit(tool, marker, args.update, text)


def main(argv):
    return table_main(argv, __doc__, "norm_gpu_table", "torch_norm_gpu.py --ours_binary", "norm_gpu", render)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
