#!/usr/bin/python3
"""Seed 003's debug step, "put only the BN layers in eval mode while training"
(set_bn_eval), on PyTorch itself: where it has to go, and what it changes.

    /usr/bin/python3 repro/small_batch_bn/pytorch/bn_eval_mode.py \\
        --out results/vs_pytorch/small_batch_bn_bn_eval.torch1.13.json
    .venv-torch2.15/bin/python repro/small_batch_bn/pytorch/bn_eval_mode.py \\
        --out results/vs_pytorch/small_batch_bn_bn_eval.torch2.15.json

Evidence for repro/small_batch_bn's bn_eval rows (the suite's BatchNorm in
eval mode normalises with the running statistics, updates nothing and
back-propagates through them as constants: core/nn/batch_norm.h). The
model is a small conv-BN-ReLU-pool-linear network in float64 (the post's
resnet18 needs torchvision, which is not installed; what is checked is
BatchNorm's mode, which does not depend on the network around it).

  order       the post's loop calls model.train() at the start of every
              epoch; model.apply(set_bn_eval) once before the loop vs after
              model.train(): is the BN layer in training mode, and does a
              forward move its running statistics?
  eval_step   one training step with the BN layer in eval mode: the change
              of running_mean / running_var / num_batches_tracked, whether
              weight and bias get gradients, and the input gradient against
              dy * gamma / sqrt(running_var + eps) (constant statistics)
  ddp         DDP on gloo, W = 2 real processes x 2 images each (the post's
              2 per GPU): the gradient DDP averages, in train mode and with
              set_bn_eval, against one process's gradient over the same 4
              images (mean loss), and rank 0's running_mean after the step
              against the one process's: with per-rank statistics the two
              differ; in eval mode nothing depends on how the batch is split
"""
import datetime
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
from tools.vs_pytorch import evidence  # noqa: E402

IMAGES_PER_RANK = 2


def set_bn_eval(m):
    import torch
    if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
        m.eval()


def make_model():
    import torch
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(4, 3)).double()


def data(n):
    import torch
    g = torch.Generator().manual_seed(7)
    x = torch.randn(n, 1, 6, 6, generator=g, dtype=torch.float64) * 2 + 1
    y = torch.randint(0, 3, (n,), generator=g)
    return x, y


def warm(model):
    """A few train-mode forwards, so the running statistics are not 0 / 1."""
    import torch
    model.train()
    with torch.no_grad():
        for k in range(3):
            model(data(8)[0] * (1 + k))


def order():
    import torch
    out = {}
    for case in ("set_bn_eval_then_train", "train_then_set_bn_eval"):
        model = make_model()
        warm(model)
        if case == "set_bn_eval_then_train":
            model.apply(set_bn_eval)
            model.train()  # the post's loop, at the start of every epoch
        else:
            model.train()
            model.apply(set_bn_eval)
        bn = model[1]
        before = bn.running_mean.clone()
        model(data(4)[0])
        out[case] = {"bn_training": bn.training,
                     "running_mean_change": float((bn.running_mean - before).abs().max())}
    return out


def eval_step():
    import torch
    model = make_model()
    warm(model)
    model.train()
    model.apply(set_bn_eval)
    bn = model[1]
    rm, rv, nbt = bn.running_mean.clone(), bn.running_var.clone(), int(bn.num_batches_tracked)
    x, y = data(IMAGES_PER_RANK)
    h = model[0](x)
    h.retain_grad()
    z = bn(h)
    z.retain_grad()
    out = model[5](model[4](model[3](model[2](z))))
    torch.nn.functional.cross_entropy(out, y).backward()
    with torch.no_grad():
        want = z.grad * (bn.weight / torch.sqrt(rv + bn.eps)).reshape(1, -1, 1, 1)
    return {"running_mean_change": float((bn.running_mean - rm).abs().max()),
            "running_var_change": float((bn.running_var - rv).abs().max()),
            "num_batches_tracked_change": int(bn.num_batches_tracked) - nbt,
            "weight_grad_abs_max": float(bn.weight.grad.abs().max()),
            "bias_grad_abs_max": float(bn.bias.grad.abs().max()),
            "input_grad_vs_constant_stats_rel": float((h.grad - want).abs().max() / want.abs().max())}


def flat_grad(model):
    import torch
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()])


def one_step(model, x, y, bn_eval):
    import torch
    model.train()
    if bn_eval:
        model.apply(set_bn_eval)
    model.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()


