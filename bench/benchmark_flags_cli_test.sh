#!/bin/bash
# Every multi-rank benchmark refuses bad --benchmark_* values before any rank
# starts: exit 2, one message naming the flag, quickly (no rank ran). A valid
# filter that selects none of the run's benchmarks is such a value too.
set -u
sync_bn="$1" padding="$2" peers="$3"
fail() { echo "FAIL: $*"; exit 1; }
for bin in "$sync_bn" "$padding"; do
  for args in "--benchmark_repetitions=-1" "--benchmark_format=xml" "--benchmark_filter=[" \
              "--benchmark_filter=no_such_benchmark" "--benchmark_bogus=1"; do
    flag="${args%%=*}"
    start=$(date +%s)
    timeout 60 "$bin" --world_size 2 "$args" > "$TEST_TMPDIR/out" 2> "$TEST_TMPDIR/err"
    rc=$?
    [ "$rc" = 2 ] || fail "$(basename "$bin") $args exited $rc, not 2: $(cat "$TEST_TMPDIR/err")"
    grep -q -- "$flag" "$TEST_TMPDIR/err" || fail "$(basename "$bin") $args: no $flag in: $(cat "$TEST_TMPDIR/err")"
    [ "$(wc -l < "$TEST_TMPDIR/err")" = 1 ] || fail "$(basename "$bin") $args: not one line: $(cat "$TEST_TMPDIR/err")"
    [ $(( $(date +%s) - start )) -lt 10 ] || fail "$(basename "$bin") $args took too long (ranks ran?)"
  done
done
# bench/peers (Python, argparse): an unknown flag is exit 2 too.
"$peers" --benchmark_bogus=1 > /dev/null 2> "$TEST_TMPDIR/err"
rc=$?
[ "$rc" = 2 ] || fail "peers --benchmark_bogus=1 exited $rc, not 2"
grep -q -- "--benchmark_bogus" "$TEST_TMPDIR/err" || fail "peers: $(cat "$TEST_TMPDIR/err")"
# A second PyTorch's python that is not there: exit 2 naming the flag, before any rank.
"$peers" --second_torch_python /nonexistent/python > /dev/null 2> "$TEST_TMPDIR/err"
rc=$?
[ "$rc" = 2 ] || fail "peers --second_torch_python /nonexistent/python exited $rc, not 2"
grep -q -- "--second_torch_python" "$TEST_TMPDIR/err" || fail "peers: $(cat "$TEST_TMPDIR/err")"
echo PASS
