"""Every PyTorch evidence script that a committed record names has a row in
tools/vs_pytorch/README.md's like-for-like table (issue 58: whether it
reads what our side reads, and if not why not), with every cell filled.

    like_for_like_test.py README RECORD.json...   (by //analysis:py_test.sh)
"""
import json
import sys

readme, records = sys.argv[1], sys.argv[2:]
doc = open(readme).read()
begin, end = "<!-- like-for-like:begin -->\n", "<!-- like-for-like:end -->"
failed = []
if begin not in doc or end not in doc:
    sys.exit(f"FAIL: {readme} has no like-for-like table markers")
rows = {}
for line in doc.split(begin, 1)[1].split(end, 1)[0].splitlines()[2:]:
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    rows[cells[0].strip("`")] = cells
named = set()
for path in records:
    with open(path) as f:
        rec = json.load(f)
    script = rec.get("provenance", {}).get("script") if isinstance(rec, dict) else None
    if script:
        named.add(script)
if len(named) < 15:
    failed.append(f"only {len(named)} scripts named by {len(records)} records")
for script in sorted(named):
    cells = rows.get(script)
    if cells is None:
        failed.append(f"{script}: no row in the like-for-like table")
    elif len(cells) != 4 or not all(cells):
        failed.append(f"{script}: a row of {len(cells)} cells, some empty: {cells}")
for f in failed:
    print("FAIL:", f)
print("FAILED" if failed else "PASS", len(failed))
sys.exit(1 if failed else 0)
