"""One rank of a test world: installs the guard in --mode, runs the named
scenarios (tests/scenarios.py) in order, and prints one JSON line per
scenario: {"scenario", "rank", "caught": the PitfallError's bug or null,
"site", "error": any other exception}. Started by world.py."""
import argparse
import datetime
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # guard/: the package from source
sys.path.insert(0, HERE)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mode", required=True)
    ap.add_argument("--off", default="", help="checks turned off, comma-separated")
    ap.add_argument("--scenarios", required=True)
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--install_after_init", action="store_true")
    args = ap.parse_args()
    import torch
    import torch.distributed as dist
    from ddp_pitfalls import guard
    torch.set_num_threads(1)

    def install():
        guard.install(mode=args.mode, checks={c: False for c in args.off.split(",") if c})

    if not args.install_after_init:
        install()
    dist.init_process_group("gloo", init_method="file://" + os.path.join(args.dir, "store"),
                            rank=args.rank, world_size=args.world,
                            timeout=datetime.timedelta(seconds=30))
    if args.install_after_init:
        install()
    import scenarios
    table = dict(scenarios.TRIGGERS, **scenarios.FIXES)
    for name in args.scenarios.split(","):
        out = {"scenario": name, "rank": args.rank, "caught": None, "site": None, "error": None}
        scenarios.reset()
        try:
            table[name](args.rank, args.world)
        except guard.PitfallError as e:
            out["caught"], out["site"], out["message"] = e.bug, e.site, str(e)
        except Exception as e:  # noqa: BLE001 (recorded; the test judges it)
            out["error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300])
        print(json.dumps(out), flush=True)
        dist.barrier()
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
