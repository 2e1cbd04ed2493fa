#!/usr/bin/python3
"""bench/peers/dist_gpu_table.py RUN.json [--update README.md]

The W-rank collective rows side by side, from ONE run of
bench/peers/torch_dist_gpu.py: bench/sync_bn's and bench/padding's rows and
PyTorch's counterparts, repetition k of each side next to the other's
repetition k. Per PyTorch row: our time, PyTorch's time and ours_k /
PyTorch_k, each the median over the repetitions [min, max] (ratios taken
within a repetition, never between medians). A floor_allgather row of ours
has two PyTorch rows (all_gather of a list, all_gather_into_tensor). Rows
whose ranks share a GPU (either side's shared_gpu) are marked "shared":
W processes time-slicing one GPU, not performance claims. A PyTorch row that
was not timed (SyncBatchNorm on CPU tensors in the gloo rehearsal) is listed
with PyTorch's reason.

Prints the Markdown; with --update FILE puts it between FILE's
`<!-- table:dist_gpu:begin -->` and `<!-- table:dist_gpu:end -->`. Exit 2,
one line, for input that does not pair repetitions of one run: not exactly
one file; no `ddp_pairing` or `repetitions`; repetitions not 0..R-1 or
without both sides' turns; an entry of no side, of an unlisted repetition,
or twice; a listed repetition without entries of both sides; no row with
both sides in one repetition; a missing or malformed file.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tables import InputError, short_commit, spread  # noqa: E402  bench/tables.py
from norm_gpu_table import paired_repetitions, table_main  # noqa: E402  the same folder: the command line of a paired-run table


def repetitions(data, path):
    return set(paired_repetitions(data, path, "our binaries", "torch_dist_gpu.py"))


def row_of(b, path):
    """(side, our row it belongs to, PyTorch's call or None)."""
    name, side = b.get("name", ""), b.get("side")
    if side == "ours":
        return side, name.split("/rep:", 1)[0], None
    if side == "torch" and b.get("ours_row") and b.get("call"):
        return side, b["ours_row"], b["call"]
    raise InputError(f"{path}: {name!r} (side {side!r}) is neither ours nor PyTorch's (ours_row, call)")


def collect(data, path):
    """({our row: {rep: entry}}, {(our row, call): {rep: entry}} in file
    order, {(our row, call): reason not timed}, failed count per side)."""
    listed = repetitions(data, path)
    ours, theirs, not_timed, failed, present = {}, {}, {}, {"ours": 0, "torch": 0}, set()
    for b in data["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration":
            continue
        side, row, call = row_of(b, path)
        rep = b.get("rep")
        if not isinstance(rep, (int, float)) or rep != int(rep) or int(rep) not in listed or \
                f"/rep:{int(rep)}" not in b["name"]:
            raise InputError(f"{path}: {b['name']!r} has rep {rep!r}: not one of the run's repetitions "
                             f"{sorted(listed)} as its name says")
        rep = int(rep)
        present.add((rep, side))
        if b.get("error_occurred"):
            if side == "torch" and str(b.get("error_message", "")).startswith("not available"):
                not_timed.setdefault((row, call), b["error_message"])
            else:
                failed[side] += 1
            continue
        if "median_us" not in b:
            raise InputError(f"{path}: {b['name']} has no median_us")
        by_rep = (ours.setdefault(row, {}) if side == "ours" else theirs.setdefault((row, call), {}))
        if rep in by_rep:
            raise InputError(f"{path}: {b['name']!r} appears twice in repetition {rep}")
        by_rep[rep] = b
    for rep in sorted(listed):
        for side in ("ours", "torch"):
            if (rep, side) not in present:
                raise InputError(f"{path}: repetition {rep} has no {side} entries: nothing to pair with")
    return ours, theirs, not_timed, failed


def shared(entry, ours_ctx):
    if entry.get("shared_gpu") or entry.get("label") == "shared_gpu":
        return True
    return any(str(c.get("ddp_shared_gpu", "")).startswith("yes") for c in ours_ctx.values())


def render(data, path):
    ours, theirs, not_timed, failed = collect(data, path)
    ctx, octx = data["context"], data.get("ours_context") or {}
    reps = data["repetitions"]
    commits = sorted({c.get("ddp_commit", "?") for c in octx.values()})
    gpu = ctx.get("ddp_torch_gpu")
    where = (f"GPU {gpu} ({ctx.get('ddp_gpus_visible', '?')} visible), driver {ctx.get('ddp_driver', '?')}"
             if gpu else "no GPU: CPU tensors (gloo rehearsal: plumbing, not a GPU measurement)")
    lines = [
        f"`{os.path.basename(path)}`, {ctx.get('date', '?')}: {ctx.get('ddp_backend', '?')}, W = "
        f"{ctx.get('ddp_world_size', '?')}, {where}; {len(reps)} repetitions (of {ctx.get('ddp_reps', '?')} "
        f"asked), each our binaries' and PyTorch's in turn, the order flipping every repetition; ours: "
        f"commit {', '.join(f'`{short_commit(c)}`' for c in commits) or '?'}; PyTorch {ctx.get('ddp_torch', '?')} "
        f"(CUDA {ctx.get('ddp_torch_cuda', '?')}, NCCL {ctx.get('ddp_torch_nccl', '-')}). Both sides: the "
        f"slowest rank's wall clock per iteration, a repetition's median iteration. Cells: median [min, max] "
        f"over the repetitions of the value within each",
        "",
        "| our row | PyTorch | ours (us) | PyTorch (us) | ours / PyTorch | ranks |",
        "|---|---|---:|---:|---:|---|"]
    paired = n_shared = 0
    for (row, call), by_rep in theirs.items():
        mine = ours.get(row, {})
        both = [r for r in sorted(by_rep) if r in mine]
        if not both:
            continue
        paired += 1
        is_shared = any(shared(by_rep[r], octx) or shared(mine[r], {}) for r in both)
        n_shared += is_shared
        lines.append(
            f"| {row} | {call} | {spread([mine[r]['median_us'] for r in both], '{:.1f}')} | "
            f"{spread([by_rep[r]['median_us'] for r in both], '{:.1f}')} | "
            f"{spread([mine[r]['median_us'] / by_rep[r]['median_us'] for r in both], '{:.2f}')} | "
            f"{'shared GPU: not a performance claim' if is_shared else 'one GPU each' if gpu else 'CPU'} |")
    for (row, call), reason in not_timed.items():
        lines.append(f"| {row} | {call} | {spread([b['median_us'] for b in ours.get(row, {}).values()], '{:.1f}')} "
                     f"| not timed: {reason[:160]} | - | - |" if ours.get(row) else
                     f"| {row} | {call} | - | not timed: {reason[:160]} | - | - |")
    if not paired:
        raise InputError(f"{path}: no row has both sides in one repetition")
    lines.append("")
    if n_shared:
        lines.append(f"{n_shared} of {paired} rows ran with ranks sharing a GPU "
                     f"({ctx.get('ddp_shared_gpu', 'shared')}): functional, not performance claims.")
    if not gpu:
        lines.append("No GPU in this run: these numbers show the pipeline works, nothing about NCCL or a GPU.")
    if failed["ours"] or failed["torch"]:
        lines.append(f"Failed entries: {failed['ours']} ours, {failed['torch']} PyTorch's.")
    if ctx.get("ddp_stopped"):
        lines.append(f"The run stopped early: {ctx['ddp_stopped']}.")
    return "\n".join(lines)


def main(argv):
    return table_main(argv, __doc__, "dist_gpu_table", "torch_dist_gpu.py", "dist_gpu", render)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
