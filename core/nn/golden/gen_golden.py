#!/usr/bin/python3
"""Writes the PyTorch golden vectors that //core/nn:golden_test checks.

Run from anywhere:  /usr/bin/python3 core/nn/golden/gen_golden.py [--out DIR]
(Debian's python3-torch 1.13). Output: one <case>_<f64|f32>.txt per case in
this folder (or DIR), rewritten byte-for-byte identically on every run: fixed seeds,
one thread, deterministic algorithms, '%.17g' printing.

File format (self-describing text): '#' lines are comments; every tensor is a
line "<name> <ndim> <dim0> <dim1> ..." followed by one line with its values in
row-major (C) order, separated by spaces (ndim 0: one value). Every case draws
its inputs in float64 from its own seed; the f32 file holds the same inputs
rounded to float32 and torch's float32 results (each float32 printed exactly
as a double).
"""

import argparse
import os
import sys

import torch
import torch.nn.functional as F

OUT_DIR = os.path.dirname(os.path.abspath(__file__))
DTYPES = {"f64": torch.float64, "f32": torch.float32}


class Writer:
    def __init__(self, case, tag):
        self.lines = [
            "# core/nn/golden/%s_%s.txt: written by gen_golden.py (torch %s); do not edit."
            % (case, tag, torch.__version__)
        ]

    def put(self, name, value):
        # Python numbers (hyperparameters) go straight to float64: as_tensor
        # would round them to float32 first.
        if not torch.is_tensor(value):
            value = torch.tensor(value, dtype=torch.float64)
        t = value.detach().to(torch.float64).contiguous()
        self.lines.append(" ".join([name, str(t.dim())] + [str(d) for d in t.shape]))
        self.lines.append(" ".join("%.17g" % v for v in t.reshape(-1).tolist()))

    def save(self, out_dir, case, tag):
        path = os.path.join(out_dir, "%s_%s.txt" % (case, tag))
        with open(path, "w") as f:
            f.write("\n".join(self.lines) + "\n")


def randn(gen, *shape):
    return torch.randn(*shape, generator=gen, dtype=torch.float64)


def case_linear(gen, dt, w):
    x, weight, bias = randn(gen, 4, 5), randn(gen, 3, 5), randn(gen, 3)
    dy = randn(gen, 4, 3)
    lin = torch.nn.Linear(5, 3).to(dt)
    with torch.no_grad():
        lin.weight.copy_(weight)
        lin.bias.copy_(bias)
    xs = x.to(dt).requires_grad_()
    y = lin(xs)
    y.backward(dy.to(dt))
    for k, v in [("x", xs), ("weight", lin.weight), ("bias", lin.bias), ("dy", dy.to(dt)), ("y", y),
                 ("dx", xs.grad), ("dweight", lin.weight.grad), ("dbias", lin.bias.grad)]:
        w.put(k, v)


def make_conv_case(kernel, stride, padding):
    def case(gen, dt, w):
        x = randn(gen, 2, 3, 6, 5)
        weight, bias = randn(gen, 4, 3, kernel, kernel), randn(gen, 4)
        conv = torch.nn.Conv2d(3, 4, kernel, stride=stride, padding=padding).to(dt)
        with torch.no_grad():
            conv.weight.copy_(weight)
            conv.bias.copy_(bias)
        xs = x.to(dt).requires_grad_()
        y = conv(xs)
        dy = randn(gen, *y.shape).to(dt)
        y.backward(dy)
        for k, v in [("kernel", kernel), ("stride", stride), ("padding", padding), ("x", xs),
                     ("weight", conv.weight), ("bias", conv.bias), ("dy", dy), ("y", y), ("dx", xs.grad),
                     ("dweight", conv.weight.grad), ("dbias", conv.bias.grad)]:
            w.put(k, v)
    return case


def case_relu(gen, dt, w):
    x, dy = randn(gen, 3, 4), randn(gen, 3, 4)
    xs = x.to(dt).requires_grad_()
    y = torch.relu(xs)
    y.backward(dy.to(dt))
    for k, v in [("x", xs), ("dy", dy.to(dt)), ("y", y), ("dx", xs.grad)]:
        w.put(k, v)


def case_pool(gen, dt, w):
    x, dy = randn(gen, 2, 3, 4, 3), randn(gen, 2, 3)
    xs = x.to(dt).requires_grad_()
    y = F.adaptive_avg_pool2d(xs, 1).flatten(1)
    y.backward(dy.to(dt))
    for k, v in [("x", xs), ("dy", dy.to(dt)), ("y", y), ("dx", xs.grad)]:
        w.put(k, v)


def make_bn_case(shape, offsets, momentum, eps):
    """Three training steps (output, input and parameter gradients, running
    stats after each), then one eval step with the final running stats."""
    def case(gen, dt, w):
        c = shape[1]
        bn = (torch.nn.BatchNorm1d if len(shape) == 2 else torch.nn.BatchNorm2d)(
            c, eps=eps, momentum=momentum).to(dt)
        with torch.no_grad():
            bn.weight.copy_(1.0 + 0.5 * randn(gen, c))
            bn.bias.copy_(randn(gen, c))
        w.put("momentum", momentum)
        w.put("eps", eps)
        w.put("weight", bn.weight)
        w.put("bias", bn.bias)
        off = torch.tensor(offsets, dtype=torch.float64).reshape([1, c] + [1] * (len(shape) - 2))
        for step in ["train0", "train1", "train2", "eval"]:
            bn.train(step != "eval")
            x = (randn(gen, *shape) * 2.0 + off).to(dt).requires_grad_()
            dy = randn(gen, *shape).to(dt)
            bn.zero_grad()
            y = bn(x)
            y.backward(dy)
            for k, v in [("x", x), ("dy", dy), ("y", y), ("dx", x.grad), ("dweight", bn.weight.grad),
                         ("dbias", bn.bias.grad), ("running_mean", bn.running_mean),
                         ("running_var", bn.running_var)]:
                w.put(step + "." + k, v)
    return case


