#!/bin/bash
# The README tables quoting the PyTorch records are the ones the committed
# records give: for every script run_all.sh lists, `SCRIPT --table RECORDS`
# (what `run_all.sh --tables` writes) must equal the README's block between
# its markers, with no torch importable (a table is made from JSON alone).
# Every script also answers --help (exit 0) and refuses an unknown flag
# (exit 2) without torch. A copy of one README with a cell changed by hand
# must fail the same comparison, which shows the check can fail.
#
#   tables_test.sh ROOT    (ROOT: where run_all.sh's paths resolve)
set -u
root="${1:?usage: tables_test.sh ROOT}"
cd "$root" || exit 1
python3=/usr/bin/python3
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
# A torch that cannot be imported: scripts import it only where they run PyTorch.
mkdir -p "$tmp/notorch/torch"
echo 'raise ImportError("the README tables and --help need no torch")' >"$tmp/notorch/torch/__init__.py"
export PYTHONPATH="$tmp/notorch"

block() {  # README ID: the text between the table's markers
  "$python3" - "$1" "$2" <<'PY'
import sys
doc = open(sys.argv[1]).read()
begin, end = "<!-- table:%s:begin -->\n" % sys.argv[2], "<!-- table:%s:end -->" % sys.argv[2]
if begin not in doc or end not in doc:
    sys.exit("no %s ... %s markers in %s" % (begin.strip(), end, sys.argv[1]))
sys.stdout.write(doc[doc.index(begin) + len(begin):doc.index(end)])
PY
}

table() {  # NAME SCRIPT: the table from NAME's committed records
  local name="$1" script="$2" files=() extra=()
  for v in 1.13 2.15; do
    [[ -f "results/vs_pytorch/$name.torch$v.json" ]] && files+=("results/vs_pytorch/$name.torch$v.json")
  done
  ((${#files[@]} > 0)) || { echo "no record of $name"; return 1; }
  [[ "$name" == torch_debug_detail ]] && extra=(--ours results/vs_pytorch/checked_mode.json)
  "$python3" "$script" --table "${files[@]}" "${extra[@]}"
}

fail=0 n=0
while IFS='|' read -r name script _ readme id; do
  n=$((n + 1))
  if ! diff <(table "$name" "$script" 2>&1) <(block "$readme" "$id" 2>&1) >"$tmp/diff.txt"; then
    echo "FAIL: $readme table '$id' differs from what $script --table gives ($name's records):"
    head -20 "$tmp/diff.txt"
    fail=1
  fi
  "$python3" "$script" --help >/dev/null 2>&1 || { echo "FAIL: $script --help exited $?"; fail=1; }
  "$python3" "$script" --no-such-flag >/dev/null 2>&1
  rc=$?
  [[ $rc == 2 ]] || { echo "FAIL: $script --no-such-flag exited $rc, not 2"; fail=1; }
done < <(bash tools/vs_pytorch/run_all.sh --list)
((n >= 10)) || { echo "FAIL: only $n scripts read from run_all.sh"; fail=1; }

# The check can fail: one README cell changed by hand in a copy.
copy="$tmp/copy"
mkdir -p "$copy/tools/vs_pytorch" "$copy/results/vs_pytorch" "$copy/fixes/drop_last_hang/pytorch"
cp -L tools/vs_pytorch/*.py "$copy/tools/vs_pytorch/"
cp -L results/vs_pytorch/drop_last_hang_find_unused.torch*.json "$copy/results/vs_pytorch/"
cp -L fixes/drop_last_hang/pytorch/find_unused.py "$copy/fixes/drop_last_hang/pytorch/"
sed 's/| 1\.13 | 2 | post | 300 | [0-9.]* |/| 1.13 | 2 | post | 300 | 999 |/' fixes/drop_last_hang/README.md \
  >"$copy/fixes/drop_last_hang/README.md"
if cmp -s fixes/drop_last_hang/README.md "$copy/fixes/drop_last_hang/README.md"; then
  echo "FAIL: the hand edit of the control copy changed nothing"
  fail=1
elif (cd "$copy" && diff <(table drop_last_hang_find_unused fixes/drop_last_hang/pytorch/find_unused.py) \
      <(block fixes/drop_last_hang/README.md find_unused)) >/dev/null; then
  echo "FAIL: a hand-edited table in a copy compared equal"
  fail=1
fi
((fail == 0)) && echo "PASS: $n scripts: README tables equal what their records give; --help and a bad flag need no torch"
exit $fail
