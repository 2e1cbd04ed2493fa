#!/usr/bin/python3
"""Checks the per-version PyTorch records and the ledger's per-version
verdicts against each other (//tools/vs_pytorch:versions_test; no torch).

    python3 tools/vs_pytorch/versions_check.py analysis/claims.json results/vs_pytorch/*.json

Every record NAME.torchV.json must say in its provenance that it ran on
PyTorch V (provenance.torch_version) and which suite commit ran it
(provenance.commit, a 40-hex commit, optionally "+dirty"). Every claim with
a "pytorch" field (analysis/claims.json; the shape is documented there) must
give, per version V in {1.13, 2.15}, a verdict among confirmed, partly,
refuted, not tested, not resolved here (the noise rule, analysis/computed.py),
and a "record" naming one of the records given here whose name says torchV
(left out only with "not tested"). Exit 0, or 1 with one line per problem.
"""
import json
import os
import re
import sys

VERSIONS = ("1.13", "2.15")
VERDICTS = ("confirmed", "partly", "refuted", "not tested", "not resolved here")
NAME = re.compile(r"^(?P<name>[a-z0-9_]+)\.torch(?P<v>\d+\.\d+)\.json$")
COMMIT = re.compile(r"^[0-9a-f]{40}(\+dirty)?$")


def check_records(paths):
    problems, names = [], {}
    for path in paths:
        m = NAME.match(os.path.basename(path))
        if not m:
            continue  # suite-side records (checked_mode.json) and the like
        names["results/vs_pytorch/" + os.path.basename(path)] = m.group("v")
        try:
            with open(path) as f:
                prov = json.load(f)["provenance"]
        except (OSError, ValueError, KeyError) as e:
            problems.append(f"{path}: no provenance ({e})")
            continue
        if prov.get("torch_version") != m.group("v"):
            problems.append(f"{path}: provenance.torch_version is {prov.get('torch_version')!r}, "
                            f"the name says {m.group('v')}")
        if not COMMIT.match(str(prov.get("commit", ""))):
            problems.append(f"{path}: provenance.commit {prov.get('commit')!r} is not a commit")
    return problems, names


def check_claims(claims_path, names):
    problems = []
    with open(claims_path) as f:
        claims = json.load(f)["claims"]
    for i, c in enumerate(claims):
        field = c.get("pytorch")
        if field is None:
            continue
        where = f"{claims_path}: claim {i} ({c.get('claim', '')[:50]!r})"
        if not isinstance(field, dict) or sorted(field) != sorted(VERSIONS):
            problems.append(f"{where}: 'pytorch' must map exactly {', '.join(VERSIONS)}")
            continue
        for v, entry in field.items():
            if not isinstance(entry, dict) or entry.get("verdict") not in VERDICTS:
                problems.append(f"{where}: {v}: verdict must be one of {', '.join(VERDICTS)}")
                continue
            record = entry.get("record")
            if record is None and entry["verdict"] == "not tested":
                continue  # e.g. torchmetrics 1.9.0 on 1.13: nothing to run
            if record not in names:
                problems.append(f"{where}: {v}: record {record!r} is not a committed "
                                f"results/vs_pytorch/*.torchV.json")
            elif names[record] != v:
                problems.append(f"{where}: {v}: record {record} is PyTorch {names[record]}'s")
    return problems, sum(1 for c in claims if "pytorch" in c)


def main(argv):
    if len(argv) < 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    problems, names = check_records(argv[2:])
    more, judged = check_claims(argv[1], names)
    problems += more
    for p in problems:
        print(p)
    if not names:
        problems.append("no NAME.torchV.json record given")
        print(problems[-1])
    if not problems:
        print(f"{len(names)} per-version records, {judged} claims with per-version verdicts: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
