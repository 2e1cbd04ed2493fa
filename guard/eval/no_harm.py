"""No-harm matrix (issue 70): every scenario of eval/shapes/ in its own fresh
gloo world of real processes, per mode (none: guard not installed; off,
warn, raise: guard.install(mode) before init_process_group, the package from
guard/ on sys.path). Correct runs must end ok on every rank, report nothing
and take within 1 s of mode none; injected runs (raise) must be caught on
every rank with .site in the scenario's own file.

  no_harm.py [--only REGEX] [--modes none,off,warn,raise] [--jobs N] [--out F]
  no_harm.py --table RECORD... [--update guard/README.md]

Ranks are forked from this process (torch imported once, no tensor op before
fork, OMP_NUM_THREADS=1); --start spawn starts a Python per rank instead."""
import argparse
import datetime
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GUARD = os.path.dirname(HERE)
MODES = ("none", "off", "warn", "raise")
PG_TIMEOUT, KILL_AFTER, SLACK = 20, 40, 1.0
WARN_RE = re.compile(r"^ddp-pitfalls: (\w+):", re.M)


def rank_body(name, inject, mode, rank, world, d):
    """One rank; writes d/res.RANK (JSON) and never returns."""
    err = open(os.path.join(d, "err.%d" % rank), "w")
    os.dup2(err.fileno(), 2)
    os.dup2(err.fileno(), 1)
    out = {"rank": rank, "wall": None, "caught": None, "error": None}
    try:
        sys.path.insert(0, GUARD)
        sys.path.insert(0, HERE)
        import torch
        import torch.distributed as dist
        torch.set_num_threads(1)
        if mode != "none":
            from ddp_pitfalls import guard
            guard.install(mode=mode)
        store = dist.FileStore(os.path.join(d, "store"), world)
        dist.init_process_group("gloo", store=store, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=PG_TIMEOUT))
        import shapes
        sc = shapes.load()[name]
        t = time.time()
        try:
            sc.run(rank, world, inject)
        except Exception as e:  # noqa: BLE001 (recorded)
            if type(e).__name__ == "PitfallError":
                out["caught"] = {"bug": e.bug, "site": e.site}
            else:
                out["error"] = "%s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0][:200])
        out["wall"] = round(time.time() - t, 3)
    except BaseException as e:  # noqa: BLE001
        out["error"] = "setup %s: %s" % (type(e).__name__, str(e)[:200])
    tmp = os.path.join(d, "res.%d.tmp" % rank)
    with open(tmp, "w") as f:
        json.dump(out, f)
    os.rename(tmp, os.path.join(d, "res.%d" % rank))
    sys.stderr.flush()
    os._exit(0)


class World:
    def __init__(self, sc, inject, mode, start):
        self.sc, self.inject, self.mode = sc, inject, mode
        self.dir = tempfile.mkdtemp(prefix="no_harm_", dir=os.environ.get("TEST_TMPDIR"))
        self.t0 = time.time()
        self.procs = []
        for r in range(sc.world):
            if start == "fork":
                pid = os.fork()
                if pid == 0:
                    rank_body(sc.name, inject, mode, r, sc.world, self.dir)
                self.procs.append(pid)
            else:
                self.procs.append(subprocess.Popen(
                    [sys.executable, __file__, "--_rank", json.dumps(
                        [sc.name, inject, mode, r, sc.world, self.dir])]))
        self.codes = [None] * sc.world

    def poll(self):
        """True when every rank has ended (or has been killed)."""
        late = time.time() - self.t0 > KILL_AFTER
        for i, p in enumerate(self.procs):
            if self.codes[i] is not None:
                continue
            if isinstance(p, int):
                pid, st = os.waitpid(p, os.WNOHANG)
                if pid:
                    self.codes[i] = os.waitstatus_to_exitcode(st)
                elif late:
                    os.kill(p, signal.SIGKILL)
                    os.waitpid(p, 0)
                    self.codes[i] = -9
            else:
                if p.poll() is not None:
                    self.codes[i] = p.returncode
                elif late:
                    p.kill()
                    self.codes[i] = p.wait()
        return all(c is not None for c in self.codes)

    def result(self):
        ranks = []
        for r, code in enumerate(self.codes):
            path = os.path.join(self.dir, "res.%d" % r)
            doc = json.load(open(path)) if os.path.exists(path) else {
                "rank": r, "wall": None, "caught": None, "error": None, "hang": True}
            doc["exit"] = code
            stderr = open(os.path.join(self.dir, "err.%d" % r), errors="replace").read() \
                if os.path.exists(os.path.join(self.dir, "err.%d" % r)) else ""
            doc["warned"] = WARN_RE.findall(stderr)
            ranks.append(doc)
        subprocess.call(["rm", "-rf", self.dir])
        return {"scenario": self.sc.name, "inject": self.inject, "mode": self.mode,
                "world": self.sc.world, "elapsed": round(time.time() - self.t0, 2),
                "ranks": ranks, "outcome": outcome(ranks)}


