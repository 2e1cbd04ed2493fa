"""The ledger computes its own verdicts (issue 71; analysis/computed.py,
the rules in analysis/verdict_rules.py):
  - on the ledger as it stood (rules_testdata/claims_2026-12-01.json) each
    kind of fault the audit found is detected: the claims re-judged, a
    typed shown_by and a number typed into a text, claims without ids;
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
    check(any("no id '<bug>/<slug>'" in p for p in old), "claims without ids passed")

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
    check(v2 == "confirmed", f"silent at W = 4 too did not confirm the claim: {v2!r}")
    # The top level likewise: a record moved across the claim's bound flips it.
    top = by_id(doc, "mean_of_means/sum-over-world-size-is-mean")
    check(computed.top_verdict(top, recs) == "refuted", "the mean-of-means claim is not refuted")
    zeroed = [(p, dict(r, measured=dict(r["measured"], **{top["metric"].split(".")[1]: 0.0})))
              if ledger.select([(p, r)], top["select"]) else (p, r) for p, r in recs]
    check(computed.top_verdict(top, zeroed) == "confirmed",
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

    return status()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
