#!/usr/bin/env bash
# //:suite prints the doctor report and the registered pairs, every pair
# binary is there and answers --help, and unknown flags exit 2. (Running every
# pair at its defaults takes minutes: that is `bazel run //:suite`, not a test.)
set -u
suite="$1"
log=$("$suite" --list 2>&1)
rc=$?
echo "$log"
[ "$rc" -eq 0 ] || { echo "suite exited $rc"; exit 1; }
grep -q "== ddp-pitfalls doctor ==" <<<"$log" || { echo "no doctor report"; exit 1; }
grep -q "== registered repro/fix pairs" <<<"$log" || { echo "no pair list"; exit 1; }
grep -q "every pair binary answers --help" <<<"$log" || { echo "a pair binary is broken"; exit 1; }
n=$(grep -c '^  repro/\|^  fixes/' <<<"$log")
[ "$n" -ge 2 ] || { echo "expected registered pairs, found $n"; exit 1; }
"$suite" --bogus >/dev/null 2>&1
[ $? -eq 2 ] || { echo "unknown flag should exit 2"; exit 1; }
"$suite" --only no-such-pair >/dev/null 2>&1
[ $? -eq 2 ] || { echo "--only matching nothing should exit 2"; exit 1; }

# A run ends with the one-screen summary: per bug the symptom/fix lines,
# where the records are and the report command, in 120 columns. (Its
# wording from the committed records: //tools:summarize_test.)
ok="$TEST_TMPDIR/ok"
log=$("$suite" --out "$ok" --only fixes/mean_of_means -- --seeds 1 --world_size 2 2>&1)
rc=$?
[ "$rc" -eq 0 ] || { echo "$log"; echo "suite run exited $rc"; exit 1; }
summary=$(sed -n '/^== summary/,$p' <<<"$log")
echo "$summary"
# Before it, what each pair binary ran: its rows by kind and verdict.
grep -qE "^fixes/mean_of_means/mean_of_means: ([0-9]+) rows: fix [0-9]+ exact" <<<"$log" \
  || { echo "no line saying what the pair ran"; exit 1; }
grep -q "^  fix: all_reduce of (sum, count) (sum_count, W = [0-9 to]*): exact in [0-9]*/[0-9]* rows (|accuracy error| 0 pp" \
  <<<"$summary" \
  || { echo "no fix line in the summary"; exit 1; }
grep -q "^records: $ok" <<<"$summary" || { echo "no records line"; exit 1; }
grep -q "^report:  bazel run //analysis:report -- --results $ok --out $ok-report" <<<"$summary" \
  || { echo "no report command"; exit 1; }
[ "$(wc -l <<<"$summary")" -le 40 ] || { echo "summary longer than a screen"; exit 1; }
# (Paths may be longer: they are this sandbox's.)
grep -v '^records: \|^report: ' <<<"$log" | awk 'length > 120 { bad = 1; print "too wide: " $0 } END { exit bad }' \
  || { echo "console lines over 120 columns"; exit 1; }

# A pair killed mid-run: the summary must not show its records from an
# earlier run (they were removed before it started).
out="$TEST_TMPDIR/records"
mkdir -p "$out"
cat > "$out/fixes_mean_of_means_mean_of_means.json" <<'JSON'
[{"bug": "mean_of_means", "kind": "fix", "variant": "STALE_FROM_EARLIER_RUN", "backend": "gloo",
  "world_size": 2, "config": {}, "measured": {}, "reference": {}, "verdict": "exact",
  "provenance": {}}]
JSON
"$suite" --out "$out" --only fixes/mean_of_means -- --seeds 10000 --world_size 2 > "$TEST_TMPDIR/run.log" 2>&1 &
suite_pid=$!
pair=""
for _ in $(seq 300); do   # the pair binary: a child of the suite's shell (up to 30 s)
  for c in $(ps -o pid= --ppid "$suite_pid"); do
    [ "$(cat /proc/$c/comm 2>/dev/null)" = mean_of_means ] && pair=$c
  done
  [ -n "$pair" ] && break
  sleep 0.1
done
[ -n "$pair" ] || { kill "$suite_pid"; cat "$TEST_TMPDIR/run.log"; echo "the pair never started"; exit 1; }
sleep 0.5
kill -KILL "$pair"
wait "$suite_pid"
rc=$?
cat "$TEST_TMPDIR/run.log"
[ "$rc" -eq 1 ] || { echo "suite with a killed pair: expected exit 1, got $rc"; exit 1; }
grep -q "STALE_FROM_EARLIER_RUN" "$TEST_TMPDIR/run.log" && { echo "stale records shown"; exit 1; }
grep -q "wrote no records" "$TEST_TMPDIR/run.log" || { echo "no note about the missing records"; exit 1; }
[ ! -e "$out/fixes_mean_of_means_mean_of_means.json" ] || { echo "stale file kept"; exit 1; }
echo "suite_test: ok"
