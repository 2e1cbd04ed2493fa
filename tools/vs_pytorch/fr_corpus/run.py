"""Writes the Flight Recorder corpus: real PyTorch gloo jobs that hang, their
per-rank dumps, and the ground truth of each.

    .venv-torch2.15/bin/python tools/vs_pytorch/fr_corpus/run.py --out tools/trace/testdata/fr_corpus
    (--only NAME[,NAME] for some scenarios)

For every scenario of scenarios.py it starts one process per rank (this
interpreter, rendezvous through a FileStore, process-group timeout
--timeout seconds). A rank dumps PyTorch's own Flight Recorder
(torch._C._distributed_c10d._dump_fr_trace(), pickle) to
OUT/NAME/nccl_trace_rank_<R> -- the name of PyTorch's dump-on-timeout files
-- when a collective raises (the timeout), when its program ends, or where
the scenario stalls; a killed rank writes nothing. Then it lingers until
every rank has dumped (or three timeouts and 30 s have passed) and exits
without tearing the group down (as a hung job would be killed). OUT/NAME/truth.json holds the ground truth: world size,
culprit ranks, process group, the collective (sequence id), each
culprit's call site, and every finding (process group, sequence id,
culprits: more than one where two groups hang at once). OUT/VERSION
names the torch that wrote the dumps.
"""
import argparse
import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PREFIX = "nccl_trace_rank_"


class Ctx:
    """What a scenario may do besides collectives: mark its call site, dump."""

    def __init__(self, rank, out, timeout_s):
        import datetime
        self.rank, self.out, self.timeout_s = rank, out, timeout_s
        self.timeout = datetime.timedelta(seconds=timeout_s)  # for new_group: not inherited
        self.dumped = False

    def mark(self, offset=1):
        caller = inspect.currentframe().f_back
        site = {"file": os.path.basename(caller.f_code.co_filename), "line": caller.f_lineno + offset}
        with open(os.path.join(self.out, f"site_rank{self.rank}.json"), "w") as f:
            json.dump(site, f)

    def stall(self):
        # A rank stuck outside any collective (data loading) for three
        # timeouts: the peers' timeouts fire long before it comes back,
        # even on a loaded machine.
        time.sleep(3 * self.timeout_s + 4)

    def dump(self):
        import torch
        if self.dumped:
            return
        data = torch._C._distributed_c10d._dump_fr_trace()
        path = os.path.join(self.out, PREFIX + str(self.rank))
        with open(path + ".tmp", "wb") as f:
            f.write(data)
        os.replace(path + ".tmp", path)  # a reader never sees half a dump
        self.dumped = True


def child(name, rank, world, out, store, timeout_s):
    import datetime
    import torch.distributed as dist
    sys.path.insert(0, HERE)
    import scenarios
    dist.init_process_group(
        "gloo", store=dist.FileStore(store, world), rank=rank, world_size=world,
        timeout=datetime.timedelta(seconds=timeout_s))
    ctx = Ctx(rank, out, timeout_s)
    try:
        getattr(scenarios, name)(rank, world, ctx)
    except Exception as e:  # the collective's timeout or a peer's failure
        print(f"rank {rank}: {type(e).__name__}: {str(e).splitlines()[0][:160]}", flush=True)
    ctx.dump()
    # Stay until every peer has dumped: leaving would turn their hang into a
    # "connection closed" error. A rank outside a hung subgroup finishes
    # long before the members time out; a killed rank never says it is done.
    done = os.path.join(os.path.dirname(store), f"done_rank{rank}")
    open(done, "w").close()
    deadline = time.time() + 3 * timeout_s + 30
    while time.time() < deadline:
        if all(os.path.exists(os.path.join(os.path.dirname(store), f"done_rank{r}")) for r in range(world)):
            break
        time.sleep(0.2)
    time.sleep(1)  # the last to dump may still be leaving its collective
    os._exit(0)


def run_scenario(name, out_root, timeout_s, python):
    sys.path.insert(0, HERE)
    import scenarios
    world, culprits, pg, seq, what = scenarios.TRUTH[name]
    out = os.path.join(out_root, name)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    tmp = tempfile.mkdtemp(prefix="fr-corpus-")
    store = os.path.join(tmp, "store")
    procs = [subprocess.Popen([python, os.path.abspath(__file__), "--child", name, str(r), str(world),
                               out, store, str(timeout_s)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in range(world)]
    deadline = time.time() + 90 + 6 * timeout_s
    logs = []
    for r, p in enumerate(procs):
        try:
            log, _ = p.communicate(timeout=max(1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            p.kill()
            log, _ = p.communicate()
            log += "\n(killed by run.py: past the deadline)"
        logs.append(f"rank {r} exit {p.returncode}: " + log.strip().replace("\n", "\n  "))
    shutil.rmtree(tmp, ignore_errors=True)
    sites = {}
    for r in range(world):
        path = os.path.join(out, f"site_rank{r}.json")
        if os.path.exists(path):
            with open(path) as f:
                sites[str(r)] = json.load(f)
            os.remove(path)
    findings = scenarios.FINDINGS.get(name, [(pg, seq, culprits)] if culprits else [])
    truth = {"scenario": name, "what": what, "world_size": world, "healthy": not culprits,
             "timeout_s": timeout_s,
             "culprits": culprits, "process_group": pg, "seq": seq, "sites": sites,
             "findings": [{"process_group": g, "seq": s, "culprits": c} for g, s, c in findings],
             "dumps": sorted(f for f in os.listdir(out) if f.startswith(PREFIX))}
    with open(os.path.join(out, "truth.json"), "w") as f:
        json.dump(truth, f, indent=1, sort_keys=True)
        f.write("\n")
    return truth, logs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="corpus folder (one subfolder per scenario)")
    ap.add_argument("--only", default="", help="comma-separated scenario names")
    ap.add_argument("--timeout", type=float, default=3.0, help="process-group timeout, seconds")
    ap.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        name, rank, world, out, store, timeout_s = args.child
        child(name, int(rank), int(world), out, store, float(timeout_s))
        return 0
    if not args.out:
        ap.error("--out is required")
    if not 0.5 <= args.timeout <= 60:
        ap.error("--timeout: want 0.5 to 60 seconds")
    import torch
    sys.path.insert(0, HERE)
    import scenarios
    names = [n for n in args.only.split(",") if n] or list(scenarios.TRUTH)
    unknown = [n for n in names if n not in scenarios.TRUTH]
    if unknown:
        ap.error(f"--only: unknown {unknown}; allowed: {', '.join(scenarios.TRUTH)}")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "VERSION"), "w") as f:
        f.write(f"torch {torch.__version__} (gloo), python {sys.version.split()[0]}, "
                f"written by tools/vs_pytorch/fr_corpus/run.py\n")
    for name in names:
        t0 = time.time()
        truth, logs = run_scenario(name, args.out, args.timeout, sys.executable)
        print(f"{name}: {time.time() - t0:.1f} s, dumps {truth['dumps']}, culprits {truth['culprits']}")
        for line in logs:
            print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
