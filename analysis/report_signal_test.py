"""A signal that lands inside a callback which swallows exceptions (a
weakref finalizer here; matplotlib's transform nodes in the wild) still
stops the report: the handler records it, the swallowed exception prints
nothing, and raise_pending() raises it again. Before this, such a SIGTERM
was lost: the report ran on and exited 0 after printing "Exception ignored
in: <function TransformNode...>" (a fresh-clone CI run of 98962e2).
Run by //analysis:report_signal_test."""
import contextlib
import io
import os
import signal
import sys
import weakref

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402
from checks import check, status  # noqa: E402


class Thing:
    pass


def signal_inside_finalizer(signum):
    """Sends signum to this process from a weakref callback, so that its
    handler runs inside the callback; returns what reached the caller."""
    thing = Thing()
    weakref.finalize(thing, os.kill, os.getpid(), signum)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            del thing  # the finalizer runs here; the handler raises inside it
            for _ in range(1000):  # bytecode boundaries where a handler could run
                pass
        return "nothing", err.getvalue()
    except (report.Terminated, KeyboardInterrupt) as e:
        return type(e).__name__, err.getvalue()


def main():
    report.install_signal_handlers()
    for signum, want in ((signal.SIGTERM, "Terminated"), (signal.SIGINT, "KeyboardInterrupt")):
        report._PENDING.clear()
        reached, err = signal_inside_finalizer(signum)
        name = signal.Signals(signum).name
        # Where the handler ran inside the callback, the exception was
        # swallowed there; either way the signal is recorded.
        check(report._PENDING == [signum], f"{name}: recorded ({report._PENDING})")
        check("Exception ignored" not in err and "Traceback" not in err,
              f"{name}: the swallowed exception printed: {err!r}")
        try:
            report.raise_pending()
            got = "nothing"
        except report.Terminated as e:
            got = f"Terminated {e.signum}"
        except KeyboardInterrupt:
            got = "KeyboardInterrupt"
        check(got.startswith(want), f"{name}: raise_pending gave {got}, want {want}")
        print(f"{name}: reached the caller as {reached}; raise_pending: {got}")
    report._PENDING.clear()
    try:
        report.raise_pending()
        check(True, "")
    except BaseException as e:  # noqa: BLE001
        check(False, f"raise_pending with no signal raised {e!r}")
    # Other unraisable exceptions still go to Python's hook.
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        thing = Thing()
        weakref.finalize(thing, lambda: 1 / 0)
        del thing
    check("ZeroDivisionError" in err.getvalue(), f"other exceptions hidden: {err.getvalue()!r}")
    return status()


if __name__ == "__main__":
    sys.exit(main())
