"""The guard on real gloo worlds (W = 2, one process per rank, the torch of
the interpreter that runs this: Debian's 1.13 under Bazel).

    python3 guard/tests/guard_test.py raise|fixes|warn_off

raise     every trigger caught in raise mode with the right .bug on every
          rank, naming the user's line; the guard installed after
          init_process_group too
fixes     the fixes' patterns and correct loops: nothing reported, nothing
          failing (no false alarm)
warn_off  warn mode: one line per pitfall and rank, 'ddp-pitfalls: <bug>:',
          the job going on; off mode and per-check off: silent

Skips (exit 0, reason printed) when torch is not importable.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import world  # noqa: E402

EXPECTED = {  # scenario -> the bug it must be reported as
    "wrong_all_gather": "wrong_all_gather",
    "missing_set_epoch": "missing_set_epoch",
    "drop_last_hang": "drop_last_hang",
    "small_batch_bn": "small_batch_bn",
    "autograd_lost_gather": "autograd_lost_gather",
    "autograd_reinsert": "autograd_lost_gather",
    "mean_of_means": "mean_of_means",
    "mean_of_means_lightning": "mean_of_means",
    "sampler_repeats": "wrong_all_gather",
}
# Triggers that run no collective after the warning and do not fail by
# themselves (in warn mode the job goes on into the mistake itself, which
# for a bad gather or an uneven split is an abort or a hang, and for a loss
# built from gathered constants backward's own error).
WARN_SAFE = ("missing_set_epoch", "small_batch_bn", "autograd_reinsert", "mean_of_means")

failures = []


def check(ok, what):
    print("%s: %s" % ("ok" if ok else "FAIL", what))
    if not ok:
        failures.append(what)


def check_exits(run, what):
    check(run["exit"] == [0] * len(run["exit"]), "%s: every rank exits 0 (%s)%s" % (
        what, run["exit"], "" if run["exit"] == [0, 0] else "\n" + "\n".join(
            s[-1500:] for s in run["stderr"])))


def test_raise():
    for after in (False, True):
        names = list(EXPECTED) if not after else ["wrong_all_gather", "missing_set_epoch",
                                                  "drop_last_hang"]
        run = world.run("raise", names, install_after_init=after)
        tag = "installed after init_process_group" if after else "installed before"
        check_exits(run, tag)
        for rank, per in enumerate(run["results"]):
            for name in names:
                got = per.get(name, {})
                check(got.get("caught") == EXPECTED[name] and not got.get("error"),
                      "%s, rank %d: %s caught as %s (error %s)" % (
                          tag, rank, name, got.get("caught"), got.get("error")))
                msg = got.get("message") or ""
                check("scenarios.py:" in (got.get("site") or "") and
                      msg.startswith("ddp-pitfalls: %s: " % EXPECTED[name]) and
                      "Fix: " in msg and "repro/%s/README.md" % EXPECTED[name] in msg,
                      "%s, rank %d: %s's message names the call site, the fix and the README"
                      % (tag, rank, name))


def test_install_arguments():
    """Bad install() arguments: ValueError naming the argument and the
    allowed values (no world needed)."""
    sys.path.insert(0, os.path.dirname(world.HERE))
    from ddp_pitfalls import guard
    for kwargs, words in (({"mode": "loud"}, ("mode", "raise, warn, off")),
                          ({"checks": ["small_batch_bn"]}, ("checks must be a dict",
                                                            "small_batch_bn")),
                          ({"checks": {"small_batch_bn": 0}}, ("small_batch_bn", "True or False")),
                          ({"checks": {"no_such": False}}, ("no_such", "allowed"))):
        try:
            guard.install(**kwargs)
            got = "no error"
        except ValueError as e:
            got = str(e)
        check(all(w in got for w in words), "install(%r): %s" % (kwargs, got))
    guard.install(mode="off")


def test_fixes():
    import scenarios
    test_install_arguments()
    run = world.run("raise", list(scenarios.FIXES))
    check_exits(run, "fixes")
    for rank, per in enumerate(run["results"]):
        for name in scenarios.FIXES:
            got = per.get(name, {})
            check(name in per and got.get("caught") is None and got.get("error") is None,
                  "rank %d: %s silent and fine (caught %s, error %s)" % (
                      rank, name, got.get("caught"), got.get("error")))
    check(all("ddp-pitfalls" not in s for s in run["stderr"]), "fixes: nothing on stderr")


def test_warn_off():
    run = world.run("warn", WARN_SAFE)
    check_exits(run, "warn")
    for rank in range(2):
        lines = run["stderr"][rank].splitlines()
        for name in WARN_SAFE:
            mine = [l for l in lines if l.startswith("ddp-pitfalls: %s: " % EXPECTED[name])]
            check(len(mine) == 1 and "scenarios.py:" in mine[0],
                  "warn, rank %d: one line for %s (%d)" % (rank, name, len(mine)))
            got = run["results"][rank].get(name, {})
            check(got.get("caught") is None and got.get("error") is None,
                  "warn, rank %d: %s went on" % (rank, name))
    run = world.run("off", WARN_SAFE)
    check_exits(run, "off")
    check(all("ddp-pitfalls" not in s for s in run["stderr"]) and
          all(v.get("caught") is None and v.get("error") is None
              for per in run["results"] for v in per.values()) and
          all(len(per) == len(WARN_SAFE) for per in run["results"]), "off: silent")
    off = ("missing_set_epoch", "small_batch_bn")
    run = world.run("raise", WARN_SAFE, off=off)
    check_exits(run, "per-check off")
    for rank, per in enumerate(run["results"]):
        for name in WARN_SAFE:
            want = None if name in off else EXPECTED[name]
            check(per.get(name, {}).get("caught") == want,
                  "checks={%s: False}, rank %d: %s -> %s" % (
                      ", ".join(off), rank, name, per.get(name, {}).get("caught")))


def main():
    world.torch_or_skip()
    cases = {"raise": test_raise, "fixes": test_fixes, "warn_off": test_warn_off}
    if len(sys.argv) != 2 or sys.argv[1] not in cases:
        print("usage: guard_test.py %s" % "|".join(cases), file=sys.stderr)
        return 2
    cases[sys.argv[1]]()
    return world.finish(failures)


if __name__ == "__main__":
    sys.exit(main())
