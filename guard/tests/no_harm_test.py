"""The no-harm matrix live (eval/no_harm.py, issue 70): fails on any hang,
false alarm, error, slowdown over 1 s, or missed injected pitfall. Sharded
by scenario: TEST_TOTAL_SHARDS / TEST_SHARD_INDEX pick every n-th scenario."""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "eval"))

import world  # noqa: E402


def main():
    world.torch_or_skip()
    if os.environ.get("TEST_SHARD_STATUS_FILE"):
        open(os.environ["TEST_SHARD_STATUS_FILE"], "w").close()
    import no_harm
    import shapes
    names = sorted(shapes.load())
    total = int(os.environ.get("TEST_TOTAL_SHARDS", "1"))
    index = int(os.environ.get("TEST_SHARD_INDEX", "0"))
    mine = names[index::total]
    print("shard %d of %d: %s" % (index, total, ", ".join(mine)))
    rec = no_harm.run_matrix(only="^(%s)$" % "|".join(map(re.escape, mine)))
    for name, why in sorted(rec["skipped"].items()):
        print("SKIPPED %s: %s" % (name, why))
    failures = ["%s %s: %s: %s" % (v["scenario"], v["inject"] or "(correct)", v["verdict"],
                                   "; ".join(v["problems"]))
                for v in rec["verdicts"] if v["verdict"] not in ("harmless", "caught")]
    print("%d runs in %.1f s" % (len(rec["runs"]), rec["provenance"]["seconds"]))
    return world.finish(failures)


if __name__ == "__main__":
    sys.exit(main())
