#!/usr/bin/env bash
# The report deletes nothing it did not write, and no input or signal makes
# it print a traceback or leave a half-made folder (issue 35, items 1 and 6):
#   - --out that is or contains --results, an existing file, a folder of the
#     user's, or a previous report holding a file of the user's: exit 2
#     naming the path, everything left as it was;
#   - a previous report is replaced (OUT.old, a name the old code used, is
#     not touched);
#   - SIGTERM and Ctrl-C mid-way: exit 143 / 130, no traceback, no hidden
#     .report-* folder, the previous report intact; a SIGKILLed run's staging
#     folder is removed by the next run;
#   - deeply nested JSON, a FIFO, a link to /dev/zero: exit 2 with one line
#     naming the file, promptly.
set -u
report="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
src="$TEST_SRCDIR/ddp_pitfalls/analysis/testdata"
work="$TEST_TMPDIR/w"
mkdir -p "$work/results"
cp "$src"/*.json "$work/results/"
export BUILD_WORKING_DIRECTORY="$work" MPLCONFIGDIR="$TEST_TMPDIR/mpl"
cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
inputs_intact() {
  [ "$(ls results/*.json | wc -l)" -eq "$(ls "$src"/*.json | wc -l)" ] || fail "$1: records deleted: $(ls results)"
  cmp -s results/mean_of_means_repro.json "$src/mean_of_means_repro.json" || fail "$1: record changed"
}
no_staging() {
  local left
  left=$(find "$work" -name '.report-*')
  [ -z "$left" ] || fail "$1: staging folder left behind: $left"
}
# expect_refused NAME WORD ARGS...: exit 2, one line, WORD in it, no traceback.
expect_refused() {
  local name="$1" word="$2"
  shift 2
  local msg rc
  msg=$(timeout 60 "$report" "$@" 2>&1)
  rc=$?
  [ "$rc" -eq 2 ] || fail "$name: expected exit 2, got $rc: $msg"
  grep -qF -- "$word" <<<"$msg" || fail "$name: message does not name $word: $msg"
  [ "$(wc -l <<<"$msg")" -eq 1 ] || fail "$name: not one line: $msg"
  grep -q Traceback <<<"$msg" && fail "$name: traceback: $msg"
  no_staging "$name"
}

# --out is the results folder: the old code read it, then deleted it.
expect_refused "out = results" "--out $work/results" --results results --out results
inputs_intact "out = results"
expect_refused "out = results/." "--out $work/results" --results results --out results/.
inputs_intact "out = results/."
# --out contains the results folder.
mkdir -p data
cp -r results data/
expect_refused "out contains results" "--out $work/data" --results data/results --out data
[ "$(ls data/results/*.json | wc -l)" -eq "$(ls "$src"/*.json | wc -l)" ] || fail "data/results emptied"
rm -rf data
# --out inside results under a .json name would be read as a record next time.
expect_refused "out inside results as .json" "x.json" --results results --out results/x.json
[ ! -e results/x.json ] || fail "results/x.json made"

# An existing folder of the user's, and an existing file.
mkdir mine && echo keep > mine/notes.txt
expect_refused "user folder" "--out $work/mine" --results results --out mine
[ "$(cat mine/notes.txt 2>/dev/null)" = keep ] || fail "user folder: notes.txt lost"
[ "$(ls -A mine)" = notes.txt ] || fail "user folder changed: $(ls -A mine)"
echo keep > afile
expect_refused "user file" "--out $work/afile" --results results --out afile
[ -f afile ] && [ "$(cat afile)" = keep ] || fail "user file replaced"
ln -s mine alink
expect_refused "symlink" "--out $work/alink" --results results --out alink
[ "$(cat mine/notes.txt)" = keep ] || fail "symlink target changed"

# A report, then another over it: replaced; OUT.old of the user's untouched.
"$report" --results results --out rep >/dev/null 2>&1 || fail "first report failed"
[ -s rep/report.md ] && [ -s rep/.ddp-pitfalls-report ] || fail "report or its marker missing"
mkdir rep.old && echo keep > rep.old/notes.txt
echo "stale" >> rep/report.md
"$report" --results results --out rep >/dev/null 2>&1 || fail "second report failed"
grep -q stale rep/report.md && fail "previous report not replaced"
[ "$(cat rep.old/notes.txt 2>/dev/null)" = keep ] || fail "rep.old touched"
no_staging "replace"
inputs_intact "replace"
# --out inside --results: refused (the old layout, results/report, was one).
expect_refused "inside results" "lies inside" --results results --out results/report
[ -e results/report ] && fail "results/report created"
inputs_intact "inside results"
# A previous report holding a file of the user's: refused, nothing lost.
echo keep > rep/my_notes.txt
expect_refused "user file in report" "my_notes.txt" --results results --out rep
[ "$(cat rep/my_notes.txt)" = keep ] && [ -s rep/report.md ] || fail "report with user file changed"
rm rep/my_notes.txt

# Signals mid-way (a CSV in the staging folder): the job runs with job
# control so that SIGINT is not ignored, as in a terminal.
set -m
interrupt() {
  local sig="$1" want="$2"
  "$report" --results results --out rep >"$TEST_TMPDIR/sig.out" 2>&1 &
  local pid=$! i
  for i in $(seq 600); do
    compgen -G "$work/.report-*/*.csv" >/dev/null && break
    sleep 0.05
  done
  compgen -G "$work/.report-*/*.csv" >/dev/null || fail "$sig: no staging folder seen"
  kill -"$sig" "$pid"
  wait "$pid"
  local rc=$?
  if [ "$sig" = KILL ]; then return; fi
  [ "$rc" -eq "$want" ] || fail "$sig: expected exit $want, got $rc: $(cat "$TEST_TMPDIR/sig.out")"
  grep -q Traceback "$TEST_TMPDIR/sig.out" && fail "$sig: traceback: $(cat "$TEST_TMPDIR/sig.out")"
  no_staging "$sig"
  [ -s rep/report.md ] && ! grep -q stale rep/report.md || fail "$sig: previous report changed"
}
interrupt TERM 143
interrupt INT 130
interrupt KILL 137
compgen -G "$work/.report-*" >/dev/null || fail "SIGKILL: expected a staging folder left"
"$report" --results results --out rep >/dev/null 2>&1 || fail "report after SIGKILL failed"
no_staging "the run after a SIGKILL"
set +m