def rank_main(args):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    w, r = args.world_size, args.rank
    out = evidence.RankLog(args.dir, r)
    dist.init_process_group("gloo", init_method=evidence.init_store(args.dir), rank=r,
                            world_size=w, timeout=datetime.timedelta(seconds=args.pg_timeout))
    x, y = data(IMAGES_PER_RANK * w)
    mine = slice(r * IMAGES_PER_RANK, (r + 1) * IMAGES_PER_RANK)
    for mode in ("train", "bn_eval"):
        model = make_model()
        warm(model)
        ddp = DDP(model)  # broadcast_buffers=True, the default
        one_step(ddp, x[mine], y[mine], mode == "bn_eval")
        out[mode] = {"grad": flat_grad(model).tolist(),
                     "running_mean": model[1].running_mean.tolist()}
        out.dump()
        dist.barrier()
    os._exit(0)


def ddp_case(args):
    import torch
    w = 2
    with tempfile.TemporaryDirectory() as d:
        procs = evidence.spawn_ranks(os.path.abspath(__file__), w, ["--pg_timeout", str(args.pg_timeout)],
                                     d, timeout=4 * args.pg_timeout + 60)
        ranks = evidence.collect(d, procs)
    x, y = data(IMAGES_PER_RANK * w)
    out = {"world_size": w, "images_per_rank": IMAGES_PER_RANK}
    for mode in ("train", "bn_eval"):
        if any(mode not in rk for rk in ranks):
            out[mode] = {"error": "no result: " + "; ".join(
                "rank %d exit %s %s" % (rk["rank"], rk["exit"], rk.get("died", "")) for rk in ranks)}
            continue
        ref = make_model()
        warm(ref)
        one_step(ref, x, y, mode == "bn_eval")
        want = flat_grad(ref)
        got = [torch.tensor(rk[mode]["grad"], dtype=torch.float64) for rk in ranks]
        rm = torch.tensor(ranks[0][mode]["running_mean"], dtype=torch.float64)
        out[mode] = {
            "grad_vs_one_process_rel": float((got[0] - want).abs().max() / want.abs().max()),
            "ranks_grad_differ_rel": float((got[0] - got[1]).abs().max() / want.abs().max()),
            "rank0_running_mean_vs_one_process_rel": float(
                (rm - ref[1].running_mean).abs().max() / ref[1].running_mean.abs().max())}
    return out


def print_table(paths):
    out = ["| PyTorch | set_bn_eval, then the loop's model.train(): BN training? | model.train(), then "
           "set_bn_eval: BN training? | eval-mode step: running stats change / input grad vs constant stats "
           "| DDP W = 2 x 2: grad vs one process, train mode / BN eval | rank 0 running_mean vs one process, "
           "train mode / BN eval |",
           "|---|---|---|---|---|---|"]
    for doc in evidence.load_docs(paths):
        v = doc["provenance"]["torch_version"]
        o, s, d = doc["order"], doc["eval_step"], doc["ddp"]

        def mode(key, m):
            return d[m].get(key, d[m].get("error", "-"))
        out.append("| %s | %s (running_mean moves %.2g) | %s (moves %.2g) | %.2g / %.2g | %.2g / %.2g | %.2g / %.2g |" % (
            v, o["set_bn_eval_then_train"]["bn_training"], o["set_bn_eval_then_train"]["running_mean_change"],
            o["train_then_set_bn_eval"]["bn_training"], o["train_then_set_bn_eval"]["running_mean_change"],
            max(s["running_mean_change"], s["running_var_change"]), s["input_grad_vs_constant_stats_rel"],
            mode("grad_vs_one_process_rel", "train"), mode("grad_vs_one_process_rel", "bn_eval"),
            mode("rank0_running_mean_vs_one_process_rel", "train"),
            mode("rank0_running_mean_vs_one_process_rel", "bn_eval")))
    return "\n".join(out) + "\n\n" + evidence.footer(paths) + "\n"


def main():
    ap = evidence.parser(__doc__.split("\n")[0], pg_timeout=60)
    evidence.add_table_flags(ap)
    args = evidence.dispatch(ap, rank_main, print_table)
    doc = {"provenance": evidence.provenance("repro/small_batch_bn/pytorch/bn_eval_mode.py"),
           "order": order(), "eval_step": eval_step(), "ddp": ddp_case(args)}
    evidence.write_json(args.out, doc)
    print(print_table([args.out]) if args.out else "", end="")


if __name__ == "__main__":
    main()
