#!/usr/bin/env bash
# tools/new_pair scaffolds a pair into a throwaway copy of the tree, and every
# consumer of the pair registry picks it up with no other edit (issue 60):
# the suite's list and the citation's count (registry_test on the copy), the
# report's sections and its checks (report.py + report_check.py over the
# copy's records plus the scaffold's two records), the suite's summary
# (tools/summarize.py), tools/regen_all.sh's steps, the bundle's lists
# (shared_gpu_flags.txt). A bad NAME is exit 2 with nothing written.
# That the scaffold builds and its tests pass under Bazel was checked by
# hand (docs/adding_a_pair.md: the commands and what they printed).
# usage: new_pair_test.sh NEW_PAIR RECORDS_JSON
set -uo pipefail
new_pair="$(realpath "$1")"
records="$(realpath "$2")"
src="$(cd "$(dirname "$new_pair")/.." && pwd)"
fail() { echo "FAIL: $*"; exit 1; }
py=/usr/bin/python3
export MPLCONFIGDIR="$TEST_TMPDIR/mpl"

# The copy: the checkout's tracked files (the runfile links back to it).
tree="$TEST_TMPDIR/tree"
mkdir -p "$tree"
if files=$(git -C "$src" ls-files --cached --others --exclude-standard 2>/dev/null) && [ -n "$files" ]; then
  (cd "$src" && tar cf - $files) | (cd "$tree" && tar xf -) || fail "copying the tree"
else
  echo "new_pair_test: $src is not a git checkout; skipped (it needs the whole tree to copy)"
  exit 0
fi
cd "$tree"
before=$("$py" analysis/registry.py names | wc -l)

out=$("$py" tools/new_pair Bad-Name 2>&1); rc=$?
[ "$rc" = 2 ] && grep -q "NAME 'Bad-Name'" <<<"$out" || fail "bad NAME: exit $rc: $out"
[ ! -e repro/Bad-Name ] || fail "bad NAME wrote a folder"
out=$("$py" tools/new_pair mean_of_means 2>&1); rc=$?
[ "$rc" = 2 ] && grep -q "already a pair" <<<"$out" || fail "existing NAME: exit $rc: $out"

"$py" tools/new_pair demo_pair >/dev/null || fail "new_pair demo_pair exited $?"
for f in repro/demo_pair/{BUILD,main.cc,variants.h,variants.cc,variants_test.cc,README.md,tables.json,report.json} \
         fixes/demo_pair/{BUILD,main.cc,fix_run.h,fix_run.cc,fix_test.cc,README.md,tables.json}; do
  [ -s "$f" ] || fail "$f not written"
done

# The registry and the suite's list (PAIRS derives from it in pairs.bzl).
names=$("$py" analysis/registry.py names)
[ "$(wc -l <<<"$names")" = $((before + 1)) ] && [ "$(tail -1 <<<"$names")" = demo_pair ] ||
  fail "registry: $names"
grep -q 'for p in PAIR_REGISTRY' pairs.bzl || fail "PAIRS no longer derives from the registry"
# The citation's count and every pair's files: the registry test itself.
"$py" tools/registry_test.py pairs.bzl CITATION.cff >"$TEST_TMPDIR/reg.log" 2>&1 ||
  fail "registry_test on the copy: $(cat "$TEST_TMPDIR/reg.log")"
grep -q "reproduces seven distributed-training bugs" <(tr -s ' \n' '  ' <CITATION.cff) ||
  fail "CITATION.cff's count not updated"

# tools/regen_all.sh's steps.
steps=$(bash tools/regen_all.sh --steps) || fail "regen_all --steps exited $?"
grep -q '^demo_pair_repro|-|bazel run //repro/demo_pair -- --json \$PWD/results/demo_pair_repro.json$' <<<"$steps" &&
  grep -q '^demo_pair_fix|' <<<"$steps" || fail "regen_all has no demo_pair steps: $steps"

# The bundle's list of shared-GPU flags (make_bundle.sh writes it from the registry).
flags=$("$py" analysis/registry.py shared-gpu-flags) || fail "shared-gpu-flags exited $?"
grep -qx 'repro/demo_pair/demo_pair' <<<"$flags" && grep -qx 'fixes/demo_pair/demo_pair' <<<"$flags" ||
  fail "shared_gpu_flags.txt lacks the demo pair"

# The report's sections and checks, and the suite's summary, over the
# report test's records and the scaffold's. A pair registered with a seed
# must have claims in the ledger: seedless here (report_check says so).
mkdir -p res
cp analysis/testdata/*.json res/ && cp -r analysis/testdata/gpu res/  # the GPU runs some claims name
cp "$records" res/demo_pair.json
"$py" analysis/report.py --results res --out rep --latex >"$TEST_TMPDIR/report.log" 2>&1 ||
  fail "report: $(tail -5 "$TEST_TMPDIR/report.log")"
grep -q '(`demo_pair`' rep/report.md || fail "report.md has no demo_pair section"
"$py" analysis/report_check.py rep analysis/claims.json >"$TEST_TMPDIR/check.log" 2>&1 ||
  fail "report_check: $(cat "$TEST_TMPDIR/check.log")"
"$py" tools/summarize.py $(grep -l '"bug"' res/*.json) >"$TEST_TMPDIR/summary.txt" 2>&1 ||
  fail "summarize: $(tail -5 "$TEST_TMPDIR/summary.txt")"
grep -q '^demo_pair' "$TEST_TMPDIR/summary.txt" || fail "the summary has no demo_pair block: $(cat "$TEST_TMPDIR/summary.txt")"
echo "new_pair_test: PASS (the scaffold reached the registry, the citation, regen_all, the bundle's flags, the report and its checks, the summary)"
