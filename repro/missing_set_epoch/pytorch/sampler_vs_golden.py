#!/usr/bin/python3
"""Does this PyTorch's DistributedSampler still pad and order as the suite's?

    /usr/bin/python3 repro/missing_set_epoch/pytorch/sampler_vs_golden.py \\
        --out results/vs_pytorch/missing_set_epoch_sampler.torch1.13.json
    .venv-torch2.15/bin/python repro/missing_set_epoch/pytorch/sampler_vs_golden.py \\
        --out results/vs_pytorch/missing_set_epoch_sampler.torch2.15.json

The suite's DistributedSampler (core/data) is tested against golden vectors
that PyTorch 1.13 wrote (core/data/golden/sampler_golden.txt, by
core/data/golden/gen_golden.py: torch.randperm and DistributedSampler over
N, W, rank, shuffle, seed, drop_last, epoch, plus the errors it raises). This
script runs gen_golden.py's generator with the installed torch into a
temporary file and compares it line by line with the committed file, so a
line that differs is a configuration where this PyTorch orders (or pads, or
refuses) differently from the suite. Also, in one process:

  padding       N = 1003, W = 2 and W = 4, drop_last=False: per-rank counts
                and which indices are repeated to pad
  no_set_epoch  the order of epoch 0 and of a second pass without set_epoch
                (identical?) and with set_epoch(1)
  shuffle_arg   DataLoader(shuffle=True, sampler=...): what it raises

Single process, no gloo; about 20 s and 4 GB (gen_golden.py's large
randperm digests).
"""
import importlib.util
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
from tools.vs_pytorch import evidence  # noqa: E402

GOLDEN = os.path.join(evidence.ROOT, "core", "data", "golden", "sampler_golden.txt")
GEN = os.path.join(evidence.ROOT, "core", "data", "golden", "gen_golden.py")


def regenerate(path):
    spec = importlib.util.spec_from_file_location("gen_golden", GEN)
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    gen.OUT = path
    gen.main()


def compare(ours_path):
    def body(path):
        with open(path) as f:
            lines = [l.rstrip("\n") for l in f if not l.startswith("#")]
        return {l.split(" : ")[0]: l.split(" : ", 1)[1] if " : " in l else "" for l in lines}
    want, got = body(GOLDEN), body(ours_path)
    by_kind = {}
    differ = []
    for k in want:
        kind = k.split(" ")[0]
        d = by_kind.setdefault(kind, {"lines": 0, "differ": 0})
        d["lines"] += 1
        if got.get(k) != want[k]:
            d["differ"] += 1
            differ.append({"key": k, "golden_1.13": want[k][:200], "this_torch": (
                got.get(k) or "(missing)")[:200]})
    return by_kind, differ


def padding():
    from torch.utils.data import DistributedSampler
    out = []
    for w in (2, 4):
        per_rank = [list(DistributedSampler(range(1003), num_replicas=w, rank=r, shuffle=False))
                    for r in range(w)]
        flat = [i for r in per_rank for i in r]
        repeated = sorted({i for i in flat if flat.count(i) > 1})
        out.append({"n": 1003, "world_size": w, "counts": [len(r) for r in per_rank],
                    "repeated_indices": repeated})
    return out


def no_set_epoch():
    from torch.utils.data import DistributedSampler
    s = DistributedSampler(range(1003), num_replicas=2, rank=0, shuffle=True, seed=0)
    first, second = list(s), list(s)
    s.set_epoch(1)
    third = list(s)
    return {"second_pass_identical": first == second, "set_epoch_1_differs": first != third}


def shuffle_arg():
    from torch.utils.data import DataLoader, DistributedSampler
    s = DistributedSampler(range(10), num_replicas=2, rank=0)
    try:
        DataLoader(range(10), shuffle=True, sampler=s)
        return {"raises": False}
    except Exception as e:
        return {"raises": True, "error": "%s: %s" % (type(e).__name__, evidence.first_line(e))}


def print_table(paths):
    out = ["| PyTorch | golden lines equal to the suite's (1.13) vectors | lines that differ | "
           "N=1003 padding (counts; repeated) | second pass without set_epoch | "
           "DataLoader(shuffle=True, sampler=...) |", "|---|---|---|---|---|---|"]
    for doc in evidence.load_docs(paths):
        total = sum(v["lines"] for v in doc["golden"]["by_kind"].values())
        bad = sum(v["differ"] for v in doc["golden"]["by_kind"].values())
        kinds = ", ".join("%s %d of %d" % (k, v["differ"], v["lines"])
                          for k, v in doc["golden"]["by_kind"].items() if v["differ"])
        pad = "; ".join("W=%d %s, repeated %s" % (p["world_size"], p["counts"],
                                                   p["repeated_indices"]) for p in doc["padding"])
        out.append("| %s | %d of %d | %s | %s | %s | %s |" % (
            doc["provenance"]["torch_version"], total - bad, total,
            ("%d: %s; first: `%s`" % (bad, kinds, doc["golden"]["differ"][0]["key"]))
            if bad else "none", pad,
            "identical" if doc["no_set_epoch"]["second_pass_identical"] else "differs",
            "`%s`" % doc["shuffle_arg"]["error"] if doc["shuffle_arg"]["raises"] else "accepted"))
    out.append("\n" + evidence.footer(paths))
    return "\n".join(out) + "\n"


def main():
    ap = evidence.parser(__doc__.split("\n\n")[0])
    evidence.add_table_flags(ap)
    args = evidence.dispatch(ap, None, print_table)
    with tempfile.TemporaryDirectory(prefix="sampler_golden_") as d:
        path = os.path.join(d, "sampler_golden.txt")
        regenerate(path)
        by_kind, differ = compare(path)
    doc = {"what": "DistributedSampler / randperm against the suite's golden vectors (1.13)",
           "config": {"golden": os.path.relpath(GOLDEN, evidence.ROOT),
                      "generator": os.path.relpath(GEN, evidence.ROOT)},
           "provenance": evidence.provenance(
               "repro/missing_set_epoch/pytorch/sampler_vs_golden.py"),
           "golden": {"by_kind": by_kind, "differ": differ},
           "padding": padding(), "no_set_epoch": no_set_epoch(), "shuffle_arg": shuffle_arg()}
    evidence.write_json(args.out, doc)
    print("golden: %s; padding %s; no_set_epoch %s; shuffle_arg %s" % (
        by_kind, doc["padding"], doc["no_set_epoch"], doc["shuffle_arg"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
