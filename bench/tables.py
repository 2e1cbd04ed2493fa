#!/usr/bin/python3
"""bench/tables.py [--results results] [--update]

Renders the committed benchmark JSON as the README tables of bench/,
bench/padding/ and bench/peers/ (nothing in them is typed by hand):

  results/bench_padding_w{2,4}.json  (bazel run -c opt //bench/padding)
  results/bench_peers_w{2,4}.json    (bazel run -c opt //bench/peers)
  results/bench_profile_small.json   (bench/peers/profile_small.py)
  results/bench_torch_norm_split.json (bench/peers/torch_norm_split.py)
  results/bench_cpu_split.json       (bench/padding/cpu_split.py)
  results/bench_padding_congestion_*.json (bench/padding/congestion.sh)
  results/bench_sync_bn.json         (bazel run -c opt //bench:sync_bn)

Every number is a median over the interleaved repetitions of one run, with
the min and max beside it; a ratio is computed per repetition (the method
and its floor, or ours and PyTorch's, measured seconds apart) before the
median is taken. Without --update it prints the tables; with --update it
replaces the text between `<!-- table:ID:begin -->` and `<!-- table:ID:end -->`
in the three READMEs (each file rewritten atomically). Exit 2 when a file is
missing or malformed, or a marker is not found.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

WORLD_SIZES = (2, 4)
# The runs of bench/padding/congestion.sh: a congestion control, and the
# Gloo allgatherv's piece size where it is not the default.
CONGESTION_RUNS = ("bbr", "cubic", "cubic_piece4096KiB")
# The direct-exchange floor exists in runs since the Gloo allgatherv had two
# algorithms; older files lack it and their floor is the best of the two.
FLOORS = ("floor_allgather", "floor_allgatherv", "floor_allgatherv_direct")
# Methods that need nothing but the data (the sizes travel or are exchanged)
# and those that need knowledge every rank shares (counts, or a bound).
UNKNOWN_SIZES = ("pad_gather_trim", "allgatherv")
NEEDS_KNOWLEDGE = ("known_counts", "known_counts_direct", "bounded_pad")
MIB = 1024 * 1024


class InputError(Exception):
    pass


def load(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}")
    except ValueError as e:
        raise InputError(f"{path}: not valid JSON: {e}")
    if not isinstance(data, dict) or "benchmarks" not in data:
        raise InputError(f"{path}: not Google-Benchmark-shaped JSON")
    return data


def spread(values, fmt):
    """'median [min, max]' of the values, each with `fmt`."""
    return (f"{fmt.format(statistics.median(values))} "
            f"[{fmt.format(min(values))}, {fmt.format(max(values))}]")


def payload_bytes(name):
    for suffix, scale in (("MiB", MIB), ("KiB", 1024), ("B", 1)):
        if name.endswith(suffix):
            return int(name[:-len(suffix)]) * scale
    raise InputError(f"unknown payload {name!r}")


def congestion(ctx):
    """The TCP congestion control a run of Gloo over loopback had: its
    timings depend on it (bench/padding/README.md, "The kernel's share")."""
    return f"TCP congestion control {ctx.get('ddp_tcp_congestion', 'not recorded')}"


def short_commit(commit):
    """The first 12 hex digits, keeping "+dirty" (a tree with uncommitted
    changes ran: the commit alone does not say what code that was)."""
    return commit[:12] + ("+dirty" if commit.endswith("+dirty") else "")


def context_line(ctx, what):
    return (f"{what}: host `{ctx.get('host_name', '?')}` ({ctx.get('num_cpus', '?')} CPUs, "
            f"{ctx.get('ddp_cpu', '?')}), {ctx.get('date', '?')}, commit "
            f"`{short_commit(ctx.get('ddp_commit', '?'))}`; W = {ctx.get('ddp_world_size', '?')} "
            f"(oversubscribed: {ctx.get('ddp_oversubscribed', '?')}); "
            f"{ctx.get('ddp_reps', '?')} interleaved repetitions; our ranks "
            f"SCHED_{ctx.get('ddp_sched', '?').upper()}"
            f"{', pinned (rank r on CPU r mod CPUs)' if ctx.get('ddp_pin_cpus') == 'yes' else ''}; "
            f"{congestion(ctx)}; "
            + (f"allgatherv pieces {ctx['ddp_gloo_allgatherv_piece_kib']} KiB; "
               if "ddp_gloo_allgatherv_piece_kib" in ctx else "")
            + f"load average at the start "
            f"{ctx.get('ddp_loadavg_start', '?')}"
            + (f", at the end {ctx['ddp_loadavg_end']}" if "ddp_loadavg_end" in ctx else ""))


# ------------------------------------------------------------------ padding

def padding_cases(data, path):
    """{(profile, payload): {method: {rep: seconds}}} in the file's order:
    the repetition's median iteration (`median_us`, what bench/padding's own
    ratios use), or its mean (`real_time`) in files from before it had one."""
    cases = {}
    for b in data["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration":
            continue
        parts = b["name"].split("/")
        if len(parts) < 7 or parts[0] != "padding" or not parts[6].startswith("rep:"):
            raise InputError(f"{path}: unexpected benchmark name {b['name']!r}")
        scale = {"us": 1e-6, "ms": 1e-3, "ns": 1e-9, "s": 1.0}[b["time_unit"]]
        rep = int(parts[6][4:])
        seconds = b["median_us"] * 1e-6 if "median_us" in b else b["real_time"] * scale
        cases.setdefault((parts[3], parts[4]), {}).setdefault(parts[5], {})[rep] = seconds
    return cases


def floor_per_rep(methods):
    reps = sorted(set.intersection(*(set(methods[f]) for f in FLOORS if f in methods)))
    return {r: min(methods[f][r] for f in FLOORS if f in methods) for r in reps}


def ratios(methods, name, floor):
    return [methods[name][r] / floor[r] for r in sorted(floor) if r in methods.get(name, {})]


def best(methods, names, floor):
    """The method of `names` with the lowest median ratio, and its ratios."""
    scored = [(statistics.median(ratios(methods, n, floor)), n) for n in names if n in methods]
    if not scored:
        return None, []
    _, name = min(scored)
    return name, ratios(methods, name, floor)


def target(payload):
    b = payload_bytes(payload)
    return 1.05 if b >= MIB else 1.2 if b >= 64 * 1024 else None


def padding_table(data, path):
    cases = padding_cases(data, path)
    all_methods = [m for m in UNKNOWN_SIZES + NEEDS_KNOWLEDGE
                   if any(m in c for c in cases.values())]
    head = ["profile", "payload/rank", "floor (us)", "floor won by"] + \
           [f"{m} / floor" for m in all_methods] + ["best fix / floor", "target"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (profile, payload), methods in cases.items():
        floor = floor_per_rep(methods)
        if not floor:
            raise InputError(f"{path}: {profile}/{payload} has no complete floor")
        wins = {f: sum(1 for r in floor if methods.get(f, {}).get(r) == floor[r]) for f in FLOORS}
        won = ", ".join(f"{f[6:]} {n}/{len(floor)}" for f, n in wins.items() if n)
        cells = [profile, payload, spread([v * 1e6 for v in floor.values()], "{:.0f}"), won]
        for m in all_methods:
            rs = ratios(methods, m, floor)
            cells.append(spread(rs, "{:.2f}") if rs else "")
        name, rs = best(methods, all_methods, floor)
        t = target(payload)
        verdict = "" if t is None else (f"≤ {t:g} ✓" if statistics.median(rs) <= t
                                        else f"≤ {t:g} ✗")
        cells += [f"{spread(rs, '{:.3f}')} ({name})", verdict]
        rows.append("| " + " | ".join(cells) + " |")
    same = same_call(cases)
    if same:
        direct = any(label for _, label, _ in same)
        rows.append("\nResolution: in the `equal` profile `known_counts` makes the very call "
                    "`floor_allgatherv` makes" +
                    (" (and `known_counts_direct` the one `floor_allgatherv_direct` makes)"
                     if direct else "") +
                    ", so its time over that method's, "
                    "repetition by repetition, is what the same call twice measures: " +
                    "; ".join(f"{payload}{label} {spread(rs, '{:.3f}')}"
                              for payload, label, rs in same) +
                    ". A ratio within that spread of the target is not resolved by this run.")
    return "\n".join(rows)


def same_call(cases):
    """[(payload, label, [known_counts / floor_allgatherv per repetition])]
    of the equal profile, and the same for the direct-exchange twins: one
    call timed twice, the run's own noise."""
    out = []
    pairs = (("known_counts", "floor_allgatherv", ""),
             ("known_counts_direct", "floor_allgatherv_direct", " (direct)"))
    for (profile, payload), methods in cases.items():
        for fix, floor, label in pairs:
            a, b = methods.get(fix, {}), methods.get(floor, {})
            reps = sorted(set(a) & set(b))
            if profile == "equal" and reps:
                out.append((payload, label, [a[r] / b[r] for r in reps]))
    return out


