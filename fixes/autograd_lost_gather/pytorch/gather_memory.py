#!/usr/bin/python3
"""What the seed's fix (re-insert the local tensor after all_gather) and the
differentiable all_gather cost in memory, against a per-rank loss: the
resident-memory peak of the forward and of the backward, per rank, and the
bytes autograd saves for the backward (the graph the seed says is "kept").

    /usr/bin/python3 fixes/autograd_lost_gather/pytorch/gather_memory.py \\
        --out results/vs_pytorch/autograd_lost_gather_memory.torch1.13.json
    .venv-torch2.15/bin/python fixes/autograd_lost_gather/pytorch/gather_memory.py \\
        --out results/vs_pytorch/autograd_lost_gather_memory.torch2.15.json

Evidence for the ledger's seed-002 claims "the cost of the fix is memory for
the retained graph" and "keeping the graph adds an extra memory peak during
the gradient computation". Real gloo processes, W = 2 and 4, float32. Rank r
holds N rows x_r (N x D, data) and targets y_r; the model is one weight
vector w (D, requires grad); scores s_r = x_r @ w. Per variant, a fresh
world of W processes (so no variant inherits another's heap):

  local      loss = mean((s_r - y_r)^2) on the rank's own rows (what a
             per-rank loss does; DDP would average it)
  seed_fix   all_gather(s_r) into zeros, then gathered[rank] = s_r (the
             seed's _simple_gather_all_tensors fix); loss = mean over all W*N
             rows of (s - y)^2, every rank alike
  dist_nn    torch.distributed.nn.functional.all_gather(s_r) (differentiable);
             the same global loss
  one_process  one process holding every rank's rows (W*N), the same global
             loss: what the fixes compute, without a gather

The targets of every rank are gathered before the measurement starts (a
global loss needs them whatever the gather), so what is measured is what
the scores, their gather, the loss and the backward add. One warm-up step,
then the measured step: the peak resident memory (VmHWM, reset through
/proc/self/clear_refs) of the forward over the resident memory before it,
and of the backward over the resident memory after the forward; the bytes
of the tensors autograd saves for the backward (saved_tensors_hooks; the
inputs x, y and w, saved by reference, not counted). glibc's mmap threshold
is fixed (MALLOC_MMAP_THRESHOLD_) so that freed tensors leave the resident
set. One score vector is N * 4 bytes: the table gives each number in those
units too.
"""
import argparse
import datetime
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
from tools.vs_pytorch import evidence  # noqa: E402

D = 4
VARIANTS = ("local", "seed_fix", "dist_nn", "one_process")


def status_kb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise RuntimeError("no %s in /proc/self/status" % key)


def reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def step(variant, x, y_all, w, rank, world):
    """The forward of `variant`; returns (loss, saved bytes)."""
    import torch
    import torch.distributed as dist
    inputs = {t.data_ptr() for t in (x, y_all, w)}
    saved = [0]

    def pack(t):
        if t.data_ptr() not in inputs:
            saved[0] += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        s = x @ w
        n = s.shape[0]
        if variant == "local":
            loss = ((s - y_all[rank * n:(rank + 1) * n]) ** 2).mean()
        elif variant == "one_process":
            loss = ((s - y_all) ** 2).mean()
        else:
            if variant == "seed_fix":
                gathered = [torch.zeros_like(s) for _ in range(world)]
                dist.all_gather(gathered, s)
                gathered[rank] = s
            else:
                import torch.distributed.nn.functional as dnn
                gathered = list(dnn.all_gather(s))
            loss = ((torch.cat(gathered) - y_all) ** 2).mean()
    return loss, saved[0]


def rank_main(args):
    import gc
    import torch
    import torch.distributed as dist
    w_size, r = args.world_size, args.rank
    out = evidence.RankLog(args.dir, r)
    dist.init_process_group("gloo", init_method=evidence.init_store(args.dir), rank=r,
                            world_size=w_size, timeout=datetime.timedelta(seconds=args.pg_timeout))
    def rows(rank):
        g = torch.Generator().manual_seed(10 + rank)
        return torch.randn(args.n, D, generator=g), torch.randn(args.n, generator=g)

    if args.variant == "one_process":  # every rank's rows in this one process
        parts = [rows(k) for k in range(args.of)]
        x = torch.cat([p[0] for p in parts])
        y_all = torch.cat([p[1] for p in parts])
        del parts
    else:
        x, y = rows(r)
        y_parts = [torch.zeros_like(y) for _ in range(w_size)]
        dist.all_gather(y_parts, y)
        y_all = torch.cat(y_parts)
        del y_parts, y
    w = torch.randn(D, generator=torch.Generator().manual_seed(0)).requires_grad_(True)  # alike on every rank
    try:
        for k in range(2):  # a warm-up step, then the measured one
            w.grad = None
            gc.collect()
            dist.barrier()
            before = status_kb("VmRSS")
            reset_peak()
            loss, saved = step(args.variant, x, y_all, w, r, w_size)
            forward_peak = status_kb("VmHWM") - before
            after_forward = status_kb("VmRSS")
            reset_peak()
            loss.backward()
            backward_peak = status_kb("VmHWM") - after_forward
            del loss
        out.update({"forward_peak_kb": forward_peak, "backward_peak_kb": backward_peak,
                    "forward_held_kb": after_forward - before, "saved_bytes": saved,
                    "grad_norm": float(w.grad.norm())})
    except Exception as e:
        out["error"] = "%s: %s" % (type(e).__name__, evidence.first_line(e))
    out.dump()
    dist.barrier()
    os._exit(0)


