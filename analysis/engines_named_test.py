"""CITATION.cff's title and README.md's citation title name only the engines
that produced the committed records (//analysis:engines_named_test): an
engine is named once a committed pair record or benchmark file ran on it.
Usage: engines_named_test.py CITATION.cff README.md RESULT.json..."""
import json
import re
import sys

ENGINES = {"gloo": "Gloo", "nccl": "NCCL"}


def main(citation, readme, results):
    ran = set()
    for p in results:
        with open(p) as f:
            d = json.load(f)
        if isinstance(d, list):
            ran |= {str(r.get("backend", "")).lower() for r in d}
        elif isinstance(d, dict):
            ran.add(str(d.get("context", {}).get("ddp_backend", "")).lower())
    ran &= set(ENGINES)
    titles = []
    with open(citation) as f:
        titles += [("CITATION.cff title", m.group(1)) for m in re.finditer(r'^title:\s*"?(.*?)"?\s*$', f.read(), re.M)]
    with open(readme) as f:
        text = f.read()
    titles += [("README.md citation title", m.group(1)) for m in re.finditer(r"title\s*=\s*\{(.*)\},", text)]
    titles += [("README.md title", text.splitlines()[0])]
    bad = []
    if not titles[0][1]:
        bad.append("no title in CITATION.cff")
    for where, title in titles:
        for key, name in ENGINES.items():
            if re.search(rf"\b{name}\b", title) and key not in ran:
                bad.append(f"{where} names {name}, which produced no committed record: {title!r}")
    for b in bad:
        print("FAIL:", b)
    print("engines with committed records:", ", ".join(sorted(ran)) or "none")
    print("FAILED" if bad else "PASS")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