def padding_summary(data, path):
    """Per payload: the worst case (over profiles) of the best fix, with and
    without knowledge of the counts."""
    cases = padding_cases(data, path)
    by_payload = {}
    for (profile, payload), methods in cases.items():
        floor = floor_per_rep(methods)
        any_name, any_rs = best(methods, UNKNOWN_SIZES + NEEDS_KNOWLEDGE, floor)
        unk_name, unk_rs = best(methods, UNKNOWN_SIZES, floor)
        entry = by_payload.setdefault(payload, {"best": (0, ""), "unknown": (0, "")})
        if any_rs and statistics.median(any_rs) > entry["best"][0]:
            entry["best"] = (statistics.median(any_rs), f"{profile}, {any_name}")
        if unk_rs and statistics.median(unk_rs) > entry["unknown"][0]:
            entry["unknown"] = (statistics.median(unk_rs), f"{profile}, {unk_name}")
    return by_payload


# -------------------------------------------------------------------- peers

def peers_rows(data, path):
    """{row label: [(ours_us, torch_us, ratio, torch_batch_us or None,
    ratio_torch_batch or None, torch_second_us or None, ratio_torch_second
    or None), ...]} in the file's order."""
    rows = {}
    for b in data["benchmarks"]:
        parts = b["name"].split("/")
        if parts[0] != "peers" or not parts[-1].startswith("rep:"):
            raise InputError(f"{path}: unexpected benchmark name {b['name']!r}")
        if parts[2] == "gather":
            label = f"gather {parts[3]} {parts[4]}/rank {parts[5]}"
        else:
            label = f"{parts[2]} {parts[3].replace(':', '=')} {parts[4].replace(':', '=')} " \
                    "8x8 fwd+bwd"
        rows.setdefault(label, []).append((b["real_time"], b["torch_us"], b["ratio"],
                                           b.get("torch_batch_us"), b.get("ratio_torch_batch"),
                                           b.get("torch_second_us"),
                                           b.get("ratio_torch_second")))
    return rows


