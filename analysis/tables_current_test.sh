#!/bin/bash
# The pair READMEs' tables are the ones the committed results/ give:
# analysis/pair_table.py --all --check (every table of the pairs' tables.json)
# changes nothing. A record regenerated without its tables, or a table edited
# by hand, fails here; so does this test's own hand-edited copy (below), which
# shows the check can fail.
set -u
pair_table="$1"
python3=/usr/bin/python3
if ! "$python3" "$pair_table" --all --check --root .; then
  echo "FAIL: a pair README's tables differ from what results/ gives (python3 analysis/pair_table.py --all)"
  exit 1
fi

# A copy with one table cell changed by hand must fail the same check.
copy="$TEST_TMPDIR/root"
mkdir -p "$copy"
cp -rL analysis repro fixes results pairs.bzl "$copy/" 2>/dev/null
readme="$copy/repro/mean_of_means/README.md"
"$python3" - "$readme" <<'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()
begin = text.index("<!-- table:by_n:begin -->")
row = text.index("\n| ", text.index("|---", begin)) + 1  # the first data row
cell = text.index(" | ", row) + 3                           # its second cell
end = text.index(" |", cell)
open(path, "w").write(text[:cell] + "999999" + text[end:])
PY
"$python3" "$copy/analysis/pair_table.py" --all --check --root "$copy" >/dev/null 2>&1
rc=$?
if [ "$rc" != 1 ]; then
  echo "FAIL: a hand-edited table in a copy gave exit $rc from --check, not 1"
  exit 1
fi
echo PASS
