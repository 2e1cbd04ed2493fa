"""The ledger keeps its verdict rules (//analysis:verdict_rules_test;
analysis/verdict_rules.py states them):
  - on the committed claims.json every rule holds: each claim quotes its
    post verbatim (checked against the seed posts when they are at hand:
    ../shared/seeds beside the checkout, or $DDP_PITFALLS_SEEDS; said when
    not), no refutation outside the claim's own setting, no counter-example
    hidden by a selection, no top level stronger than its evidence, every
    verdict the one its checks compute and every per-version text rendered
    from its record (analysis/computed.py; computed_test.py shows them fail);
  - on the ledger as it stood before these rules (rules_testdata/
    claims_2026-11-28.json) each of the five cases the audit found fails
    its rule, and so do three of the smaller ones.
Usage: verdict_rules_test.py CLAIMS.json BEFORE.json RESULT.json..."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ledger  # noqa: E402
import verdict_rules  # noqa: E402
from checks import check, status  # noqa: E402
from records import load_pairs  # noqa: E402


def seeds_folder(claims_path):
    """The seed posts: $DDP_PITFALLS_SEEDS, else shared/seeds beside the
    checkout the claims file lives in (the runfile links back to it)."""
    if os.environ.get("DDP_PITFALLS_SEEDS"):
        return os.environ["DDP_PITFALLS_SEEDS"]
    repo = os.path.dirname(os.path.dirname(os.path.realpath(claims_path)))
    return os.path.join(os.path.dirname(repo), "shared", "seeds")


def main(claims_path, before_path, result_paths):
    root = os.path.dirname(os.path.dirname(os.path.abspath(claims_path)))
    folder = seeds_folder(claims_path)
    seeds = verdict_rules.load_seeds(folder)
    if seeds is None:
        print(f"verdict_rules_test: the seed posts are not at hand ({folder}): quotes are "
              "checked for presence only, not verbatim")
    else:
        print(f"verdict_rules_test: quotes checked verbatim against {len(seeds)} seeds in {folder}")
    recs = load_pairs([p for p in result_paths if "/gpu/" not in p])
    results_dir = os.path.dirname(next(p for p in result_paths if "/gpu/" not in p))

    ledger.load(claims_path)  # the shape rules too
    doc, now = verdict_rules.file_problems(claims_path, recs, root, seeds, results_dir)
    for cid, entry in verdict_rules.unchecked_code(doc, root, seeds):
        print(f"verdict_rules_test: claim:{cid}: code_at {entry!r} not checked here (no PyTorch, "
              "seeds or repository at hand for it)")
    check(not now, "the committed claims break the verdict rules:\n  " + "\n  ".join(now))

    # Every claim's quote is found in its seed; a made-up one is not.
    if seeds is not None:
        fake = dict(doc["claims"][0], quote="一个可微分的 all_gather 给出单进程的梯度")
        check(verdict_rules.quote_problems(fake, seeds), "a quote no post holds was accepted")

    before, old = verdict_rules.file_problems(before_path, recs, root, seeds, results_dir)
    named_b, _ = ledger.read_named(before["claims"], results_dir, verdict_rules.read_list)

    def fails(text, rule):
        hits = [p for p in old if f"({text[:60]!r})" in p and rule in p]
        check(hits, f"the ledger before the rules: {text!r} does not fail on {rule!r}")

    # The five cases of the audit.
    fails("AUC 0.86 on one GPU becomes 0.62-0.91 on two", "refuted without 'setting'")
    fails("Changing drop_last or batch_size changes the shape of the AUC curve, but it stays unstable",
          "1.13: refuted without 'setting'")
    fails("SyncBatchNorm is not supported under DataParallel", "stronger than every per-version")
    fails("Small per-rank batches damage the model; a larger batch per GPU (or one process) fixes it",
          "counter-examples outside its selection")
    fails("A differentiable all_gather gives the one-process gradient", "no 'quote'")
    # Smaller ones: a shown_by copied across versions, a number not in the record.
    fails("find_unused_parameters=False is steadier and faster when the model has no dynamic branches",
          "a typed 'shown_by'")
    fails("Changing drop_last or batch_size changes the shape of the AUC curve, but it stays unstable",
          "a typed 'shown_by'")

    # The refutation rule reads engine and W from the records, not from a typed
    # field: case 1 annotated as if it ran the post's setting on our engine
    # still fails on the API, and on gloo records it would fail the engine.
    c4 = next(c for c in before["claims"] if c["claim"].startswith("AUC 0.86"))
    setting = {"engine": "nccl", "world_size": [2], "trigger": "t", "api": "torch.distributed.all_gather"}
    as_pytorch = dict(c4, setting=setting, ran={"trigger": True, "api": "pytorch", "can_produce": True})
    check(any("suite: " in p for p in verdict_rules.claim_problems(0, as_pytorch, recs, named_b, root, None)),
          "a top-level refutation on the suite's records passed as PyTorch's API")
    on_gloo = dict(as_pytorch, select={"bug": "wrong_all_gather", "kind": "repro", "variant": "raw_unequal"},
                   ran={"trigger": True, "api": "suite: x", "can_produce": True})
    check(any("engine nccl did not run" in p
              for p in verdict_rules.claim_problems(0, on_gloo, recs, named_b, root, None)),
          "a refutation on gloo records passed for the post's NCCL")
    return status()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
