"""The guard's settings, how a finding is reported, and where the user's
call site is.

A finding becomes a PitfallError (mode "raise") or one line on stderr (mode
"warn", once per pitfall and call site, so a loop does not flood the log).
The call site is the innermost frame outside torch, this package and the
metric/training libraries that call torch.distributed for the user
(torchmetrics, Lightning): that is the line the user can change.
"""
import os
import sys

from . import _messages

MODES = ("raise", "warn", "off")


class PitfallError(RuntimeError):
    """Raised in mode "raise". `.bug` is the pair's name (e.g.
    "wrong_all_gather"), `.site` the user's "file:line"."""

    def __init__(self, bug, message, site):
        super().__init__(message)
        self.bug = bug
        self.site = site


class Config:
    def __init__(self):
        self.mode = "off"
        self.enabled = dict.fromkeys(_messages.BUGS, False)


config = Config()
_warned = set()
_LIBRARIES = ("torchmetrics", "pytorch_lightning", "lightning", "lightning_fabric",
              "lightning_utilities")
_HERE = os.path.dirname(os.path.abspath(__file__))


def on(bug):
    return config.enabled[bug]


def _library_roots():
    roots = [_HERE]
    for name in ("torch",) + _LIBRARIES + ("contextlib",):  # contextlib: the standard library
        mod = sys.modules.get(name)
        path = getattr(mod, "__file__", None)
        if path:
            roots.append(os.path.dirname(os.path.abspath(path)))
    return tuple(r + os.sep for r in roots)


def call_site(skip=0):
    """'file:line' of the user's frame (see the module's note), with the
    innermost library frame after it when a library made the call."""
    roots = _library_roots()
    frame = sys._getframe(1 + skip)
    library = None
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not path.startswith(roots) and not path.startswith("<frozen"):
            break
        if library is None and not path.startswith(roots[:2] + roots[-1:]):  # not us, torch, stdlib
            library = "%s:%d" % (path, frame.f_lineno)
        frame = frame.f_back
    if frame is None:
        return "unknown call site"
    site = "%s:%d" % (_short(frame.f_code.co_filename), frame.f_lineno)
    return site + (" (through %s)" % library if library else "")


def _short(path):
    path = os.path.abspath(path)
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else path


def rank_world():
    try:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    except Exception:  # a guard must never add a failure of its own
        pass
    return None, None


def report(bug, what, site=None, terms=None):
    """Raise or print one finding (nothing when its check is off)."""
    if config.mode == "off" or not config.enabled[bug]:
        return
    site = site or call_site(1)
    rank, world = rank_world()
    message = _messages.format_message(bug, what, site, rank, world, terms)
    if config.mode == "raise":
        raise PitfallError(bug, message, site)
    if (bug, site) not in _warned:
        _warned.add((bug, site))
        print(message, file=sys.stderr, flush=True)