SCHED_NAMES = {"batch": "SCHED_BATCH", "normal": "SCHED_OTHER"}


def peers_sides(data, path):
    """[(title, index of its time, index of its ratio)]: the PyTorch side in
    our ranks' scheduling class first (the like-for-like headline), then the
    other one if the run has it, then the second PyTorch (another version,
    --second_torch_python) if the run has it."""
    ctx = data["context"]
    rows = peers_rows(data, path)
    ours = ctx.get("ddp_sched", "batch")
    main = ctx.get("ddp_torch_sched", "normal")
    control = all(r[4] is not None for reps in rows.values() for r in reps)
    sides = [(main, 1, 2)] + ([("batch", 3, 4)] if control else [])
    sides.sort(key=lambda side: side[0] != ours)  # stable: the same class first
    out = [(f"PyTorch, {SCHED_NAMES.get(cls, cls)}" +
            (" (same class as ours)" if cls == ours else " (as PyTorch runs by default)"
             if cls == "normal" else ""), t, r) for cls, t, r in sides]
    if all(r[6] is not None for reps in rows.values() for r in reps):
        out.append((f"PyTorch {ctx.get('ddp_torch_second', '?')}, SCHED_OTHER", 5, 6))
    return out


def peers_table(data, path):
    rows = peers_rows(data, path)
    sides = peers_sides(data, path)
    head = "| workload | ours (us) |"
    rule = "|---|---:|"
    for title, _, _ in sides:
        head += f" {title} (us) | ours / that |"
        rule += "---:|---:|"
    out = [head, rule]
    for label, reps in rows.items():
        line = f"| {label} | {spread([r[0] for r in reps], '{:.1f}')} |"
        for _, t, r in sides:
            line += (f" {spread([x[t] for x in reps], '{:.1f}')} | "
                     f"{spread([x[r] for x in reps], '{:.2f}')} |")
        out.append(line)
    return "\n".join(out)