def outcome(ranks):
    """'ok', 'hang', 'caught:BUG', 'warned:BUG', 'error: ...' (worst rank first)."""
    seen = []
    for d in ranks:
        if d.get("hang"):
            seen.append("hang")
        elif d["caught"]:
            seen.append("caught:" + d["caught"]["bug"])
        elif d["error"]:
            seen.append("error: " + d["error"])
        elif d["warned"]:
            seen.append("warned:" + ",".join(sorted(set(d["warned"]))))
        elif d["exit"] != 0:
            seen.append("exit %s" % d["exit"])
        else:
            seen.append("ok")
    for key in ("hang", "caught", "error", "exit", "warned"):
        hit = [s for s in seen if s.startswith(key)]
        if hit:
            return hit[0] if len(set(hit)) == 1 else " | ".join(sorted(set(seen)))
    return "ok"


def wall(run):
    ws = [d["wall"] for d in run["ranks"] if d["wall"] is not None]
    return max(ws) if len(ws) == len(run["ranks"]) else None


def verdicts(runs, scenarios):
    """Per (scenario, inject): harmless / hang / false alarm / slow / broken, or caught / miss."""
    by = {}
    for r in runs:
        by.setdefault((r["scenario"], r["inject"]), {})[r["mode"]] = r
    out = []
    for (name, inject), modes in sorted(by.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        probs = []
        if inject is None:
            base = modes.get("none")
            if base and base["outcome"] != "ok":
                probs.append("broken without the guard: " + base["outcome"])
            for m, r in modes.items():
                if m == "none":
                    continue
                if r["outcome"] != "ok":
                    kind = "hang" if "hang" in r["outcome"] else "false alarm" if \
                        r["outcome"].startswith(("caught", "warned")) else "error"
                    probs.append("%s: %s %s" % (m, kind, r["outcome"]))
                elif base and wall(base) is not None and wall(r) is not None and \
                        wall(r) > wall(base) + SLACK:
                    probs.append("%s: slow %.2f s vs %.2f s" % (m, wall(r), wall(base)))
            out.append({"scenario": name, "inject": None,
                        "verdict": "harmless" if not probs else "harmful", "problems": probs})
        elif "raise" in modes:
            r, file = modes["raise"], scenarios[name].file if name in scenarios else ""
            for d in r["ranks"]:
                c = d["caught"]
                if not c or c["bug"] != inject:
                    probs.append("rank %d: %s" % (d["rank"], "hang" if d.get("hang") else
                                                  "caught " + c["bug"] if c else
                                                  d["error"] or "nothing raised"))
                elif os.path.realpath(c["site"].rsplit(":", 1)[0]) != os.path.realpath(file):
                    probs.append("rank %d: site %s" % (d["rank"], c["site"]))
            out.append({"scenario": name, "inject": inject,
                        "verdict": "caught" if not probs else "miss", "problems": probs})
    return out


def provenance():
    def git(*a):
        try:
            return subprocess.run(["git", "-C", GUARD] + list(a), capture_output=True,
                                  text=True, timeout=20).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""
    import torch
    head = git("rev-parse", "HEAD")
    dirty = bool(git("status", "--porcelain", "--", "."))
    return {"torch": torch.__version__, "commit": head + ("+dirty" if dirty else ""),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "host": platform.node(), "cpus": os.cpu_count(), "python": sys.executable,
            "load_start": os.getloadavg()}


def plan(scenarios, only, modes, inject_modes):
    for sc in scenarios.values():
        if only and not re.search(only, sc.name):
            continue
        for m in modes:
            yield sc, None, m
        for inj in sc.injects:
            for m in inject_modes:
                yield sc, inj, m


def run_matrix(only=None, modes=MODES, inject_modes=("raise",), jobs=1, start="fork",
               log=sys.stderr):
    """{"provenance", "runs", "verdicts", "skipped"}: the matrix, run now."""
    os.environ["OMP_NUM_THREADS"] = "1"
    sys.path.insert(0, HERE)
    import shapes
    from shapes._common import missing
    scenarios = shapes.load()
    prov, t0 = provenance(), time.time()
    skipped, todo = {}, []
    for sc, inj, m in plan(scenarios, only, modes, inject_modes):
        miss = missing(sc.requires)
        if miss:
            skipped[sc.name] = "%s is not importable by %s" % (miss, sys.executable)
        else:
            todo.append((sc, inj, m))
    runs, active = [], []
    while todo or active:
        while todo and len(active) < jobs:
            active.append(World(*todo.pop(0), start=start))
        for w in list(active):
            if w.poll():
                active.remove(w)
                r = w.result()
                runs.append(r)
                print("no_harm: %-30s %-22s %-5s %-40s %s s" % (
                    r["scenario"], r["inject"] or "-", r["mode"], r["outcome"][:40],
                    wall(r)), file=log, flush=True)
        time.sleep(0.02)
    prov["load_end"], prov["seconds"] = os.getloadavg(), round(time.time() - t0, 1)
    prov.update(only=only, modes=list(modes), inject_modes=list(inject_modes), jobs=jobs,
                start=start)
    return {"provenance": prov, "skipped": skipped,
            "sources": {n: s.source for n, s in scenarios.items()},
            "runs": runs, "verdicts": verdicts(runs, scenarios)}


def _load(value):
    return "%.1f" % value[0] if value else "?"


def table(records):
    rows = ["| PyTorch | scenario | shape from | none | off | warn | raise | s none / guard (max) "
            "| injected: caught on every rank |", "|---|---|---|---|---|---|---|---|---|"]
    notes = []
    for rec in records:
        pr = rec["provenance"]
        version = str(pr.get("torch", "?")).split("+")[0].rsplit(".", 1)[0]
        notes.append("PyTorch %s: %d worlds, %.0f s, %s, suite %s, %s CPUs, load %s at the start, "
                     "%s at the end." % (pr.get("torch"), len(rec["runs"]), pr.get("seconds", 0),
                                         pr.get("date"), pr.get("commit"), pr.get("cpus"),
                                         _load(pr.get("load_start")), _load(pr.get("load_end"))))
        by = {}
        for r in rec["runs"]:
            by.setdefault(r["scenario"], {}).setdefault(r["inject"], {})[r["mode"]] = r
        for name in sorted(by):
            c = by[name].get(None, {})
            times = [wall(c[m]) for m in MODES[1:] if m in c and wall(c[m]) is not None]
            base = wall(c["none"]) if "none" in c else None
            inj = ", ".join("%s %s" % (i, "yes" if v["verdict"] == "caught" else "NO")
                            for v in rec["verdicts"] for i in [v["inject"]]
                            if v["scenario"] == name and i)
            rows.append("| %s | %s | %s | %s | %s | %s | %s | %s / %s | %s |" % (
                version, name, rec["sources"].get(name, ""),
                *[c[m]["outcome"].replace("|", "/")[:40] if m in c else "-" for m in MODES],
                "%.1f" % base if base is not None else "-",
                "%.1f" % max(times) if times else "-", inj or "-"))
        for name, why in sorted(rec.get("skipped", {}).items()):
            rows.append("| %s | %s | %s | skipped: %s |  |  |  |  |  |" % (
                version, name, rec["sources"].get(name, ""), why))
    return "\n".join(rows + [""] + notes) + "\n"


def csv(value, allowed, flag):
    items = [v for v in value.split(",") if v]
    bad = [v for v in items if v not in allowed]
    if bad or not items:
        raise argparse.ArgumentTypeError("%s %r: allowed %s" % (flag, value, ",".join(allowed)))
    return tuple(items)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help="scenario names matching this regex")
    ap.add_argument("--modes", default="none,off,warn,raise",
                    type=lambda v: csv(v, MODES, "--modes"), help="of " + ",".join(MODES))
    ap.add_argument("--inject_modes", default="raise",
                    type=lambda v: csv(v, MODES, "--inject_modes"),
                    help="modes for the injected runs (default raise)")
    ap.add_argument("--jobs", type=int, default=1, help="worlds at once (default 1)")
    ap.add_argument("--start", choices=("fork", "spawn"), default="fork")
    ap.add_argument("--out", help="JSON record (written atomically)")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import readme_table
    readme_table.add_flags(ap, "no_harm")
    ap.add_argument("--_rank", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a._rank:
        rank_body(*json.loads(a._rank))
    if a.jobs < 1:
        ap.error("--jobs %d: allowed 1 or more" % a.jobs)
    if a.update and not a.table:
        ap.error("--update needs --table RECORD...")
    if a.table:
        return readme_table.emit(a, table([json.load(open(p)) for p in a.table]))
    if a.only:
        try:
            re.compile(a.only)
        except re.error as e:
            ap.error("--only %r: not a regular expression (%s)" % (a.only, e))
    rec = run_matrix(a.only, a.modes, a.inject_modes, a.jobs, a.start)
    bad = [v for v in rec["verdicts"] if v["verdict"] not in ("harmless", "caught")]
    for v in bad:
        print("no_harm: %s %s: %s: %s" % (v["scenario"], v["inject"] or "(correct)",
                                          v["verdict"], "; ".join(v["problems"])), file=sys.stderr)
    print("no_harm: %d runs, %d verdicts, %d not met, %.1f s" % (
        len(rec["runs"]), len(rec["verdicts"]), len(bad), rec["provenance"]["seconds"]),
        file=sys.stderr)
    if a.out:
        tmp = a.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(rec, f, indent=1)
        os.rename(tmp, a.out)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
