#!/usr/bin/python3
"""bench/padding/table.py [results/bench_padding.json]

Renders bench/padding's Google Benchmark JSON as the Markdown table in
bench/padding/README.md: one row per (profile, payload), each method's time
and its ratio over the floor measured in the same run, plus the bytes the
padding wastes. Nothing is typed by hand: rerun this after a new run.
"""
import json
import sys


def main(argv):
    path = argv[0] if argv else "results/bench_padding.json"
    with open(path) as f:
        data = json.load(f)
    ctx = data.get("context", {})
    groups, methods = {}, []
    for b in data["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration":
            continue
        parts = b["name"].split("/")  # padding/backend/W/profile/payload/method/...
        key = (parts[3], parts[4])
        groups.setdefault(key, {})[parts[5]] = b
        if parts[5] not in methods:
            methods.append(parts[5])
    unit = data["benchmarks"][0]["time_unit"]
    print(f"Host `{ctx.get('host_name', '?')}`, {ctx.get('num_cpus', '?')} CPUs, "
          f"{ctx.get('date', '?')}, backend {ctx.get('ddp_backend', '?')}, "
          f"W={ctx.get('ddp_world_size', '?')}, build {ctx.get('ddp_build', '?')}; "
          f"time = mean over the case's iterations of the slowest rank's time ({unit}).")
    print()
    head = ["profile", "payload/rank"]
    for m in methods:
        head += [f"{m} ({unit})"] + ([] if m == "floor" else [f"{m} / floor"])
    head += ["pad wasted (KiB)"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for (profile, payload), row in groups.items():
        cells = [profile, payload]
        for m in methods:
            b = row.get(m)
            cells.append(f"{b['real_time']:.0f}" if b else "")
            if m != "floor":
                cells.append(f"{b['ratio_over_floor']:.2f}" if b and "ratio_over_floor" in b else "")
        pad = row.get("pad_gather_trim")
        cells.append(f"{pad['wasted_bytes'] / 1024:.1f}" if pad else "")
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
