#!/usr/bin/env bash
# //:suite prints the doctor report and the registered pairs, writes its
# records under --out, and rejects unknown flags with exit 2.
set -u
suite="$1"
out="$TEST_TMPDIR/results"
log=$("$suite" --out "$out" 2>&1)
rc=$?
echo "$log"
[ "$rc" -eq 0 ] || { echo "suite exited $rc"; exit 1; }
grep -q "== ddp-pitfalls doctor ==" <<<"$log" || { echo "no doctor report"; exit 1; }
grep -q "== registered repro/fix pairs" <<<"$log" || { echo "no pair list"; exit 1; }
"$suite" --bogus >/dev/null 2>&1
[ $? -eq 2 ] || { echo "unknown flag should exit 2"; exit 1; }
echo "suite_test: ok"
