#!/bin/bash
# bench/quiet.sh: wait_quiet returns at once below MAX_LOAD, gives up with
# exit 1 naming the load after WAIT_S, and measures anyway with FORCE=1.
set -u
source "$1"
fail() { echo "FAIL: $*"; exit 1; }
out="$(MAX_LOAD=100000 wait_quiet t 2>&1)" || fail "quiet machine: exit $?: $out"
grep -q "^t: load .*, measuring$" <<<"$out" || fail "quiet message: $out"
# A load of at least 0 is always there: with no time to wait it must give up.
out="$(MAX_LOAD=0 WAIT_S=0 wait_quiet t 2>&1)"
rc=$?
[ "$rc" -eq 1 ] || fail "busy machine: exit $rc, want 1: $out"
grep -q "^t: load .* >= 0 after 0s; not measuring (FORCE=1" <<<"$out" || fail "busy message: $out"
out="$(MAX_LOAD=0 WAIT_S=0 FORCE=1 wait_quiet t 2>&1)" || fail "FORCE=1: exit $?: $out"
grep -q "FORCE=1, measuring anyway" <<<"$out" || fail "FORCE message: $out"
echo PASS
