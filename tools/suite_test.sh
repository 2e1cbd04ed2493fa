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
echo "suite_test: ok"
