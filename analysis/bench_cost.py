"""What a fix costs, from the benchmark JSON, per shape: never pooled over
shapes. Each repetition's ratio is taken within that repetition (the
method's time over the reference's in the same repetition), then the median
and [min, max] over the repetitions of one shape.

A cost spec (report.json "cost"):
  {"bench": FILE STEM, "kind": "padding", "shape": "straggler/1MiB",
   "methods": [...], "seed_method": "pad_gather_trim"}
      bench/padding: each method's ratio_over_floor per repetition; the best
      method (lowest median) at the named shape, and the post's own method
  {"bench": FILE STEM, "kind": "ratio", "num": "sync_bn", "den": "bn",
   "shape": "C:64/N:2/HW:8x8"}
      time of NUM over DEN within each repetition, at the named shape, and the
      range of the per-shape medians over the file's shapes
"""
import os
import re
import statistics

from pick import is_number


def find(spec, benches):
    for path, bench in benches:
        if os.path.splitext(os.path.basename(path))[0] == spec["bench"]:
            return path, bench
    return None, None


def rep_of(name):
    m = re.search(r"/rep:(\d+)", name)
    return int(m.group(1)) if m else 0


def padding_ratios(bench):
    """{(shape, method): [ratio per repetition]}, shape 'profile/payload'."""
    out = {}
    for b in bench["benchmarks"]:
        parts = b["name"].split("/")
        if len(parts) < 6 or parts[0] != "padding" or not is_number(b.get("ratio_over_floor")):
            continue
        out.setdefault((f"{parts[3]}/{parts[4]}", parts[5]), []).append(float(b["ratio_over_floor"]))
    return out


def time_of(b):
    t = b.get("median_us", b.get("real_time"))
    return float(t) if is_number(t) and t > 0 else None


def pair_ratios(bench, num, den):
    """{shape: [num time / den time per repetition]} for names KIND/SHAPE.../rep:R."""
    times = {}
    for b in bench["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration":
            continue
        parts = [p for p in b["name"].split("/") if not p.startswith(("rep:", "iterations:"))
                 and p not in ("manual_time", "real_time")]
        if len(parts) < 2 or time_of(b) is None:
            continue
        times[(parts[0], "/".join(parts[1:]), rep_of(b["name"]))] = time_of(b)
    out = {}
    for (kind, shape, rep), t in times.items():
        d = times.get((den, shape, rep))
        if kind == num and d:
            out.setdefault(shape, []).append(t / d)
    return out


def spread(values):
    return statistics.median(values), min(values), max(values), len(values)


def cost(spec, benches):
    """A dict describing the cost at the named shape, or None:
    {file, context, shape, method, median, min, max, reps, seed: (method, median, min, max),
     shapes: [(median, shape)] sorted}."""
    path, bench = find(spec, benches)
    if not bench:
        return None
    out = {"file": os.path.basename(path), "context": bench.get("context", {}), "shape": spec["shape"]}
    if spec.get("kind") == "padding":
        ratios = padding_ratios(bench)
        here = {m: spread(v) for (s, m), v in ratios.items() if s == spec["shape"] and m in spec["methods"]}
        if not here:
            return None
        best = min(here, key=lambda m: here[m][0])
        out.update(method=best, median=here[best][0], min=here[best][1], max=here[best][2],
                   reps=here[best][3])
        seed = spec.get("seed_method")
        if seed in here and seed != best:
            out["seed"] = (seed,) + here[seed][:3]
        return out
    ratios = pair_ratios(bench, spec["num"], spec["den"])
    if spec["shape"] not in ratios:
        return None
    med, lo, hi, n = spread(ratios[spec["shape"]])
    out.update(method=spec["num"], median=med, min=lo, max=hi, reps=n,
               shapes=sorted((statistics.median(v), s) for s, v in ratios.items()))
    return out