def peers_summary(data, path):
    """[(side title, rows, rows with median ratio <= 1, worst median, its row)]."""
    rows = peers_rows(data, path)
    out = []
    for title, _, r in peers_sides(data, path):
        medians = {label: statistics.median(x[r] for x in reps) for label, reps in rows.items()}
        worst = max(medians, key=medians.get)
        out.append((title, len(medians), sum(1 for m in medians.values() if m <= 1.0),
                    medians[worst], worst))
    return out


def peers_torch(ctx):
    """The heading's PyTorch versions: the unversioned PyTorch columns, and
    the second PyTorch's when the run has one."""
    text = f", torch {ctx.get('ddp_torch', '?')}"
    if "ddp_torch_second" in ctx:
        text += (f" (the PyTorch columns without a version) and {ctx['ddp_torch_second']}, "
                 "interleaved in the same run")
    return text


# ------------------------------------------------------------------ profile

PROFILE_COLUMNS = (("wall (us / iteration)", "real_time", "{:.0f}"),
                   ("CPU, all threads (us / iteration)", "cpu_us_per_iter", "{:.0f}"),
                   ("page faults / iteration", "page_faults_per_iter", "{:.0f}"),
                   ("context switches / iteration", "context_switches_per_iter", "{:.1f}"),
                   ("epoll_wait calls / iteration", "epoll_wait_per_iter", "{:.0f}"),
                   ("writev calls / iteration", "writev_per_iter", "{:.1f}"))


def profile_table(data, path):
    sides = {}
    for b in data["benchmarks"]:
        parts = b["name"].split("/")  # profile/W2/1KiB/ours_batch/rep:0
        if parts[0] != "profile" or len(parts) != 5:
            raise InputError(f"{path}: unexpected benchmark name {b['name']!r}")
        sides.setdefault((parts[1], parts[2], parts[3]), []).append(b)
    columns = [c for c in PROFILE_COLUMNS if all(c[1] in b for b in data["benchmarks"])]
    out = ["| W | payload/rank | side | " + " | ".join(c[0] for c in columns) + " |",
           "|---|---|---|" + "---:|" * len(columns)]
    for (w, payload, side), reps in sides.items():
        out.append(f"| {w[1:]} | {payload} | {side} | " +
                   " | ".join(spread([b[key] for b in reps], fmt) for _, key, fmt in columns) +
                   " |")
    return "\n".join(out)


# -------------------------------------------------------------- torch split

def torch_split_table(data, path):
    rows = {}
    for b in data["benchmarks"]:
        parts = b["name"].split("/")  # torch_split/batch_norm/C:16/N:2/rep:0
        if parts[0] != "torch_split" or len(parts) != 5:
            raise InputError(f"{path}: unexpected benchmark name {b['name']!r}")
        label = f"{parts[1]} {parts[2].replace(':', '=')} {parts[3].replace(':', '=')} 8x8"
        rows.setdefault(label, []).append(b)
    out = ["| workload | module fwd+bwd, autograd (us) | native kernels only (us) | "
           "kernels' share of the module's time |", "|---|---:|---:|---:|"]
    for label, reps in rows.items():
        out.append(f"| {label} | {spread([b['real_time'] for b in reps], '{:.1f}')} | "
                   f"{spread([b['native_us'] for b in reps], '{:.1f}')} | "
                   f"{spread([b['native_share'] for b in reps], '{:.2f}')} |")
    return "\n".join(out)


# ---------------------------------------------------------------- cpu split