def make_gn_case(shape, groups, eps):
    def case(gen, dt, w):
        c = shape[1]
        gn = torch.nn.GroupNorm(groups, c, eps=eps).to(dt)
        with torch.no_grad():
            gn.weight.copy_(1.0 + 0.5 * randn(gen, c))
            gn.bias.copy_(randn(gen, c))
        x = (randn(gen, *shape) * 3.0 + 1.0).to(dt).requires_grad_()
        dy = randn(gen, *shape).to(dt)
        y = gn(x)
        y.backward(dy)
        for k, v in [("groups", groups), ("eps", eps), ("weight", gn.weight), ("bias", gn.bias), ("x", x),
                     ("dy", dy), ("y", y), ("dx", x.grad), ("dweight", gn.weight.grad),
                     ("dbias", gn.bias.grad)]:
            w.put(k, v)
    return case


def case_cross_entropy(gen, dt, w):
    logits = (randn(gen, 5, 4) * 3.0).to(dt).requires_grad_()
    labels = torch.randint(0, 4, (5,), generator=gen)
    loss = F.cross_entropy(logits, labels)
    loss.backward()
    for k, v in [("logits", logits), ("labels", labels), ("loss", loss), ("dlogits", logits.grad)]:
        w.put(k, v)


def case_bce(gen, dt, w):
    logits = (randn(gen, 7, 1) * 3.0).to(dt).requires_grad_()
    targets = torch.tensor([[0.0], [1.0], [1.0], [0.0], [0.25], [0.9], [1.0]], dtype=dt)
    loss = F.binary_cross_entropy_with_logits(logits, targets)
    loss.backward()
    for k, v in [("logits", logits), ("targets", targets), ("loss", loss), ("dlogits", logits.grad)]:
        w.put(k, v)


def optimizer_case(gen, dt, w, make_opt, settings, steps, lr_at=None):
    """A 3x4 weight and a bias, then `steps` optimizer steps on random
    gradients; lr_at = (step, lr): the learning rate set before that step
    (as a schedule does between steps)."""
    weight = torch.nn.Parameter(randn(gen, 3, 4).to(dt))
    bias = torch.nn.Parameter(randn(gen, 3).to(dt))
    opt = make_opt([weight, bias])
    for k, v in list(settings) + [("weight", weight), ("bias", bias)]:
        w.put(k, v)
    for step in range(steps):
        if lr_at and step == lr_at[0]:
            for group in opt.param_groups:
                group["lr"] = lr_at[1]
        weight.grad = randn(gen, 3, 4).to(dt)
        bias.grad = randn(gen, 3).to(dt)
        w.put("step%d.dweight" % step, weight.grad)
        w.put("step%d.dbias" % step, bias.grad)
        opt.step()
        w.put("step%d.weight" % step, weight)
        w.put("step%d.bias" % step, bias)


def case_sgd(gen, dt, w):
    lr, momentum, wd = 0.1, 0.9, 0.01
    optimizer_case(gen, dt, w, lambda ps: torch.optim.SGD(ps, lr=lr, momentum=momentum, weight_decay=wd),
                   [("lr", lr), ("momentum", momentum), ("weight_decay", wd)], 3)


def case_adam(gen, dt, w):
    lr, beta1, beta2, eps, wd = 0.01, 0.9, 0.999, 1e-8, 0.01
    optimizer_case(gen, dt, w,
                   lambda ps: torch.optim.Adam(ps, lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=wd),
                   [("lr", lr), ("beta1", beta1), ("beta2", beta2), ("eps", eps), ("weight_decay", wd)],
                   4, lr_at=(3, lr / 4))


# name -> (seed, generator). Each case has its own seed, so adding a case
# leaves the others' files unchanged.
CASES = {
    "linear": (101, case_linear),
    "conv_k3s1p1": (102, make_conv_case(3, 1, 1)),
    "conv_k3s2p1": (103, make_conv_case(3, 2, 1)),
    "conv_k2s2p0": (104, make_conv_case(2, 2, 0)),
    "relu": (105, case_relu),
    "pool": (106, case_pool),
    # Channel offsets up to 1e3 x std: normalisation must not lose precision.
    "bn1d": (107, make_bn_case((6, 4), [0.0, 5.0, -3.0, 1000.0], 0.1, 1e-5)),
    "bn2d": (108, make_bn_case((4, 3, 3, 2), [1.0, -20.0, 0.0], 0.2, 1e-3)),
    "gn2d": (109, make_gn_case((3, 6, 2, 2), 3, 1e-5)),
    "gn1d": (110, make_gn_case((4, 6), 2, 1e-5)),
    "cross_entropy": (111, case_cross_entropy),
    "bce": (112, case_bce),
    "sgd": (113, case_sgd),
    "adam": (114, case_adam),
}


def main():
    parser = argparse.ArgumentParser(description="Write core/nn's PyTorch golden vectors.")
    parser.add_argument("--out", default=OUT_DIR, help="output folder (default: next to this script)")
    out_dir = parser.parse_args().out
    if not os.path.isdir(out_dir):
        parser.error("--out: %s is not a folder" % out_dir)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    for name, (seed, fn) in CASES.items():
        for tag, dt in DTYPES.items():
            gen = torch.Generator().manual_seed(seed)
            w = Writer(name, tag)
            fn(gen, dt, w)
            w.save(out_dir, name, tag)
    print("wrote %d files to %s" % (2 * len(CASES), out_dir), file=sys.stderr)


if __name__ == "__main__":
    main()
