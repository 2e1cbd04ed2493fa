"""The guard's public face: install(), PitfallError, CHECKS.

    from ddp_pitfalls import guard
    guard.install(mode="raise")                     # at the top of the script
    guard.install(mode="warn", checks={"small_batch_bn": False})

Call it once, before or after init_process_group (the checks ask
torch.distributed for the rank and world size when they run), and before
wrapping the model in DDP is not needed either: the guard wraps classes and
module functions, so objects made earlier are covered. Only names bound
before install() with `from torch.distributed import all_gather` keep the
unwrapped function.
"""
from . import _messages, _state
from ._state import PitfallError  # noqa: F401  (the public exception)

CHECKS = _messages.BUGS


def install(mode="raise", checks=None):
    """Turns the guard on (mode "raise" or "warn") or off ("off").
    `checks` maps a pitfall's name to False to turn that one check off (or
    True to keep it); unknown names or modes raise ValueError naming the
    allowed values."""
    if not isinstance(mode, str) or mode not in _state.MODES:
        raise ValueError("ddp_pitfalls.guard.install: mode %r: allowed %s" %
                         (mode, ", ".join(_state.MODES)))
    if checks is None:
        checks = {}
    if not isinstance(checks, dict):
        raise ValueError("ddp_pitfalls.guard.install: checks must be a dict mapping a check's name "
                         "to True or False (e.g. checks={'small_batch_bn': False}), not %s %r; "
                         "check names: %s" % (type(checks).__name__, checks, ", ".join(CHECKS)))
    bad = sorted(k for k, v in checks.items() if not isinstance(v, bool))
    if bad:
        raise ValueError("ddp_pitfalls.guard.install: checks[%r] must be True or False" % bad[0])
    checks = dict(checks)
    unknown = sorted(set(checks) - set(CHECKS))
    if unknown:
        raise ValueError("ddp_pitfalls.guard.install: unknown check(s) %s: allowed %s" %
                         (", ".join(unknown), ", ".join(CHECKS)))
    from . import _patches
    _state.config.mode = mode
    for bug in CHECKS:
        _state.config.enabled[bug] = mode != "off" and bool(checks.get(bug, True))
    if mode == "off":
        _patches.uninstall()  # nothing wrapped: the job runs as without the guard
    else:
        _patches.install()
