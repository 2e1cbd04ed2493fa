#!/bin/bash
# bench/padding/congestion.sh: an unknown congestion control is exit 2 with
# a message naming it and the allowed ones.
set -u
script="$1"
fail() { echo "FAIL: $*"; exit 1; }
out="$(bash "$script" no-such-cc 2>&1)"
rc=$?
[ "$rc" -eq 2 ] || fail "exit $rc, want 2: $out"
grep -q "'no-such-cc' is not an available congestion control (allowed: " <<<"$out" \
  || fail "message: $out"
echo PASS
