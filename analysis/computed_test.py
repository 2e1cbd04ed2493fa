"""The ledger computes its own verdicts (issue 71; analysis/computed.py,
the rules in analysis/verdict_rules.py):
  - on the ledger as it stood (rules_testdata/claims_2026-12-01.json) each
    kind of fault the audit found is detected: the seven claims re-judged
    (GroupNorm confirmed on words its check does not test, reduce_op's
    'partly' that its own declarations cannot give, among them), a typed
    shown_by whose numbers no record renders, claims without ids and a
    positional reference;
  - the words rule (verdict_rules.word_problems): a phrase not in the
    claim, words left in neither list or in both, untested words without
    a cap, each fails;
  - a record changed under a claim changes its rendered text, and across
    the threshold its verdict;
  - the noise rule: a timing check without repeated runs is "not resolved
    here", and with runs, load and an interval that excludes no difference
    it is judged;
Usage: computed_test.py CLAIMS.json BEFORE.json RESULT.json..."""
import copy
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import computed  # noqa: E402
import ledger  # noqa: E402
import verdict_rules  # noqa: E402
from checks import check, status  # noqa: E402
from records import load_pairs  # noqa: E402


def by_id(doc, cid):
    return next(c for c in doc["claims"] + doc.get("suite_results", []) if c.get("id") == cid)


