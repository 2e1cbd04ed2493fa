"""The suite's closing summary, rendered from the committed records (issue 46):
every bug's block leads with its headline number in the unit a reader cites,
the configuration it was measured at and the fix's exactness; no line says
"0/0", "at least 100%" or an empty symptom; rows inexact on purpose say what
they show. The records are copied under other names first, as the suite
writes them (repro_<bug>_<bug>.json), so no headline depends on a file name.
Every number checked here is read from the records, never typed.

summarize_test.py SUMMARIZE RECORD...
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "analysis"))
from checks import check, status  # noqa: E402
from pick import num  # noqa: E402

summarize, files = sys.argv[1], sys.argv[2:]
recs = [r for f in files for r in json.load(open(f))]


def render(paths):
    out = subprocess.run([sys.executable, summarize, "--out", "records", *paths], capture_output=True,
                         text=True, check=False)
    check(out.returncode == 0, f"summarize exited {out.returncode}: {out.stderr}")
    return out.stdout


def blocks(screen):
    """{bug: its block as one line (wrapped lines joined)}."""
    out, bug = {}, None
    for line in screen.splitlines():
        if line.startswith("== ") or line.startswith("records:") or line.startswith("report:"):
            bug = None
        elif not line.startswith(" "):
            bug = line.split(":", 1)[0]
            out[bug] = line
        elif bug:
            out[bug] += " " + line.strip()
    return out


def one(**want):
    """The one committed record with these fields (config.X for config keys)."""
    def get(r, k):
        return r["config"].get(k[7:]) if k.startswith("config.") else r.get(k)
    hit = [r for r in recs if all(get(r, k) == v for k, v in want.items())]
    check(len(hit) == 1, f"{want}: {len(hit)} committed records, expected 1")
    return hit[0] if hit else {"measured": {}, "reference": {}, "config": {}}


def line_cap(pairs):
    """The summary's budget, grown with the pairs it shows, so that a new
    pair fits without raising a number by hand: 4 lines of header and
    footer, 6 per pair's block (its symptom, fix and cost; 5 or 6 today).
    Six pairs give 40: a screen."""
    return 4 + 6 * pairs


def common(screen, what):
    lines = screen.splitlines()
    for bad in ("0/0", "at least 100%"):
        check(not any(bad in x for x in lines), f"{what}: a line says '{bad}'")
    check(not any(re.match(r"^\s+symptom:\s*(reproduced in [0-9/]+ rows.*)?$", x) for x in lines),
          f"{what}: a symptom line without its size")
    check(all(len(x) <= 120 for x in lines), f"{what}: a line over 120 columns")
    cap = line_cap(len(blocks(screen)))
    check(len(lines) <= cap, f"{what}: {len(lines)} lines, more than its cap of {cap}")


with tempfile.TemporaryDirectory() as tmp:
    renamed = []
    for i, f in enumerate(files):
        dst = os.path.join(tmp, f"suite_{i}_" + os.path.basename(f).replace("_", "-"))
        shutil.copy(f, dst)
        renamed.append(dst)
    screen = render(renamed)
    print(screen)
    common(screen, "committed records")
    b = blocks(screen)
    check(sorted(b) == sorted({r["bug"] for r in recs}), f"one block per bug: {sorted(b)}")
    for bug, text in b.items():
        check(" symptom: " in text and " fix: " in text and " exact in " in text,
              f"{bug}: no symptom or no fix exactness: {text}")
        check(text.find(" symptom: ") < text.find(" fix: "), f"{bug}: the headline does not lead")

    # small_batch_bn: per-rank BN vs SyncBN at the same global batch, in pp
    # with its 95% interval and seeds.
    r = one(bug="small_batch_bn", kind="repro", variant="per_rank_bn", **{"config.task": "digits",
            "config.batch_per_rank": 2})
    gap, ci = r["measured"].get("val_error_gap", 0) * 100, r["measured"].get("val_error_gap_ci95", 0) * 100
    want = (f"symptom: validation error above the reference (per_rank_bn, W = {r.get('world_size')}, task digits, "
            f"per-rank batch = 2, gloo): {num(gap, 'pp')} (95% interval {num(gap - ci)} to {num(gap + ci, 'pp')}) "
            f"({r['measured'].get('seeds')} seeds); reference: {r['reference'].get('what')}")
    check(want in b.get("small_batch_bn", ""), f"small_batch_bn headline: want '{want}'")

    # drop_last_hang: the gap in steps, and PyTorch's default Join shown off by
    # 1 − c/W per step, with its size, instead of "exact in 0/0 rows".
    r = one(bug="drop_last_hang", kind="repro", variant="uneven_shards", verdict="reproduced", world_size=4,
            **{"config.n": 1025})
    steps = r["reference"].get("steps_per_rank") or [0]
    want = f"step-count gap between ranks (uneven_shards, W = 4, N = 1025, batch = 32, gloo): " \
           f"{num(max(steps) - min(steps), 'step(s)')}"
    check(want in b.get("drop_last_hang", ""), f"drop_last_hang headline: want '{want}'")
    join = [x for x in recs if x["variant"] == "join_initial_world_size" and x.get("expected_verdict") == "inexact"]
    errs = [x["measured"]["grad_rel_err"] for x in join]
    check(bool(join), "committed records: no join_initial_world_size row inexact on purpose")
    want = (f"inexact on purpose: join_initial_world_size (PyTorch's "
            f"{join[0]['config']['torch_counterpart'] if join else '?'}): relative gradient error per step "
            f"{num(min(errs or [0]))} to {num(max(errs or [0]))}")
    check(want in b.get("drop_last_hang", ""), f"drop_last_hang on purpose: want '{want}'")
    check(f"equal to 1 − c/W (c of the W ranks still stepping) in {len(join)} of {len(join)} rows, as expected"
          in b.get("drop_last_hang", ""), "drop_last_hang: 1 − c/W as expected, in every on-purpose row")

    # missing_set_epoch: every later epoch repeats epoch 0, as a count, and
    # the per-rank-seed coverage at W = 2.
    r = one(bug="missing_set_epoch", kind="repro", variant="no_set_epoch", world_size=4)
    m, seeds = r["measured"], r["config"].get("seeds", 0)
    later = f"{num(m.get('same_as_epoch0', 0) - seeds)} of {num(m.get('epochs', 0) - seeds)}"
    want = f"epochs after the first in exactly epoch 0's order (no_set_epoch, W = 4, N = 1003, gloo): {later}"
    check(want in b.get("missing_set_epoch", ""), f"missing_set_epoch headline: want '{want}'")
    r = one(bug="missing_set_epoch", kind="repro", variant="per_rank_seed", world_size=2)
    want = (f"data seen per epoch with per-rank seeds (per_rank_seed, W = 2, N = 1003, gloo): "
            f"{num(r['measured'].get('coverage_mean', 0) * 100, '%')}")
    check(want in b.get("missing_set_epoch", ""), f"missing_set_epoch coverage: want '{want}'")

    # A run without the headline's configuration (mean_of_means at
    # --world_size 2) still states a size and its configuration; a run of only the on-purpose rows
    # never says "exact in 0/0".
    w2 = os.path.join(tmp, "w2.json")
    with open(w2, "w") as f:
        json.dump([x for x in recs if x["bug"] == "mean_of_means" and x["world_size"] == 2], f)
    screen = render([w2])
    print(screen)
    common(screen, "W = 2 only")
    check("symptom: no row at the headline's configuration; " in screen, "no fallback size without the headline row")
    only = os.path.join(tmp, "only.json")
    with open(only, "w") as f:
        json.dump(join, f)
    screen = render([only])
    print(screen)
    common(screen, "on-purpose rows only")
    check("only rows inexact on purpose" in screen and "as expected" in screen, "on-purpose-only run")

sys.exit(status())
