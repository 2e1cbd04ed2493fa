"""The guard's settings, how a finding is reported, and where the user's
call site is.

A finding becomes a PitfallError (mode "raise") or one line on stderr (mode
"warn", once per pitfall and call site, so a loop does not flood the log).
The call site is the innermost frame outside this package, the standard
library and every installed distribution (torch, torchvision, torchmetrics,
Lightning): that is the line the user can change.
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
_HERE = os.path.dirname(os.path.abspath(__file__))
_roots = []


def on(bug):
    return config.enabled[bug]


def _library_roots():
    """Folders whose frames are not the user's: this package, the standard
    library and every installed distribution (site and dist packages, where
    torch, torchvision, torchmetrics and Lightning live)."""
    if not _roots:
        import site
        import sysconfig
        paths = {_HERE}
        for name in ("stdlib", "platstdlib", "purelib", "platlib"):
            try:
                paths.add(sysconfig.get_paths()[name])
            except KeyError:
                pass
        try:
            paths.update(site.getsitepackages())
            paths.add(site.getusersitepackages())
        except AttributeError:  # an old virtualenv's site module
            pass
        for entry in sys.path:
            if os.path.basename(entry.rstrip(os.sep)) in ("site-packages", "dist-packages"):
                paths.add(entry)
        _roots.extend(sorted(os.path.abspath(p) + os.sep for p in paths if p))
    return tuple(_roots)


def _is_library(path):
    return (path.startswith(_library_roots()) or path.startswith("<") or
            os.sep + "site-packages" + os.sep in path or os.sep + "dist-packages" + os.sep in path)


def _is_other_library(path):
    """A distribution other than torch and this package (torchvision,
    torchmetrics, Lightning): named beside the user's line."""
    import sysconfig
    stdlib = os.path.abspath(sysconfig.get_paths().get("stdlib", "/nonexistent")) + os.sep
    if path.startswith(_HERE + os.sep) or path.startswith("<"):
        return False
    parts = path.split(os.sep)
    for i, part in enumerate(parts[:-1]):
        if part in ("site-packages", "dist-packages"):
            return parts[i + 1] != "torch"
    return not path.startswith(stdlib)


def call_site(skip=0):
    """'file:line' of the innermost frame in the user's own code (outside
    this package, the standard library and every installed distribution),
    with the innermost frame of another library after it when one made the
    call (torchvision, torchmetrics, Lightning: not torch itself)."""
    frame = sys._getframe(1 + skip)
    library = None
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not _is_library(path):
            break
        if library is None and _is_other_library(path):
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
