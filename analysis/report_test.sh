#!/usr/bin/env bash
# The report renders tables, CSV and figures from records + benchmark JSON,
# and bad input is an error naming the file with nothing written.
set -u
report="$1"
src="$TEST_SRCDIR/ddp_pitfalls/analysis/testdata"
work="$TEST_TMPDIR/w"
mkdir -p "$work/results"
cp "$src"/*.json "$work/results/"
export BUILD_WORKING_DIRECTORY="$work" MPLCONFIGDIR="$TEST_TMPDIR/mpl"
"$report" --results results --out out || { echo "report failed"; exit 1; }
for f in report.md mean_of_means.csv bench_bench.csv mean_of_means_error.png \
         mean_of_means_error.svg bench_time.png bench_padding_overhead.png \
         bench_sync_bn_overhead.svg; do
  [ -s "$work/out/$f" ] || { echo "missing $f"; ls "$work/out"; exit 1; }
done
grep -q "| repro | naive | gloo | 2 |" "$work/out/report.md" || { echo "table row missing"; exit 1; }
grep -q "records.json @ 0123456789" "$work/out/report.md" || { echo "provenance missing"; exit 1; }

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
good=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))[0]))' "$src/records.json")
for field in '"world_size": "four"' '"measured": "oops"' '"config": null' '"verdict": 3'; do
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
