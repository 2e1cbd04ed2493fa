"""Claims are cited by stable id (issue 71; analysis/claim_refs.py): every
"claim:<id>" in the checkout names a claim or suite result of claims.json,
no positional "claim N" is left, and the ids themselves are unique
"<bug>/<slug>". The checkout is the one the claims file's runfile links back
to; results/ is left out (committed records are never edited, and a record
may quote a positional reference of its day), and so is rules_testdata/.
Usage: claim_refs_test.py CLAIMS.json"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import claim_refs  # noqa: E402
from checks import check, status  # noqa: E402


def main(claims_path):
    with open(claims_path) as f:
        doc = json.load(f)
    bad = claim_refs.id_problems(doc)
    check(not bad, "ids: " + "; ".join(bad))
    check(claim_refs.id_problems({"claims": [{"bug": "x", "claim": "c"}]}),
          "a claim without an id passed")
    twice = {"claims": [{"id": "x/a", "bug": "x", "claim": "c"}] * 2}
    check(claim_refs.id_problems(twice), "an id given twice passed")
    # References: every claim:<id> in the checkout resolves; no positional ones.
    ids = {c["id"] for c in doc["claims"] + doc.get("suite_results", [])}
    word = "claim"  # spelt apart, so that the scan below does not find these examples
    check(claim_refs.problems_in(f"see {word} 45 and {word}s 22 and 47", ids, "t"),
          "a positional reference passed")
    check(claim_refs.problems_in(f"{word}:wrong_all_gather/no-such-claim", ids, "t"),
          "a reference to no claim passed")
    check(not claim_refs.problems_in("claim:wrong_all_gather/auc-swings-on-two-gpus", ids, "t"),
          "a good reference was refused")
    repo = os.path.dirname(os.path.dirname(os.path.realpath(claims_path)))
    found = claim_refs.scan(repo, ids)
    check(not found, "claim references that resolve to nothing, or positional ones:\n  "
          + "\n  ".join(found))
    return status()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
