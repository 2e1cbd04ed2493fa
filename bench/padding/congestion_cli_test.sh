#!/bin/bash
# bench/padding/congestion.sh: an unknown congestion control, or a piece size
# out of range, is exit 2 with a message naming it and what is allowed.
set -u
script="$1"
fail() { echo "FAIL: $*"; exit 1; }
out="$(bash "$script" no-such-cc 2>&1)"
rc=$?
[ "$rc" -eq 2 ] || fail "exit $rc, want 2: $out"
grep -q "'no-such-cc' is not an available congestion control (allowed: " <<<"$out" \
  || fail "message: $out"
out="$(bash "$script" cubic:12 2>&1)"
rc=$?
[ "$rc" -eq 2 ] || fail "piece size: exit $rc, want 2: $out"
grep -q "piece size '12' in 'cubic:12' must be a whole number of KiB in \[64, 65536\]" <<<"$out" \
  || fail "piece message: $out"
echo PASS
