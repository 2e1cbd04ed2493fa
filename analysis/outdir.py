"""The report's output folder: where it may go, and how a new report
replaces a previous one without deleting anything the report did not write.

A report is built in a hidden temporary folder (.report-*) next to --out and
put in place only when complete. Each report holds a marker file (MARKER)
listing the files it wrote; an existing --out is replaced only when it is
such a report and holds nothing else, and the replacement is one atomic
exchange of the two folders (renameat2 RENAME_EXCHANGE), so --out is never
missing or half-written. --out may not be, contain, or be read as part of
--results: a report there would replace or shadow its own input.

The rule for every file name inside a report (issue 59): no field of any
input file becomes part of an output path. A name the report writes is the
code's own word (report.md, ledger.md, claims.csv, ...), a bench file's own
base name, or a bug's name, which records.py accepts only as a plain
identifier ([a-z][a-z0-9_]*, exit 2 otherwise); and inside() refuses, as a
second guard, any path that would leave the staging folder. A failed run
removes the folders it created on the way to --out (make_parents).
"""
import ctypes
import ctypes.util
import errno
import json
import os
import shutil
import tempfile

MARKER = ".ddp-pitfalls-report"
GENERATOR = "analysis/report.py"
STAGING_PREFIX = ".report-"


class OutError(Exception):
    """--out cannot be used; the message names the path and why."""


def _inside(path, folder):
    """True when `path` is `folder` or lies under it (both real paths)."""
    return os.path.commonpath([path, folder]) == folder


def read_marker(folder):
    """The marker of a report folder, or None when there is none."""
    try:
        with open(os.path.join(folder, MARKER), encoding="utf-8") as f:
            marker = json.load(f)
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(marker, dict) or marker.get("generator") != GENERATOR:
        return None
    return marker


def _entries(folder):
    """Every file and folder under `folder`, as relative paths."""
    found = []
    for top, dirs, files in os.walk(folder):
        rel = os.path.relpath(top, folder)
        for name in dirs + files:
            found.append(os.path.normpath(os.path.join(rel, name)))
    return found


def check_target(results, out):
    """Raises OutError unless a report may be written to `out`."""
    real_results = os.path.realpath(results)
    real_out = os.path.realpath(out)
    if _inside(real_results, real_out):
        what = "is" if real_results == real_out else "contains"
        raise OutError(f"--out {out} {what} the --results folder {results}: the report would "
                       "replace its own input; choose another --out")
    if _inside(real_out, real_results):
        # Whatever it holds would sit among the inputs of the next report
        # over the same --results (and a later regeneration of the records
        # may replace that folder wholesale): a report lives beside them.
        raise OutError(f"--out {out} lies inside the --results folder {results}: a report is "
                       "written beside its inputs, not among them; choose another --out")
    if not os.path.lexists(out):
        return
    if os.path.islink(out) or not os.path.isdir(out):
        raise OutError(f"--out {out} exists and is not a folder; a report replaces only a "
                       "previous report; choose another --out or move it away")
    marker = read_marker(out)
    if marker is None or marker.get("complete") is not True:
        raise OutError(f"--out {out} exists and is not a report of analysis/report.py (it has "
                       f"no {MARKER}); choose another --out or move it away")
    listed = set(marker.get("files", [])) | {MARKER}
    for rel in _entries(out):
        path = os.path.join(out, rel)
        if rel in listed or (os.path.isdir(path) and not os.path.islink(path)):
            continue
        raise OutError(f"--out {out} holds {rel}, which the report did not write; move it away "
                       "(the report replaces only what it wrote)")


def _write_marker(folder, complete, files=()):
    with open(os.path.join(folder, MARKER), "w", encoding="utf-8") as f:
        json.dump({"generator": GENERATOR, "pid": os.getpid(), "complete": complete,
                   "files": sorted(files)}, f, indent=1)
        f.write("\n")


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, TypeError, ValueError, OverflowError):
        return True
    return True


def remove_stale(parent):
    """Removes staging folders that a killed report (SIGKILL: no chance to
    clean up) left in `parent`: hidden .report-* folders whose marker says
    incomplete and whose process is gone. Anything else is left alone."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        path = os.path.join(parent, name)
        if not name.startswith(STAGING_PREFIX) or os.path.islink(path) or not os.path.isdir(path):
            continue
        marker = read_marker(path)
        if marker and marker.get("complete") is False and not _alive(marker.get("pid")):
            shutil.rmtree(path, ignore_errors=True)


def inside(folder, name):
    """folder/name, refused (OutError) unless it stays inside `folder`: a
    name with a separator or '..' never leaves the report."""
    path = os.path.normpath(os.path.join(folder, name))
    if os.path.isabs(name) or not _inside(os.path.abspath(path), os.path.abspath(folder)) or \
            path == os.path.normpath(folder):
        raise OutError(f"{name!r} is not a file name inside the report")
    return path


def make_parents(parent):
    """Creates `parent` and the folders above it that are missing; returns
    those it created, deepest first, for remove_created on failure."""
    made = []
    p = os.path.abspath(parent)
    while not os.path.lexists(p):
        made.append(p)
        p = os.path.dirname(p)
    os.makedirs(parent, exist_ok=True)
    return made


def remove_created(made):
    """Removes the folders make_parents created, while they are empty."""
    for p in made:
        try:
            os.rmdir(p)
        except OSError:
            return


def stage(parent):
    """A new hidden staging folder in `parent` (which must exist), marked as
    an incomplete report of this process."""
    remove_stale(parent)
    tmp = tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=parent)
    # mkdtemp makes it private (0700); a report folder gets the usual mode.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)
    _write_marker(tmp, complete=False)
    return tmp


def _exchange(a, b):
    """Atomically swaps two paths (Linux renameat2 RENAME_EXCHANGE). Returns
    False where the kernel or file system cannot."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), b)


def _remove_report(folder):
    """Deletes the files a report's marker lists, then its emptied folders;
    whatever else is there stays."""
    marker = read_marker(folder) or {}
    for rel in marker.get("files", []):
        path = os.path.normpath(os.path.join(folder, rel))
        if _inside(path, folder) and path != folder:
            try:
                os.unlink(path)
            except OSError:
                pass
    for top, _, _ in sorted(os.walk(folder), key=lambda t: -len(t[0])):
        if top != folder:
            try:
                os.rmdir(top)
            except OSError:
                pass
    try:
        os.unlink(os.path.join(folder, MARKER))
        os.rmdir(folder)
    except OSError:
        pass


def commit(tmp, out):
    """Marks `tmp` complete and puts it at `out`, replacing a previous report
    (checked by check_target) in one step."""
    _write_marker(tmp, complete=True,
                  files=[e for e in _entries(tmp)
                         if e != MARKER and not os.path.isdir(os.path.join(tmp, e))])
    if not os.path.lexists(out):
        os.rename(tmp, out)
        return
    if not _exchange(tmp, out):
        # No atomic exchange here: move the old report aside first (out is
        # missing for the moment between the two renames).
        aside = tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=os.path.dirname(tmp))
        os.rmdir(aside)
        os.rename(out, aside)
        os.rename(tmp, out)
        tmp = aside
    _remove_report(tmp)


def discard(tmp):
    """Deletes a staging folder (all of it was written by this process)."""
    shutil.rmtree(tmp, ignore_errors=True)