def main(claims_path, before_path, result_paths):
    root = os.path.dirname(os.path.dirname(os.path.abspath(claims_path)))
    recs = load_pairs([p for p in result_paths if "/gpu/" not in p])
    results_dir = os.path.dirname(result_paths[0])

    doc, _ = verdict_rules.file_problems(claims_path, recs, root, None, results_dir)
    _, old = verdict_rules.file_problems(before_path, recs, root, None, results_dir)

    def fails(text, rule):
        hits = [p for p in old if f"({text[:60]!r})" in p and rule in p]
        check(hits, f"the ledger of 2026-12-01: {text!r} does not fail on {rule!r}")

    # The claims the audit of issue 71 re-judged, as they stood.
    fails("PreciseBN calibrates the running stats and further improves validation ppl/acc",
          "but its check gives 'confirmed'")
    fails("Changing _simple_gather_all_tensors this way solves the gradient-propagation problem",
          "but its check gives 'confirmed'")
    fails("SyncBatchNorm works only under DDP; DataParallel does not support it",
          "2.15: verdict 'partly', but its checks give 'not tested'")
    fails("There may be an extra memory peak during the gradient computation",
          "2.15: verdict 'partly', but its checks give 'not tested'")
    fails("Memory use grows because the original computation graph must be kept",
          "1.13: verdict 'partly', but its checks give 'not tested'")
    # A typed text whose numbers nothing renders (the stale 2.15 find_unused text).
    fails("Without dynamic branches find_unused_parameters=False is steadier and faster",
          "a typed 'shown_by'")
    # GroupNorm confirmed while its check tests only the independence from batch
    # statistics: its words are not declared, and declared honestly they cap it.
    gn = "GroupNorm does not depend on batch statistics and suits small batches"
    fails(gn, "is in neither tested_words nor untested_words")
    old_doc = json.load(open(before_path))
    old_gn = next(c for c in old_doc["claims"] if c["claim"] == gn)
    declared = dict(old_gn, tested_words=["GroupNorm does not depend on batch statistics"],
                    untested_words=["and suits small batches"], untested_why="not what the check reads")
    check(any("confirmed with untested words" in p for p in verdict_rules.claim_problems(
        0, declared, recs, (), root, None)), "GroupNorm confirmed with untested words passed")
    # reduce_op's 'partly': no untested words, no check against: its declarations give confirmed.
    fails("torch.distributed.all_reduce(loss, op=torch.distributed.reduce_op.SUM) sums the loss "
          "over the data slices on different GPUs", "outcome 'partly', but its declarations give 'confirmed'")
    check(any("no id '<bug>/<slug>'" in p for p in old), "claims without ids passed")
    # A claim pointing at another by its place in the ledger.
    fails("Putting the process's own result (which keeps its autograd graph) back into its slot",
          "positional reference 'next row'")

    # A number typed into a template, or into a not-tested reason, is refused.
    bad = copy.deepcopy(doc)
    c = by_id(bad, "autograd_lost_gather/extra-memory-peak-in-backward")
    c["pytorch"]["2.15"]["checks"][0]["says"] += " (8/7 against 4/3)"
    probs = verdict_rules.shown_by_problems("x", c, root)
    check(any("template states 8, 7, 4, 3" in p for p in probs), f"a typed number passed: {probs}")
    c = by_id(bad, "small_batch_bn/sync-bn-syncs-statistics")
    c["pytorch"]["1.13"]["reason"] += ", 0.41 below"
    check(verdict_rules.shown_by_problems("x", c, root), "a number in a reason passed")

    # A record changed under a claim: its text follows, and across the bound its verdict.
    claim = by_id(doc, "wrong_all_gather/all-gather-needs-equal-shapes")
    entry = claim["pytorch"]["2.15"]
    with open(os.path.join(root, entry["record"])) as f:
        rec = json.load(f)
    verdict, text = computed.version_verdict(claim, entry, rec)
    check(verdict == entry["verdict"] == "partly", f"2.15 computed {verdict!r}")
    changed = copy.deepcopy(rec)
    for row in changed["cases"]:
        row["silent_runs"] = 3 if row["world_size"] == 4 else row["silent_runs"]
    v2, t2 = computed.version_verdict(claim, entry, changed)
    check(t2 != text and "at most 3" in t2, f"the text did not follow the record: {t2!r}")
    check(v2 == "partly", f"its untested words did not cap the confirmed checks: {v2!r}")
    all_words = dict(claim, untested_words=[])  # were every word tested, it would be confirmed
    v2, _ = computed.version_verdict(all_words, entry, changed)
    check(v2 == "confirmed", f"silent at W = 4 too did not confirm the claim: {v2!r}")
    # The top level likewise: a record moved across the claim's bound flips it.
    # Its words are read by two numbers (the accuracy error, and "also" the
    # loss error): one moved alone makes the two disagree (partly), both moved
    # turn the verdict.
    top = by_id(doc, "mean_of_means/sum-over-world-size-is-mean")
    check(computed.top_verdict(top, recs) == "refuted", "the mean-of-means claim is not refuted")

    def zero(fields):
        return [(p, dict(r, measured=dict(r["measured"], **{f: 0.0 for f in fields})))
                if ledger.select([(p, r)], top["select"]) else (p, r) for p, r in recs]
    accuracy = top["metric"].split(".")[1]
    loss = top["also"][0]["metric"].split(".")[1]
    check(computed.top_verdict(top, zero([accuracy])) == "partly",
          "an exact accuracy beside an inexact loss was not partly")
    check(computed.top_verdict(top, zero([accuracy, loss])) == "confirmed",
          "an exact mean of means did not turn the verdict")

    # The noise rule: one run is not resolved; repeated runs with load and an
    # interval clear of 1 are judged, an interval holding 1 is not.
    fu = by_id(doc, "drop_last_hang/find-unused-false-steadier-faster")
    e = fu["pytorch"]["2.15"]
    with open(os.path.join(root, e["record"])) as f:
        rec = json.load(f)
    v, text = computed.version_verdict(fu, e, rec)
    check(v == computed.NOT_RESOLVED and "one run" in text, f"one loaded run judged: {v!r}")
    many = dict(rec, config=dict(rec["config"], runs=5),
                timing_interval={"lo": 1.05, "hi": 1.2}, spread_interval={"lo": 0.9, "hi": 1.3})
    v, text = computed.version_verdict(fu, e, many)
    check(v == computed.NOT_RESOLVED and "holds no difference" in text,
          f"a spread interval holding 1 was judged: {v!r} {text!r}")
    many["spread_interval"] = {"lo": 1.1, "hi": 1.3}
    v, _ = computed.version_verdict(fu, e, many)
    check(v != computed.NOT_RESOLVED, "repeated runs with an interval clear of 1 stayed unresolved")

    # Untested words cap a verdict at partly.
    capped = dict(top, untested_words=["x"])
    check(computed.top_verdict(capped, recs) == "partly", "untested words did not cap the verdict")

    # The words rule: each way of not covering the claim fails.
    base = dict(top, tested_words=[top["claim"]], untested_words=[])
    check(not verdict_rules.word_problems("x", base, True), "a fully tested claim failed")
    head, tail = top["claim"].split(" loss", 1)
    partial = dict(base, tested_words=[head], untested_words=["loss" + tail], untested_why="w",
                   verdict="refuted")
    check(not verdict_rules.word_problems("x", partial, True), "a covering split failed")
    for bad, why in [
            (dict(base, tested_words=["Dividing the all_reduce total"]), "is not in the claim's words"),
            (dict(base, tested_words=["Dividing the all_reduce sum"]), "is in neither"),
            (dict(base, untested_words=["loss"], untested_why="w"), "tested and untested at once"),
            ({k: v for k, v in partial.items() if k != "untested_why"}, "without 'untested_why'"),
            ({k: v for k, v in base.items() if k != "untested_words"}, "no 'untested_words'"),
            (dict(base, tested_words=[], untested_words=[top["claim"]], untested_why="w"), "no tested words")]:
        probs = verdict_rules.word_problems("x", bad, True)
        check(any(why in p for p in probs), f"the words rule let pass ({why!r}): {probs}")
    check(any("refuted with untested words" in p for p in verdict_rules.computed_problems(
        "x", partial, recs, (), root, ())), "refuted with untested words passed")
    # A judged-from-code claim: its outcome follows its declarations, and its
    # code_at must name something that is there.
    code = dict(by_id(doc, "mean_of_means/reduce-op-sum-sums-loss"))
    check(not verdict_rules.code_problems("x", code, root, None), "a good judged-from-code claim failed")
    check(verdict_rules.code_problems("x", dict(code, outcome="partly"), root, None),
          "a judged-from-code outcome its declarations do not give passed")
    check(verdict_rules.code_problems("x", dict(code, code_at=["analysis/no_such_file.py"]), root, None),
          "code_at naming a missing repository file passed")
    check(verdict_rules.code_problems("x", dict(code, code_at=["analysis/computed.py :: no such text"]),
                                      root, None), "code_at naming text the file lacks passed")

    return status()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
