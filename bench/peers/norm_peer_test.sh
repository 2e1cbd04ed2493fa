#!/bin/bash
# norm_peer at tiny settings, every norm: one JSON line per (C, N) with a
# positive time; bad flags exit 2 naming the flag.
set -u
bin="$1"
fail() { echo "FAIL: $*"; exit 1; }
for norm in sync_bn batch_norm group_norm; do
  out=$("$bin" --world_size 2 --norm "$norm" --channels 8,16 --n 2,3 --hw 4 --iters 2 --warmup 1) \
    || fail "$norm exited $?"
  echo "$out"
  [ "$(echo "$out" | grep -c "\"norm\": \"$norm\", \"W\": 2")" -eq 4 ] || fail "$norm: not 4 lines"
  echo "$out" | grep -q '"C": 16, "N": 3, "hw": 4, "iters": 2' || fail "$norm: shape missing"
  echo "$out" | grep -q '"mean_s": 0[,}]' && fail "$norm: zero time"
done
bad() {
  local flag="$1"; shift
  "$bin" "$@" > /dev/null 2> "$TEST_TMPDIR/err"
  local rc=$?
  [ $rc -eq 2 ] || fail "$* exited $rc, not 2"
  grep -q -- "$flag" "$TEST_TMPDIR/err" || fail "$*: message lacks $flag"
}
bad --norm --norm layer_norm
bad --groups --norm group_norm --channels 12 --groups 8
bad --channels --channels 0
bad --sched --sched realtime
echo PASS