# Unreadable input: exit 2, one line naming the file, promptly.
/usr/bin/python3 -c 'print("[" * 100000 + "]" * 100000)' > results/deep.json
expect_refused "deep nesting" "deep.json" --results results --out rep
/usr/bin/python3 -c 'print("[" * 200 + "]" * 200)' > results/deep.json
expect_refused "nesting 200" "deep.json" --results results --out rep
rm results/deep.json
mkfifo results/fifo.json
expect_refused "FIFO" "fifo.json" --results results --out rep
rm results/fifo.json
ln -s /dev/zero results/zero.json
expect_refused "link to /dev/zero" "zero.json" --results results --out rep
rm results/zero.json
[ -s rep/report.md ] || fail "report lost by bad input"

# Issue 59: no field of an input steers where the report writes (2); a
# headline field given as an object is refused, not dropped (9); a full
# disk is exit 2 in one line, not matplotlib's traceback (6); a missing
# --results leaves no folder behind (14).
mkdir -p "$TEST_TMPDIR/x"
for bug in "$TEST_TMPDIR/x/victim" "../escaped"; do
  rm -rf bad && mkdir bad && cp results/*.json bad/
  /usr/bin/python3 - "$bug" <<'PY'
import json, sys
p = "bad/mean_of_means_repro.json"
d = json.load(open(p))
d[0]["bug"] = sys.argv[1]
json.dump(d, open(p, "w"))
PY
  expect_refused "bug $bug" "'bug'" --results bad --out rep2
  [ ! -e "$TEST_TMPDIR/x/victim.csv" ] && [ ! -e escaped.csv ] && [ ! -e "$work/escaped.csv" ] \
    || fail "bug $bug: a file written outside --out"
  [ ! -e rep2 ] || fail "bug $bug: rep2 made"
done
rm -rf bad && mkdir bad && cp results/*.json bad/
/usr/bin/python3 - <<'PY'
import json
p = "bad/mean_of_means_repro.json"
d = json.load(open(p))
d[0]["measured"]["error"] = {"value": 0.1}
json.dump(d, open(p, "w"))
PY
expect_refused "headline metric as an object" "measured.error" --results bad --out rep2
rm -rf bad
# A file-size limit (RLIMIT_FSIZE, EFBIG) stands in for a full disk; at 4 KiB
# the write fails inside matplotlib's PDF writer, which then raised
# AttributeError on top of it.
msg=$( (trap '' XFSZ; ulimit -f 4; timeout 120 "$report" --results results --out full) 2>&1)
rc=$?
[ "$rc" -eq 2 ] || fail "full disk: expected exit 2, got $rc: $msg"
grep -q Traceback <<<"$msg" && fail "full disk: traceback: $msg"
[ "$(wc -l <<<"$msg")" -eq 1 ] || fail "full disk: not one line: $msg"
[ ! -e full ] || fail "full disk: --out made"
no_staging "full disk"
expect_refused "missing --results" "no such results folder" --results nowhere --out a/b/c
[ ! -e a ] || fail "missing --results: folders left behind: $(find a)"
echo "report_safety_test: ok"
