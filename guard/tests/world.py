"""Starts a gloo world of real processes (tests/rank_main.py) and returns
each rank's results and stderr. Used by the guard's tests."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def torch_or_skip():
    """Exits 0 with the reason printed when torch cannot be imported (the
    guard's tests need PyTorch: tools/setup.sh installs Debian's python3-torch)."""
    try:
        import torch  # noqa: F401
        import torch.distributed as dist
        if not dist.is_available():
            raise ImportError("torch.distributed is not available")
    except ImportError as e:
        print("SKIPPED: torch is not importable by %s (%s); tools/setup.sh installs Debian's "
              "python3-torch" % (sys.executable, e))
        sys.exit(0)


def nccl_or_reason():
    """(GPUs visible, None) or (0, the one-line reason --backend nccl cannot
    run here): the guard's eval scripts exit 2 with it rather than start
    ranks that would wait for a device that is not there."""
    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:
        return 0, "no torch in %s (%s)" % (sys.executable, e)
    if not torch.cuda.is_available() or torch.cuda.device_count() < 1:
        return 0, ("no CUDA device: torch %s sees none (torch.cuda.is_available() is False; "
                   "built for CUDA %s); --backend gloo runs on the CPU" %
                   (torch.__version__, torch.version.cuda))
    if not dist.is_available() or not dist.is_nccl_available():
        return 0, "torch %s has no NCCL backend" % torch.__version__
    return torch.cuda.device_count(), None


def run(mode, scenarios, world=2, off=(), timeout=120, install_after_init=False):
    """{"results": [per rank: {scenario: result}], "stderr": [per rank], "exit": [...]}"""
    with tempfile.TemporaryDirectory(prefix="guard_world_",
                                     dir=os.environ.get("TEST_TMPDIR")) as d:
        cmd = [sys.executable, os.path.join(HERE, "rank_main.py"), "--mode", mode,
               "--scenarios", ",".join(scenarios), "--world", str(world), "--dir", d,
               "--off", ",".join(off)] + (["--install_after_init"] if install_after_init else [])
        codes, outs, stderr = spawn(cmd, world, timeout, {})
        results = [{doc["scenario"]: doc for doc in json_lines(out)} for out in outs]
    return {"results": results, "stderr": stderr, "exit": codes}


def spawn(cmd, world, timeout, env):
    """Runs `cmd --rank r` for every rank r (OMP_NUM_THREADS=1 and `env`
    added): (exit codes, stdouts, stderrs), a rank past `timeout` killed."""
    full = dict(os.environ, OMP_NUM_THREADS="1", **env)
    procs = [subprocess.Popen(cmd + ["--rank", str(r)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=full)
             for r in range(world)]
    codes, outs, errs = [], [], []
    for p in procs:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        codes.append(p.returncode)
        outs.append(out)
        errs.append(err)
    return codes, outs, errs


def json_lines(text):
    """The JSON objects a rank printed, one per line."""
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def finish(failures):
    """Prints every failure and the count; the test's exit status."""
    for f in failures:
        print("FAIL: " + f)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0