def run_world(args, w, variant):
    with tempfile.TemporaryDirectory() as d:
        procs = evidence.spawn_ranks(
            os.path.abspath(__file__), 1 if variant == "one_process" else w,
            ["--pg_timeout", str(args.pg_timeout), "--n", str(args.n), "--variant", variant, "--of", str(w)], d,
            timeout=4 * args.pg_timeout + 60, env={"MALLOC_MMAP_THRESHOLD_": "65536"})
        ranks = evidence.collect(d, procs)
    case = {"world_size": w, "variant": variant, "n": args.n, "d": D,
            "score_vector_kb": args.n * 4 / 1024.0}
    errors = [rk.get("error") or "exit %s %s" % (rk["exit"], rk.get("died", ""))
              for rk in ranks if rk.get("error") or rk["exit"] != 0]
    if errors:
        case["error"] = errors[0]
        return case
    for key in ("forward_peak_kb", "backward_peak_kb", "forward_held_kb", "saved_bytes"):
        case[key] = max(rk[key] for rk in ranks)  # the worst rank
    case["grad_norms"] = [rk["grad_norm"] for rk in ranks]
    return case


def print_table(paths):
    out = ["| PyTorch | W | variant | forward peak, MB (score vectors) | backward peak, MB (score vectors) "
           "| held after forward, MB | saved for backward, MB (score vectors) |",
           "|---|---|---|---|---|---|---|"]
    for doc in evidence.load_docs(paths):
        v = doc["provenance"]["torch_version"]
        for c in doc["cases"]:
            if "error" in c:
                out.append("| %s | %d | %s | error: %s | | | |" % (v, c["world_size"], c["variant"], c["error"]))
                continue
            u = c["score_vector_kb"]
            out.append("| %s | %d | %s | %.1f (%.1f) | %.1f (%.1f) | %.1f | %.1f (%.1f) |" % (
                v, c["world_size"], c["variant"], c["forward_peak_kb"] / 1024, c["forward_peak_kb"] / u,
                c["backward_peak_kb"] / 1024, c["backward_peak_kb"] / u, c["forward_held_kb"] / 1024,
                c["saved_bytes"] / 2**20, c["saved_bytes"] / 1024 / u))
    n = evidence.load_docs(paths)[0]["cases"][0]["n"]
    return ("\n".join(out) + "\n\nN = %d rows per rank (one score vector: %.1f MB), D = %d, float32; "
            "worst rank.\n\n" % (n, n * 4 / 2**20, D) + evidence.footer(paths) + "\n")


def main():
    ap = evidence.parser(__doc__.split("\n")[0], pg_timeout=120, worlds="2,4")
    ap.add_argument("--n", type=int, default=1 << 22, help="rows per rank (default 4194304)")
    ap.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)
    ap.add_argument("--of", type=int, default=1, help=argparse.SUPPRESS)  # one_process: the world it stands for
    evidence.add_table_flags(ap)
    args = evidence.dispatch(ap, rank_main, print_table)
    if args.n < 1024:
        print("--n: expected at least 1024 rows, got %d" % args.n, file=sys.stderr)
        sys.exit(2)
    cases = []
    for w in evidence.worlds(args):
        for variant in VARIANTS:
            cases.append(run_world(args, w, variant))
            print("W=%d %s: %s" % (w, variant, cases[-1]), file=sys.stderr)
    doc = {"provenance": evidence.provenance("fixes/autograd_lost_gather/pytorch/gather_memory.py"),
           "cases": cases}
    evidence.write_json(args.out, doc)
    print(print_table([args.out]) if args.out else "", end="")


if __name__ == "__main__":
    main()
