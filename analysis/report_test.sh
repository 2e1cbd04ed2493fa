#!/usr/bin/env bash
# The report builds from the fixed records in analysis/testdata (a small
# sample of results/, refreshed by hand) and has the structure of issue 17
# (report_check.py); bad input is an error naming the file with nothing
# written.
set -u
report="$1"
check="$2"
claims="$3"
src="$TEST_SRCDIR/ddp_pitfalls/analysis/testdata"
work="$TEST_TMPDIR/w"
mkdir -p "$work/results"
cp "$src"/*.json "$work/results/"
cp -r "$src/gpu" "$work/results/"  # two GPU runs' records (copies of those under results/gpu/)
export BUILD_WORKING_DIRECTORY="$work" MPLCONFIGDIR="$TEST_TMPDIR/mpl"
"$report" --results results --out out --latex || { echo "report failed"; exit 1; }
/usr/bin/python3 "$check" "$work/out" "$claims" || { echo "report structure: see above"; exit 1; }
# The GPU run's records reach only the ledger's claims that name them: without
# them every other part of the report is the same (the header's record count,
# the summary, findings, appendix, every CSV but claims.csv, the provenance).
grep -q "gpu/h100-2026-11-27/records/call4/repro_drop_last_hang.json" "$work/out/ledger.md" \
  || { echo "ledger.md does not name the GPU run's record file"; exit 1; }
grep -q "set aside" "$work/out/ledger.md" || { echo "records with gpu 'none' not said to be set aside"; exit 1; }
mv "$work/results/gpu" "$work/gpu.away"
"$report" --results results --out out_nogpu --latex >/dev/null 2>&1 || { echo "report failed without gpu/"; exit 1; }
mv "$work/gpu.away" "$work/results/gpu"
# ... except that the scope paragraph names the GPU runs kept apart, which
# the comparison takes out (the text rejoined, its lines being wrapped).
tr '\n' ' ' <"$work/out/report.md" | grep -q 'The GPU runs kept apart under results/gpu/ (h100-2026-11-27, h100-2026-11-27b) enter only' \
  || { echo "the scope paragraph does not name the GPU runs kept apart"; exit 1; }
outside_ledger() {
  sed '/^## Claims ledger/,/^## Benchmarks/d' "$1" | tr '\n' ' ' |
    perl -pe 's/ The GPU runs kept apart under results\/gpu\/ \([^)]*\) enter only .*?gpu_section\.py\)\.//'
}
diff <(outside_ledger "$work/out/report.md") <(outside_ledger "$work/out_nogpu/report.md") >/dev/null \
  || { echo "the GPU run's records changed report.md outside the ledger"; exit 1; }
for f in "$work"/out/*.csv "$work"/out/appendix.md; do
  case "$f" in */claims.csv) continue ;; esac
  cmp -s "$f" "$work/out_nogpu/${f##*/}" || { echo "the GPU run's records changed ${f##*/}"; exit 1; }
done
grep -q "wrong_all_gather_repro.json" "$work/out/report.md" || { echo "record file not named"; exit 1; }
grep -q "| 757bbf3228b4+dirty |" "$work/out/report.md" || { echo "provenance missing"; exit 1; }
# A benchmark file's commit is its context's ddp_commit (older recorder
# files: commit; none: "-").
grep -q "| bench_padding_w2.json | [0-9]* benchmarks | feedc0ffee12 |" "$work/out/report.md" \
  || { echo "benchmark commit missing: $(grep 'bench_padding_w2.json |' "$work/out/report.md")"; exit 1; }
grep -q "| bench_sync_bn.json | [0-9]* benchmarks | - |" "$work/out/report.md" \
  || { echo "benchmark without a commit: $(grep 'bench_sync_bn.json |' "$work/out/report.md")"; exit 1; }
# A record without the fields a finding reads still builds (the finding
# says less); numbers are never typed into the specs.
python3 - "$src/mean_of_means_fix.json" > "$work/results/mean_of_means_fix.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for x in r:
    x["measured"] = {"new_field": 1.5}
print(json.dumps(r))
PY
"$report" --results results --out out_sparse >/dev/null || { echo "report failed on sparse records"; exit 1; }
grep -q "matched the one-process computation in 1 of 1 fix rows" "$work/out_sparse/report.md" \
  || { echo "sparse finding missing"; exit 1; }
[ ! -e "$work/out_sparse/latex" ] || { echo "latex written without --latex"; exit 1; }
cp "$src/mean_of_means_fix.json" "$work/results/"

# A fix row that runs a known-inexact setting on purpose (expected_verdict)
# is reported as such, not as a miss, and stays out of the exactness numbers.
python3 - "$src/drop_last_hang_fix.json" > "$work/results/drop_last_hang_fix.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
x = json.loads(json.dumps(r[0]))
x.update(variant="join_initial_world_size", verdict="inexact", expected_verdict="inexact")
x["measured"]["max_rel_grad_error"] = 0.75
print(json.dumps(r + [x]))
PY
"$report" --results results --out out_inexact >/dev/null || { echo "report failed"; exit 1; }
tr '\n' ' ' < "$work/out_inexact/report.md" | grep -q "run known-inexact settings on purpose (join_initial_world_size)" \
  || { echo "on-purpose inexact row not reported"; exit 1; }
grep -q "missed their expected verdict" "$work/out_inexact/report.md" && { echo "on-purpose row counted as a miss"; exit 1; }
grep -q "relative gradient error up to 0.75" "$work/out_inexact/report.md" && { echo "on-purpose row in the exactness"; exit 1; }
cp "$src/drop_last_hang_fix.json" "$work/results/"

# Malformed: exit 2, the file named, the previous report untouched.
echo '[{"bug": "x"}]' > "$work/results/broken.json"
msg=$("$report" --results results --out out 2>&1)
rc=$?
[ "$rc" -eq 2 ] || { echo "malformed input: expected exit 2, got $rc"; exit 1; }
grep -q "broken.json: record 0 lacks" <<<"$msg" || { echo "message: $msg"; exit 1; }
[ -s "$work/out/report.md" ] || { echo "old report lost"; exit 1; }
ls -a "$work" | grep -q '^\.report-' && { echo "temporary folder left behind"; exit 1; }
rm "$work/results/broken.json"

# Fields of the wrong type: exit 2 with one line naming the file, the record
# and the field (no traceback).
good=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))[0]))' "$src/mean_of_means_repro.json")
for field in '"world_size": "four"' '"measured": "oops"' '"config": null' '"verdict": 3' \
             '"expected_verdict": "fine"'; do
  key=${field%%\":*}
  key=${key#\"}
  python3 - "$good" "$field" > "$work/results/typed.json" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
k, v = json.loads("{" + sys.argv[2] + "}").popitem()
r[k] = v
print(json.dumps([r, r]))
PY
  msg=$("$report" --results results --out out 2>&1)
  rc=$?
  [ "$rc" -eq 2 ] || { echo "$field: expected exit 2, got $rc: $msg"; exit 1; }
  grep -q "typed.json: record 0 .*: .$key. is" <<<"$msg" || { echo "$field: message: $msg"; exit 1; }
  [ "$(wc -l <<<"$msg")" -eq 1 ] || { echo "$field: not one line: $msg"; exit 1; }
done
rm "$work/results/typed.json"
"$report" --results nowhere --out out2 >/dev/null 2>&1
[ $? -eq 2 ] || { echo "missing folder should exit 2"; exit 1; }
[ ! -e "$work/out2" ] || { echo "out2 should not exist"; exit 1; }
echo "report_test: ok"