def cpu_split_table(data, path):
    """Per (payload, case): wall and each rank's CPU per iteration, and the
    busiest CPU's share of the wall time."""
    cases = {}
    for b in data["benchmarks"]:
        parts = b["name"].split("/")  # cpu_split/W2/1MiB/straggler/rep:0
        if parts[0] != "cpu_split" or len(parts) != 5:
            raise InputError(f"{path}: unexpected benchmark name {b['name']!r}")
        cases.setdefault((parts[2], parts[3]), []).append(b)
    out = ["| payload/rank | case | float64 counts | wall (us / iteration) | rank 0's CPU busy "
           "(us / iteration) | of it softirq | rank 1's CPU busy | of it softirq | "
           "busiest CPU / wall |", "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for (payload, case), reps in cases.items():
        busiest = [max(b["rank0_cpu_busy_us"], b["rank1_cpu_busy_us"]) / b["real_time"]
                   for b in reps]
        out.append(f"| {payload} | {case} | {reps[0]['count_rank0']}, {reps[0]['count_rank1']} | "
                   + " | ".join(spread([b[k] for b in reps], "{:.0f}")
                                for k in ("real_time", "rank0_cpu_busy_us", "rank0_cpu_softirq_us",
                                          "rank1_cpu_busy_us", "rank1_cpu_softirq_us"))
                   + f" | {spread(busiest, '{:.2f}')} |")
    skew = skew_over_floor(cases)
    if skew:
        out.append("\nA skew over its floor (the same total bytes), repetition by repetition, "
                   "each net of the loop's fixed cost (`none` of the same repetition): " +
                   "; ".join(skew) + ".")
    return "\n".join(out)


# cpu_split's skewed cases and their floors (the same total bytes, equal counts).
SKEW_FLOORS = {"straggler": "equal", "short_tail": "short_tail_floor"}


def skew_over_floor(cases):
    """["PAYLOAD SKEW / FLOOR: wall W [..], busiest CPU B [..]"] where the
    record has the skew, its floor and `none`: the wall time and the busiest
    CPU's busy time of the skewed exchange over its floor's, per repetition,
    each less `none`'s, so that only the gathers are compared."""
    def by_rep(payload, case):
        return {b["rep"]: b for b in cases.get((payload, case), [])}

    def busiest(b):
        return max(b["rank0_cpu_busy_us"], b["rank1_cpu_busy_us"])

    out = []
    for payload in dict.fromkeys(p for p, _ in cases):
        none = by_rep(payload, "none")
        for skew, floor in SKEW_FLOORS.items():
            s, f = by_rep(payload, skew), by_rep(payload, floor)
            reps = sorted(set(s) & set(f) & set(none))
            if not reps:
                continue
            wall = [(s[r]["real_time"] - none[r]["real_time"]) /
                    (f[r]["real_time"] - none[r]["real_time"]) for r in reps]
            cpu = [(busiest(s[r]) - busiest(none[r])) / (busiest(f[r]) - busiest(none[r]))
                   for r in reps]
            out.append(f"{payload} `{skew}` / `{floor}`: wall {spread(wall, '{:.2f}')}, "
                       f"busiest CPU {spread(cpu, '{:.2f}')}")
    return out


# ------------------------------------------------------------------ sync_bn

SYNC_BN_KINDS = ("bn", "sync_bn", "group_norm", "comm_floor")


def sync_bn_where(ctx):
    """Where the norm layers computed (records from before --norm_device
    lack it: the host), and whether the ranks shared GPUs (the launcher's
    rule; such numbers are functional only)."""
    out = f"; norm layers on {ctx['ddp_norm_device']}" if "ddp_norm_device" in ctx else ""
    if ctx.get("ddp_shared_gpu", "no").startswith("yes"):
        out += "; ranks SHARED GPUs: functional numbers, not for performance claims"
    return out


def sync_bn_table(data, path):
    """Per shape: each method's time and SyncBN's time in collectives (median
    over repetitions of each repetition's median iteration), and the ratios
    taken within each repetition: SyncBN over local BN, SyncBN's collectives
    over the floor (the same two collectives alone), GroupNorm over BN."""
    shapes = {}
    for b in data["benchmarks"]:
        if b.get("run_type", "iteration") != "iteration":
            continue
        parts = b["name"].split("/")  # sync_bn/C:16/N:2/HW:8x8/rep:0/iterations:...
        if len(parts) < 5 or parts[0] not in SYNC_BN_KINDS or not parts[4].startswith("rep:") \
                or "median_us" not in b:
            raise InputError(f"{path}: unexpected benchmark {b['name']!r} (a file from before "
                             f"the interleaved repetitions? rerun bench/regen.sh sync_bn)")
        shapes.setdefault((parts[1][2:], parts[2][2:]), {}).setdefault(parts[0], {})[
            int(parts[4][4:])] = b
    out = ["| C | N | bn (us) | sync_bn (us) | of it collectives (us) | floor (us) | group_norm (us) "
           "| sync_bn / bn | collectives / floor | group_norm / bn |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for (c, n), kinds in shapes.items():
        if any(k not in kinds for k in SYNC_BN_KINDS):
            raise InputError(f"{path}: C={c} N={n} lacks a method")
        reps = sorted(set.intersection(*(set(kinds[k]) for k in SYNC_BN_KINDS)))
        t = {k: [kinds[k][r]["median_us"] for r in reps] for k in SYNC_BN_KINDS}
        comm = [kinds["sync_bn"][r]["comm_us"] for r in reps]
        ratio = lambda a, b: [x / y for x, y in zip(a, b)]  # noqa: E731
        out.append(f"| {c} | {n} | " + " | ".join(
            [spread(t["bn"], "{:.1f}"), spread(t["sync_bn"], "{:.1f}"), spread(comm, "{:.1f}"),
             spread(t["comm_floor"], "{:.1f}"), spread(t["group_norm"], "{:.1f}"),
             spread(ratio(t["sync_bn"], t["bn"]), "{:.2f}"),
             spread(ratio(comm, t["comm_floor"]), "{:.2f}"),
             spread(ratio(t["group_norm"], t["bn"]), "{:.2f}")]) + " |")
    return "\n".join(out)


# ------------------------------------------------------------------ output

def overview(padding, peers):
    out = ["| W | bench | what | result (median over repetitions) |", "|---|---|---|---|"]
    for w in WORLD_SIZES:
        data, path = padding[w]
        for payload, e in padding_summary(data, path).items():
            t = target(payload)
            goal = f" (target ≤ {t:g})" if t else ""
            out.append(f"| {w} | padding | {payload}/rank: worst profile, best fix / floor{goal}"
                       f" | {e['best'][0]:.3f} ({e['best'][1]}); without known counts or bound:"
                       f" {e['unknown'][0]:.3f} ({e['unknown'][1]}) |")
        data, path = peers[w]
        for title, n, ok, worst, label in peers_summary(data, path):
            out.append(f"| {w} | peers | rows with ours / {title} ≤ 1.0 | {ok} of {n}; worst "
                       f"{worst:.2f} ({label}) |")
    return "\n".join(out)


def tool_line(path, ctx, middle):
    """The heading line of a table from a helper script's JSON: file, host,
    date, `middle`, the load average; then a blank line."""
    commit = f", commit `{short_commit(ctx['ddp_commit'])}`" if "ddp_commit" in ctx else ""
    return (f"`{os.path.basename(path)}`: host `{ctx.get('host_name', '?')}` "
            f"({ctx.get('num_cpus', '?')} CPUs), {ctx.get('date', '?')}{commit}; {middle}; "
            f"load average "
            f"{ctx.get('ddp_loadavg_start', '?')} at the start, "
            f"{ctx.get('ddp_loadavg_end', '?')} at the end\n\n")


def update(path, marker, text):
    begin, end = f"<!-- table:{marker}:begin -->", f"<!-- table:{marker}:end -->"
    try:
        with open(path) as f:
            doc = f.read()
    except OSError as e:
        raise InputError(f"{path}: {e.strerror}")
    if begin not in doc or end not in doc:
        raise InputError(f"{path}: markers {begin} / {end} not found")
    head, rest = doc.split(begin, 1)
    _, tail = rest.split(end, 1)
    doc = head + begin + "\n" + text + "\n" + end + tail
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".table-")
    with os.fdopen(fd, "w") as f:
        f.write(doc)
    os.chmod(tmp, os.stat(path).st_mode & 0o777)  # mkstemp's 0600 would hide the README
    os.replace(tmp, path)


def emit(prog, marker, update_file, make_text):
    """The output step of a table maker's command line: print make_text(),
    or with update_file put it in that file's `marker` block; on input it
    cannot read, one line `prog: why` on stderr and exit code 2.
    Shared by tools/bundle/gpu_table.py and bench/peers/norm_gpu_table.py."""
    try:
        text = make_text()
        if update_file:
            update(update_file, marker, text)
        else:
            print(text)
    except (InputError, KeyError, ValueError, TypeError, ZeroDivisionError, UnicodeDecodeError) as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 2
    return 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    ap.add_argument("--results", default="results", help="folder of the JSON files")
    ap.add_argument("--update", action="store_true", help="rewrite the README tables")
    args = ap.parse_args(argv)
    root = os.environ.get("BUILD_WORKSPACE_DIRECTORY", os.getcwd())
    results = os.path.join(root, args.results)
    try:
        padding = {w: (load(p), p) for w in WORLD_SIZES
                   for p in [os.path.join(results, f"bench_padding_w{w}.json")]}
        peers = {w: (load(p), p) for w in WORLD_SIZES
                 for p in [os.path.join(results, f"bench_peers_w{w}.json")]}
        blocks = [(os.path.join(root, "bench/README.md"), "overview", overview(padding, peers))]
        for w in WORLD_SIZES:
            data, path = padding[w]
            blocks.append((os.path.join(root, "bench/padding/README.md"), f"padding_w{w}",
                           context_line(data["context"], f"`{os.path.basename(path)}`") +
                           "\n\n" + padding_table(data, path)))
            data, path = peers[w]
            blocks.append((os.path.join(root, "bench/peers/README.md"), f"peers_w{w}",
                           context_line(data["context"], f"`{os.path.basename(path)}`") +
                           peers_torch(data["context"]) + "\n\n" +
                           peers_table(data, path)))
        # The W = 2 cases under each congestion control (congestion.sh).
        for run in CONGESTION_RUNS:
            path = os.path.join(results, f"bench_padding_congestion_{run}.json")
            data = load(path)
            blocks.append((os.path.join(root, "bench/padding/README.md"), f"padding_cc_{run}",
                           context_line(data["context"], f"`{os.path.basename(path)}`") +
                           "\n\n" + padding_table(data, path)))
        path = os.path.join(results, "bench_sync_bn.json")
        data = load(path)
        blocks.append((os.path.join(root, "bench/README.md"), "sync_bn",
                       context_line(data["context"], f"`{os.path.basename(path)}`") +
                       f"; {data['context'].get('ddp_backend', '?')}, float" +
                       sync_bn_where(data["context"]) + "\n\n" +
                       sync_bn_table(data, path)))
        # Tables of the helper scripts' JSON: (file, README, marker, the
        # heading's middle from the context, the table).
        tools = (
            ("bench_profile_small.json", "bench/peers/README.md", "profile",
             lambda ctx: f"{ctx.get('ddp_reps', '?')} interleaved repetitions of N and "
                         f"2N iterations per side (N = {ctx.get('ddp_iters', '?')} at "
                         f"1 KiB, fewer for larger payloads, at least 30; per-iteration "
                         f"values are the difference); oversubscribed: "
                         f"{ctx.get('ddp_oversubscribed', '?')}; {congestion(ctx)}",
             profile_table),
            ("bench_torch_norm_split.json", "bench/peers/README.md", "torch_split",
             lambda ctx: f"torch {ctx.get('ddp_torch', '?')}, CPU capability "
                         f"{ctx.get('ddp_torch_cpu_capability', '?')}, built "
                         f"{ctx.get('ddp_torch_opt', '?')}; {ctx.get('ddp_reps', '?')} "
                         f"interleaved repetitions of {ctx.get('ddp_iters', '?')} calls "
                         f"per side",
             torch_split_table),
            ("bench_cpu_split.json", "bench/padding/README.md", "cpu_split",
             lambda ctx: f"W = 2, ranks pinned to CPUs {ctx.get('ddp_rank_cpus', '?')}; "
                         f"{ctx.get('ddp_reps', '?')} interleaved repetitions of N and 2N "
                         f"iterations (N about 1.5 s of them; per-iteration values are "
                         f"the difference, from /proc/stat at "
                         f"{ctx.get('ddp_user_hz', '?')} ticks per second); "
                         f"{congestion(ctx)}",
             cpu_split_table))
        for name, readme, marker, middle, table in tools:
            path = os.path.join(results, name)
            data = load(path)
            blocks.append((os.path.join(root, readme), marker,
                           tool_line(path, data["context"], middle(data["context"])) +
                           table(data, path)))
        for target_file, marker, text in blocks:
            if args.update:
                update(target_file, marker, text)
            else:
                print(f"<!-- {os.path.relpath(target_file, root)}: {marker} -->\n{text}\n")
    except (InputError, KeyError) as e:
        print(f"tables: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
